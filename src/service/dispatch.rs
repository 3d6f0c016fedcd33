//! Sharing the capture fleet between organizations (SPEC §12): which queued
//! attempt goes to SQS next, and whether an organization may queue more.
//!
//! A dispatch pass, on any replica, holds the dispatch lock (one pass at a
//! time across replicas), releases the slots of attempts that ended, counts
//! the attempts in flight, and grants the free slots in round-robin order
//! (`db::capture::pick`); each granted attempt's message goes through the
//! outbox, so "an accepted import is never left without its message" holds
//! as before. Passes run when something may have changed (an attempt
//! queued or ended in this process: [`DispatchSignal`]) and on a timer for
//! what changed elsewhere.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::{PgConnection, PgPool};
use tokio_util::sync::CancellationToken;

use crate::db::capture::{self, OrgBacklog};
use crate::db::outbox::{self, OutboxMessage};
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::queue::messages::CaptureDestination;
use crate::queue::{DispatchSignal, Publisher};
use crate::service::set_dispatch;

/// Attempts one pass dispatches at most; a larger backlog of free slots
/// takes several passes, each a short transaction.
const PASS_LIMIT: i64 = 100;
/// How often the dispatcher counts the queued attempts for its gauge.
const QUEUED_GAUGE_EVERY: Duration = Duration::from_secs(1);
/// `Retry-After` of an organization that has not been dispatched to twice yet.
const RETRY_AFTER_UNKNOWN_SECS: u64 = 30;
/// The longest `Retry-After` a 429 names.
const RETRY_AFTER_MAX_SECS: u64 = 3600;

/// `CAPTURE_MAX_IN_FLIGHT`, `CAPTURE_MAX_IN_FLIGHT_PER_ORG`, `ORG_MAX_QUEUED`.
#[derive(Debug, Clone, Copy)]
pub struct CaptureLimits {
    pub max_in_flight: i64,
    pub max_in_flight_per_org: i64,
    pub max_queued: i64,
}

/// 429 `too_many_queued`, counted, with a `Retry-After` estimated from the
/// organization's recent dispatch rate: the time until its next queued
/// attempt is dispatched, which makes room for one more.
pub fn too_many_queued(backlog: Option<OrgBacklog>, metrics: &Metrics) -> ApiError {
    metrics.admission_rejected("too_many_queued");
    ApiError::TooManyQueued {
        retry_after: retry_after_secs(backlog.and_then(|b| b.dispatch_interval_secs)),
    }
}

/// Whole seconds, at least 1: the smoothed interval between the
/// organization's dispatches, rounded up.
fn retry_after_secs(dispatch_interval_secs: Option<f64>) -> u64 {
    match dispatch_interval_secs {
        Some(secs) if secs.is_finite() => (secs.ceil().max(1.0) as u64).min(RETRY_AFTER_MAX_SECS),
        _ => RETRY_AFTER_UNKNOWN_SECS,
    }
}

/// What a dispatch pass uses.
#[derive(Clone)]
pub struct Dispatcher {
    pub pool: PgPool,
    pub publisher: Publisher,
    pub signal: DispatchSignal,
    pub limits: CaptureLimits,
    /// Where the granted attempts' messages send their captures.
    pub destination: Arc<CaptureDestination>,
    pub metrics: Metrics,
}

/// What one pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    /// Attempts chosen for the free slots.
    pub picked: usize,
    /// Of those, dispatched (the others were deleted or moved on meanwhile).
    pub dispatched: usize,
    /// Of those, taken off the queue undispatched: no longer live.
    pub dropped: usize,
    /// Attempts in flight after the pass (`Granted::in_flight_after`).
    pub in_flight: i64,
    /// Every slot of the deployment is taken now.
    pub full: bool,
    /// Organizations that held all the slots they may before the pass
    /// (`CAPTURE_MAX_IN_FLIGHT_PER_ORG`), and still do: none of their
    /// queued attempts can be dispatched until one of theirs ends.
    pub at_limit: Vec<i64>,
}

