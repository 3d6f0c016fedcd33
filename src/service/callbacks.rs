//! The capture worker's callbacks (SPEC §7): after the signature and the
//! body's shape (`http::webhooks`, `domain::callback`), the fence, the
//! artifacts in S3, and exactly one transition; a retryable failure with
//! attempts left starts the next attempt instead. Every transition locks
//! the row and checks it with [`judge`], the one fence rule.

use serde::Serialize;
use sqlx::{PgConnection, PgPool};
use subtle::ConstantTimeEq;

use crate::artifacts::{self, ArtifactUrl, ExpectedIdentity, ManifestError};
use crate::db::page_import::{self as db, Fence, Finish, NextAttempt, NextStarted};
use crate::domain::callback::{Callback, ParsedCallback};
use crate::domain::lifecycle::{AttemptOutcome, AttemptReason, CAPTURE_WORKER};
use crate::domain::{FieldError, JobStatus};
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::queue::messages::CaptureDestination;
use crate::queue::Committed;
use crate::service::next_attempt;
use page_import_contract::manifest::CaptureHash;

/// What receiving a callback uses.
pub struct Callbacks<'a> {
    pub pool: &'a PgPool,
    pub s3: &'a aws_sdk_s3::Client,
    /// The artifact bucket callbacks must name, and where the next attempt's
    /// message sends its results.
    pub destination: &'a CaptureDestination,
    /// `CAPTURE_MAX_ATTEMPTS`.
    pub max_attempts: i32,
    /// Told when an attempt ends (its streams; its slot frees).
    pub committed: &'a Committed,
    pub metrics: &'a Metrics,
}

