//! HTTP glue: extractors that answer in problem+json, and shared helpers.

pub mod attempts;
pub mod code2des;
pub mod events;
pub mod idempotent;
pub mod ops;
pub mod page_imports;
pub mod retry;
pub mod set_events;
pub mod sets;
pub mod webhooks;

use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{header, HeaderMap};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// User routes accept bodies up to 16 KiB.
pub const USER_BODY_LIMIT: usize = 16 * 1024;
/// The webhook accepts bodies up to 64 KiB.
pub const WEBHOOK_BODY_LIMIT: usize = 64 * 1024;

/// A JSON body together with its raw bytes (for idempotency hashing).
/// Every rejection is problem+json: 415, 413, or 400 with the serde message.
pub struct ApiJson<T> {
    pub value: T,
    pub raw: Bytes,
}

pub fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json_content_type(req.headers()) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let RawBody(raw) = RawBody::from_request(req, state).await?;
        let value = axum::Json::<T>::from_bytes(&raw)?.0;
        Ok(Self { value, raw })
    }
}

/// The raw body within the route's limit; 413 problem+json beyond it.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(req, state).await.map(Self).map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::bad_request("unreadable_body", "The request body could not be read.")
            }
        })
    }
}

/// `Query` whose rejection is problem+json.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Query(value) = axum::extract::Query::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// An `{id}` path segment. An id no row can have is 404 without a query.
pub struct IdPath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for IdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        let ApiPath(id) = ApiPath::<String>::from_request_parts(parts, state).await?;
        if crate::domain::is_resource_id(&id) {
            Ok(Self(id))
        } else {
            Err(ApiError::NotFound)
        }
    }
}

/// `Path` whose rejection is problem+json.
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(value) = axum::extract::Path::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// When the request must be answered by: set by the `observe` middleware
/// from `REQUEST_TIMEOUT_MS`, and handed to work that must not finish after
/// its client was answered (`coalesce`).
#[derive(Debug, Clone, Copy)]
pub struct Deadline(pub std::time::Instant);

impl FromRequestParts<AppState> for Deadline {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Deadline>()
            .copied()
            .unwrap_or_else(|| Deadline(std::time::Instant::now() + state.config.request_timeout)))
    }
}
