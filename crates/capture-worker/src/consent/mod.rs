//! Consent banners (SPEC §14): a page's CMP declined the way a reader
//! declines it, through the CMP's own controls, by DuckDuckGo's
//! autoconsent (`vendor/autoconsent/`, MPL-2.0, pinned; updated by
//! `scripts/update-autoconsent`) in opt-out mode.
//!
//! **Where it runs.** In a JavaScript world of the worker's own
//! ([`WORLD`]) in every frame: `Page.addScriptToEvaluateOnNewDocument`
//! with that world's name on the page's session and on each cross-site
//! frame's, before the frame runs. The page's scripts cannot see it or
//! change what its built-ins do. It talks to the worker over a CDP binding
//! ([`BINDING`], exposed only in that world; `Runtime.bindingCalled`), never
//! by polling.
//!
//! **In two stages** ([`scripts`]): every document gets the light script,
//! which prehides every known CMP's banner from the first paint and looks
//! for the marks a CMP must show ([`rules`]); only a frame that shows one
//! gets autoconsent itself (the engine, with its rules, so that its `init`
//! is answered in the world). A page without a CMP never compiles it.
//!
//! **What the worker does with the messages.** `marks` loads the engine in
//! the world that sent it. `eval` (a rule's snippet that must read the
//! page's own objects, e.g. a CMP's API) is evaluated in the main world of
//! the frame that asked, and answered. `report` (autoconsent's state),
//! `cmpDetected`, `popupFound`, `optOutResult`, `autoconsentDone` and
//! `autoconsentError` are recorded in [`ConsentLog`]; the capture waits
//! while a marked frame's first look for its CMP goes on and for an opt-out
//! under way, each at most [`BUDGET`], then decides the outcome
//! (`Page::consent`).
//!
//! **Only consent.** Rules only: autoconsent's text heuristic is off, so a
//! page whose text says "accept" or "reject" is never clicked or hidden.

mod generic;
mod rules;
mod scripts;

pub use scripts::plan;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use page_import_contract::capture::{ConsentInfo, ConsentOutcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cdp::{CdpError, Command, Connection, Done};
use crate::commands::{AddScriptToEvaluateOnNewDocument, Evaluate, PageEnable, RuntimeEnable};
use crate::protocol::{BindingCalled, ExecutionContextCreated};

/// The name of the worker's world in each frame.
pub const WORLD: &str = "page-import-consent";
/// The binding the world reports on.
pub const BINDING: &str = "__pageImportConsent";
/// How long the rules may take, from the first sign of a CMP (a frame's
/// marks, or a popup found) to the end of its opt-out, then the banner is
/// hidden (SPEC §14 "Cost": 1.5 s over the page without its banner). One
/// deadline per capture: frames that reload, or keep showing a CMP's marks
/// in new documents, never extend it.
pub const BUDGET: Duration = Duration::from_millis(1_500);

/// The longest a declined popup is given to finish closing (a fade), within
/// [`BUDGET`].
const CLOSING: Duration = Duration::from_secs(1);

const BUNDLE: &str = include_str!("../../vendor/autoconsent/autoconsent.playwright.js");
const RULES: &str = include_str!("../../vendor/autoconsent/compact-rules.json");
/// Our rules, in autoconsent's rule syntax, beside its own.
const OUR_RULES: &str = include_str!("../consent_rules.json");
pub const AUTOCONSENT_VERSION: &str = include_str!("../../vendor/autoconsent/VERSION");

/// A message of autoconsent's (the fields the worker reads).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Message {
    /// The light script's: the frame shows a CMP's mark.
    Marks,
    /// autoconsent's state, sent on every change of it.
    Report {
        state: State,
    },
    Init,
    Eval {
        id: String,
        code: String,
    },
    CmpDetected {
        cmp: String,
    },
    PopupFound {
        cmp: String,
    },
    OptOutResult {
        result: bool,
    },
    AutoconsentDone {
        #[serde(rename = "isCosmetic")]
        is_cosmetic: bool,
    },
    AutoconsentError {
        #[serde(default)]
        details: serde_json::Value,
    },
    #[serde(other)]
    Other,
}