/// What [`grant`] did, for the caller to publish after its commit.
pub struct Granted {
    /// Attempts in flight before this grant.
    pub in_flight: i64,
    /// Organizations holding all the slots they may, before this grant.
    pub at_limit: Vec<i64>,
    /// Attempts chosen for the free slots.
    pub picked: usize,
    /// The messages of the attempts granted a slot.
    pub messages: Vec<OutboxMessage>,
    /// Picked imports that left the queue undispatched (no longer live).
    pub dropped: usize,
    /// Of the granted attempts, those that took over their import's slot
    /// (held by the ended attempt they moved past, and counted in
    /// `in_flight` already).
    pub took_over: usize,
}

impl Granted {
    /// Attempts in flight after this grant: those before it, plus each
    /// granted attempt that took a slot of its own. One that took over its
    /// import's ended slot adds none: counting it again made the gauge one
    /// high and the deployment "full" a slot early.
    pub fn in_flight_after(&self) -> i64 {
        self.in_flight + self.messages.len().saturating_sub(self.took_over) as i64
    }
}

/// How a pass grants slots: the limits, and the granted attempts' messages
/// (where they send their captures, and how long the after-commit publisher
/// holds them).
#[derive(Clone, Copy)]
pub struct GrantRules<'a> {
    pub limits: &'a CaptureLimits,
    pub destination: &'a CaptureDestination,
    pub lease: Duration,
}

/// The database half of a pass, in the caller's transaction: takes the
/// dispatch lock, releases the slots of ended attempts, and grants up to
/// `limit` free slots in round-robin order, writing the granted attempts'
/// outbox messages leased for `rules.lease`.
#[tracing::instrument(name = "dispatch.grant", level = "debug", skip_all, fields(limit = limit))]
pub async fn grant(tx: &mut PgConnection, rules: GrantRules<'_>, limit: i64) -> sqlx::Result<Granted> {
    capture::lock_dispatch(tx).await?;
    capture::release_ended_slots(tx).await?;
    grant_free_slots(tx, rules, limit).await
}

/// The rest of [`grant`], once the ended slots were released: counts the
/// attempts in flight and grants up to `limit` free slots. An attempt that
/// started after the release (a retryable failure's next attempt) may be
/// granted the slot its import's ended attempt still holds.
#[tracing::instrument(name = "dispatch.grant_free_slots", level = "debug", skip_all, fields(limit = limit))]
pub async fn grant_free_slots(tx: &mut PgConnection, rules: GrantRules<'_>, limit: i64) -> sqlx::Result<Granted> {
    let limits = rules.limits;
    let busy = capture::in_flight_by_org(tx).await?;
    let in_flight: i64 = busy.iter().map(|(_, n)| n).sum();
    let at_limit: Vec<i64> = busy
        .iter()
        .filter(|(_, n)| *n >= limits.max_in_flight_per_org)
        .map(|(org, _)| *org)
        .collect();
    let free = (limits.max_in_flight - in_flight).min(limit);
    let picked = if free > 0 {
        capture::pick(tx, free, limits.max_in_flight_per_org, &busy).await?
    } else {
        Vec::new()
    };
    if picked.is_empty() {
        return Ok(Granted {
            in_flight,
            at_limit,
            picked: 0,
            messages: Vec::new(),
            dropped: 0,
            took_over: 0,
        });
    }
    let mut orgs: Vec<i64> = picked.iter().map(|p| p.organization_id).collect();
    orgs.sort_unstable();
    orgs.dedup();
    capture::lock_orgs(tx, &orgs).await?;
    let picked_count = picked.len();
    let (picked, sets) = set_dispatch::with_followers(tx, picked).await?;
    let dispatched = capture::dispatch(tx, &picked).await?;
    let messages = set_dispatch::messages(tx, rules.destination, &sets, &dispatched.taken).await?;
    let messages = outbox::insert(tx, "page_import", &messages, rules.lease).await?;
    Ok(Granted {
        dropped: dispatched.dropped,
        took_over: dispatched.took_over,
        in_flight,
        at_limit,
        picked: picked_count,
        messages,
    })
}

