//! Code2Des jobs (SPEC §8): started from completed imports, which they
//! reference and never modify.

use sqlx::PgPool;
use uuid::Uuid;

use page_import_platform::telemetry::trace_context;

use crate::auth::Actor;
use crate::db::code2des::{self as db, NewCode2Des};
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::outbox::OutboxMessage;
use crate::domain::JobStatus;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::queue::messages::Code2DesJob;
use crate::queue::{Publisher, QueueName};
use crate::resource::Code2DesView;

/// What starting a Code2Des job uses.
pub struct Code2DesJobs<'a> {
    pub pool: &'a PgPool,
    pub publisher: &'a Publisher,
    pub metrics: &'a Metrics,
}

impl Code2DesJobs<'_> {
    /// The job `id` as the actor may see it, or 404.
    #[tracing::instrument(name = "read_code2des", level = "debug", skip_all, fields(code2des_id = %id))]
    pub async fn get(&self, actor: &Actor, id: &str) -> Result<Code2DesView, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let row = db::find_visible(&mut conn, id, &actor.subject)
            .await?
            .ok_or(ApiError::NotFound)?;
        Ok(row.into())
    }

    /// Starts a Code2Des job from a completed import (SPEC §8): eligibility and
    /// insert in one transaction under a share lock on the import, which is never
    /// modified; the job's message goes through the outbox.
    #[tracing::instrument(name = "create_code2des", skip_all)]
    pub async fn create(
        &self,
        actor: &Actor,
        request: NewCode2DesJob,
        key: Option<IdempotencyKey>,
    ) -> Result<Code2DesView, ApiError> {
        let mut tx = self.pool.begin().await?;
        // Eligibility and insert in one transaction, under a share lock on the source.
        let (result_url, capture_hash) = completed_source(&mut tx, actor, &request).await?;
        let id = Uuid::now_v7().to_string();
        let message_body = serde_json::to_string(&Code2DesJob {
            schema_version: Code2DesJob::SCHEMA_VERSION,
            code2des_id: &id,
            page_import_id: &request.page_import_id,
            result_url: &result_url,
            capture_hash: &capture_hash,
        })
        .map_err(anyhow::Error::from)?;
        let new = NewCode2Des {
            id: &id,
            organization_id: request.organization_id,
            project_id: request.project_id,
            page_import_id: &request.page_import_id,
            capture_hash: &capture_hash,
            actor: &actor.subject,
        };
        let traceparent = trace_context::of(&tracing::Span::current());
        let lease_ms = self.publisher.lease().as_millis() as i64;
        let (row, outbox_id) =
            db::insert_with_message(&mut tx, &new, &message_body, lease_ms, traceparent.as_deref()).await?;
        let project_id = row.project_id;
        let view = Code2DesView::from(row);
        if let Some(key) = key {
            idempotency::record_accepted(&mut tx, &key, &view.links.self_, &view).await?;
        }
        tx.commit().await?;
        self.metrics.code2des_created();
        tracing::info!(code2des_id = %id, page_import_id = %request.page_import_id, "code2des job created");

        self.publisher.publish_after_commit(OutboxMessage {
            id: outbox_id,
            queue: QueueName::Code2Des.as_str().to_owned(),
            body: message_body,
            message_group_id: project_id.to_string(),
            deduplication_id: id,
            attempts: 0,
            traceparent,
        });
        Ok(view)
    }
}

/// The source import's manifest and hash, its row share-locked for the
/// caller's transaction: 404 when the actor cannot see it in that project,
/// 409 `page_import_not_ready` unless it is completed.
async fn completed_source(
    tx: &mut sqlx::PgConnection,
    actor: &Actor,
    request: &NewCode2DesJob,
) -> Result<(String, String), ApiError> {
    let source = db::lock_source(
        tx,
        &request.page_import_id,
        request.organization_id,
        request.project_id,
        &actor.subject,
    )
    .await?
    .ok_or(ApiError::NotFound)?;
    match (source.status, source.result_url, source.capture_hash) {
        (JobStatus::Completed, Some(result_url), Some(capture_hash)) => Ok((result_url, capture_hash)),
        (status, ..) => Err(ApiError::conflict(
            "page_import_not_ready",
            format!(
                "The page import is {}; Code2Des needs a completed capture.",
                status.as_str()
            ),
        )),
    }
}

/// The import a new Code2Des job starts from (SPEC §8).
pub struct NewCode2DesJob {
    pub organization_id: i64,
    pub project_id: i64,
    pub page_import_id: String,
}
