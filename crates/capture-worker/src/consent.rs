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
//! by polling. The rules (250 KiB) are part of the script, so its `init`
//! is answered in the world itself; the worker hears every message.
//!
//! **What the worker does with the messages.** `eval` (a rule's snippet
//! that must read the page's own objects, e.g. a CMP's API) is evaluated in
//! the main world of the frame that asked, and answered. `cmpDetected`,
//! `popupFound`, `optOutResult`, `autoconsentDone` and `autoconsentError`
//! are recorded in [`ConsentLog`]; the capture waits for an opt-out under
//! way, at most [`BUDGET`] after its popup was found, then decides the
//! outcome (`Page::consent`).
//!
//! **Only consent.** Rules only: autoconsent's text heuristic is off, so a
//! page whose text says "accept" or "reject" is never clicked or hidden.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use page_import_contract::capture::{ConsentInfo, ConsentOutcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cdp::{CdpError, Command, Connection, Done};
use crate::protocol::{BindingCalled, Evaluated, ExecutionContextCreated};

/// The name of the worker's world in each frame.
pub const WORLD: &str = "page-import-consent";
/// The binding the world reports on.
pub const BINDING: &str = "__pageImportConsent";
/// How long an opt-out may take once its popup was found; then the banner
/// is hidden (SPEC §14 "Cost": 1.5 s over the page without its banner).
pub const BUDGET: Duration = Duration::from_millis(1_500);

const BUNDLE: &str = include_str!("../vendor/autoconsent/autoconsent.playwright.js");
const RULES: &str = include_str!("../vendor/autoconsent/compact-rules.json");
/// Our rules, in autoconsent's rule syntax, beside its own.
const OUR_RULES: &str = include_str!("consent_rules.json");
pub const AUTOCONSENT_VERSION: &str = include_str!("../vendor/autoconsent/VERSION");

/// Where the bundle makes its one instance: kept on the world's `window`
/// so that the worker can ask it, after the opt-out, whether the popup is
/// still up, and hide it if it is.
const INSTANCE: &str = "const consent = new AutoConsent(";
const INSTANCE_KEPT: &str = "const consent = window.__autoconsent = new AutoConsent(";

/// autoconsent's configuration: opt out, prehide from the first paint (kept
/// for as long as a capture may wait), rules only (no text heuristic), no
/// logs.
const CONFIG: &str = r#"{
  "enabled": true, "autoAction": "optOut", "disabledCmps": [],
  "enablePrehide": true, "prehideTimeout": 30000,
  "enableCosmeticRules": true, "enableGeneratedRules": true, "detectRetries": 20,
  "isMainWorld": false, "enableHeuristicDetection": false, "heuristicMode": "off",
  "enablePopupMutationObserver": false, "visualTest": false, "performanceLoggingEnabled": false,
  "heuristicPopupSearchTimeout": 0,
  "logs": {"lifecycle": false, "rulesteps": false, "detectionsteps": false, "evals": false,
           "errors": false, "messages": false, "waits": false}
}"#;

/// The script of the worker's world: the bridge, then autoconsent.
pub fn script() -> &'static str {
    static SCRIPT: LazyLock<String> = LazyLock::new(|| {
        assert!(
            BUNDLE.contains(INSTANCE),
            "autoconsent no longer makes its instance as expected"
        );
        let bundle = BUNDLE.replacen(INSTANCE, INSTANCE_KEPT, 1);
        format!(
            r#"(() => {{
  const report = window.{BINDING};
  if (typeof report !== "function") return;
  const config = {CONFIG};
  const rules = {{ autoconsent: {OUR_RULES}, compact: {RULES} }};
  window.autoconsentSendMessage = (message) => {{
    if (message && message.type === "init") {{
      setTimeout(() => window.autoconsentReceiveMessage({{ type: "initResp", config, rules }}), 0);
    }}
    report(JSON.stringify(message));
    return Promise.resolve();
  }};
}})();
{bundle}"#
        )
    });
    &SCRIPT
}

