//! The capture worker's callbacks (SPEC §7): after the signature and the
//! body's shape (`http::webhooks`, `domain::callback`), the fence, the
//! artifacts in S3, and exactly one transition; a retryable failure with
//! attempts left starts the next attempt instead.

use serde::Serialize;
use subtle::ConstantTimeEq;

use crate::artifacts::{self, ArtifactUrl, ExpectedIdentity, ManifestError};
use crate::attempts;
use crate::db::page_import::{self as db, Fence, ResumeFrom};
use crate::domain::callback::{Callback, ParsedCallback};
use crate::domain::FieldError;
use crate::domain::JobStatus;
use crate::error::ApiError;
use crate::state::AppState;
use page_import_contract::manifest::CaptureHash;

/// The backend actor of the capture worker's transitions.
pub const CAPTURE_WORKER: &str = "system:capture-worker";

/// The answer to an accepted callback.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CallbackAck {
    pub status: JobStatus,
    /// After a retryable failure: the attempt that was started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i32>,
    pub replayed: bool,
}

/// A signed callback that passed its shape rules: the fence, the artifacts,
/// then exactly one transition (SPEC §7). `webhook_id` and `request_hash`
/// identify the callback for the replay of a retryable failure.
pub async fn receive(
    state: &AppState,
    parsed: ParsedCallback,
    webhook_id: &str,
    request_hash: String,
) -> Result<CallbackAck, ApiError> {
    let ParsedCallback {
        id,
        attempt,
        nonce,
        callback,
    } = parsed;
    let retry_key = RetryKey {
        webhook_id,
        request_hash,
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
    if fence.status != JobStatus::Processing {
        return replay_or_conflict(&fence, &callback);
    }
    if let Callback::Failed {
        retryable: true,
        error_message,
        ..
    } = &callback
    {
        if attempt < state.config.capture_max_attempts {
            return retry(state, &id, attempt, &nonce, error_message, &retry_key).await;
        }
    }

    if let (Some((manifest, screenshot)), Callback::Completed { capture_hash, .. }) = (&artifacts, &callback) {
        let expected = ExpectedIdentity {
            page_import_id: &id,
            attempt,
            nonce: &fence.nonce,
            capture_hash: *capture_hash,
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
                &capture_hash.to_string(),
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
        return Ok(CallbackAck {
            status: callback.status(),
            attempt: None,
            replayed: false,
        });
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
            Err(err) => retry_replay_or(&mut conn, id, attempt, &callback, key, err).await,
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
        status: JobStatus::Processing,
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
) -> Result<CallbackAck, ApiError> {
    let retryable = matches!(callback, Callback::Failed { retryable: true, .. });
    if retryable && db::is_retry_replay(conn, id, attempt, key.webhook_id, &key.request_hash).await? {
        return Ok(CallbackAck {
            status: JobStatus::Processing,
            attempt: Some(attempt + 1),
            replayed: true,
        });
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

fn replay_or_conflict(fence: &Fence, callback: &Callback) -> Result<CallbackAck, ApiError> {
    if is_recorded_in(callback, fence) {
        return Ok(CallbackAck {
            status: fence.status,
            attempt: None,
            replayed: true,
        });
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

/// Whether the row already holds exactly this outcome.
fn is_recorded_in(callback: &Callback, fence: &Fence) -> bool {
    match callback {
        Callback::Completed {
            result_url,
            capture_hash,
            screenshot_url,
        } => {
            fence.status == JobStatus::Completed
                && fence.result_url.as_ref() == Some(result_url)
                && fence.capture_hash.as_deref().and_then(CaptureHash::parse) == Some(*capture_hash)
                && fence.screenshot_url.as_ref() == Some(screenshot_url)
        }
        Callback::Failed {
            error_message,
            result_url,
            ..
        } => {
            fence.status == JobStatus::Failed
                && fence.error_message.as_ref() == Some(error_message)
                && fence.result_url == *result_url
        }
    }
}
