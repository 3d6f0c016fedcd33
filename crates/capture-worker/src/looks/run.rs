//! The examination of interactive elements: which ones a rule can change,
//! and each of those through its states.
//!
//! Chromium runs a session's DOM, CSS and Runtime commands one after the
//! other, in the order they were sent: an element's whole sequence (its
//! look at rest, then per state the state forced, the look read, the state
//! lifted, then its transitions back settled) is sent at once and its
//! answers awaited together, for a chunk of elements at a time, so the
//! cost is Chromium's work and not round trips. The budget is checked
//! between chunks, each sized to fit what is left of it.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::StreamExt;
use page_import_contract::capture::InteractionState;
use serde_json::Value;

use super::{
    forced, Argument, CallInWorld, ForcePseudoState, GetDocument, PushNodesByBackendIdsToFrontend, IN_FLIGHT,
    MAX_CANDIDATES, MAX_EXAMINED, STATES_BUDGET,
};
use crate::cdp::CdpError;
use crate::commands::{Evaluate, ResolveNode};
use crate::page::{Page, COMMAND_TIMEOUT};

/// Elements sent through their states together, at most.
const CHUNK: usize = 16;

/// How many elements the next chunk holds: as many as `left` of the budget
/// fits at what the `examined` ones cost (`spent`), from 1 to [`CHUNK`];
/// the first chunk is one element. A page where each element costs a lot
/// (a style recalculation and a layout of 10 000 nodes per state) so
/// overruns the budget by one element at most, not by a chunk.
fn fits(left: Duration, spent: Duration, examined: usize) -> usize {
    if examined == 0 {
        return 1;
    }
    let each = spent.as_secs_f64() / examined as f64;
    ((left.as_secs_f64() / each.max(1e-4)) as usize).clamp(1, CHUNK)
}

/// Each examined element's answer under each state: what `looks.js`'s
/// `read` returned.
#[derive(Default)]
pub(super) struct Reads(pub(super) Vec<(i64, InteractionState, Value)>);

/// One examined element: its backend node id, the id DOM knows it by, its
/// index among `looks.js`'s candidates, the index of the first candidate
/// alike to it (`kinds`: its own when none is), and the states to force.
struct Examined {
    backend_node_id: i64,
    node_id: i64,
    index: usize,
    like: usize,
    /// The states to force, a bit each in `InteractionState::ALL`'s order
    /// (`looks.js`'s `STATES`).
    mask: u32,
    states: Vec<InteractionState>,
}

type Step<'a> = Pin<Box<dyn Future<Output = Result<Option<Value>, CdpError>> + Send + 'a>>;

impl Page {
    /// Examines the elements of `interactive` some rule can change, in
    /// order, within [`MAX_EXAMINED`] and [`STATES_BUDGET`] (from
    /// `started`); their answers go to `reads`. Returns how many were
    /// examined and whether any was left out.
    pub(super) async fn examine(
        &self,
        world: i64,
        interactive: &[i64],
        started: Instant,
        reads: &mut Reads,
    ) -> Result<(u32, bool), CdpError> {
        if interactive.is_empty() {
            return Ok((0, false));
        }
        let considered = &interactive[..interactive.len().min(MAX_CANDIDATES)];
        let before_keys = started.elapsed();
        let mut to_examine = self.to_examine(world, considered).await?;
        let keyed = started.elapsed();
        let mut cut = considered.len() < interactive.len() || to_examine.len() > MAX_EXAMINED;
        to_examine.truncate(MAX_EXAMINED);
        // Only the first of each kind is forced; the others, alike to it,
        // take its reads (decision 0050).
        let firsts: Vec<&Examined> = to_examine.iter().filter(|e| e.like == e.index).collect();
        let (mut forced, mut spent) = (0, Duration::ZERO);
        while forced < firsts.len() {
            let left = STATES_BUDGET.saturating_sub(started.elapsed());
            if left.is_zero() {
                break;
            }
            let chunk = &firsts[forced..];
            let chunk = &chunk[..chunk.len().min(fits(left, spent, forced))];
            let chunk_started = Instant::now();
            self.examine_chunk(world, chunk, reads).await?;
            spent += chunk_started.elapsed();
            forced += chunk.len();
        }
        // Examined: the elements in document order up to the first one
        // whose kind was not forced in time.
        let examined = match firsts.get(forced) {
            Some(missed) => to_examine.iter().take_while(|e| e.like < missed.index).count(),
            None => to_examine.len(),
        };
        cut |= examined < to_examine.len();
        let alike: Vec<&Examined> = to_examine[..examined].iter().filter(|e| e.like != e.index).collect();
        let forcing_ended = started.elapsed();
        self.mirror(world, &alike, reads).await?;
        // Where the step's time went, for whoever tunes it (ms since the
        // step began: the sheets read and parsed, the candidates matched
        // and keyed, the firsts forced, their reads mirrored).
        tracing::debug!(
            sheets_ms = before_keys.as_millis() as u64,
            keyed_ms = keyed.as_millis() as u64,
            forced_ms = forcing_ended.as_millis() as u64,
            mirrored_ms = started.elapsed().as_millis() as u64,
            candidates = considered.len(),
            firsts = firsts.len(),
            forced,
            "states: where the time went"
        );
        Ok((examined as u32, cut))
    }