/// In the world, after the opt-out: whether the CMP's popup is still up
/// (autoconsent's own check of its rule, bounded).
pub const POPUP_STILL_UP: &str = r#"(async () => {
  const cmp = window.__autoconsent && window.__autoconsent.foundCmp;
  if (!cmp) return false;
  const up = cmp.detectPopup().then((v) => !!v, () => false);
  return Promise.race([up, new Promise((r) => setTimeout(() => r(false), 300))]);
})()"#;

/// In the world: hides the CMP's elements (its rule's own selectors, and
/// every known CMP's prehide selectors) and releases a scroll lock left on
/// `html` or `body`. True when the frame had a CMP to hide.
pub const HIDE: &str = r#"(() => {
  const ac = window.__autoconsent;
  const cmp = ac && ac.foundCmp;
  if (!cmp) return false;
  const selectors = (cmp.prehideSelectors || []).concat(cmp.rule && cmp.rule.prehideSelectors || []);
  if (selectors.length) ac.domActions.hide(selectors.join(","), "display");
  ac.prehideElements();
  for (const el of [document.documentElement, document.body]) {
    if (!el) continue;
    const style = getComputedStyle(el);
    if (style.overflow === "hidden" || style.overflowY === "hidden") {
      el.style.setProperty("overflow", "visible", "important");
    }
  }
  return true;
})()"#;

/// In the world, once the capture is about to freeze the page: the
/// prehide lifted. autoconsent keeps it while it still looks for a CMP
/// (20 tries, 500 ms apart) or for `prehideTimeout`; on a page without a
/// banner, that would capture any element a rule's prehide selector
/// matches at `opacity: 0`, and the prehide's own `<style>` as the page's.
pub const LIFT_PREHIDE: &str = r#"(() => {
  const ac = window.__autoconsent;
  if (!ac) return false;
  ac.undoPrehide();
  return true;
})()"#;

/// A message of autoconsent's (the fields the worker reads).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Message {
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

    /// Every worker world seen, with its session.
    pub fn worlds(&self) -> Vec<(String, i64)> {
        self.worlds.keys().cloned().collect()
    }

    /// The main world of the frame whose worker world is `context`.
    pub fn main_world_of(&self, session: &str, context: i64) -> Option<i64> {
        let frame = self.worlds.get(&(session.to_owned(), context))?;
        self.main_worlds.get(&(session.to_owned(), frame.clone())).copied()
    }

    /// The time the banner cost: from its popup's detection to the
    /// opt-out's result, or to the end of the budget (asked again later,
    /// the same answer).
    pub fn spent(&self) -> Duration {
        let Some(popup) = &self.popup else {
            return Duration::ZERO;
        };
        let end = self.ended_at.unwrap_or(popup.found_at + BUDGET).min(Instant::now());
        end.saturating_duration_since(popup.found_at)
    }

    /// Whether the capture should wait: a popup was found and its opt-out
    /// has not ended, within the budget.
    pub fn opting_out(&self, now: Instant) -> bool {
        match &self.popup {
            Some(popup) => self.opted_out.is_none() && now < popup.found_at + BUDGET,
            None => false,
        }
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
                source: script(),
                world_name: WORLD,
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
        let Some(aux) = &context.aux_data else { return };
        let Some(frame_id) = aux.frame_id.as_deref() else {
            return;
        };
        self.log().context_created(
            session,
            context.id,
            &context.name,
            frame_id,
            aux.is_default.unwrap_or(false),
        );
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
        if let Message::Eval { id, code } = message {
            let main = self.log().main_world_of(session, world);
            let (cdp, session) = (cdp.clone(), session.to_owned());
            tokio::spawn(async move {
                // A snippet that cannot run (no main world known, it threw)
                // answers false, as autoconsent's own hosts do.
                let result = match main {
                    Some(main) => evaluate(&cdp, &session, main, &code, timeout)
                        .await
                        .unwrap_or(Value::Bool(false)),
                    None => Value::Bool(false),
                };
                let answer = serde_json::json!({"type": "evalResp", "id": id, "result": result});
                let expression = format!("window.autoconsentReceiveMessage({answer})");
                if let Err(e) = evaluate(&cdp, &session, world, &expression, timeout).await {
                    tracing::debug!(error = %e, "an eval answer did not reach its world (the frame may be gone)");
                }
            });
        }
    }

    /// Waits while an opt-out is under way (at most [`BUDGET`] after its
    /// popup was found), then decides: declined (and the popup really
    /// gone), or hidden (its elements and scroll lock undone here).
    pub async fn settle(&self, cdp: &Connection, timeout: Duration) -> ConsentInfo {
        while self.log().opting_out(Instant::now()) {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let (popup, claims_declined) = {
            let log = self.log();
            let claims = log.opted_out == Some(true) && log.done_cosmetic != Some(true);
            (log.popup.clone(), claims)
        };
        let still_up = match (&popup, claims_declined) {
            (Some(popup), true) => evaluate(cdp, &popup.session, popup.context, POPUP_STILL_UP, timeout)
                .await
                .map(|v| v == Value::Bool(true))
                .unwrap_or(false),
            _ => false,
        };
        let (cmp, outcome) = {
            let log = self.log();
            (log.cmp.clone(), outcome(&log, still_up))
        };
        if let (Some(popup), ConsentOutcome::Hidden) = (&popup, outcome) {
            if let Err(e) = evaluate(cdp, &popup.session, popup.context, HIDE, timeout).await {
                tracing::warn!(error = %e, cmp = %popup.cmp, "the consent popup could not be hidden");
            }
        }
        let ms = self.log().spent().as_millis() as u64;
        ConsentInfo { cmp, outcome, ms }
    }

    /// [`Consent::settle`], the last time: then the prehide is lifted in
    /// every world but the one whose banner is hidden ([`LIFT_PREHIDE`]).
    pub async fn finish(&self, cdp: &Connection, timeout: Duration) -> ConsentInfo {
        let info = self.settle(cdp, timeout).await;
        let (worlds, hidden) = {
            let log = self.log();
            let hidden = match (&log.popup, info.outcome) {
                (Some(popup), ConsentOutcome::Hidden) => Some((popup.session.clone(), popup.context)),
                _ => None,
            };
            (log.worlds(), hidden)
        };
        for (session, world) in worlds {
            if hidden.as_ref() == Some(&(session.clone(), world)) {
                continue;
            }
            if let Err(e) = evaluate(cdp, &session, world, LIFT_PREHIDE, timeout).await {
                tracing::debug!(error = %e, "a world's prehide could not be lifted (its frame may be gone)");
            }
        }
        info
    }
}

