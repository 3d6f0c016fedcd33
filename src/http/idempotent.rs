//! `Idempotency-Key` handling shared by every create route: claim the key,
//! replay a finished response, refuse a mismatch (422) or a duplicate in
//! flight (409), and release the key when the work fails.

use std::future::Future;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use sha2::{Digest, Sha256};

use crate::auth::Actor;
use crate::db::idempotency::{self, Claim, IdempotencyKey};
use crate::error::ApiError;
use crate::state::AppState;

/// Claims the key for this request: `None` when it is this request's to
/// run; the recorded answer when it is a replay; 422 for a key used with
/// another body, 409 while its first request is still in flight.
async fn claim(state: &AppState, key: &IdempotencyKey, request_hash: &str) -> Result<Option<Response>, ApiError> {
    let mut conn = state.pool.acquire().await?;
    match idempotency::claim(&mut conn, key, request_hash).await? {
        Claim::Owned => Ok(None),
        Claim::Replay { status, location, body } => Ok(Some(replay(status, location, body))),
        Claim::Mismatch => Err(ApiError::unprocessable(
            "idempotency_key_reused",
            "This Idempotency-Key was used with a different request body.",
        )),
        Claim::InFlight => Err(ApiError::conflict(
            "idempotency_key_in_flight",
            "A request with this Idempotency-Key is still being processed.",
        )),
    }
}

/// Runs `work` at most once per (caller, route, key). `work` receives the key
/// so it can record its response in the same transaction as its data.
pub async fn run<F, Fut>(
    state: &AppState,
    actor: &Actor,
    headers: &HeaderMap,
    raw_body: &[u8],
    route: impl Into<std::borrow::Cow<'static, str>>,
    work: F,
) -> Result<Response, ApiError>
where
    F: FnOnce(Option<IdempotencyKey>) -> Fut,
    Fut: Future<Output = Result<Response, ApiError>>,
{
    let Some(key) = header_key(headers)? else {
        return work(None).await;
    };
    let key = IdempotencyKey {
        subject: actor.subject.clone(),
        route: route.into(),
        key,
    };
    let request_hash = hex::encode(Sha256::digest(raw_body));
    if let Some(replayed) = claim(state, &key, &request_hash).await? {
        return Ok(replayed);
    }
    // Released if the work fails, and also if it never finishes: a request
    // cut off by its timeout (its future dropped) must not leave the key
    // "in flight" for a minute, refusing the client's retry with 409.
    let mut claim = Claimed {
        state: state.clone(),
        key: Some(key.clone()),
    };
    let result = work(Some(key)).await;
    if let Some(key) = claim.key.take() {
        if result.is_err() {
            // Released before answering, so the client's retry finds it free.
            let released = async {
                let mut conn = state.pool.acquire().await?;
                idempotency::release(&mut conn, &key).await
            };
            if let Err(err) = released.await {
                tracing::warn!(error = %err, "could not release idempotency key");
            }
        }
    }
    result
}

/// An owned key that is released when dropped, unless the work succeeded
/// (its response is recorded then). The release only deletes a key with no
/// recorded response, so it cannot undo a commit that won the race.
struct Claimed {
    state: AppState,
    key: Option<IdempotencyKey>,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else {
            return;
        };
        let pool = self.state.pool.clone();
        tokio::spawn(async move {
            let released = async {
                let mut conn = pool.acquire().await?;
                idempotency::release(&mut conn, &key).await
            };
            if let Err(err) = released.await {
                tracing::warn!(error = %err, "could not release idempotency key");
            }
        });
    }
}

/// The `Idempotency-Key` header, if present: 1–255 visible ASCII characters.
fn header_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_idempotency_key",
                "Idempotency-Key must be 1 to 255 visible ASCII characters.",
            )
        })?;
    Ok(Some(key.to_owned()))
}

fn replay(status: i16, location: Option<String>, body: serde_json::Value) -> Response {
    let status = StatusCode::from_u16(status as u16).unwrap_or(StatusCode::ACCEPTED);
    let mut response = (status, Json(body)).into_response();
    if let Some(location) = location.and_then(|l| HeaderValue::try_from(l).ok()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}

/// The 202 answer of a create route: `Location` and the JSON body.
pub fn accepted(location: &str, body: &impl serde::Serialize) -> Result<Response, ApiError> {
    let mut response = (StatusCode::ACCEPTED, Json(body)).into_response();
    response.headers_mut().insert(
        header::LOCATION,
        HeaderValue::try_from(location).map_err(anyhow::Error::from)?,
    );
    Ok(response)
}
