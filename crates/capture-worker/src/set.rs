//! An import set's message (SPEC §15 "Capturing a set"): its members
//! captured one after another in one browser context ([`Room`]) and one tab,
//! navigated again for each with its own device, scheme and viewport
//! (a fresh tab would start a new renderer each time), so that what
//! the first loaded is in the HTTP cache for the next and the CMP's stored
//! choice holds for them all. Each member is stored and called back on its
//! own (its identity, nonce, manifest and prefix), stored and called back
//! while the next member is captured. A member that fails fails alone.
//!
//! The message is deleted once every member was stored and every callback
//! got a final answer. A member whose storage failed leaves the message to
//! come back ([`Disposition::Later`]); a browser that crashed, or a worker
//! told to stop, ends the set after the member under way and hands the
//! message back at once ([`Disposition::HandBack`]): the next delivery
//! finds what the members before stored and repeats their callbacks, and
//! captures the rest (decision 0048).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::{SinkExt as _, StreamExt as _};
use page_import_contract::callback::CallbackBody;
use page_import_contract::capture::{ConsentInfo, ConsentOutcome};
use page_import_contract::job::{CaptureJob, SetJob};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::browser::Browser;
use crate::callback::Answer;
use crate::capture::{self, Captured};
use crate::failure::{Cause, Failure};
use crate::job::{Disposition, Worker};
use crate::room::Room;

/// Callbacks of earlier members retried at once while later members are
/// captured.
const CALLBACKS_AT_ONCE: usize = 4;

/// A member taken: what an earlier delivery stored, or what its capture
/// gave (stored while the next member is captured), in its own span.
struct Taken {
    index: usize,
    what: What,
    span: tracing::Span,
}

enum What {
    /// An earlier delivery's callback, repeated.
    Earlier(CallbackBody),
    Captured(Box<Result<Captured, Failure>>, Duration),
}

impl What {
    /// The browser crashed under this member's capture.
    fn crashed(&self) -> bool {
        match self {
            Self::Captured(outcome, _) => matches!(&**outcome, Err(f) if f.cause == Cause::BrowserCrashed),
            Self::Earlier(_) => false,
        }
    }
}

/// A member stored, its callback to send in its own span.
struct Stored {
    index: usize,
    body: CallbackBody,
    span: tracing::Span,
}

/// How far the members got in this delivery.
#[derive(Debug, PartialEq, Eq)]
enum Progress {
    /// Every member was stored.
    Whole,
    /// A member's artifacts could not be stored: the message comes back.
    StorageFailed,
    /// The browser crashed or the worker is stopping: the members after
    /// the one under way were not started.
    Stopped,
}

/// The set's browser and room, opened for the first member that is
/// captured (a redelivered set whose members were all stored opens none).
type Opened = Option<(Arc<Browser>, Room)>;

impl Worker {
    /// Captures, stores and calls back every member in order (see the
    /// module): member k+1 is captured while member k is stored and
    /// called back. Stops after the member under way once `shutdown` is
    /// cancelled.
    pub async fn handle_set(&self, set: &SetJob<'_>, shutdown: &CancellationToken) -> Disposition {
        // One member taken ahead of the one being stored, no more: a
        // capture holds its screenshot and snapshot until it is stored.
        let (taken, to_store) = mpsc::channel::<Taken>(0);
        let (stored, to_call_back) = mpsc::unbounded::<Stored>();
        let capturing = self.capture_members(set, taken, shutdown);
        let storing = self.store_members(set, to_store, stored);
        let calling = to_call_back
            .map(|stored| self.call_back(&set.jobs[stored.index], stored))
            .buffer_unordered(CALLBACKS_AT_ONCE)
            .collect::<Vec<Answer>>();
        let (captured, stored_all, answers) = tokio::join!(capturing, storing, calling);
        let all_final = answers.iter().all(|answer| answer.is_final());
        let progress = match (captured, stored_all) {
            (Progress::Stopped, _) => Progress::Stopped,
            (_, false) => Progress::StorageFailed,
            (captured, true) => captured,
        };
        tracing::info!(set_id = %set.set_id, ?progress, called_back = answers.len(), all_final, "set ended");
        match progress {
            Progress::Whole if all_final => Disposition::Done,
            Progress::Stopped => Disposition::HandBack,
            _ => Disposition::Later,
        }
    }

