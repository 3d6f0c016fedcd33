//! One queue message, start to finish: reuse what an earlier delivery of the
//! same attempt already stored, otherwise capture, upload, and call back.
//!
//! Keys are fixed per attempt (`screenshot.png`, `capture.json`,
//! `failure.json`) or content-addressed (`assets/<sha256>.<ext>`), and the
//! screenshot and both records are written with `If-None-Match: *`: a
//! redelivered message finds what the first delivery stored and reports
//! exactly that, so no second manifest with another hash can appear.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use page_import_contract::callback::{client_safe_message, CallbackBody, Outcome};
use page_import_contract::capture::{
    asset_object, Asset, CaptureManifest, Dom, PageInfo, Readiness, ScreenshotInfo, SourceInfo, UsedFont, WorkerInfo,
    FAILURE_OBJECT, MANIFEST_OBJECT, MANIFEST_VERSION, SCREENSHOT_OBJECT,
};
use page_import_contract::job::{s3_url, CaptureJob};
use page_import_contract::manifest::{CaptureHash, ManifestIdentity};
use sha2::{Digest, Sha256};
use tracing::Instrument;

use crate::browser::BrowserSlot;
use crate::callback::{Answer, CallbackClient};
use crate::capture::{self, CaptureSettings, Captured};
use crate::dom::{self, Details, Part, Snapshot};
use crate::egress::EgressPolicy;
use crate::failure::{Cause, Failure};
use crate::manifest::{self, FailureRecord};

pub struct Worker {
    pub s3: aws_sdk_s3::Client,
    pub browsers: BrowserSlot,
    pub policy: Arc<EgressPolicy>,
    pub settings: CaptureSettings,
    pub callbacks: CallbackClient,
}

/// What to do with the queue message afterwards.
#[derive(Debug, PartialEq, Eq)]
pub enum Disposition {
    /// The callback (every member's, for a set) got a final answer: delete
    /// the message.
    Done,
    /// Storage or the callback failed for now: leave the message to come back.
    Later,
    /// A set stopped before its last member (`set.rs`): make the message
    /// visible again now, for the next delivery to capture the rest.
    HandBack,
}

#[derive(Debug, thiserror::Error)]
#[error("artifact storage: {0}")]
pub struct StorageError(String);

fn storage<E: std::fmt::Debug>(e: SdkError<E>) -> StorageError {
    StorageError(format!("{e:?}").chars().take(300).collect())
}

/// A write with `If-None-Match: *`: what the object holds afterwards.
enum Stored {
    Written,
    AlreadyThere(Bytes),
}

impl Worker {
    pub async fn handle(&self, job: &CaptureJob<'_>) -> Disposition {
        match self.handle_inner(job).await {
            Ok(answer) if answer.is_final() => Disposition::Done,
            Ok(_) => Disposition::Later,
            Err(e) => {
                tracing::warn!(page_import_id = %job.page_import_id, attempt = job.attempt, error = %e, "capture left for redelivery");
                Disposition::Later
            }
        }
    }

    async fn handle_inner(&self, job: &CaptureJob<'_>) -> Result<Answer, StorageError> {
        let body = match self.earlier_body(job).await? {
            Some(body) => body,
            None => self.capture_and_store(job).await?,
        };
        let answer = self.callbacks.send(&job.callback_url, &body).await;
        tracing::info!(page_import_id = %job.page_import_id, attempt = job.attempt, outcome = ?body.outcome, answer = ?answer, "callback answered");
        Ok(answer)
    }