impl Callbacks<'_> {
    /// A signed callback that passed its shape rules: the fence, the artifacts,
    /// then exactly one transition (SPEC §7).
    #[tracing::instrument(name = "callback", skip_all, fields(page_import_id = %parsed.id, attempt = parsed.attempt))]
    pub async fn receive(
        &self,
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
        let received = Received {
            id: &id,
            attempt,
            nonce: &nonce,
            callback: &callback,
            webhook_id,
            request_hash: &request_hash,
        };
        let mut conn = self.pool.acquire().await?;
        let fence = find_fence(&mut conn, &id).await?;
        if let Err(err) = check_fence(&fence, attempt, &nonce) {
            return retry_replay_or(&mut conn, &received, err).await;
        }
        // Release the connection: no database resource is held across S3 I/O.
        drop(conn);

        let artifacts = self.artifact_urls(&id, attempt, &callback)?;

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
            if attempt < self.max_attempts {
                return self.retry(&received, error_message).await;
            }
        }
        if let (Some((manifest, screenshot)), Callback::Completed { capture_hash, .. }) = (&artifacts, &callback) {
            let expected = ExpectedIdentity {
                page_import_id: &id,
                attempt,
                nonce: &fence.nonce,
                capture_hash: *capture_hash,
            };
            self.verify_stored(manifest, screenshot, &expected).await?;
        }
        self.finish(&received).await
    }

    /// The callback's artifact URLs, each under the attempt's own prefix of
    /// the bucket (422 naming the field otherwise): a completed capture's
    /// manifest and screenshot; a failure's optional partial manifest is
    /// checked, not used.
    fn artifact_urls(
        &self,
        id: &str,
        attempt: i32,
        callback: &Callback,
    ) -> Result<Option<(ArtifactUrl, ArtifactUrl)>, ApiError> {
        let bucket = &self.destination.bucket;
        let artifact = |field: &'static str, url: &str| {
            ArtifactUrl::parse(url, bucket, id, attempt)
                .map_err(|why| FieldError::new(field, "invalid_artifact_url", why))
        };
        match callback {
            Callback::Completed {
                result_url,
                screenshot_url,
                ..
            } => match (
                artifact("resultUrl", result_url),
                artifact("screenshotUrl", screenshot_url),
            ) {
                (Ok(manifest), Ok(screenshot)) => Ok(Some((manifest, screenshot))),
                (a, b) => Err(ApiError::Validation([a.err(), b.err()].into_iter().flatten().collect())),
            },
            Callback::Failed {
                result_url: Some(url), ..
            } => {
                artifact("resultUrl", url).map_err(|e| ApiError::Validation(vec![e]))?;
                Ok(None)
            }
            Callback::Failed { result_url: None, .. } => Ok(None),
        }
    }

    /// A completed capture's manifest carries the attempt's identity and
    /// hash, and its screenshot exists (SPEC §7).
    async fn verify_stored(
        &self,
        manifest: &ArtifactUrl,
        screenshot: &ArtifactUrl,
        expected: &ExpectedIdentity<'_>,
    ) -> Result<(), ApiError> {
        artifacts::verify_manifest(self.s3, manifest, expected)
            .await
            .map_err(manifest_error)?;
        artifacts::verify_exists(self.s3, screenshot)
            .await
            .map_err(manifest_error)
    }

    /// The one transition: on the locked row, judged again, the attempt ends
    /// `completed` or `failed` (SPEC §7).
    async fn finish(&self, received: &Received<'_>) -> Result<CallbackAck, ApiError> {
        let (id, attempt, callback) = (received.id, received.attempt, received.callback);
        let mut tx = self.pool.begin().await?;
        if let Some(answer) = judge(&mut tx, received).await? {
            // Moved since we read it: a concurrent twin, the sweeper, a delete.
            // Committed: a late writer is noted for erasure (`seen_by_erasure`).
            tx.commit().await?;
            return answer;
        }
        let capture_hash = match callback {
            Callback::Completed { capture_hash, .. } => Some(capture_hash.to_string()),
            Callback::Failed { .. } => None,
        };
        let finish = finish_of(callback, received.nonce, capture_hash.as_deref());
        if !db::finish(&mut tx, id, attempt, &finish).await? {
            return Err(anyhow::anyhow!("the row moved under its lock").into());
        }
        tx.commit().await?;
        self.committed.attempt_ended(id);
        self.metrics.import_finished(callback.status().as_str());
        tracing::info!(page_import_id = %id, outcome = callback.status().as_str(), "page import finished");
        Ok(CallbackAck {
            status: callback.status(),
            attempt: None,
            replayed: false,
        })
    }

    /// A retryable failure with attempts left: the next attempt starts (SPEC §7)
    /// and this callback is noted on the attempt it ended, for its replays.
    #[tracing::instrument(name = "callback.next_attempt", skip_all)]
    async fn retry(&self, received: &Received<'_>, error_message: &str) -> Result<CallbackAck, ApiError> {
        let (id, attempt) = (received.id, received.attempt);
        let mut tx = self.pool.begin().await?;
        if let Some(answer) = judge(&mut tx, received).await? {
            tx.commit().await?;
            return answer;
        }
        let next = NextAttempt {
            from: JobStatus::Processing,
            reason: AttemptReason::Retryable,
            actor: CAPTURE_WORKER,
            ended: Some(AttemptOutcome::RetryableFailure),
            max_queued: None,
        };
        // A re-dispatch is never refused (`max_queued: None`).
        let Some(NextStarted::Queued(next)) = next_attempt::start(&mut tx, id, attempt, next).await? else {
            return Err(ApiError::NotFound);
        };
        db::record_retryable_failure(
            &mut tx,
            id,
            attempt,
            error_message,
            received.webhook_id,
            received.request_hash,
        )
        .await?;
        tx.commit().await?;
        self.committed.attempt_ended(id);
        self.metrics.attempts_started(AttemptReason::Retryable, 1);
        tracing::info!(page_import_id = %id, attempt = next, "retryable failure; next attempt");
        Ok(CallbackAck {
            status: JobStatus::Processing,
            attempt: Some(next),
            replayed: false,
        })
    }
}

/// The answer to an accepted callback.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CallbackAck {
    pub status: JobStatus,
    /// After a retryable failure: the attempt that was started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i32>,
    pub replayed: bool,
}