/// The part of autoconsent's state the worker reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub lifecycle: String,
    pub find_cmp_attempts: u32,
}

impl State {
    /// Its first look for a CMP is over: nothing found on the first try
    /// (it retries, as a late banner would be found), or a CMP found.
    fn looked(&self) -> bool {
        self.find_cmp_attempts >= 2
            || !matches!(
                self.lifecycle.as_str(),
                "loading" | "initialized" | "waitingForInitResponse" | "started"
            )
    }
}

/// What the CMPs of a page did, as reported, and where each world lives.
#[derive(Debug, Default)]
pub struct ConsentLog {
    /// The first CMP a rule recognized.
    pub cmp: Option<String>,
    /// The CMP whose popup was found open, when, and in which world.
    pub popup: Option<Popup>,
    /// The opt-out's result, once it ended.
    pub opted_out: Option<bool>,
    /// When the opt-out's result came.
    pub ended_at: Option<Instant>,
    /// autoconsent is done: `true` when the rule only hid the popup
    /// (a cosmetic rule).
    pub done_cosmetic: Option<bool>,
    /// Each world's execution context: its frame, per session.
    worlds: HashMap<(String, i64), String>,
    /// Each frame's main-world execution context, per session.
    main_worlds: HashMap<(String, String), i64>,
    /// The worlds whose frame showed a CMP's marks (the engine was loaded
    /// there), and when.
    marked: HashMap<(String, i64), Instant>,
    /// The marked worlds whose autoconsent ended its first look for a CMP.
    looked: HashSet<(String, i64)>,
    /// When the capture last stopped waiting for a marked frame's look.
    waited_until: Option<Instant>,
    /// Worlds gone (`Runtime.executionContextDestroyed`, `…Cleared`):
    /// never waited for or asked again.
    destroyed: HashSet<(String, i64)>,
    /// What the long tail's looks found and did, in all.
    long_tail: generic::Scan,
    /// The time those looks took when they found a banner.
    long_tail_spent: Duration,
}

#[derive(Debug, Clone)]
pub struct Popup {
    pub cmp: String,
    pub found_at: Instant,
    pub session: String,
    pub context: i64,
}

impl ConsentLog {
    /// Records a message from the world `context` of `session`.
    pub fn record(&mut self, session: &str, context: i64, message: &Message) {
        match message {
            Message::CmpDetected { cmp } => {
                self.cmp.get_or_insert_with(|| cmp.clone());
            }
            Message::PopupFound { cmp } => {
                self.cmp.get_or_insert_with(|| cmp.clone());
                self.popup.get_or_insert_with(|| Popup {
                    cmp: cmp.clone(),
                    found_at: Instant::now(),
                    session: session.to_owned(),
                    context,
                });
            }
            Message::OptOutResult { result, .. } => {
                self.opted_out = Some(*result);
                self.ended_at.get_or_insert_with(Instant::now);
            }
            Message::AutoconsentDone { is_cosmetic, .. } => self.done_cosmetic = Some(*is_cosmetic),
            Message::Marks => {
                self.marked
                    .entry((session.to_owned(), context))
                    .or_insert_with(Instant::now);
            }
            Message::Report { state } => {
                if state.looked() {
                    self.looked.insert((session.to_owned(), context));
                }
            }
            Message::Init | Message::Eval { .. } | Message::AutoconsentError { .. } | Message::Other => {}
        }
    }

    /// A new execution context of `session`: the worker's world (by its
    /// name) or a frame's main world.
    pub fn context_created(&mut self, session: &str, id: i64, name: &str, frame_id: &str, is_default: bool) {
        if name == WORLD {
            self.worlds.insert((session.to_owned(), id), frame_id.to_owned());
        } else if is_default {
            self.main_worlds.insert((session.to_owned(), frame_id.to_owned()), id);
        }
    }

