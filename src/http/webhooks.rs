//! `POST /webhooks/page-imports`: the capture worker's signed callback (SPEC §7).
//!
//! Here: signature (401) → `Content-Type` (415) → body shape (400/422,
//! `domain::callback`). Then `service::callbacks`: row exists (404) → not
//! deleted (410) → attempt and nonce (409) → artifact URLs (422) → manifest
//! and screenshot in S3 (422) → the row locked and the same fence rule
//! checked again (`service::callbacks::judge`) → one UPDATE; a row that moved
//! meanwhile tells a replay (200) from a conflict (409/410).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use sha2::{Digest, Sha256};

use crate::domain::callback::ParsedCallback;
use crate::error::ApiError;
use crate::http::{is_json_content_type, RawBody};
use crate::service::callbacks::CallbackAck;
use crate::state::AppState;
use page_import_contract::callback::CallbackBody;

/// The capture worker's callback, signed per Standard Webhooks.
#[utoipa::path(
    post, path = "/webhooks/page-imports", operation_id = "receivePageImportCallback", tag = "worker",
    request_body = CallbackBody,
    params(
        ("webhook-id" = String, Header, description = "Message id; reuse it for retries of the same callback"),
        ("webhook-timestamp" = String, Header, description = "Unix seconds; ±300 s"),
        ("webhook-signature" = String, Header, description = "Space-separated `v1,<base64 HMAC-SHA256(secret, id.timestamp.body)>`"),
    ),
    responses(
        (status = 200, description = "Recorded, or an exact replay", body = CallbackAck),
        (status = 400),
        (status = 401, description = "Bad, missing or stale signature"),
        (status = 404),
        (status = 409, description = "fence_mismatch or already_terminal"),
        (status = 410, description = "The import was deleted; stop"),
        (status = 413, description = "Body over 64 KiB"),
        (status = 415),
        (status = 422, description = "Invalid shape, artifact URL, or manifest"),
        (status = 503),
    )
)]
pub async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawBody(raw): RawBody,
) -> Result<Json<CallbackAck>, ApiError> {
    let result = receive_inner(&state, &headers, &raw).await;
    if let Err(err) = &result {
        state.metrics.webhook_rejected(err.code());
    }
    result
}

async fn receive_inner(state: &AppState, headers: &HeaderMap, raw: &Bytes) -> Result<Json<CallbackAck>, ApiError> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let now = chrono::Utc::now().timestamp();
    state
        .config
        .shared
        .webhook_secrets
        .verify(
            header("webhook-id"),
            header("webhook-timestamp"),
            header("webhook-signature"),
            raw,
            now,
        )
        .map_err(|err| {
            tracing::info!(reason = err.reason(), "webhook signature rejected");
            ApiError::Unauthorized {
                detail: "The webhook signature is missing, invalid or outside the time window.",
            }
        })?;
    if !is_json_content_type(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let body: CallbackBody = axum::Json::<CallbackBody>::from_bytes(raw)?.0;
    let parsed = ParsedCallback::parse(body).map_err(ApiError::Validation)?;
    let webhook_id = header("webhook-id").unwrap_or_default();
    let request_hash = hex::encode(Sha256::digest(raw));
    state
        .callbacks()
        .receive(parsed, webhook_id, request_hash)
        .await
        .map(Json)
}
