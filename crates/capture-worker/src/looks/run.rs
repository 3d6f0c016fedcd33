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
        let mut to_examine = self.to_examine(world, considered).await?;
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
        self.mirror(world, &alike, reads).await?;
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

    /// Sends every step of `chunk`'s elements in order without waiting
    /// between them, then gathers the reads.
    async fn examine_chunk(&self, world: i64, chunk: &[&Examined], reads: &mut Reads) -> Result<(), CdpError> {
        let calls: Vec<[String; 2]> = chunk
            .iter()
            .map(|e| {
                [
                    format!("__pageImportLooks.prepare({}, {})", e.index, e.mask),
                    format!("__pageImportLooks.done({})", e.index),
                ]
            })
            .collect();
        // A read names its state's bit: its answer is kept for the
        // elements alike.
        let reads_of: Vec<Vec<String>> = chunk
            .iter()
            .map(|e| {
                e.states
                    .iter()
                    .map(|state| {
                        let bit = InteractionState::ALL.iter().position(|s| s == state).unwrap_or(0);
                        format!("__pageImportLooks.read({}, {bit})", e.index)
                    })
                    .collect()
            })
            .collect();
        let mut steps: Vec<Step<'_>> = Vec::new();
        // Each force or lift leaves the whole document's style to
        // recalculate (decision 0046), so as few follow one another as can:
        // the chunk's elements are read at rest first, all under one style;
        // then each element's states follow one another with no lift
        // between them (a state's forcing replaces the one before), one
        // lift after its last, and what the lift started is finished at the
        // next element's first read rather than by a read of its own.
        for [prepare, ..] in &calls {
            steps.push(self.evaluate_in(world, prepare));
        }
        // Which step's answer is which element's read under which state.
        let mut read_steps = Vec::new();
        for ((element, [_, done]), element_reads) in chunk.iter().zip(&calls).zip(&reads_of) {
            for (state, read) in element.states.iter().zip(element_reads) {
                steps.push(self.force(element.node_id, forced(*state)));
                read_steps.push((steps.len(), element.backend_node_id, *state));
                steps.push(self.evaluate_in(world, read));
            }
            if !element.states.is_empty() {
                steps.push(self.force(element.node_id, &[]));
            }
            steps.push(self.evaluate_in(world, done));
        }
        steps.push(self.evaluate_in(world, "__pageImportLooks.finish()"));
        // Each step is sent when first polled: polled once each in order,
        // they are sent in order.
        for step in steps.iter_mut() {
            let _ = futures::poll!(step.as_mut());
        }
        let mut answers = futures::future::join_all(steps).await;
        for (at, element, state) in read_steps {
            match std::mem::replace(&mut answers[at], Ok(None)) {
                Ok(Some(answer)) => reads.0.push((element, state, answer)),
                Ok(None) => {}
                Err(e) => tracing::debug!(error = %e, "an element's state could not be read"),
            }
        }
        // A step that failed on a browser gone fails the examination.
        match answers.into_iter().find_map(Result::err) {
            Some(e @ (CdpError::Closed | CdpError::Timeout { .. })) => Err(e),
            _ => Ok(()),
        }
    }

    fn evaluate_in<'a>(&'a self, world: i64, expression: &'a str) -> Step<'a> {
        Box::pin(async move {
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
        })
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
}
