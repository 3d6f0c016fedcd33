//! `GET /page-imports/{id}/attempts`: the history of an import's attempts,
//! for users and support staff (SPEC §7 "Attempts").

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use crate::auth::Actor;
use crate::db::attempt_history::AttemptRow;
use crate::domain::timestamp;
use crate::error::ApiError;
use crate::http::IdPath;
use crate::state::AppState;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AttemptList {
    pub items: Vec<AttemptView>,
}

/// One attempt. Times are RFC 3339 UTC with milliseconds.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptView {
    #[schema(example = 1)]
    pub attempt: i32,
    /// Why it started: `create`, `sweeper` (the previous attempt timed out),
    /// `retryable` (the worker reported a transient failure) or `manual`
    /// (`POST /page-imports/{id}/retry`).
    #[schema(example = "create")]
    pub reason: String,
    /// Who started it: the user, or `system:sweeper` / `system:capture-worker`.
    pub started_by: String,
    pub started_at: String,
    /// When SQS first accepted its message; its timeout counts from here.
    pub dispatched_at: Option<String>,
    pub finished_at: Option<String>,
    /// `completed`, `failed`, `timed_out`, `retryable_failure` or
    /// `dispatch_rejected` (SQS refused its message); null while it runs.
    pub outcome: Option<String>,
    pub error_message: Option<String>,
}

impl From<AttemptRow> for AttemptView {
    fn from(row: AttemptRow) -> Self {
        Self {
            attempt: row.attempt,
            reason: row.reason,
            started_by: row.started_by,
            started_at: timestamp(row.started_at),
            dispatched_at: row.dispatched_at.map(timestamp),
            finished_at: row.finished_at.map(timestamp),
            outcome: row.outcome,
            error_message: row.error_message,
        }
    }
}

/// The attempts of one import, first to last.
#[utoipa::path(
    get, path = "/page-imports/{id}/attempts", operation_id = "listPageImportAttempts", tag = "page-imports",
    params(("id" = String, Path, description = "The import's UUIDv7")),
    responses(
        (status = 200, body = AttemptList),
        (status = 401),
        (status = 404, description = "Unknown, deleted, or another tenant's"),
        (status = 503),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
    IdPath(id): IdPath,
) -> Result<Json<AttemptList>, ApiError> {
    let rows = state.imports().attempts(&actor, &id).await?;
    Ok(Json(AttemptList {
        items: rows.into_iter().map(AttemptView::from).collect(),
    }))
}
