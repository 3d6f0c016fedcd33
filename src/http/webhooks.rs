//! `POST /webhooks/page-imports`: the capture worker's signed callback (SPEC §7).
//!
//! Checks, in order: signature (401) → body shape (400/422) → row exists (404)
//! → not deleted (410) → attempt and nonce (409) → artifact URLs (422) →
//! manifest and screenshot in S3 (422) → one conditional UPDATE; when that
//! changes nothing, a re-read tells a replay (200) from a conflict (409/410).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The backend actor of the capture worker's transitions.
pub const CAPTURE_WORKER: &str = "system:capture-worker";

use crate::app::AppState;
use crate::artifacts::{self, ArtifactUrl, ExpectedIdentity, ManifestError};
use crate::attempts;
use crate::db::page_import::{self as db, Fence, ResumeFrom};
use crate::domain::ImportStatus;
use crate::error::{ApiError, FieldError, Problem};
use crate::http::{is_json_content_type, RawBody};

pub use page_import_contract::callback::{client_safe_message, CallbackBody, Outcome, MAX_ERROR_MESSAGE_CHARS};
use page_import_contract::manifest::is_capture_hash;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CallbackAck {
    pub status: ImportStatus,
    /// After a retryable failure: the attempt that was started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i32>,
    pub replayed: bool,
}

/// A callback whose shape passed its rules.
enum Callback {
    Completed {
        result_url: String,
        capture_hash: String,
        screenshot_url: String,
    },
    Failed {
        error_message: String,
        result_url: Option<String>,
        retryable: bool,
    },
}

impl Callback {
    fn status(&self) -> ImportStatus {
        match self {
            Self::Completed { .. } => ImportStatus::Completed,
            Self::Failed { .. } => ImportStatus::Failed,
        }
    }

    /// Whether the row already holds exactly this outcome.
    fn is_recorded_in(&self, fence: &Fence) -> bool {
        match self {
            Self::Completed {
                result_url,
                capture_hash,
                screenshot_url,
            } => {
                fence.status == ImportStatus::Completed
                    && fence.result_url.as_ref() == Some(result_url)
                    && fence.capture_hash.as_ref() == Some(capture_hash)
                    && fence.screenshot_url.as_ref() == Some(screenshot_url)
            }
            Self::Failed {
                error_message,
                result_url,
                ..
            } => {
                fence.status == ImportStatus::Failed
                    && fence.error_message.as_ref() == Some(error_message)
                    && fence.result_url == *result_url
            }
        }
    }
}

