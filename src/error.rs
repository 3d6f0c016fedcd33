//! One error type for every route, rendered as RFC 9457 `application/problem+json`.
//!
//! Internal causes are logged once, with their chain, and never shown to the
//! client: the body carries a stable `code` and a safe `detail` only.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::domain::FieldError;

pub const PROBLEM_JSON: &str = "application/problem+json";

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("bad request: {detail}")]
    BadRequest { code: &'static str, detail: String },
    #[error("unauthorized")]
    Unauthorized { detail: &'static str },
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("conflict: {code}")]
    Conflict { code: &'static str, detail: String },
    #[error("gone")]
    Gone,
    #[error("payload too large")]
    PayloadTooLarge,
    #[error("unsupported media type")]
    UnsupportedMediaType,
    #[error("validation failed")]
    Validation(Vec<FieldError>),
    #[error("unprocessable: {code}")]
    Unprocessable { code: &'static str, detail: String },
    #[error("dependency unavailable: {0}")]
    Unavailable(&'static str),
    #[error("request timed out")]
    Timeout,
    #[error("too many event streams")]
    TooManyStreams,
    /// The organization holds `ORG_MAX_QUEUED` queued capture attempts
    /// (SPEC §12); `retry_after` whole seconds, at least 1.
    #[error("too many queued captures")]
    TooManyQueued { retry_after: u64 },
    /// The queue of requests waiting for a database statement is full.
    #[error("overloaded")]
    Overloaded,
    /// Readiness: supervised background tasks that are down.
    #[error("background tasks down: {0:?}")]
    TasksDown(Vec<&'static str>),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    /// The code of [`ApiError::Unauthorized`] (a webhook's failed signature
    /// check counts under it in `webhook_rejections_total`).
    pub const UNAUTHORIZED: &'static str = "unauthorized";

    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
        Self::BadRequest {
            code,
            detail: detail.into(),
        }
    }

    pub fn conflict(code: &'static str, detail: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            detail: detail.into(),
        }
    }

    pub fn unprocessable(code: &'static str, detail: impl Into<String>) -> Self {
        Self::Unprocessable {
            code,
            detail: detail.into(),
        }
    }

    pub fn field(field: &'static str, code: &'static str, message: impl Into<String>) -> Self {
        Self::Validation(vec![FieldError::new(field, code, message)])
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::Gone => StatusCode::GONE,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Validation(_) | Self::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyQueued { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable(_) | Self::Timeout | Self::TooManyStreams | Self::Overloaded | Self::TasksDown(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable, machine-readable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest { code, .. } | Self::Conflict { code, .. } | Self::Unprocessable { code, .. } => code,
            Self::Unauthorized { .. } => Self::UNAUTHORIZED,
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Gone => "gone",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Validation(_) => "validation_failed",
            Self::Unavailable(_) => "dependency_unavailable",
            Self::Timeout => "request_timeout",
            Self::TooManyStreams => "too_many_streams",
            Self::TooManyQueued { .. } => "too_many_queued",
            Self::Overloaded => "overloaded",
            Self::TasksDown(_) => "background_task_down",
            Self::Internal(_) => "internal_error",
        }
    }

    fn detail(&self) -> String {
        match self {
            Self::BadRequest { detail, .. } | Self::Conflict { detail, .. } | Self::Unprocessable { detail, .. } => {
                detail.clone()
            }
            Self::Unauthorized { detail } => (*detail).to_owned(),
            Self::NotFound => "The resource does not exist or is not visible to you.".into(),
            Self::MethodNotAllowed => "This method is not allowed on this resource.".into(),
            Self::Gone => "The resource has been deleted.".into(),
            Self::PayloadTooLarge => "The request body is larger than this route accepts.".into(),
            Self::UnsupportedMediaType => "Content-Type must be application/json.".into(),
            Self::Validation(_) => "One or more fields are invalid.".into(),
            Self::Unavailable(what) => format!("The {what} is unavailable; retry later."),
            Self::Timeout => "The request took too long; retry later.".into(),
            Self::TooManyQueued { .. } => {
                "Your organization has as many captures waiting as it may queue; retry after the time in Retry-After."
                    .into()
            }
            Self::TooManyStreams => "This replica has as many open event streams as it serves; retry later.".into(),
            Self::Overloaded => {
                "This replica has as many requests waiting for the database as it queues; retry shortly.".into()
            }
            Self::TasksDown(tasks) => format!("Background tasks are not running: {}.", tasks.join(", ")),
            Self::Internal(_) => "An internal error occurred.".into(),
        }
    }
}

/// RFC 9457 problem details, as every error body of this service.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub type_: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Stable snake_case error code.
    pub code: String,
    /// Field-level errors (422 validation failures only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            Self::Internal(err) => tracing::error!(error = ?err, "internal error"),
            Self::Unavailable(what) => tracing::warn!(dependency = what, "dependency unavailable"),
            _ => {}
        }
        let code = self.code();
        let problem = Problem {
            type_: format!("https://page-import.dev/problems/{}", code.replace('_', "-")),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail: self.detail(),
            code: code.to_owned(),
            errors: match &self {
                Self::Validation(errors) => Some(errors.clone()),
                _ => None,
            },
        };
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        match self {
            Self::Unauthorized { .. } => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::Unavailable(_) | Self::Timeout | Self::TooManyStreams | Self::TasksDown(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            Self::Overloaded => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            Self::TooManyQueued { retry_after } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)));
            }
            Self::Conflict {
                code: "idempotency_key_in_flight",
                ..
            } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }
}

/// Database failures: an unreachable or exhausted pool is a 503, anything else a 500.
impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        if crate::db::database_unavailable(&err) {
            tracing::warn!(error = %err, "database unavailable");
            Self::Unavailable("database")
        } else {
            Self::Internal(err.into())
        }
    }
}

fn truncate(message: String) -> String {
    const MAX: usize = 300;
    if message.len() <= MAX {
        return message;
    }
    let mut end = MAX;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::MissingJsonContentType(_) => Self::UnsupportedMediaType,
            JsonRejection::JsonSyntaxError(err) => Self::bad_request("malformed_json", truncate(err.body_text())),
            JsonRejection::JsonDataError(err) => Self::bad_request("invalid_body", truncate(err.body_text())),
            JsonRejection::BytesRejection(err) if err.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Self::PayloadTooLarge
            }
            other => Self::bad_request("unreadable_body", truncate(other.body_text())),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        Self::bad_request("invalid_query", truncate(rejection.body_text()))
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        Self::bad_request("invalid_path", truncate(rejection.body_text()))
    }
}

/// A coalesced statement's failure, as the API answers it.
impl From<crate::coalesce::CoalesceError> for ApiError {
    fn from(err: crate::coalesce::CoalesceError) -> Self {
        use crate::coalesce::CoalesceError;
        match err {
            CoalesceError::Overloaded => Self::Overloaded,
            CoalesceError::Timeout => Self::Timeout,
            CoalesceError::Unavailable => Self::Unavailable("database"),
            CoalesceError::Failed(why) => Self::Internal(anyhow::anyhow!(why)),
        }
    }
}