    /// The reads of `alike`'s elements: those of the first of their kind,
    /// named on their own nodes.
    async fn mirror(&self, world: i64, alike: &[&Examined], reads: &mut Reads) -> Result<(), CdpError> {
        if alike.is_empty() {
            return Ok(());
        }
        let pairs: Vec<[usize; 2]> = alike.iter().map(|e| [e.index, e.like]).collect();
        let expression = format!("__pageImportLooks.mirrors({})", serde_json::json!(pairs));
        let answer = self.evaluate_in(world, &expression).await?;
        let answers: Vec<serde_json::Map<String, Value>> =
            answer.and_then(|a| serde_json::from_value(a).ok()).unwrap_or_default();
        for (element, by_bit) in alike.iter().zip(answers) {
            for (bit, state) in InteractionState::ALL.iter().enumerate() {
                if let Some(answer) = by_bit.get(&bit.to_string()) {
                    reads.0.push((element.backend_node_id, *state, answer.clone()));
                }
            }
        }
        Ok(())
    }

    /// Of `considered`, in order, those some rule can change, with the
    /// states to force on each: the elements are resolved in the worker's
    /// world and matched there against each state's rules.
    async fn to_examine(&self, world: i64, considered: &[i64]) -> Result<Vec<Examined>, CdpError> {
        let session = Some(self.session.as_str());
        self.cdp
            .send(session, &GetDocument { depth: 0 }, COMMAND_TIMEOUT)
            .await?;
        let pushed = self
            .cdp
            .send(
                session,
                &PushNodesByBackendIdsToFrontend {
                    backend_node_ids: considered,
                },
                COMMAND_TIMEOUT,
            )
            .await?;
        let resolves: Vec<_> = considered
            .iter()
            .map(|&backend_node_id| {
                let (cdp, session) = (self.cdp.clone(), self.session.clone());
                async move {
                    let resolve = ResolveNode {
                        backend_node_id,
                        execution_context_id: world,
                    };
                    resolve.object_id(&cdp, &session, COMMAND_TIMEOUT).await
                }
            })
            .collect();
        let objects: Vec<Option<String>> = futures::stream::iter(resolves).buffered(IN_FLIGHT).collect().await;
        // Those still there, with their DOM ids and objects.
        let present: Vec<(i64, i64, &str)> = considered
            .iter()
            .zip(&pushed.node_ids)
            .zip(&objects)
            .filter_map(|((&backend, &node_id), object)| Some((backend, node_id, object.as_deref()?)))
            .filter(|(_, node_id, _)| *node_id != 0)
            .collect();
        let match_rules = CallInWorld {
            execution_context_id: world,
            function_declaration: "function (...els) { return __pageImportLooks.candidates(...els); }",
            arguments: present
                .iter()
                .map(|(_, _, object_id)| Argument::Object { object_id })
                .collect(),
            return_by_value: true,
        };
        let masks = self.cdp.send(session, &match_rules, COMMAND_TIMEOUT).await?.value();
        let masks: Vec<u32> = masks.and_then(|m| serde_json::from_value(m).ok()).unwrap_or_default();
        let kinds = format!("__pageImportLooks.kinds({})", serde_json::json!(masks));
        let likes = self.evaluate_in(world, &kinds).await?;
        let likes: Vec<usize> = likes
            .and_then(|l| serde_json::from_value(l).ok())
            .filter(|l: &Vec<usize>| l.len() == masks.len())
            .unwrap_or_else(|| (0..masks.len()).collect());
        Ok(present
            .iter()
            .zip(masks)
            .zip(likes)
            .enumerate()
            .filter(|(_, ((_, mask), _))| *mask != 0)
            .map(|(index, (((backend_node_id, node_id, _), mask), like))| Examined {
                backend_node_id: *backend_node_id,
                node_id: *node_id,
                index,
                like,
                mask,
                states: InteractionState::ALL
                    .iter()
                    .enumerate()
                    .filter(|(bit, _)| mask & (1 << bit) != 0)
                    .map(|(_, state)| *state)
                    .collect(),
            })
            .collect())
    }