    /// A world is gone: forgotten, and never waited for.
    pub fn context_destroyed(&mut self, session: &str, id: i64) {
        let world = (session.to_owned(), id);
        self.worlds.remove(&world);
        self.main_worlds.retain(|(s, _), main| !(s == session && *main == id));
        self.destroyed.insert(world);
    }

    /// Every world of `session` is gone (its target navigated).
    pub fn contexts_cleared(&mut self, session: &str) {
        let gone: Vec<_> = self.worlds.keys().filter(|(s, _)| s == session).cloned().collect();
        for (s, id) in gone {
            self.context_destroyed(&s, id);
        }
        self.main_worlds.retain(|(s, _), _| s != session);
    }

    /// The capture's one consent deadline: [`BUDGET`] after the first sign
    /// of a CMP; none before one.
    fn deadline(&self) -> Option<Instant> {
        let first_mark = self.marked.values().min().copied();
        let popup_at = self.popup.as_ref().map(|p| p.found_at);
        first_mark.into_iter().chain(popup_at).min().map(|first| first + BUDGET)
    }

    /// The worker worlds whose frame has shown no CMP's marks yet.
    fn unmarked_worlds(&self) -> Vec<(String, i64)> {
        self.worlds
            .keys()
            .filter(|w| !self.marked.contains_key(*w))
            .cloned()
            .collect()
    }

    /// Every worker world seen, with its session.
    pub fn worlds(&self) -> Vec<(String, i64)> {
        self.worlds.keys().cloned().collect()
    }

    /// The main world of the frame whose worker world is `context`.
    pub fn main_world_of(&self, session: &str, context: i64) -> Option<i64> {
        let frame = self.worlds.get(&(session.to_owned(), context))?;
        self.main_worlds.get(&(session.to_owned(), frame.clone())).copied()
    }

    /// The time the banner cost: from the first CMP's marks (or its popup)
    /// to the opt-out's result, to the end of the budget, or, without a
    /// popup, to when the capture stopped waiting (asked again later, the
    /// same answer); and the time of the long tail's looks that found a
    /// banner.
    pub fn spent(&self) -> Duration {
        let first_mark = self.marked.values().min().copied();
        let popup_at = self.popup.as_ref().map(|p| p.found_at);
        let Some(start) = first_mark.into_iter().chain(popup_at).min() else {
            return self.long_tail_spent;
        };
        let end = match popup_at {
            Some(_) => self.ended_at.unwrap_or(start + BUDGET),
            None => self.waited_until.unwrap_or(start),
        };
        end.min(Instant::now()).saturating_duration_since(start) + self.long_tail_spent
    }

    /// The outcome of the long tail's looks so far.
    fn long_tail_outcome(&self) -> ConsentOutcome {
        match self.long_tail {
            generic::Scan { hidden, .. } if hidden > 0 => ConsentOutcome::Hidden,
            generic::Scan { pressed, .. } if pressed > 0 => ConsentOutcome::Declined,
            _ => ConsentOutcome::None,
        }
    }

    /// Whether the capture should wait for a frame that showed a CMP's
    /// marks: its autoconsent has not ended its first look, no popup was
    /// found yet, within the budget from its marks.
    pub fn looking(&self, now: Instant) -> bool {
        self.popup.is_none()
            && self.deadline().is_some_and(|deadline| now < deadline)
            && self
                .marked
                .keys()
                .any(|world| !self.looked.contains(world) && !self.destroyed.contains(world))
    }

    /// Whether the capture should wait: a popup was found and its opt-out
    /// has not ended, within the budget.
    pub fn opting_out(&self, now: Instant) -> bool {
        self.popup.is_some() && self.opted_out.is_none() && self.deadline().is_some_and(|deadline| now < deadline)
    }
}