/// Evaluates `expression` in `context` of `session`, awaiting a promise,
/// by value.
async fn evaluate(
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
                context_id: context,
                await_promise: true,
                return_by_value: true,
            },
            timeout,
        )
        .await?;
    Ok(evaluated.value().unwrap_or(Value::Null))
}

// ---- The commands.

#[derive(Serialize)]
struct PageEnable {}

impl Command for PageEnable {
    const METHOD: &'static str = "Page.enable";
    type Reply = Done;
}

#[derive(Serialize)]
struct RuntimeEnable {}

impl Command for RuntimeEnable {
    const METHOD: &'static str = "Runtime.enable";
    type Reply = Done;
}

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

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AddScriptToEvaluateOnNewDocument {
    source: &'static str,
    world_name: &'static str,
}

#[derive(Deserialize)]
struct ScriptAdded {}

impl Command for AddScriptToEvaluateOnNewDocument {
    const METHOD: &'static str = "Page.addScriptToEvaluateOnNewDocument";
    type Reply = ScriptAdded;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Evaluate<'a> {
    expression: &'a str,
    context_id: i64,
    await_promise: bool,
    return_by_value: bool,
}

impl Command for Evaluate<'_> {
    const METHOD: &'static str = "Runtime.evaluate";
    type Reply = Evaluated;
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
    fn the_script_keeps_autoconsents_instance_and_carries_the_rules() {
        let script = script();
        assert!(
            script.contains(INSTANCE_KEPT),
            "the bundle's instance is kept on the world's window"
        );
        assert!(script.contains(r#""autoAction": "optOut""#));
        assert!(script.contains(r#""enableHeuristicDetection": false"#));
        assert!(serde_json::from_str::<serde_json::Value>(RULES).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(OUR_RULES).unwrap().is_array());
        assert!(serde_json::from_str::<serde_json::Value>(CONFIG).is_ok());
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
        assert!(matches!(read(r#"{"type":"report","instanceId":"1"}"#), Message::Other));
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