fn check_shape(body: CallbackBody) -> Result<(String, i32, String, Callback), ApiError> {
    let mut errors = Vec::new();
    if !crate::domain::is_resource_id(&body.page_import_id) {
        errors.push(FieldError::new(
            "pageImportId",
            "invalid_id",
            "pageImportId must be 1 to 255 ASCII letters, digits or '-'",
        ));
    }
    let attempt = i32::try_from(body.attempt).ok().filter(|a| *a >= 1);
    if attempt.is_none() {
        errors.push(FieldError::new(
            "attempt",
            "out_of_range",
            "attempt must be a positive 32-bit integer",
        ));
    }
    if body.nonce.is_empty() || body.nonce.len() > 255 || !body.nonce.bytes().all(|b| b.is_ascii_graphic()) {
        errors.push(FieldError::new(
            "nonce",
            "invalid_nonce",
            "nonce must be 1 to 255 visible ASCII characters",
        ));
    }
    let required = |errors: &mut Vec<FieldError>, field: &'static str, value: &Option<String>| {
        if value.is_none() {
            errors.push(FieldError::new(
                field,
                "required",
                format!("{field} is required for this outcome"),
            ));
        }
    };
    let forbidden = |errors: &mut Vec<FieldError>, field: &'static str, value: &Option<String>| {
        if value.is_some() {
            errors.push(FieldError::new(
                field,
                "not_allowed",
                format!("{field} is not allowed for this outcome"),
            ));
        }
    };
    match body.outcome {
        Outcome::Completed => {
            required(&mut errors, "resultUrl", &body.result_url);
            required(&mut errors, "captureHash", &body.capture_hash);
            required(&mut errors, "screenshotUrl", &body.screenshot_url);
            forbidden(&mut errors, "errorMessage", &body.error_message);
            if body.retryable.is_some() {
                errors.push(FieldError::new(
                    "retryable",
                    "not_allowed",
                    "retryable is not allowed for this outcome",
                ));
            }
            if body.capture_hash.as_deref().is_some_and(|h| !is_capture_hash(h)) {
                errors.push(FieldError::new(
                    "captureHash",
                    "invalid_capture_hash",
                    "captureHash must be sha256: followed by 64 lowercase hex digits",
                ));
            }
        }
        Outcome::Failed => {
            required(&mut errors, "errorMessage", &body.error_message);
            forbidden(&mut errors, "captureHash", &body.capture_hash);
            forbidden(&mut errors, "screenshotUrl", &body.screenshot_url);
        }
    }
    let safe_message = body.error_message.as_deref().map(client_safe_message);
    if safe_message.as_deref() == Some("") {
        errors.push(FieldError::new(
            "errorMessage",
            "empty",
            "errorMessage has no printable characters",
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    let callback = match body.outcome {
        Outcome::Completed => Callback::Completed {
            result_url: body.result_url.unwrap_or_default(),
            capture_hash: body.capture_hash.unwrap_or_default(),
            screenshot_url: body.screenshot_url.unwrap_or_default(),
        },
        Outcome::Failed => Callback::Failed {
            error_message: safe_message.unwrap_or_default(),
            result_url: body.result_url,
            retryable: body.retryable == Some(true),
        },
    };
    Ok((body.page_import_id, attempt.unwrap_or(1), body.nonce, callback))
}

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
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Bad, missing or stale signature", body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "fence_mismatch or already_terminal", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "The import was deleted; stop", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid shape, artifact URL, or manifest", body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
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
    let (id, attempt, nonce, callback) = check_shape(body)?;

    let retry_key = RetryKey {
        webhook_id: header("webhook-id").unwrap_or_default(),
        request_hash: hex::encode(Sha256::digest(raw)),
    };
    let mut conn = state.pool.acquire().await?;
    let fence = db::find_fence(&mut conn, &id).await?.ok_or(ApiError::NotFound)?;
    if let Err(err) = check_fence(&fence, attempt, &nonce) {
        return retry_replay_or(&mut conn, &id, attempt, &callback, &retry_key, err).await;
    }
    // Release the connection: no database resource is held across S3 I/O.
    drop(conn);

    let bucket = &state.config.artifact_bucket;
    let artifact = |field: &'static str, url: &str| {
        ArtifactUrl::parse(url, bucket, &id, attempt).map_err(|why| FieldError::new(field, "invalid_artifact_url", why))
    };
    let artifacts = match &callback {
        Callback::Completed {
            result_url,
            screenshot_url,
            ..
        } => match (
            artifact("resultUrl", result_url),
            artifact("screenshotUrl", screenshot_url),
        ) {
            (Ok(manifest), Ok(screenshot)) => Some((manifest, screenshot)),
            (a, b) => return Err(ApiError::Validation([a.err(), b.err()].into_iter().flatten().collect())),
        },
        Callback::Failed {
            result_url: Some(url), ..
        } => {
            artifact("resultUrl", url).map_err(|e| ApiError::Validation(vec![e]))?;
            None
        }
        Callback::Failed { result_url: None, .. } => None,
    };

    // Already terminal: decide replay or conflict without touching S3.
    if fence.status != ImportStatus::Processing {
        return replay_or_conflict(&fence, &callback);
    }
    if let Callback::Failed {
        retryable: true,
        error_message,
        ..
    } = &callback
    {
        if attempt < state.config.capture_max_attempts {
            return retry(state, &id, attempt, &nonce, error_message, &retry_key)
                .await
                .map(Json);
        }
    }

    if let (Some((manifest, screenshot)), Callback::Completed { capture_hash, .. }) = (&artifacts, &callback) {
        let expected = ExpectedIdentity {
            page_import_id: &id,
            attempt,
            nonce: &fence.nonce,
            capture_hash,
        };
        artifacts::verify_manifest(&state.s3, manifest, &expected)
            .await
            .map_err(manifest_error)?;
        artifacts::verify_exists(&state.s3, screenshot)
            .await
            .map_err(manifest_error)?;
    }

    let mut conn = state.pool.acquire().await?;
    let changed = match &callback {
        Callback::Completed {
            result_url,
            capture_hash,
            screenshot_url,
        } => {
            db::mark_completed_if_fenced(
                &mut conn,
                &id,
                attempt,
                &nonce,
                result_url,
                capture_hash,
                screenshot_url,
            )
            .await?
        }
        Callback::Failed {
            error_message,
            result_url,
            ..
        } => db::mark_failed_if_fenced(&mut conn, &id, attempt, &nonce, error_message, result_url.as_deref()).await?,
    };
    if changed {
        state.metrics.import_finished(callback.status().as_str());
        tracing::info!(page_import_id = %id, outcome = callback.status().as_str(), "page import finished");
        return Ok(Json(CallbackAck {
            status: callback.status(),
            attempt: None,
            replayed: false,
        }));
    }
    // Someone else moved the row between our read and our update.
    let fence = db::find_fence(&mut conn, &id).await?.ok_or(ApiError::NotFound)?;
    if let Err(err) = check_fence(&fence, attempt, &nonce) {
        return retry_replay_or(&mut conn, &id, attempt, &callback, &retry_key, err).await;
    }
    replay_or_conflict(&fence, &callback)
}

