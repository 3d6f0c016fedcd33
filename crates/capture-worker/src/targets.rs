//! The targets of a page: its own session, and every frame and worker
//! attached below it, their events fed into the page's [`PageState`].
//!
//! Cross-site frames render in processes of their own (site isolation).
//! Each is attached through `Target.setAutoAttach` (flattened, paused until
//! the worker has enabled its network events and set the same auto-attach
//! on it, so nested frames are found too), and its events feed the same
//! [`PageState`]: network idle waits for every frame, and the frame is
//! snapshotted through its own session.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cdp::{CdpError, Connection, Done};

use crate::commands::{HandleJavaScriptDialog, NetworkEnable, RunIfWaitingForDebugger, SetAutoAttach};
use crate::consent::Consent;
use crate::emulation::{self, Emulation};
use crate::page_state::PageState;
use crate::protocol::{AttachedToTarget, PageEvent};

/// Response bodies Chromium keeps for `Network.getResponseBody`.
const NETWORK_BUFFERS: NetworkEnable = NetworkEnable {
    max_total_buffer_size: 256 * 1024 * 1024,
    max_resource_buffer_size: 64 * 1024 * 1024,
};

/// What every target of the page is set up with.
#[derive(Clone)]
pub struct Setup {
    pub emulation: Arc<Emulation>,
    pub consent: Option<Consent>,
    /// How long each command may take.
    pub timeout: Duration,
}

/// Feeds `session`'s events into `state` and sets up every target attached
/// below it ([`attach`]).
pub fn watch(cdp: &Connection, session: &str, main: bool, state: &Arc<Mutex<PageState>>, setup: &Setup) {
    let mut events = cdp.subscribe(session);
    let (cdp, session, state, setup) = (cdp.clone(), session.to_owned(), state.clone(), setup.clone());
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            // Read once: what the worker acts on here, then the bookkeeping.
            let Some(typed) = PageEvent::read(&event) else {
                continue;
            };
            match (&typed, &setup.consent) {
                (PageEvent::AttachedToTarget(attached), _) => attach(&cdp, attached, &state, &setup),
                (PageEvent::BindingCalled(called), Some(consent)) => {
                    consent.binding_called(&cdp, &session, called, setup.timeout)
                }
                (PageEvent::ExecutionContextCreated(created), Some(consent)) => {
                    consent.context_created(&session, created)
                }
                (PageEvent::ExecutionContextDestroyed(destroyed), Some(consent)) => consent
                    .log()
                    .context_destroyed(&session, destroyed.execution_context_id),
                (PageEvent::ExecutionContextsCleared, Some(consent)) => consent.log().contexts_cleared(&session),
                (PageEvent::DetachedFromTarget(detached), consent) => {
                    cdp.forget_session(&detached.session_id);
                    // Its worlds went with it (a CMP's frame removed after
                    // the choice): never waited for or asked again.
                    if let Some(consent) = consent {
                        consent.log().contexts_cleared(&detached.session_id);
                    }
                }
                (PageEvent::DialogOpening(_), _) => dismiss_dialog(&cdp, &session, setup.timeout),
                _ => {}
            }
            state.lock().expect("page state lock").record(&session, main, typed);
        }
    });
}

/// Network events on, with the response bodies kept.
pub async fn enable_network(cdp: &Connection, session: &str, timeout: Duration) -> Result<Done, CdpError> {
    cdp.send(Some(session), &NETWORK_BUFFERS, timeout).await
}

/// Attaches to the frames and workers below `session` as they appear, each
/// paused until it is set up.
pub async fn auto_attach(cdp: &Connection, session: &str, timeout: Duration) -> Result<Done, CdpError> {
    let auto_attach = SetAutoAttach {
        auto_attach: true,
        wait_for_debugger_on_start: true,
        flatten: true,
        filter: None,
    };
    cdp.send(Some(session), &auto_attach, timeout).await
}

/// A target attached below a watched session (or, for a shared worker, in
/// the page's browser context: `browser::Contexts`), set up while it is paused,
/// then run: a cross-site frame gets its network events and the page's
/// reader, consent and auto-attach (so its own frames are found); a worker
/// (dedicated, shared or service) gets its network events (its requests
/// are the page's too: egress, network idle) and the page's reader (SPEC
/// §14 "Everything the page runs is the same reader"). Anything else just
/// runs.
pub fn attach(cdp: &Connection, attached: &AttachedToTarget, state: &Arc<Mutex<PageState>>, setup: &Setup) {
    let child = attached.session_id.clone();
    let kind = attached.target_info.kind.as_str();
    let frame = kind == "iframe";
    let worker = kind.ends_with("worker");
    if frame || worker {
        watch(cdp, &child, false, state, setup);
    }
    let (cdp, setup, kind) = (cdp.clone(), setup.clone(), kind.to_owned());
    tokio::spawn(async move {
        let timeout = setup.timeout;
        let run = || cdp.send(Some(&child), &RunIfWaitingForDebugger {}, timeout);
        if worker {
            // A service worker answers `Network.enable` only once it runs:
            // asked in turn, it stalled its registration for the whole
            // command timeout (10 s). So a worker is asked everything at
            // once; its commands reach it in order, before it runs.
            let reader = setup.emulation.apply(&cdp, &child, emulation::Target::Worker, timeout);
            let (network, reader, ran) = tokio::join!(enable_network(&cdp, &child, timeout), reader, run());
            set_up("Network.enable", network);
            if let Err(error) = reader {
                tracing::warn!(%error, %kind, "a worker's emulation was refused (it may be gone)");
            }
            set_up("Runtime.runIfWaitingForDebugger", ran);
            return;
        }
        if frame {
            set_up("Network.enable", enable_network(&cdp, &child, timeout).await);
            set_up_frame(&cdp, &child, &setup).await;
        }
        set_up("Runtime.runIfWaitingForDebugger", run().await);
    });
}

/// A cross-site frame, still paused, sees the page's reader (SPEC §14) from
/// its first byte, has a CMP in it declined there, and its own frames
/// attached.
async fn set_up_frame(cdp: &Connection, child: &str, setup: &Setup) {
    if let Err(e) = setup
        .emulation
        .apply(cdp, child, emulation::Target::Frame, setup.timeout)
        .await
    {
        tracing::warn!(error = %e, "a frame's emulation was refused (the frame may be gone)");
    }
    if setup.consent.is_some() {
        if let Err(e) = Consent::install(cdp, child, setup.timeout).await {
            tracing::warn!(error = %e, "a frame's consent world was refused (the frame may be gone)");
        }
    }
    set_up("Target.setAutoAttach", auto_attach(cdp, child, setup.timeout).await);
}

/// A set-up step of an attached target, said when it failed: the target
/// is usually gone already (a frame removed while it loaded).
fn set_up(step: &'static str, done: Result<Done, CdpError>) {
    if let Err(error) = done {
        tracing::debug!(step, %error, "an attached target was not set up (it may be gone)");
    }
}

/// Answered at once (SPEC §10): a dialog left open would hold the page's
/// script, and its load, until the deadline. Dismissed: `confirm` is
/// false, `prompt` null.
fn dismiss_dialog(cdp: &Connection, session: &str, timeout: Duration) {
    let (cdp, session) = (cdp.clone(), session.to_owned());
    tokio::spawn(async move {
        let dismiss = HandleJavaScriptDialog { accept: false };
        if let Err(error) = cdp.send(Some(&session), &dismiss, timeout).await {
            tracing::debug!(%error, "a JavaScript dialog could not be dismissed (it may have closed)");
        }
    });
}
