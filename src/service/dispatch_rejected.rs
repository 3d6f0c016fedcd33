//! A capture message SQS refused as the sender's fault (SPEC §12, "No
//! message holds a slot forever"): the message leaves the outbox and its
//! attempt ends failed, `dispatch_rejected`, by the rule every end of an
//! attempt goes through (`db::page_import::finish`, as a callback's and the
//! sweeper's). The next dispatch pass, which the end wakes, frees its slot.
//! The publisher (`queue`) decides what SQS refused and reports it here
//! ([`RefusedCaptures`]); it writes no lifecycle of its own.

use futures::future::BoxFuture;
use sqlx::PgPool;

use crate::db::outbox;
use crate::db::page_import::{self as db, Finish};
use crate::domain::lifecycle::{AttemptOutcome, DISPATCHER};
use crate::domain::JobStatus;
use crate::metrics::Metrics;
use crate::queue::{Committed, RefusedCapture, RefusedCaptures};

/// Ends the attempts of refused capture messages.
pub struct DispatchRejected {
    pub pool: PgPool,
    pub metrics: Metrics,
    /// Told once the attempts ended (their slots may be free).
    pub committed: Committed,
}

impl RefusedCaptures for DispatchRejected {
    fn end_attempts<'a>(&'a self, refused: &'a [RefusedCapture]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(err) = self.end(refused).await {
                // The rows stay in the outbox; the relay meets the same
                // refusal again once their lease runs out.
                tracing::warn!(stage = "reject", error = %err, "outbox publishing error");
                self.metrics.outbox_relay_error("reject");
            }
        })
    }
}

impl DispatchRejected {
    /// In one transaction: the refused rows leave the outbox, and each
    /// attempt they name that is still its import's live `processing`
    /// attempt ends failed with a client-safe message naming SQS's code.
    async fn end(&self, refused: &[RefusedCapture]) -> anyhow::Result<()> {
        let ids: Vec<i64> = refused.iter().map(|r| r.outbox_id).collect();
        let mut tx = self.pool.begin().await?;
        let mut named = outbox::delete_refused(&mut tx, &ids).await?;
        // Rows locked in id order, as every other writer of several imports.
        named.sort_by(|a, b| a.page_import_id.cmp(&b.page_import_id));
        let mut ended = Vec::new();
        for capture in &named {
            let code = refused
                .iter()
                .find(|r| r.outbox_id == capture.outbox_id)
                .map_or("", |r| r.code.as_str());
            if end_one(&mut tx, &capture.page_import_id, capture.attempt, code).await? {
                ended.push(capture.page_import_id.as_str());
            }
        }
        tx.commit().await?;
        self.metrics.dispatch_rejected(ids.len() as u64);
        for id in &ended {
            tracing::warn!(page_import_id = %id, reason = "dispatch_rejected", "capture attempt failed: SQS refused its message");
            self.metrics.import_finished("failed");
        }
        self.committed.attempts_ended(ended);
        Ok(())
    }
}

/// Ends `attempt` of import `id` failed, `dispatch_rejected`, when it is
/// still the import's live `processing` attempt (locked first); whether it
/// ended.
async fn end_one(tx: &mut sqlx::PgConnection, id: &str, attempt: i32, code: &str) -> sqlx::Result<bool> {
    let Some(fence) = db::lock_fence(tx, id).await? else {
        return Ok(false);
    };
    if fence.deleted || fence.attempt != attempt || fence.status != JobStatus::Processing {
        // Deleted, ended or moved on while its message was being sent.
        return Ok(false);
    }
    let message = format!("The capture job could not be queued: SQS refused its message ({code})");
    let finish = Finish {
        nonce: None,
        status: JobStatus::Failed,
        outcome: AttemptOutcome::DispatchRejected,
        result_url: None,
        capture_hash: None,
        screenshot_url: None,
        error_message: Some(&message),
        actor: DISPATCHER,
    };
    db::finish(tx, id, attempt, &finish).await
}