/// What identifies one retryable callback: its `webhook-id` and body.
struct RetryKey<'a> {
    webhook_id: &'a str,
    request_hash: String,
}

/// A retryable failure with attempts left: the next attempt starts (SPEC §7)
/// and this callback is noted on the attempt it ended, for its replays.
async fn retry(
    state: &AppState,
    id: &str,
    attempt: i32,
    nonce: &str,
    error_message: &str,
    key: &RetryKey<'_>,
) -> Result<CallbackAck, ApiError> {
    let mut tx = state.pool.begin().await?;
    let from = ResumeFrom::Processing { nonce: Some(nonce) };
    let started = attempts::start_next(&mut tx, &state.config, id, attempt, from, CAPTURE_WORKER).await?;
    let Some(next) = started else {
        // Moved since we read it: a concurrent twin of this callback, the
        // sweeper, a delete. Decide from the row as it is now.
        drop(tx);
        let mut conn = state.pool.acquire().await?;
        let fence = db::find_fence(&mut conn, id).await?.ok_or(ApiError::NotFound)?;
        let callback = Callback::Failed {
            error_message: error_message.to_owned(),
            result_url: None,
            retryable: true,
        };
        return match check_fence(&fence, attempt, nonce) {
            Err(err) => retry_replay_or(&mut conn, id, attempt, &callback, key, err)
                .await
                .map(|j| j.0),
            Ok(()) => Err(ApiError::conflict(
                "already_terminal",
                format!("The import is already {}.", fence.status.as_str()),
            )),
        };
    };
    db::record_retryable_failure(&mut tx, id, attempt, error_message, key.webhook_id, &key.request_hash).await?;
    tx.commit().await?;
    state.metrics.attempts_started("retryable", 1);
    tracing::info!(page_import_id = %id, attempt = next, "retryable failure; next attempt");
    Ok(CallbackAck {
        status: ImportStatus::Processing,
        attempt: Some(next),
        replayed: false,
    })
}

/// A callback that no longer matches the fence is refused (`err`), unless it
/// is the exact replay of the retryable callback that started the next attempt.
async fn retry_replay_or(
    conn: &mut sqlx::PgConnection,
    id: &str,
    attempt: i32,
    callback: &Callback,
    key: &RetryKey<'_>,
    err: ApiError,
) -> Result<Json<CallbackAck>, ApiError> {
    let retryable = matches!(callback, Callback::Failed { retryable: true, .. });
    if retryable && db::is_retry_replay(conn, id, attempt, key.webhook_id, &key.request_hash).await? {
        return Ok(Json(CallbackAck {
            status: ImportStatus::Processing,
            attempt: Some(attempt + 1),
            replayed: true,
        }));
    }
    Err(err)
}

fn check_fence(fence: &Fence, attempt: i32, nonce: &str) -> Result<(), ApiError> {
    if fence.deleted {
        return Err(ApiError::Gone);
    }
    let nonce_ok: bool = fence.nonce.as_bytes().ct_eq(nonce.as_bytes()).into();
    if fence.attempt != attempt || !nonce_ok {
        return Err(ApiError::conflict(
            "fence_mismatch",
            "attempt and nonce do not match the live job.",
        ));
    }
    Ok(())
}

fn replay_or_conflict(fence: &Fence, callback: &Callback) -> Result<Json<CallbackAck>, ApiError> {
    if callback.is_recorded_in(fence) {
        return Ok(Json(CallbackAck {
            status: fence.status,
            attempt: None,
            replayed: true,
        }));
    }
    Err(ApiError::conflict(
        "already_terminal",
        format!("The import is already {}.", fence.status.as_str()),
    ))
}

fn manifest_error(err: ManifestError) -> ApiError {
    match err {
        ManifestError::Unavailable => ApiError::Unavailable("artifact storage"),
        ManifestError::ScreenshotMissing => ApiError::field("screenshotUrl", err.code(), err.to_string()),
        other => ApiError::field("resultUrl", other.code(), other.to_string()),
    }
}
