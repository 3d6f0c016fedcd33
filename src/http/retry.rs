//! `POST /page-imports/{id}/retry` (SPEC §6): a failed import's next attempt,
//! started by a user. Not limited by `CAPTURE_MAX_ATTEMPTS`.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::app::AppState;
use crate::attempts;
use crate::auth::Actor;
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::page_import::{self as db, PageImport, ResumeFrom};
use crate::domain::ImportStatus;
use crate::error::{ApiError, Problem};
use crate::http::page_imports::PageImportView;
use crate::http::{idempotent, Deadline, IdPath};

fn not_retryable(status: ImportStatus) -> ApiError {
    ApiError::conflict(
        "not_retryable",
        format!(
            "The import is {}; only a failed import can be retried.",
            status.as_str()
        ),
    )
}

/// Retry a failed import: the next attempt, with a fresh nonce and a new
/// queue message. A body, if sent, is ignored.
#[utoipa::path(
    post, path = "/page-imports/{id}/retry", operation_id = "retryPageImport", tag = "page-imports",
    params(
        ("id" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "1–255 visible ASCII characters; scoped to the caller and this import; kept 24 h"),
    ),
    responses(
        (status = 202, description = "The next attempt started", body = PageImportView, headers(("Location" = String))),
        (status = 400, description = "Malformed Idempotency-Key", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "not_retryable (processing or completed), or the Idempotency-Key is in flight", body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn retry(
    State(state): State<AppState>,
    actor: Actor,
    deadline: Deadline,
    headers: HeaderMap,
    IdPath(id): IdPath,
) -> Result<Response, ApiError> {
    let row = state
        .reads
        .call((id.clone(), actor.subject.clone()), deadline.0)
        .await?
        .ok_or(ApiError::NotFound)?;
    let route = format!("retry:{id}");
    idempotent::run(&state, &actor, &headers, b"", route, |key| {
        retry_inner(&state, &actor, row, key)
    })
    .await
}

async fn retry_inner(
    state: &AppState,
    actor: &Actor,
    row: PageImport,
    key: Option<IdempotencyKey>,
) -> Result<Response, ApiError> {
    if row.status != ImportStatus::Failed {
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
    idempotent::accepted(&view.links.self_, &view)
}