    /// The callback of what an earlier delivery of this attempt stored, if
    /// it stored a manifest or a failure record.
    pub(crate) async fn earlier_body(&self, job: &CaptureJob<'_>) -> Result<Option<CallbackBody>, StorageError> {
        let bucket = job.artifacts.bucket.as_ref();
        let prefix = job.artifacts.prefix.as_ref();
        let (manifest_key, failure_key) = (
            format!("{prefix}{MANIFEST_OBJECT}"),
            format!("{prefix}{FAILURE_OBJECT}"),
        );
        let (earlier_manifest, earlier_failure) =
            async { tokio::join!(self.get(bucket, &manifest_key), self.get(bucket, &failure_key)) }
                .instrument(tracing::info_span!("step", otel.name = "earlier"))
                .await;
        if let Some(manifest) = earlier_manifest? {
            tracing::info!(page_import_id = %job.page_import_id, attempt = job.attempt, "attempt already captured; repeating its callback");
            return Ok(Some(completed_body(job, &manifest)));
        }
        match earlier_failure? {
            Some(record) => match serde_json::from_slice::<FailureRecord>(&record) {
                Ok(record) => Ok(Some(failed_body(job, &record.message, record.retryable))),
                Err(_) => Err(StorageError("failure.json is not a failure record".into())),
            },
            None => Ok(None),
        }
    }

    /// Captures the page and stores the manifest, or the failure, and
    /// returns its callback.
    async fn capture_and_store(&self, job: &CaptureJob<'_>) -> Result<CallbackBody, StorageError> {
        let started = Instant::now();
        let outcome = self.capture(job).await;
        self.store_outcome(job, outcome, started.elapsed()).await
    }

    /// Stores what a capture of `elapsed` gave, the manifest or the
    /// failure, and returns its callback.
    pub(crate) async fn store_outcome(
        &self,
        job: &CaptureJob<'_>,
        outcome: Result<Captured, Failure>,
        elapsed: std::time::Duration,
    ) -> Result<CallbackBody, StorageError> {
        crate::metrics::capture_took(elapsed);
        let mut captured = match outcome {
            Ok(captured) => captured,
            Err(failure) => return self.store_failure(job, failure, elapsed).await,
        };
        let details = std::mem::take(&mut captured.answers.details);
        match parse_snapshot(&captured, details) {
            Ok(parts) => {
                crate::metrics::capture_completed();
                let manifest = self.store_capture(job, &captured, &parts).await?;
                Ok(completed_body(job, &manifest))
            }
            Err(e) => {
                tracing::error!(error = %e, "the DOM snapshot did not parse");
                let failure = Failure {
                    cause: Cause::CaptureError,
                    blocked: captured.blocked,
                };
                self.store_failure(job, failure, elapsed).await
            }
        }
    }

    /// The capture on the warm browser (started if need be); a browser
    /// that crashed is counted.
    async fn capture(&self, job: &CaptureJob<'_>) -> Result<Captured, Failure> {
        let browser = self
            .browsers
            .get()
            .instrument(tracing::info_span!("step", otel.name = "browser"))
            .await;
        match browser {
            Ok(browser) => {
                let result = capture::capture(&browser, self.policy.clone(), job, &self.settings).await;
                if matches!(&result, Err(f) if f.cause == Cause::BrowserCrashed) {
                    crate::metrics::browser_crashed();
                }
                result
            }
            Err(e) => {
                tracing::error!(error = %e, "chromium could not be started");
                Err(Cause::BrowserUnavailable.into())
            }
        }
    }

    /// Writes `failure.json` (or adopts the one an earlier delivery wrote)
    /// and returns the `failed` callback for it.
    #[tracing::instrument(name = "step", fields(otel.name = "uploads"), skip_all)]
    async fn store_failure(
        &self,
        job: &CaptureJob<'_>,
        failure: Failure,
        elapsed: std::time::Duration,
    ) -> Result<CallbackBody, StorageError> {
        let cause = &failure.cause;
        crate::metrics::capture_failed(cause);
        tracing::info!(page_import_id = %job.page_import_id, reason = cause.reason(), retryable = cause.retryable(), "capture failed");
        let record = FailureRecord {
            schema_version: FailureRecord::SCHEMA_VERSION,
            page_import_id: job.page_import_id.to_string(),
            attempt: job.attempt,
            reason: cause.reason().to_owned(),
            message: client_safe_message(&cause.message()),
            retryable: cause.retryable(),
            failed_at: now_rfc3339(),
            elapsed_ms: elapsed.as_millis() as u64,
            blocked_requests: failure.blocked.listed,
            blocked_requests_omitted: failure.blocked.omitted,
        };
        let bytes = serde_json::to_vec(&record).expect("a failure record serializes");
        let key = format!("{}{FAILURE_OBJECT}", job.artifacts.prefix);
        let stored = match self
            .put_if_absent(&job.artifacts.bucket, &key, bytes.into(), "application/json")
            .await?
        {
            Stored::Written => record,
            Stored::AlreadyThere(earlier) => serde_json::from_slice(&earlier)
                .map_err(|_| StorageError("failure.json is not a failure record".into()))?,
        };
        Ok(failed_body(job, &stored.message, stored.retryable))
    }

