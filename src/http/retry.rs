//! `POST /page-imports/{id}/retry` (SPEC §6): a failed import's next attempt,
//! started by a user. Not limited by `CAPTURE_MAX_ATTEMPTS`.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::http::{idempotent, Deadline, IdPath};
use crate::resource::PageImportView;
use crate::state::AppState;

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
        (status = 400, description = "Malformed Idempotency-Key"),
        (status = 401),
        (status = 404),
        (status = 409, description = "not_retryable (processing or completed), or the Idempotency-Key is in flight"),
        (status = 429, description = "too_many_queued: the organization holds ORG_MAX_QUEUED queued captures; nothing was written",
         headers(("Retry-After" = u64))),
        (status = 503),
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
    let row = state.imports().visible(&actor, &id, deadline.0).await?;
    let route = format!("retry:{id}");
    idempotent::run(&state, &actor, &headers, b"", route, |key| {
        let state = &state;
        let actor = &actor;
        async move {
            let view = state.retrier().retry(actor, row, key).await?;
            idempotent::accepted(&view.links.self_, &view)
        }
    })
    .await
}