    async fn call_back(&self, job: &CaptureJob<'_>, stored: Stored) -> Answer {
        let Stored { body, span, .. } = stored;
        async {
            let answer = self.callbacks.send(&job.callback_url, &body).await;
            tracing::info!(page_import_id = %job.page_import_id, attempt = job.attempt, outcome = ?body.outcome, answer = ?answer, "callback answered");
            answer
        }
        .instrument(span)
        .await
    }

    /// Stores each member taken, in order, and hands its callback on;
    /// whether every one was stored.
    async fn store_members(
        &self,
        set: &SetJob<'_>,
        mut to_store: mpsc::Receiver<Taken>,
        stored: mpsc::UnboundedSender<Stored>,
    ) -> bool {
        let mut all = true;
        while let Some(Taken { index, what, span }) = to_store.next().await {
            let job = &set.jobs[index];
            let body = match what {
                What::Earlier(body) => Ok(body),
                What::Captured(outcome, elapsed) => {
                    self.store_outcome(job, *outcome, elapsed)
                        .instrument(span.clone())
                        .await
                }
            };
            match body {
                // The receiver lives as long as the set.
                Ok(body) => drop(stored.unbounded_send(Stored { index, body, span })),
                Err(e) => {
                    span.in_scope(|| tracing::warn!(page_import_id = %job.page_import_id, attempt = job.attempt, error = %e, "a member's capture left for redelivery"));
                    all = false;
                }
            }
        }
        all
    }

    /// The members in order, each in a span of its own inside the set's,
    /// each handed to `taken` to be stored.
    async fn capture_members(
        &self,
        set: &SetJob<'_>,
        mut taken: mpsc::Sender<Taken>,
        shutdown: &CancellationToken,
    ) -> Progress {
        let mut opened: Opened = None;
        let mut decision: Option<String> = None;
        let mut progress = Progress::Whole;
        // What earlier deliveries stored, looked up for every member at
        // once rather than before each capture.
        let earlier = futures::future::join_all(set.jobs.iter().map(|job| self.earlier_body(job))).await;
        for ((index, job), earlier) in set.jobs.iter().enumerate().zip(earlier) {
            if shutdown.is_cancelled() {
                tracing::info!(set_id = %set.set_id, left = set.jobs.len() - index, "stopping: the set's other members are handed back");
                progress = Progress::Stopped;
                break;
            }
            let span = tracing::info_span!("capture", page_import_id = %job.page_import_id, attempt = job.attempt, member = index);
            let left = (set.jobs.len() - index) as u32;
            let what = match earlier {
                Ok(Some(body)) => Ok(What::Earlier(body)),
                Ok(None) => Ok(self
                    .member(job, &mut opened, &mut decision, left)
                    .instrument(span.clone())
                    .await),
                Err(e) => Err(e),
            };
            let what = match what {
                Ok(what) => what,
                Err(e) => {
                    span.in_scope(|| tracing::warn!(page_import_id = %job.page_import_id, attempt = job.attempt, error = %e, "a member's capture left for redelivery"));
                    progress = Progress::StorageFailed;
                    continue;
                }
            };
            let crashed = what.crashed();
            if taken.send(Taken { index, what, span }).await.is_err() {
                break;
            }
            if crashed {
                tracing::warn!(set_id = %set.set_id, left = left - 1, "the browser crashed: the set's other members are handed back");
                progress = Progress::Stopped;
                break;
            }
        }
        if let Some((_, room)) = opened {
            room.close().await;
        }
        progress
    }