/// One page's consent handling: what its worlds reported, shared by the
/// page's event tasks (one per session) and the capture's steps.
#[derive(Debug, Clone, Default)]
pub struct Consent {
    log: Arc<Mutex<ConsentLog>>,
}

impl Consent {
    /// Sets up the worker's world on `session` (the page's, or a frame's
    /// while it is paused): page and runtime events on (Chromium makes a
    /// named world for `addScriptToEvaluateOnNewDocument` only on a session
    /// with the page domain on: without it a cross-site frame's world never
    /// appeared; the binding reports through runtime events), the binding,
    /// and the script for every new document.
    pub async fn install(cdp: &Connection, session: &str, timeout: Duration) -> Result<(), CdpError> {
        let session = Some(session);
        cdp.send(session, &PageEnable {}, timeout).await?;
        cdp.send(session, &RuntimeEnable {}, timeout).await?;
        cdp.send(
            session,
            &AddBinding {
                name: BINDING,
                execution_context_name: WORLD,
            },
            timeout,
        )
        .await?;
        cdp.send(
            session,
            &AddScriptToEvaluateOnNewDocument {
                source: scripts::light(),
                world_name: Some(WORLD),
            },
            timeout,
        )
        .await?;
        Ok(())
    }

    pub fn log(&self) -> std::sync::MutexGuard<'_, ConsentLog> {
        self.log.lock().expect("consent log lock")
    }

    pub fn context_created(&self, session: &str, created: &ExecutionContextCreated) {
        let context = &created.context;
        // A context of no frame (a worker's) is not the consent world's.
        let Some(aux) = &context.aux_data else { return };
        let Some(frame_id) = aux.frame_id.as_deref() else {
            return;
        };
        let is_default = aux.is_default.unwrap_or_else(|| {
            tracing::debug!(
                context = context.id,
                "a frame's context without isDefault is taken for a world of its own"
            );
            false
        });
        self.log()
            .context_created(session, context.id, &context.name, frame_id, is_default);
    }

    /// A message of a world of `session`: recorded; an `eval` is answered
    /// (on a task of its own: the event loop goes on).
    pub fn binding_called(&self, cdp: &Connection, session: &str, called: &BindingCalled, timeout: Duration) {
        if called.name != BINDING {
            return;
        }
        let message = match serde_json::from_str::<Message>(&called.payload) {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!(error = %e, "the consent world sent a message the worker cannot read");
                return;
            }
        };
        let world = called.execution_context_id;
        tracing::debug!(session, world, ?message, "consent message");
        self.log().record(session, world, &message);
        if let Message::AutoconsentError { details } = &message {
            tracing::debug!(%details, "autoconsent reported an error");
        }
        if let Message::Marks = message {
            let (cdp, session) = (cdp.clone(), session.to_owned());
            tokio::spawn(async move {
                match evaluate(&cdp, &session, world, scripts::engine(), timeout).await {
                    Ok(_) => crate::metrics::consent_engine_loaded(),
                    Err(e) => tracing::warn!(error = %e, "autoconsent could not be loaded in a frame that shows a CMP"),
                }
            });
        }
        if let Message::Eval { id, code } = message {
            let main = self.log().main_world_of(session, world);
            let (cdp, session) = (cdp.clone(), session.to_owned());
            tokio::spawn(async move {
                // A snippet that cannot run (no main world known, it threw)
                // answers false, as autoconsent's own hosts do.
                let result = match main {
                    Some(main) => evaluate(&cdp, &session, main, &code, timeout)
                        .await
                        .unwrap_or_else(|e| {
                            tracing::debug!(error = %e, "an autoconsent snippet did not run; it answers false");
                            Value::Bool(false)
                        }),
                    None => {
                        tracing::debug!(
                            world,
                            "no main world known for an autoconsent snippet; it answers false"
                        );
                        Value::Bool(false)
                    }
                };
                let answer = serde_json::json!({"type": "evalResp", "id": id, "result": result});
                let expression = format!("window.autoconsentReceiveMessage({answer})");
                if let Err(e) = evaluate(&cdp, &session, world, &expression, timeout).await {
                    tracing::debug!(error = %e, "an eval answer did not reach its world (the frame may be gone)");
                }
            });
        }
    }

    /// The banner dealt with: the rules first (waiting while a marked frame
    /// looks for its CMP and while an opt-out is under way, within the one
    /// deadline), then the long tail in every world (a banner no rule
    /// knows, or one a rule recognized and left up).
    pub async fn settle(&self, cdp: &Connection, timeout: Duration) -> ConsentInfo {
        let by_rules = self.rules(cdp, timeout).await;
        self.long_tail(cdp, generic::Mode::Act, timeout).await;
        self.info(by_rules)
    }

    /// The page frozen: any banner shown now (a late one, come after the
    /// last look) is hidden, never pressed, and never half-drawn in the
    /// screenshot. `before` is what the last look decided.
    pub async fn frozen(&self, cdp: &Connection, before: ConsentInfo, timeout: Duration) -> ConsentInfo {
        self.long_tail(cdp, generic::Mode::Hide, timeout).await;
        self.info(before.outcome)
    }

    /// The rules' part: waits, then decides: declined (and the popup really
    /// gone), or hidden (its elements and scroll lock undone here).
    async fn rules(&self, cdp: &Connection, timeout: Duration) -> ConsentOutcome {
        self.look(cdp, timeout).await;
        let mut waited = false;
        loop {
            let waiting = {
                let now = Instant::now();
                let mut log = self.log();
                let looking = log.looking(now);
                waited |= looking;
                let waiting = looking || log.opting_out(now);
                if !waiting && waited {
                    log.waited_until = Some(now);
                }
                waiting
            };
            if !waiting {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let (popup, claims_declined) = {
            let log = self.log();
            let claims = log.opted_out == Some(true) && log.done_cosmetic != Some(true);
            (log.popup.clone(), claims)
        };
        // A closing popup is given up to a second to finish, within the
        // consent deadline (SPEC §14 "Cost").
        let closing = {
            let left = self
                .log()
                .deadline()
                .map(|d| d.saturating_duration_since(Instant::now()));
            left.unwrap_or_default().min(CLOSING)
        };
        let still_up = match (&popup, claims_declined) {
            (Some(popup), true) => evaluate(cdp, &popup.session, popup.context, &scripts::popup_still_up(closing), timeout)
                .await
                .map(|v| v == Value::Bool(true))
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, cmp = %popup.cmp, "whether the declined popup is still up went unanswered; it is taken as gone");
                    false
                }),
            _ => false,
        };
        let outcome = outcome(&self.log(), still_up);
        {
            let log = self.log();
            tracing::debug!(
                cmp = popup.as_ref().map(|p| p.cmp.as_str()),
                opted_out = ?log.opted_out,
                cosmetic = ?log.done_cosmetic,
                still_up,
                ?outcome,
                "the rules' part of consent ended"
            );
        }
        if let (Some(popup), ConsentOutcome::Hidden) = (&popup, outcome) {
            if let Err(e) = evaluate(cdp, &popup.session, popup.context, scripts::HIDE, timeout).await {
                tracing::warn!(error = %e, cmp = %popup.cmp, "the consent popup could not be hidden");
            }
        }
        outcome
    }

    /// The long tail's look in every live world, recorded.
    async fn long_tail(&self, cdp: &Connection, mode: generic::Mode, timeout: Duration) {
        let worlds = self.log().worlds();
        let timeout = timeout.min(generic::LOOK_TIMEOUT);
        let (scan, spent) = generic::look(cdp, &worlds, || self.log().worlds(), mode, timeout).await;
        if scan.found > 0 {
            tracing::debug!(?scan, ?mode, "the long tail found a banner no rule dealt with");
        }
        let mut log = self.log();
        log.long_tail.found += scan.found;
        log.long_tail.pressed += scan.pressed;
        log.long_tail.hidden += scan.hidden;
        log.long_tail_spent += spent;
    }

    /// What the manifest says: the worse of the rules' outcome and the long
    /// tail's (hidden over declined over none); the rule's CMP, else
    /// `generic` when only the long tail found one.
    fn info(&self, by_rules: ConsentOutcome) -> ConsentInfo {
        let log = self.log();
        let by_long_tail = log.long_tail_outcome();
        let rank = |o: ConsentOutcome| match o {
            ConsentOutcome::Hidden => 2,
            ConsentOutcome::Declined => 1,
            _ => 0,
        };
        let outcome = if rank(by_long_tail) > rank(by_rules) {
            by_long_tail
        } else {
            by_rules
        };
        let cmp = log
            .cmp
            .clone()
            .or_else(|| (log.long_tail.found > 0).then(|| "generic".to_owned()));
        ConsentInfo {
            cmp,
            outcome,
            ms: log.spent().as_millis() as u64,
            from: None,
        }
    }

    /// Asks every world not yet marked to look for marks now
    /// ([`scripts::LOOK`]); a world that shows one is marked here (its
    /// report, which loads the engine, may come after the answer).
    async fn look(&self, cdp: &Connection, timeout: Duration) {
        let worlds = self.log().unmarked_worlds();
        // Every world at once: a page keeps the worlds of its frames'
        // earlier documents too, which answer only that they are gone.
        let looks = worlds.iter().map(|(session, world)| async move {
            (
                session,
                *world,
                evaluate(cdp, session, *world, scripts::LOOK, timeout).await,
            )
        });
        for (session, world, looked) in futures::future::join_all(looks).await {
            match looked {
                Ok(Value::Bool(true)) => self.log().record(session, world, &Message::Marks),
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "a world could not look for marks (its frame may be gone)"),
            }
        }
    }

    /// [`Consent::settle`], the last time before the page is frozen: the
    /// rules, then the prehide lifted in every world but the one whose
    /// banner is hidden ([`scripts::LIFT_PREHIDE`]), then the long tail
    /// (which now sees what the prehide kept from it: a banner a rule
    /// recognized but never found open).
    pub async fn finish(&self, cdp: &Connection, timeout: Duration) -> ConsentInfo {
        let by_rules = self.rules(cdp, timeout).await;
        let (worlds, hidden) = {
            let log = self.log();
            let hidden = match (&log.popup, by_rules) {
                (Some(popup), ConsentOutcome::Hidden) => Some((popup.session.clone(), popup.context)),
                _ => None,
            };
            (log.worlds(), hidden)
        };
        let lifts = worlds
            .into_iter()
            .filter(|w| hidden.as_ref() != Some(w))
            .map(|(session, world)| async move {
                if let Err(e) = evaluate(cdp, &session, world, scripts::LIFT_PREHIDE, timeout).await {
                    tracing::debug!(error = %e, "a world's prehide could not be lifted (its frame may be gone)");
                }
            });
        futures::future::join_all(lifts).await;
        self.long_tail(cdp, generic::Mode::Act, timeout).await;
        self.info(by_rules)
    }
}

