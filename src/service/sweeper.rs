//! The sweeper's rule (SPEC §7 "Sweeper"): an attempt dispatched longer ago
//! than the capture timeout has timed out. With attempts left the next one
//! starts, otherwise the import fails with "Capture timed out". The task
//! that runs it periodically is in `background.rs`.

use std::time::Duration;

use page_import_platform::telemetry::trace_context;
use sqlx::PgPool;
use tracing::Instrument;

use crate::db;
use crate::db::page_import::{Finish, NextAttempt, NextStarted};
use crate::domain::lifecycle::{AttemptOutcome, AttemptReason, SWEEPER};
use crate::domain::JobStatus;
use crate::metrics::Metrics;
use crate::queue::Committed;
use crate::service::next_attempt;

const SWEEP_BATCH: i64 = 500;
const TIMED_OUT_MESSAGE: &str = "Capture timed out";

/// What a sweep uses.
#[derive(Clone)]
pub struct Sweeper {
    pub pool: PgPool,
    /// `CAPTURE_TIMEOUT_SECS`.
    pub capture_timeout: Duration,
    /// `CAPTURE_MAX_ATTEMPTS`.
    pub max_attempts: i32,
    /// Told when a sweep ended attempts (their streams; their slots free).
    pub committed: Committed,
    pub metrics: Metrics,
}

impl Sweeper {
    /// Times out every overdue attempt, then forgets expired idempotency
    /// keys. Each batch is one transaction holding its rows' locks (`SKIP
    /// LOCKED`), so replicas never sweep the same row, and a late callback
    /// for the old attempt waits for the commit and then finds the fence
    /// moved. Returns how many attempts timed out.
    #[tracing::instrument(name = "sweeper.pass", level = "debug", skip_all)]
    pub async fn sweep_once(&self) -> anyhow::Result<usize> {
        let mut swept = 0;
        loop {
            let mut tx = self.pool.begin().await?;
            let timed_out = db::page_import::lock_timed_out(&mut tx, self.capture_timeout, SWEEP_BATCH).await?;
            let batch = timed_out.len();
            let ids: Vec<String> = timed_out.iter().map(|row| row.id.clone()).collect();
            // A span for a batch with work in it only: an idle sweep is no
            // one's trace.
            let span = if batch > 0 {
                tracing::info_span!("sweeper.batch", timed_out = batch)
            } else {
                tracing::Span::none()
            };
            let retried = self.end_timed_out(&mut tx, timed_out).instrument(span).await?;
            tx.commit().await?;
            self.committed.attempts_ended(ids.iter().map(String::as_str));
            self.metrics.attempts_started(AttemptReason::Sweeper, retried);
            swept += batch;
            if (batch as i64) < SWEEP_BATCH {
                break;
            }
        }
        let mut conn = self.pool.acquire().await?;
        db::idempotency::delete_expired(&mut conn).await?;
        Ok(swept)
    }

    /// Ends each timed-out attempt in the caller's transaction: the next
    /// attempt starts, or the import fails. Returns how many started.
    async fn end_timed_out(
        &self,
        tx: &mut sqlx::PgConnection,
        timed_out: Vec<db::page_import::TimedOut>,
    ) -> anyhow::Result<u64> {
        let mut retried = 0;
        for row in timed_out {
            // In the trace of the attempt that timed out (SPEC §9).
            let span = tracing::info_span!(parent: None, "timed_out", page_import_id = %row.id, attempt = row.attempt);
            trace_context::continue_from(&span, row.traceparent.as_deref());
            if self.end_one(tx, &row).instrument(span).await? {
                retried += 1;
            }
        }
        Ok(retried)
    }

    /// Ends one timed-out attempt; whether the next one started.
    async fn end_one(&self, tx: &mut sqlx::PgConnection, row: &db::page_import::TimedOut) -> anyhow::Result<bool> {
        if row.attempt < self.max_attempts {
            let next = NextAttempt {
                from: JobStatus::Processing,
                reason: AttemptReason::Sweeper,
                actor: SWEEPER,
                ended: Some(AttemptOutcome::TimedOut),
                max_queued: None,
            };
            // A re-dispatch is never refused (`max_queued: None`).
            let Some(NextStarted::Queued(next)) = next_attempt::start(tx, &row.id, row.attempt, next).await? else {
                return Ok(false);
            };
            tracing::info!(page_import_id = %row.id, attempt = next, "capture timed out; next attempt");
            return Ok(true);
        }
        let finish = Finish {
            nonce: None,
            status: JobStatus::Failed,
            outcome: AttemptOutcome::TimedOut,
            result_url: None,
            capture_hash: None,
            screenshot_url: None,
            error_message: Some(TIMED_OUT_MESSAGE),
            actor: SWEEPER,
        };
        if db::page_import::finish(tx, &row.id, row.attempt, &finish).await? {
            tracing::info!(page_import_id = %row.id, attempt = row.attempt, "capture timed out; no attempts left");
            self.metrics.sweeper_failed_imports(1);
            self.metrics.import_finished("failed");
        }
        Ok(false)
    }
}
