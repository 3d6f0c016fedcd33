//! Operational routes: liveness, readiness, metrics. No authentication.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;

use crate::app::AppState;
use crate::error::ApiError;

/// `GET /healthz`: the process is alive.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: the database answers; 503 problem+json when it does not.
pub async fn readyz(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let check = async {
        let mut conn = state.pool.acquire().await?;
        sqlx::query_scalar!("select 1 as \"one!\"").fetch_one(&mut *conn).await
    };
    match tokio::time::timeout(std::time::Duration::from_secs(2), check).await {
        Ok(Ok(_)) => Ok(Json(json!({"status": "ready"}))),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "readiness check failed");
            Err(ApiError::Unavailable("database"))
        }
        Err(_) => Err(ApiError::Unavailable("database")),
    }
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        state.metrics.render(),
    )
}