    /// Prepares `chunk`'s elements (each read at rest, all under one
    /// style) and asks how they may be forced together (`looks.js`'s
    /// `groups`); then sends every step of every group in order without
    /// waiting between them, and gathers the reads.
    async fn examine_chunk(&self, world: i64, chunk: &[&Examined], reads: &mut Reads) -> Result<(), CdpError> {
        let prepares: Vec<String> = chunk
            .iter()
            .map(|e| format!("__pageImportLooks.prepare({}, {})", e.index, e.mask))
            .collect();
        let indexes: Vec<usize> = chunk.iter().map(|e| e.index).collect();
        let grouping = format!("__pageImportLooks.groups({})", serde_json::json!(indexes));
        let mut steps: Vec<Step<'_>> = prepares.iter().map(|p| self.evaluate_in(world, p)).collect();
        steps.push(self.evaluate_in(world, &grouping));
        let mut answers = send_in_order(steps).await;
        let groups = answers
            .pop()
            .and_then(Result::ok)
            .flatten()
            .and_then(|g| serde_json::from_value(g).ok())
            .and_then(|g| whole(g, chunk.len()))
            .unwrap_or_else(|| (0..chunk.len()).map(|at| vec![at]).collect());
        if let Some(e) = gone(answers) {
            return Err(e);
        }
        tracing::debug!(
            elements = chunk.len(),
            groups = groups.len(),
            "states: a chunk's groups"
        );

        let dones: Vec<String> = chunk
            .iter()
            .map(|e| format!("__pageImportLooks.done({})", e.index))
            .collect();
        // A read names its state's bit: its answer is kept for the
        // elements alike.
        let reads_of: Vec<Vec<(InteractionState, String)>> = chunk
            .iter()
            .map(|e| {
                e.states
                    .iter()
                    .map(|state| {
                        let bit = InteractionState::ALL.iter().position(|s| s == state).unwrap_or(0);
                        (*state, format!("__pageImportLooks.read({}, {bit})", e.index))
                    })
                    .collect()
            })
            .collect();
        let mut steps: Vec<Step<'_>> = Vec::new();
        // Which step's answer is which element's read under which state.
        let mut read_steps = Vec::new();
        // Each force or lift leaves the whole document's style to
        // recalculate (decision 0046), so as few follow one another as can:
        // a group's elements take each state together (a state's forcing
        // replaces the one before), then are read one by one under one
        // style; one lift each after the group's last state; what the lift
        // started is finished at the next group's first read rather than
        // by a read of its own (decision 0051).
        for group in &groups {
            for state in InteractionState::ALL {
                let under: Vec<usize> = group
                    .iter()
                    .copied()
                    .filter(|&at| chunk[at].states.contains(&state))
                    .collect();
                for &at in &under {
                    steps.push(self.force(chunk[at].node_id, forced(state)));
                }
                if under.len() > 1 {
                    let indexes: Vec<usize> = under.iter().map(|&at| chunk[at].index).collect();
                    let settle = format!("__pageImportLooks.settleAll({})", serde_json::json!(indexes));
                    steps.push(self.evaluate_owned(world, settle));
                }
                for &at in &under {
                    let Some((_, read)) = reads_of[at].iter().find(|(s, _)| *s == state) else {
                        continue;
                    };
                    read_steps.push((steps.len(), chunk[at].backend_node_id, state));
                    steps.push(self.evaluate_in(world, read));
                }
            }
            for &at in group {
                steps.push(self.force(chunk[at].node_id, &[]));
                steps.push(self.evaluate_in(world, &dones[at]));
            }
        }
        steps.push(self.evaluate_in(world, "__pageImportLooks.finish()"));
        let mut answers = send_in_order(steps).await;
        for (at, element, state) in read_steps {
            match std::mem::replace(&mut answers[at], Ok(None)) {
                Ok(Some(answer)) => reads.0.push((element, state, answer)),
                Ok(None) => {}
                Err(e) => tracing::debug!(error = %e, "an element's state could not be read"),
            }
        }
        match gone(answers) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn evaluate_in<'a>(&'a self, world: i64, expression: &'a str) -> Step<'a> {
        Box::pin(self.evaluate_value(world, expression))
    }

    fn evaluate_owned(&self, world: i64, expression: String) -> Step<'_> {
        Box::pin(async move { self.evaluate_value(world, &expression).await })
    }

