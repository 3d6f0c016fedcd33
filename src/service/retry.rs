//! A user's retry of a failed import (SPEC §6): its next attempt, not
//! limited by `CAPTURE_MAX_ATTEMPTS`, admitted like a create (SPEC §12).

use sqlx::PgPool;

use crate::auth::Actor;
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::page_import::{self as db, NextAttempt, NextStarted, PageImport};
use crate::domain::lifecycle::AttemptReason;
use crate::domain::JobStatus;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::queue::Committed;
use crate::resource::PageImportView;
use crate::service::dispatch::{self, CaptureLimits};
use crate::service::next_attempt;

/// What a retry uses.
pub struct Retrier<'a> {
    pub pool: &'a PgPool,
    /// `ORG_MAX_QUEUED` (admission).
    pub limits: &'a CaptureLimits,
    /// Told once the next attempt is queued.
    pub committed: &'a Committed,
    pub metrics: &'a Metrics,
}

impl Retrier<'_> {
    /// Starts the next attempt of `row`, an import the actor can see, if it is
    /// failed and its organization may queue one more attempt, with the key's
    /// response recorded in the same transaction. The row is locked before its
    /// status is checked, so of two concurrent retries exactly one starts an
    /// attempt; the attempt is admitted as a create's is (its organization's
    /// backlog row locked and counted in the statement that queues it), so
    /// retries and creates together cannot pass `ORG_MAX_QUEUED`.
    #[tracing::instrument(name = "retry_import", skip_all, fields(page_import_id = %row.id))]
    pub async fn retry(
        &self,
        actor: &Actor,
        row: PageImport,
        key: Option<IdempotencyKey>,
    ) -> Result<PageImportView, ApiError> {
        if row.status != JobStatus::Failed {
            return Err(not_retryable(row.status));
        }
        let mut tx = self.pool.begin().await?;
        let fence = db::lock_fence(&mut tx, &row.id).await?.ok_or(ApiError::NotFound)?;
        if fence.deleted {
            return Err(ApiError::NotFound);
        }
        if fence.status != JobStatus::Failed {
            // Retried by someone else meanwhile.
            return Err(not_retryable(fence.status));
        }
        let next = NextAttempt {
            from: JobStatus::Failed,
            reason: AttemptReason::Manual,
            actor: &actor.subject,
            ended: None,
            max_queued: Some(self.limits.max_queued),
        };
        match next_attempt::start(&mut tx, &row.id, fence.attempt, next).await? {
            Some(NextStarted::Queued(_)) => {}
            // Rolled back when `tx` drops: nothing is written.
            Some(NextStarted::Refused(backlog)) => return Err(dispatch::too_many_queued(Some(backlog), self.metrics)),
            None => return Err(ApiError::NotFound),
        }
        let current = db::find_visible(&mut tx, &row.id, &actor.subject)
            .await?
            .ok_or(ApiError::NotFound)?;
        let view = PageImportView::from(current);
        if let Some(key) = &key {
            idempotency::record_accepted(&mut tx, key, &view.links.self_, &view).await?;
        }
        tx.commit().await?;
        self.committed.attempt_queued(&view.id, row.organization_id);
        self.metrics.attempts_started(AttemptReason::Manual, 1);
        tracing::info!(page_import_id = %view.id, attempt = view.attempt, "manual retry");
        Ok(view)
    }
}

/// 409 `not_retryable`, naming the import's status.
fn not_retryable(status: JobStatus) -> ApiError {
    ApiError::conflict(
        "not_retryable",
        format!(
            "The import is {}; only a failed import can be retried.",
            status.as_str()
        ),
    )
}