    /// Uploads assets, the screenshot and last the manifest; returns the
    /// manifest bytes as stored.
    #[tracing::instrument(name = "step", fields(otel.name = "uploads"), skip_all)]
    async fn store_capture(
        &self,
        job: &CaptureJob<'_>,
        captured: &Captured,
        parts: &[Part<'_>],
    ) -> Result<Bytes, StorageError> {
        let bucket = job.artifacts.bucket.as_ref();
        let prefix = job.artifacts.prefix.as_ref();
        let screenshot_key = format!("{prefix}{SCREENSHOT_OBJECT}");
        let planned = plan_assets(prefix, captured);
        let uploads = planned
            .uploads
            .iter()
            .map(|(key, bytes, mime_type)| self.put(bucket, key.clone(), (*bytes).clone(), mime_type));
        let screenshot = self
            .upload_with_screenshot(bucket, &screenshot_key, uploads, &captured.screenshot_png)
            .await?;
        // This capture's PNG was read when it was taken; one an earlier
        // delivery stored is read here, and a manifest never says 0×0.
        let Some((pixel_width, pixel_height)) = manifest::png_size(&screenshot) else {
            tracing::error!(key = %screenshot_key, bytes = screenshot.len(), "the stored screenshot is not a PNG");
            return Err(StorageError(format!("{screenshot_key} is not a PNG")));
        };
        let browser = self.browsers.version().await;
        let fonts = used_fonts(captured, &planned.key_of_url);
        let captured_at = now_rfc3339();
        let screenshot = ScreenshotInfo {
            key: &screenshot_key,
            pixel_width,
            pixel_height,
            sha256: hex::encode(Sha256::digest(&screenshot)),
        };
        let dom = dom::dom_with_looks(parts, &planned.image_keys, fonts, &captured.looks);
        let manifest = capture_manifest(job, captured, captured_at, &browser, screenshot, planned.assets, dom);
        let bytes = Bytes::from(serde_json::to_vec(&manifest).expect("a manifest serializes"));
        drop(manifest);
        crate::metrics::manifest_bytes(bytes.len());
        let key = format!("{prefix}{MANIFEST_OBJECT}");
        match self
            .put_if_absent(bucket, &key, bytes.clone(), "application/json")
            .await?
        {
            Stored::Written => Ok(bytes),
            Stored::AlreadyThere(earlier) => Ok(earlier),
        }
    }

    /// Uploads the assets and the screenshot together; returns the
    /// screenshot as stored: one an earlier delivery stored stays, and
    /// this manifest describes it.
    async fn upload_with_screenshot(
        &self,
        bucket: &str,
        screenshot_key: &str,
        uploads: impl IntoIterator<Item = impl Future<Output = Result<(), StorageError>>>,
        png: &Bytes,
    ) -> Result<Bytes, StorageError> {
        let (uploaded, screenshot) = tokio::join!(
            futures::future::try_join_all(uploads),
            self.put_if_absent(bucket, screenshot_key, png.clone(), "image/png"),
        );
        uploaded?;
        Ok(match screenshot? {
            Stored::Written => png.clone(),
            Stored::AlreadyThere(earlier) => earlier,
        })
    }

    async fn get(&self, bucket: &str, key: &str) -> Result<Option<Bytes>, StorageError> {
        match self.s3.get_object().bucket(bucket).key(key).send().await {
            Ok(object) => {
                let bytes = object.body.collect().await.map_err(|e| StorageError(e.to_string()))?;
                Ok(Some(bytes.into_bytes()))
            }
            Err(SdkError::ServiceError(e)) if e.raw().status().as_u16() == 404 => Ok(None),
            Err(e) => Err(storage(e)),
        }
    }

    async fn put(&self, bucket: &str, key: String, bytes: Bytes, content_type: &str) -> Result<(), StorageError> {
        self.s3
            .put_object()
            .bucket(bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map(|_| ())
            .map_err(storage)
    }

    async fn put_if_absent(
        &self,
        bucket: &str,
        key: &str,
        bytes: Bytes,
        content_type: &str,
    ) -> Result<Stored, StorageError> {
        let result = self
            .s3
            .put_object()
            .bucket(bucket)
            .key(key)
            .content_type(content_type)
            .if_none_match("*")
            .body(ByteStream::from(bytes))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Stored::Written),
            // 412: it exists; 409: a concurrent conditional write is in progress.
            Err(SdkError::ServiceError(e)) if matches!(e.raw().status().as_u16(), 409 | 412) => {
                match self.get(bucket, key).await? {
                    Some(earlier) => Ok(Stored::AlreadyThere(earlier)),
                    None => Err(StorageError(format!("{key} was being written concurrently"))),
                }
            }
            Err(e) => Err(storage(e)),
        }
    }
}