    /// One member's capture in the set's room (a browser that crashed
    /// takes the room with it).
    async fn member(
        &self,
        job: &CaptureJob<'_>,
        opened: &mut Opened,
        decision: &mut Option<String>,
        left: u32,
    ) -> What {
        let started = Instant::now();
        let mut outcome = self.capture_member(job, opened, left).await;
        if let Ok(captured) = &mut outcome {
            carry_consent(&job.page_import_id, &mut captured.consent, decision);
        }
        if matches!(&outcome, Err(f) if f.cause == Cause::BrowserCrashed) {
            *opened = None;
        }
        What::Captured(Box::new(outcome), started.elapsed())
    }

    /// The member's capture in the set's room, opened first if need be on
    /// the warm browser, which is counted for the `left` members.
    async fn capture_member(&self, job: &CaptureJob<'_>, opened: &mut Opened, left: u32) -> Result<Captured, Failure> {
        if opened.is_none() {
            let browser = self
                .browsers
                .get_for(left)
                .instrument(tracing::info_span!("step", otel.name = "browser"))
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "chromium could not be started");
                    Failure::from(Cause::BrowserUnavailable)
                })?;
            let room = Room::open(&browser, self.policy.clone(), self.settings.max_bytes)
                .instrument(tracing::info_span!("step", otel.name = "open"))
                .await?
                .keeping_tabs();
            *opened = Some((browser, room));
        }
        let (browser, room) = opened.as_ref().expect("opened above");
        let result = capture::capture_in(browser, room, &self.policy, job, &self.settings).await;
        if matches!(&result, Err(f) if f.cause == Cause::BrowserCrashed) {
            crate::metrics::browser_crashed();
        }
        result
    }
}

/// The consent decision carried from member to member: a member that
/// declined the banner is the one whose choice the CMP stores; a later
/// member that shows no banner says it used that choice (`consent.from`,
/// decision 0048). A member that meets the banner again (a CMP that
/// forgets) deals with it as usual, and its decline is the one carried on.
fn carry_consent(member: &str, consent: &mut ConsentInfo, decision: &mut Option<String>) {
    match consent.outcome {
        ConsentOutcome::Declined => *decision = Some(member.to_owned()),
        ConsentOutcome::None => consent.from = decision.clone(),
        ConsentOutcome::Hidden | ConsentOutcome::Kept => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consent(outcome: ConsentOutcome) -> ConsentInfo {
        ConsentInfo {
            cmp: None,
            outcome,
            ms: 0,
            from: None,
        }
    }

    #[test]
    fn later_members_without_a_banner_say_whose_decline_they_used() {
        let mut decision = None;
        let mut first = consent(ConsentOutcome::Declined);
        carry_consent("a", &mut first, &mut decision);
        assert_eq!(first.from, None, "the member that declined says so itself");
        let mut second = consent(ConsentOutcome::None);
        carry_consent("b", &mut second, &mut decision);
        assert_eq!(second.from.as_deref(), Some("a"));
        // A CMP that forgot: declined again, and that decline carries on.
        let mut third = consent(ConsentOutcome::Declined);
        carry_consent("c", &mut third, &mut decision);
        let mut fourth = consent(ConsentOutcome::None);
        carry_consent("d", &mut fourth, &mut decision);
        assert_eq!((third.from, fourth.from.as_deref()), (None, Some("c")));
    }

    #[test]
    fn no_decline_no_decision_carried() {
        let mut decision = None;
        for outcome in [ConsentOutcome::None, ConsentOutcome::Hidden, ConsentOutcome::Kept] {
            let mut info = consent(outcome);
            carry_consent("a", &mut info, &mut decision);
            assert_eq!(info.from, None);
        }
        let mut hidden_after = consent(ConsentOutcome::Hidden);
        decision = Some("a".into());
        carry_consent("b", &mut hidden_after, &mut decision);
        assert_eq!(
            (hidden_after.from, decision.as_deref()),
            (None, Some("a")),
            "a banner hidden is this member's own"
        );
    }
}
