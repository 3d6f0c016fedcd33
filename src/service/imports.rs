//! Page imports (SPEC §6): creating one, and a user's retry of a failed one.

use std::time::Instant;

use axum::http::StatusCode;
use page_import_contract::job::deduplication_id;
use uuid::Uuid;

use crate::attempts;
use crate::auth::Actor;
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::outbox::OutboxMessage;
use crate::db::page_import::{self as db, PageImport, PendingCreate, ResumeFrom};
use crate::dns::DnsCheckError;
use crate::domain::cursor::{self, KeysetPosition, ListPage};
use crate::domain::new_import::NewImport;
use crate::domain::{JobStatus, Nonce, ReadySelector, SourceUrl};
use crate::error::ApiError;
use crate::queue::messages::{capture_job_body, ViewportMessage};
use crate::queue::QueueName;
use crate::resource::PageImportView;
use crate::state::AppState;

/// Records the `processing` row and its outbox message (SPEC §6), then hands
/// the message to the after-commit publisher. With an `Idempotency-Key` the
/// key's response commits with the row. `answer_by` is the request's deadline.
pub async fn create(
    state: &AppState,
    actor: &Actor,
    request: NewImport,
    key: Option<IdempotencyKey>,
    answer_by: Instant,
) -> Result<PageImportView, ApiError> {
    check_dns(state, &request.source_url).await?;
    let id = Uuid::now_v7().to_string();
    let nonce = Nonce::generate();
    let message_body = capture_job_body(
        &state.config,
        &id,
        1,
        nonce.expose(),
        request.source_url.as_str(),
        ViewportMessage {
            width: request.viewport.width,
            height: request.viewport.height,
            device_scale_factor: request.viewport.device_scale_factor,
        },
        request.ready_selector.as_ref().map(ReadySelector::as_str),
    );
    let lease_ms = state.publisher.lease().as_millis() as i64;

    let pending = PendingCreate {
        id: id.clone(),
        organization_id: request.organization_id,
        project_id: request.project_id,
        actor: actor.subject.clone(),
        source_url: request.source_url,
        viewport: request.viewport,
        ready_selector: request.ready_selector,
        nonce,
        body: message_body.clone(),
        lease_ms,
    };
    // The row and its message are one statement, so without an idempotency
    // key no explicit transaction is needed, and concurrent creates share one
    // statement and one commit (see `db::coalesce`). With a key, the key's
    // response commits with the row.
    let (view, outbox_id) = match key {
        None => {
            let (row, outbox_id) = state
                .creates
                .call(pending, answer_by)
                .await?
                .ok_or(ApiError::NotFound)?;
            (PageImportView::from(row), outbox_id)
        }
        Some(key) => {
            let mut tx = state.pool.begin().await?;
            crate::db::pin_plan(&mut tx).await?;
            let (row, outbox_id) = db::insert_many_with_messages(&mut tx, std::slice::from_ref(&pending))
                .await?
                .pop()
                .flatten()
                .ok_or(ApiError::NotFound)?;
            let view = PageImportView::from(row);
            let body = serde_json::to_value(&view).map_err(anyhow::Error::from)?;
            idempotency::complete(
                &mut tx,
                &key,
                StatusCode::ACCEPTED.as_u16() as i16,
                &view.links.self_,
                &body,
            )
            .await?;
            tx.commit().await?;
            (view, outbox_id)
        }
    };
    let project_id = view.project_id;
    state.metrics.import_created();
    tracing::info!(page_import_id = %id, project_id, "page import created");

    // The request does not wait for SQS; the relay covers a failed publish.
    state.publisher.publish_after_commit(OutboxMessage {
        id: outbox_id,
        queue: QueueName::PageImport.as_str().to_owned(),
        body: message_body,
        message_group_id: project_id.to_string(),
        deduplication_id: deduplication_id(&id, 1),
        attempts: 0,
    });

    Ok(view)
}

/// One page of a project's imports, newest first, and the cursor of the
/// next page (SPEC §6). A project the actor cannot see is 404.
pub async fn list(
    state: &AppState,
    actor: &Actor,
    organization_id: i64,
    project_id: i64,
    page: ListPage,
) -> Result<(Vec<PageImport>, Option<String>), ApiError> {
    let mut conn = state.pool.acquire().await?;
    if !db::project_visible(&mut conn, organization_id, project_id, &actor.subject).await? {
        return Err(ApiError::NotFound);
    }
    let mut rows = db::list_page(&mut conn, project_id, page.status, page.after.as_ref(), page.limit + 1).await?;
    let next_cursor = if rows.len() as i64 > page.limit {
        rows.truncate(page.limit as usize);
        rows.last().map(|last| {
            cursor::encode(&KeysetPosition {
                created_at: last.created_at,
                id: last.id.clone(),
            })
        })
    } else {
        None
    };
    Ok((rows, next_cursor))
}

/// The optional DNS check of the source host (`SOURCE_URL_DNS_CHECK`): a
/// name that does not resolve, or resolves to a non-public address, is 422.
async fn check_dns(state: &AppState, source_url: &SourceUrl) -> Result<(), ApiError> {
    if let (Some(dns), Some(host)) = (&state.dns, source_url.domain()) {
        if let Err(err) = dns.check(host).await {
            let (code, message) = match err {
                DnsCheckError::Unresolvable => ("unresolvable_host", "the host name does not resolve".to_owned()),
                DnsCheckError::NonPublic(range) => (
                    "non_public_address",
                    format!("the host resolves to an address that is not publicly reachable ({range})"),
                ),
            };
            return Err(ApiError::field("sourceUrl", code, message));
        }
    }
    Ok(())
}

/// A user's retry of a failed import (SPEC §6): its next attempt, with the
/// key's response recorded in the same transaction.
pub async fn retry(
    state: &AppState,
    actor: &Actor,
    row: PageImport,
    key: Option<IdempotencyKey>,
) -> Result<PageImportView, ApiError> {
    if row.status != JobStatus::Failed {
        return Err(not_retryable(row.status));
    }
    let mut tx = state.pool.begin().await?;
    let started = attempts::start_next(
        &mut tx,
        &state.config,
        &row.id,
        row.attempt,
        ResumeFrom::Failed,
        &actor.subject,
    )
    .await?;
    let current = db::find_visible(&mut tx, &row.id, &actor.subject)
        .await?
        .ok_or(ApiError::NotFound)?;
    if started.is_none() {
        // Retried (or deleted) by someone else meanwhile.
        return Err(not_retryable(current.status));
    }
    let view = PageImportView::from(current);
    if let Some(key) = &key {
        let body = serde_json::to_value(&view).map_err(anyhow::Error::from)?;
        idempotency::complete(
            &mut tx,
            key,
            StatusCode::ACCEPTED.as_u16() as i16,
            &view.links.self_,
            &body,
        )
        .await?;
    }
    tx.commit().await?;
    state.metrics.attempts_started("manual", 1);
    tracing::info!(page_import_id = %view.id, attempt = view.attempt, "manual retry");
    Ok(view)
}

/// 409 `not_retryable`, naming the import's status.
pub fn not_retryable(status: JobStatus) -> ApiError {
    ApiError::conflict(
        "not_retryable",
        format!(
            "The import is {}; only a failed import can be retried.",
            status.as_str()
        ),
    )
}