/// The page's snapshot must parse; a frame's that does not is left empty
/// (an empty part keeps the parts' numbering, which owners refer to).
/// The asset entries of a capture and the objects they are uploaded to.
struct PlannedAssets<'c> {
    /// One entry per stored object.
    assets: Vec<Asset<'c>>,
    /// Each object's key, bytes and MIME type.
    uploads: Vec<(String, &'c Bytes, &'c str)>,
    /// The key of each asset body's URL.
    key_of_url: HashMap<&'c str, String>,
    /// The key of each element image, in order.
    image_keys: Vec<String>,
}

/// One asset entry per object to store, content-addressed: a font the
/// page preloaded and then used is one file; the same bytes from another
/// URL are that entry's `otherUrls`.
fn plan_assets<'c>(prefix: &str, captured: &'c Captured) -> PlannedAssets<'c> {
    let images = &captured.answers.images;
    let mut planned = PlannedAssets {
        assets: Vec::with_capacity(captured.assets.len() + images.len()),
        uploads: Vec::with_capacity(captured.assets.len() + images.len()),
        key_of_url: HashMap::new(),
        image_keys: Vec::with_capacity(images.len()),
    };
    // The entry of each stored key.
    let mut stored: HashMap<String, usize> = HashMap::new();
    let bodies = captured
        .assets
        .iter()
        .map(|a| (Some(a.url.as_str()), a.kind, a.mime_type.as_str(), &a.bytes));
    let pixels = images.iter().map(|i| (None, i.kind, "image/png", &i.png));
    for (url, kind, mime_type, bytes) in bodies.chain(pixels) {
        let sha256 = hex::encode(Sha256::digest(bytes));
        let key = format!("{prefix}{}", asset_object(&sha256, manifest::extension(mime_type)));
        match url {
            Some(url) => {
                planned.key_of_url.insert(url, key.clone());
            }
            None => planned.image_keys.push(key.clone()),
        }
        if let Some(&entry) = stored.get(&key) {
            let entry: &mut Asset<'_> = &mut planned.assets[entry];
            if let Some(url) = url.filter(|u| entry.url != Some(*u) && !entry.other_urls.contains(u)) {
                entry.other_urls.push(url);
            }
            continue;
        }
        stored.insert(key.clone(), planned.assets.len());
        planned.uploads.push((key.clone(), bytes, mime_type));
        planned.assets.push(Asset {
            url,
            other_urls: Vec::new(),
            kind,
            mime_type,
            bytes: bytes.len(),
            sha256,
            key,
        });
    }
    planned
}

/// The fonts the page used, each with the key of its file if the page
/// loaded one.
fn used_fonts(captured: &Captured, key_of_url: &HashMap<&str, String>) -> Vec<UsedFont> {
    captured
        .answers
        .fonts
        .iter()
        .map(|f| UsedFont {
            family: f.family.clone(),
            post_script_name: f.post_script_name.clone(),
            custom: f.custom,
            asset: f.src.as_deref().and_then(|src| key_of_url.get(src)).cloned(),
        })
        .collect()
}

