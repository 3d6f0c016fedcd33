//! Operational routes: liveness, readiness, metrics and the OpenAPI
//! document. No authentication.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::{Extension, Json};

use crate::error::ApiError;
use crate::state::AppState;

/// `{"status": "ok"}` or `{"status": "ready"}`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Status {
    pub status: &'static str,
}

/// The process is alive.
#[utoipa::path(get, path = "/healthz", tag = "operations", operation_id = "healthz", responses((status = 200, body = Status)))]
pub async fn healthz() -> Json<Status> {
    Json(Status { status: "ok" })
}

/// The database answers and every background task runs; 503 when not.
#[utoipa::path(get, path = "/readyz", tag = "operations", operation_id = "readyz", responses(
    (status = 200, body = Status),
    (status = 503),
))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Status>, ApiError> {
    let dead = state.tasks.dead();
    if !dead.is_empty() {
        return Err(ApiError::TasksDown(dead));
    }
    let check = async {
        let mut conn = state.pool.acquire().await?;
        sqlx::query_scalar!("select 1 as \"one!\"").fetch_one(&mut *conn).await
    };
    match tokio::time::timeout(std::time::Duration::from_secs(2), check).await {
        Ok(Ok(_)) => Ok(Json(Status { status: "ready" })),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "readiness check failed");
            Err(ApiError::Unavailable("database"))
        }
        Err(_) => Err(ApiError::Unavailable("database")),
    }
}

/// Prometheus text format.
#[utoipa::path(get, path = "/metrics", tag = "operations", operation_id = "metrics", responses((status = 200, content_type = "text/plain", body = String)))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    state.metrics.events_streams_open(state.changes.open_streams());
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        state.metrics.render(),
    )
}

/// The OpenAPI document as served (`openapi::document`), handed to the ops
/// routes by the router; each answer shares its bytes.
#[derive(Clone)]
pub struct ApiDocument(pub Bytes);

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations", operation_id = "openapi", responses((status = 200, content_type = "application/json", body = Object)))]
pub async fn openapi_json(Extension(ApiDocument(document)): Extension<ApiDocument>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document)
}