    async fn evaluate_value(&self, world: i64, expression: &str) -> Result<Option<Value>, CdpError> {
        let evaluate = Evaluate {
            expression,
            context_id: Some(world),
            await_promise: false,
            return_by_value: true,
        };
        Ok(self
            .cdp
            .send(Some(&self.session), &evaluate, COMMAND_TIMEOUT)
            .await?
            .value())
    }

    fn force(&self, node_id: i64, classes: &'static [&'static str]) -> Step<'_> {
        Box::pin(async move {
            let force = ForcePseudoState {
                node_id,
                forced_pseudo_classes: classes,
            };
            self.cdp.send(Some(&self.session), &force, COMMAND_TIMEOUT).await?;
            Ok(None)
        })
    }
}

/// Sends `steps` in order, each when first polled (polled once each in
/// order, they are sent in order), and awaits every answer.
async fn send_in_order(mut steps: Vec<Step<'_>>) -> Vec<Result<Option<Value>, CdpError>> {
    for step in steps.iter_mut() {
        let _ = futures::poll!(step.as_mut());
    }
    futures::future::join_all(steps).await
}

/// A step that failed on a browser gone fails the examination.
fn gone(answers: Vec<Result<Option<Value>, CdpError>>) -> Option<CdpError> {
    answers
        .into_iter()
        .filter_map(Result::err)
        .find(|e| matches!(e, CdpError::Closed | CdpError::Timeout { .. }))
}

/// `groups` when it holds each of `0..n` exactly once (what `looks.js`
/// answers), else `None`: an answer the page could have tampered with
/// must not leave an element unforced or forced twice.
fn whole(groups: Vec<Vec<usize>>, n: usize) -> Option<Vec<Vec<usize>>> {
    let mut seen = vec![false; n];
    for &at in groups.iter().flatten() {
        if std::mem::replace(seen.get_mut(at)?, true) {
            return None;
        }
    }
    seen.iter().all(|&s| s).then_some(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_fits_what_is_left_of_the_budget_at_what_elements_cost_so_far() {
        let ms = Duration::from_millis;
        assert_eq!(fits(ms(1500), Duration::ZERO, 0), 1, "the first is one element");
        assert_eq!(fits(ms(1500), ms(100), 1), 15);
        assert_eq!(fits(ms(1400), ms(10), 1), CHUNK, "never more than a chunk");
        assert_eq!(fits(ms(100), ms(600), 4), 1, "at least one, while budget is left");
    }

    #[test]
    fn groups_are_taken_only_when_each_element_is_in_exactly_one() {
        assert_eq!(whole(vec![vec![0, 2], vec![1]], 3), Some(vec![vec![0, 2], vec![1]]));
        assert_eq!(whole(vec![vec![0], vec![1]], 3), None, "one left out");
        assert_eq!(whole(vec![vec![0, 1], vec![1, 2]], 3), None, "one twice");
        assert_eq!(whole(vec![vec![0, 3], vec![1, 2]], 3), None, "one not in the chunk");
        assert_eq!(whole(vec![], 0), Some(vec![]));
    }
}