/// The manifest of a capture whose screenshot and assets are stored.
fn capture_manifest<'a>(
    job: &'a CaptureJob<'_>,
    captured: &'a Captured,
    captured_at: String,
    browser: &'a str,
    screenshot: ScreenshotInfo<'a>,
    assets: Vec<Asset<'a>>,
    dom: Dom<'a>,
) -> CaptureManifest<'a> {
    CaptureManifest {
        identity: ManifestIdentity::new(&job.page_import_id, job.attempt, &job.nonce),
        manifest_version: MANIFEST_VERSION,
        captured_at,
        worker: WorkerInfo {
            version: env!("CARGO_PKG_VERSION"),
            browser,
        },
        source: SourceInfo {
            requested_url: &captured.requested_url,
            final_url: &captured.final_url,
            http_status: captured.http_status,
            title: &captured.title,
        },
        viewport: job.viewport,
        emulation: captured.emulation.applied(),
        consent: captured.consent.clone(),
        page: page_info(captured),
        readiness: Readiness {
            ready_selector: job.ready_selector.as_deref(),
            matched: captured.ready_matched,
        },
        screenshot,
        assets,
        fonts: captured.fonts.clone(),
        blocked_requests: &captured.blocked.listed,
        failed_requests: &captured.failed.listed,
        dialogs: &captured.dialogs,
        timings: &captured.timings,
        dom,
    }
}

/// The page's extent, and what was closed and refused on it.
fn page_info(captured: &Captured) -> PageInfo {
    let extent = &captured.extent;
    PageInfo {
        layout_width: extent.layout_width,
        scale: extent.scale,
        content_height: extent.content_height,
        captured_height: extent.captured_height,
        truncated: extent.content_height > extent.captured_height,
        popups_closed: captured.popups_closed,
        blocked_requests_omitted: captured.blocked.omitted,
        failed_requests_omitted: captured.failed.omitted,
        states_examined: captured.looks.examined,
        states_cut: captured.looks.cut,
    }
}

fn parse_snapshot(captured: &Captured, details: Vec<Details>) -> Result<Vec<Part<'_>>, dom::SnapshotError> {
    let mut parts = Vec::with_capacity(captured.snapshot.len());
    let mut details = details.into_iter();
    for (i, part) in captured.snapshot.iter().enumerate() {
        let snapshot = match Snapshot::parse(&part.reply) {
            Ok(snapshot) => snapshot,
            Err(e) if i == 0 => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "a frame's DOM snapshot did not parse");
                Snapshot::default()
            }
        };
        parts.push(Part {
            snapshot,
            owner: part.owner,
            details: details.next().unwrap_or_default(),
        });
    }
    Ok(parts)
}

fn completed_body(job: &CaptureJob<'_>, manifest: &[u8]) -> CallbackBody {
    let bucket = job.artifacts.bucket.as_ref();
    let prefix = job.artifacts.prefix.as_ref();
    CallbackBody {
        page_import_id: job.page_import_id.to_string(),
        attempt: job.attempt.into(),
        nonce: job.nonce.to_string(),
        outcome: Outcome::Completed,
        result_url: Some(s3_url(bucket, &format!("{prefix}{MANIFEST_OBJECT}"))),
        capture_hash: Some(CaptureHash::from_digest(Sha256::digest(manifest).into()).to_string()),
        screenshot_url: Some(s3_url(bucket, &format!("{prefix}{SCREENSHOT_OBJECT}"))),
        ..Default::default()
    }
}

fn failed_body(job: &CaptureJob<'_>, message: &str, retryable: bool) -> CallbackBody {
    let bucket = job.artifacts.bucket.as_ref();
    let prefix = job.artifacts.prefix.as_ref();
    CallbackBody {
        page_import_id: job.page_import_id.to_string(),
        attempt: job.attempt.into(),
        nonce: job.nonce.to_string(),
        outcome: Outcome::Failed,
        result_url: Some(s3_url(bucket, &format!("{prefix}{FAILURE_OBJECT}"))),
        error_message: Some(message.to_owned()),
        retryable: Some(retryable),
        ..Default::default()
    }
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