impl Dispatcher {
    /// How this dispatcher's passes grant slots.
    fn rules(&self) -> GrantRules<'_> {
        GrantRules {
            limits: &self.limits,
            destination: &self.destination,
            lease: self.publisher.lease(),
        }
    }

    /// One pass, one transaction ([`grant`]), then the granted attempts'
    /// messages go to the publisher.
    #[tracing::instrument(name = "dispatch.pass", level = "debug", skip_all, fields(limit, dispatched))]
    pub async fn dispatch_once(&self, limit: i64) -> anyhow::Result<Pass> {
        let mut tx = self.pool.begin().await?;
        let granted = grant(&mut tx, self.rules(), limit).await?;
        tx.commit().await?;
        let dispatched = granted.messages.len();
        tracing::Span::current().record("dispatched", dispatched);
        let in_flight = granted.in_flight_after();
        self.metrics.capture_in_flight(in_flight);
        for message in granted.messages {
            self.publisher.publish_after_commit(message);
        }
        Ok(Pass {
            picked: granted.picked,
            dispatched,
            dropped: granted.dropped,
            in_flight,
            full: in_flight >= self.limits.max_in_flight,
            at_limit: granted.at_limit,
        })
    }

    /// Passes until nothing more can be dispatched; the last pass. A pass
    /// that moved nothing off the queue ends it, also when it picked
    /// attempts: they were locked by a delete in progress, or left the queue
    /// meanwhile, and another pass at once would only pick them again (SPEC
    /// §12: it does not spin). The timer's next pass looks again. A pass
    /// that only dropped imports no longer live does not end it: the
    /// attempts behind them may take the slots now.
    #[tracing::instrument(name = "dispatch.all", level = "debug", skip_all)]
    pub async fn dispatch_all(&self) -> anyhow::Result<Pass> {
        loop {
            let pass = self.dispatch_once(PASS_LIMIT).await?;
            if (pass.dispatched == 0 && pass.dropped == 0) || pass.full {
                return Ok(pass);
            }
        }
    }

    /// The background task: a pass whenever woken, and every `interval`.
    pub async fn run(self, interval: Duration, shutdown: CancellationToken) {
        let mut counted: Option<Instant> = None;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(interval) => {}
                () = self.signal.freed_notified() => {}
                () = self.signal.queued_notified() => {}
            }
            match self.dispatch_all().await {
                Ok(pass) => self.signal.passed(pass.full, &pass.at_limit),
                Err(err) => {
                    self.signal.passed(false, &[]);
                    tracing::warn!(error = %err, "capture dispatch pass failed");
                }
            }
            if counted.is_none_or(|at| at.elapsed() >= QUEUED_GAUGE_EVERY) {
                let queued = async {
                    let mut conn = self.pool.acquire().await?;
                    capture::queued_total(&mut conn).await
                };
                if let Ok(n) = queued.await {
                    self.metrics.capture_queued(n);
                    counted = Some(Instant::now());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::retry_after_secs;

    #[test]
    fn retry_after_is_the_dispatch_interval_rounded_up_to_whole_seconds() {
        assert_eq!(retry_after_secs(Some(0.02)), 1);
        assert_eq!(retry_after_secs(Some(1.0)), 1);
        assert_eq!(retry_after_secs(Some(1.2)), 2);
        assert_eq!(retry_after_secs(Some(42.5)), 43);
    }

    #[test]
    fn retry_after_is_bounded_and_defined_without_a_rate() {
        assert_eq!(retry_after_secs(None), 30);
        assert_eq!(retry_after_secs(Some(f64::NAN)), 30);
        assert_eq!(retry_after_secs(Some(1e9)), 3600);
        assert_eq!(retry_after_secs(Some(-3.0)), 1);
    }
}