/// One callback as the fence sees it.
struct Received<'a> {
    id: &'a str,
    attempt: i32,
    nonce: &'a str,
    callback: &'a Callback,
    /// Its `webhook-id` and body hash: what recognises the replay of a
    /// retryable failure.
    webhook_id: &'a str,
    request_hash: &'a str,
}

/// The fence rule, on the row locked for the caller's transaction: `None`
/// when the callback may move the row (its live attempt, with its nonce,
/// still processing, not deleted), otherwise the answer it gets.
#[tracing::instrument(name = "callback.fence", skip_all)]
async fn judge(
    tx: &mut PgConnection,
    received: &Received<'_>,
) -> Result<Option<Result<CallbackAck, ApiError>>, ApiError> {
    let fence = db::lock_fence(tx, received.id).await?;
    let fence = match seen_by_erasure(tx, received.id, fence).await {
        Ok(fence) => fence,
        // An answer, not a failure: the caller commits the late writer's note.
        Err(gone @ (ApiError::Gone | ApiError::NotFound)) => return Ok(Some(Err(gone))),
        Err(err) => return Err(err),
    };
    if let Err(err) = check_fence(&fence, received.attempt, received.nonce) {
        return Ok(Some(retry_replay_or(tx, received, err).await));
    }
    if fence.status != JobStatus::Processing {
        return Ok(Some(replay_or_conflict(&fence, received.callback)));
    }
    Ok(None)
}

/// A callback that no longer matches the fence is refused (`err`), unless it
/// is the exact replay of the retryable callback that started the next attempt.
async fn retry_replay_or(
    conn: &mut PgConnection,
    received: &Received<'_>,
    err: ApiError,
) -> Result<CallbackAck, ApiError> {
    let retryable = matches!(received.callback, Callback::Failed { retryable: true, .. });
    if retryable
        && db::is_retry_replay(
            conn,
            received.id,
            received.attempt,
            received.webhook_id,
            received.request_hash,
        )
        .await?
    {
        return Ok(CallbackAck {
            status: JobStatus::Processing,
            attempt: Some(received.attempt + 1),
            replayed: true,
        });
    }
    Err(err)
}

/// The import's fence, for a callback that has not locked it.
async fn find_fence(conn: &mut PgConnection, id: &str) -> Result<Fence, ApiError> {
    let fence = db::find_fence(conn, id).await?;
    seen_by_erasure(conn, id, fence).await
}

/// A callback for an import that is deleted, or was deleted and erased, is
/// a late writer (SPEC §13): the erasure ledger notes it, so that whatever it
/// wrote is erased too, and [`check_fence`] answers 410. An id that was
/// never known is 404.
async fn seen_by_erasure(conn: &mut PgConnection, id: &str, fence: Option<Fence>) -> Result<Fence, ApiError> {
    match fence {
        Some(fence) if !fence.deleted => Ok(fence),
        Some(fence) => {
            crate::db::erasure::note_late_writer(conn, id).await?;
            Ok(fence)
        }
        None if crate::db::erasure::note_late_writer(conn, id).await? => Err(ApiError::Gone),
        None => Err(ApiError::NotFound),
    }
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

/// What a terminal callback writes on its attempt's row.
fn finish_of<'a>(callback: &'a Callback, nonce: &'a str, capture_hash: Option<&'a str>) -> Finish<'a> {
    match callback {
        Callback::Completed {
            result_url,
            screenshot_url,
            ..
        } => Finish {
            nonce: Some(nonce),
            status: JobStatus::Completed,
            outcome: AttemptOutcome::Completed,
            result_url: Some(result_url),
            capture_hash,
            screenshot_url: Some(screenshot_url),
            error_message: None,
            actor: CAPTURE_WORKER,
        },
        Callback::Failed {
            error_message,
            result_url,
            ..
        } => Finish {
            nonce: Some(nonce),
            status: JobStatus::Failed,
            outcome: AttemptOutcome::Failed,
            result_url: result_url.as_deref(),
            capture_hash: None,
            screenshot_url: None,
            error_message: Some(error_message),
            actor: CAPTURE_WORKER,
        },
    }
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