/// Evaluates `expression` in `context` of `session`, awaiting a promise,
/// by value.
pub(crate) async fn evaluate(
    cdp: &Connection,
    session: &str,
    context: i64,
    expression: &str,
    timeout: Duration,
) -> Result<Value, CdpError> {
    let evaluated = cdp
        .send(
            Some(session),
            &Evaluate {
                expression,
                context_id: Some(context),
                await_promise: true,
                return_by_value: true,
            },
            timeout,
        )
        .await?;
    Ok(evaluated.value().unwrap_or(Value::Null))
}

// ---- The commands of its own.

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AddBinding {
    name: &'static str,
    execution_context_name: &'static str,
}

impl Command for AddBinding {
    const METHOD: &'static str = "Runtime.addBinding";
    type Reply = Done;
}

/// The outcome, once the waiting is over: `still_up` is asked only when
/// the opt-out said it succeeded (its report is not enough: a CMP whose
/// "decline" only turns toggles off can report success with its modal up).
pub fn outcome(log: &ConsentLog, still_up: bool) -> ConsentOutcome {
    match (&log.popup, log.opted_out, log.done_cosmetic) {
        (None, _, _) => ConsentOutcome::None,
        (Some(_), Some(true), Some(false)) | (Some(_), Some(true), None) if !still_up => ConsentOutcome::Declined,
        (Some(_), _, _) => ConsentOutcome::Hidden,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendored_files_read() {
        assert!(serde_json::from_str::<serde_json::Value>(RULES).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(OUR_RULES).unwrap().is_array());
        assert!(AUTOCONSENT_VERSION.trim().split('.').count() == 3);
    }

    #[test]
    fn messages_read_as_autoconsent_sends_them() {
        let read = |s: &str| serde_json::from_str::<Message>(s).unwrap();
        assert!(matches!(read(r#"{"type":"init","url":"x"}"#), Message::Init));
        assert!(
            matches!(read(r#"{"type":"eval","id":"1","code":"!!window.x","snippetId":"EVAL_X"}"#),
            Message::Eval { ref id, ref code } if id == "1" && code == "!!window.x")
        );
        assert!(matches!(read(r#"{"type":"popupFound","cmp":"Klaro","url":"x"}"#),
            Message::PopupFound { ref cmp } if cmp == "Klaro"));
        assert!(matches!(
            read(r#"{"type":"optOutResult","cmp":"K","result":true,"scheduleSelfTest":false,"url":"x"}"#),
            Message::OptOutResult { result: true, .. }
        ));
        assert!(matches!(
            read(r#"{"type":"autoconsentDone","cmp":"K","isCosmetic":true,"url":"x","duration":1,"totalClicks":0}"#),
            Message::AutoconsentDone { is_cosmetic: true, .. }
        ));
        assert!(matches!(
            read(r#"{"type":"report","instanceId":"1","state":{"lifecycle":"started","findCmpAttempts":2,"clicks":0}}"#),
            Message::Report { ref state } if state.looked()
        ));
        assert!(matches!(read(r#"{"type":"marks"}"#), Message::Marks));
        assert!(matches!(
            read(r#"{"type":"selfTestResult","result":true}"#),
            Message::Other
        ));
    }

    #[test]
    fn a_marked_frame_is_waited_for_until_its_first_look_ends() {
        let report = |lifecycle: &str, attempts: u32| Message::Report {
            state: State {
                lifecycle: lifecycle.into(),
                find_cmp_attempts: attempts,
            },
        };
        let mut log = ConsentLog::default();
        assert!(!log.looking(Instant::now()), "no marks, no wait");
        assert_eq!(log.spent(), Duration::ZERO);
        log.record("s", 1, &Message::Marks);
        log.record("s", 2, &Message::Marks);
        assert!(log.looking(Instant::now()));
        assert!(!log.looking(Instant::now() + BUDGET), "the budget ends the wait");
        log.record("s", 1, &report("started", 1));
        log.record("s", 1, &report("started", 2));
        assert!(log.looking(Instant::now()), "world 2 has not looked yet");
        log.record("s", 2, &report("cmpDetected", 1));
        assert!(!log.looking(Instant::now()), "both first looks ended");
        log.waited_until = Some(Instant::now());
        let spent = log.spent();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(log.spent(), spent, "without a popup the cost ends with the wait");

        let mut log = ConsentLog::default();
        log.record("s", 1, &Message::Marks);
        log.record("s", 1, &Message::PopupFound { cmp: "K".into() });
        assert!(!log.looking(Instant::now()), "a popup: the opt-out's wait takes over");
        assert!(log.opting_out(Instant::now()));
    }

    /// A frame that reloads every 40 ms shows a CMP's marks in world after
    /// world: the capture's one deadline still ends the wait 1.5 s after
    /// the first, and a world that is gone is never waited for or asked.
    #[test]
    fn one_deadline_per_capture_whatever_worlds_come_and_go() {
        let mut log = ConsentLog::default();
        log.context_created("s", 1, WORLD, "frame", false);
        log.record("s", 1, &Message::Marks);
        let first = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        log.context_destroyed("s", 1);
        log.context_created("s", 2, WORLD, "frame", false);
        log.record("s", 2, &Message::Marks);
        assert!(log.looking(Instant::now()), "the new world's first look is waited for");
        assert!(
            !log.looking(first + BUDGET + Duration::from_millis(1)),
            "a later world's marks never extend the first one's deadline"
        );
        assert_eq!(
            log.worlds(),
            vec![("s".to_owned(), 2)],
            "the destroyed world is forgotten"
        );
        log.context_destroyed("s", 2);
        assert!(!log.looking(Instant::now()), "no live world is left to wait for");

        let mut log = ConsentLog::default();
        log.context_created("t", 5, WORLD, "a", false);
        log.context_created("t", 6, "", "a", true);
        log.context_created("u", 7, WORLD, "b", false);
        log.contexts_cleared("t");
        assert_eq!(log.worlds(), vec![("u".to_owned(), 7)]);
        assert_eq!(log.main_world_of("t", 5), None);
    }

    #[test]
    fn outcomes_follow_what_the_cmp_did_and_what_the_page_shows() {
        let mut log = ConsentLog::default();
        assert_eq!(outcome(&log, false), ConsentOutcome::None);
        log.record("s", 1, &Message::CmpDetected { cmp: "K".into() });
        assert_eq!(
            outcome(&log, false),
            ConsentOutcome::None,
            "a CMP without an open popup"
        );
        log.record("s", 1, &Message::PopupFound { cmp: "K".into() });
        assert!(log.opting_out(Instant::now()));
        assert!(!log.opting_out(Instant::now() + BUDGET), "the budget ends the wait");
        assert!(log.spent() <= BUDGET);
        assert_eq!(
            outcome(&log, false),
            ConsentOutcome::Hidden,
            "no result in time: hidden"
        );
        log.record("s", 1, &Message::OptOutResult { result: true });
        assert!(!log.opting_out(Instant::now()));
        let spent = log.spent();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(log.spent(), spent, "the cost ends with the opt-out's result");
        log.record("s", 1, &Message::AutoconsentDone { is_cosmetic: false });
        assert_eq!(outcome(&log, false), ConsentOutcome::Declined);
        assert_eq!(
            outcome(&log, true),
            ConsentOutcome::Hidden,
            "declined, but the modal is still up"
        );
        log.done_cosmetic = Some(true);
        assert_eq!(
            outcome(&log, false),
            ConsentOutcome::Hidden,
            "a cosmetic rule only hides"
        );
        log.opted_out = Some(false);
        log.done_cosmetic = None;
        assert_eq!(outcome(&log, false), ConsentOutcome::Hidden);
    }

    #[test]
    fn eval_snippets_go_to_the_main_world_of_the_frame_that_asked() {
        let mut log = ConsentLog::default();
        log.context_created("s", 7, WORLD, "frame-a", false);
        log.context_created("s", 3, "", "frame-a", true);
        log.context_created("s", 9, "", "frame-b", true);
        log.context_created("t", 3, WORLD, "frame-c", false);
        assert_eq!(log.main_world_of("s", 7), Some(3));
        assert_eq!(log.main_world_of("t", 3), None, "frame-c's main world was never seen");
        assert_eq!(log.main_world_of("s", 9), None, "9 is not a worker world");
    }
}
