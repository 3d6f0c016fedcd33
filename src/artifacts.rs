//! S3 artifacts: where a job's artifacts may live, streamed manifest
//! verification, and presigned download links.

use std::io::Read;
use std::time::Duration;

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use struson::reader::{JsonReader, JsonStreamReader, ValueType};
use subtle::ConstantTimeEq;
use tokio::sync::mpsc;

use page_import_contract::job::artifact_prefix;
use page_import_contract::manifest::{CaptureHash, IDENTITY_FIELDS as IDENTITY, SCHEMA_VERSION};

/// Manifests above this size are refused (SPEC §7).
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;
/// Presigned links live at most this long.
pub const PRESIGN_TTL: Duration = Duration::from_secs(300);
const MAX_ARTIFACT_URL_LEN: usize = 1000;

/// An `s3://{bucket}/{key}` pointer that is known to lie under one job's prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactUrl {
    pub bucket: String,
    pub key: String,
}

impl ArtifactUrl {
    /// Accepts only `s3://{bucket}/page-imports/{id}/{attempt}/…` with plain,
    /// non-empty path segments (no `.`, `..`, empty segments, escapes, query
    /// or control characters).
    pub fn parse(url: &str, bucket: &str, page_import_id: &str, attempt: i32) -> Result<Self, &'static str> {
        if url.len() > MAX_ARTIFACT_URL_LEN {
            return Err("artifact URL is longer than 1000 characters");
        }
        let rest = url.strip_prefix("s3://").ok_or("artifact URL must start with s3://")?;
        let (url_bucket, key) = rest.split_once('/').ok_or("artifact URL has no object key")?;
        if url_bucket != bucket {
            return Err("artifact URL names another bucket");
        }
        if key
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '\\' | '%' | '?' | '#'))
        {
            return Err("artifact key contains a forbidden character");
        }
        if key
            .split('/')
            .any(|segment| segment.is_empty() || segment == "." || segment == "..")
        {
            return Err("artifact key has an empty, '.' or '..' segment");
        }
        let prefix = artifact_prefix(page_import_id, attempt);
        match key.strip_prefix(&prefix) {
            Some(name) if !name.is_empty() => Ok(Self {
                bucket: url_bucket.to_owned(),
                key: key.to_owned(),
            }),
            _ => Err("artifact key is outside this job's prefix"),
        }
    }

    /// Parses a URL this service already verified and stored.
    pub fn parse_stored(url: &str) -> Option<Self> {
        let (bucket, key) = url.strip_prefix("s3://")?.split_once('/')?;
        Some(Self {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }
}

/// What the manifest must carry.
pub struct ExpectedIdentity<'a> {
    pub page_import_id: &'a str,
    pub attempt: i32,
    pub nonce: &'a str,
    pub capture_hash: CaptureHash,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("the manifest object does not exist")]
    Missing,
    #[error("the manifest is larger than 256 MiB")]
    TooLarge,
    #[error("the manifest's SHA-256 does not equal captureHash")]
    HashMismatch,
    #[error("the manifest's {0} does not match the job")]
    IdentityMismatch(&'static str),
    #[error("the manifest is not a JSON object with the identity fields: {0}")]
    Invalid(String),
    #[error("the screenshot object does not exist")]
    ScreenshotMissing,
    #[error("artifact storage is unavailable")]
    Unavailable,
}

impl ManifestError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "manifest_missing",
            Self::TooLarge => "manifest_too_large",
            Self::HashMismatch => "manifest_hash_mismatch",
            Self::IdentityMismatch(_) => "manifest_identity_mismatch",
            Self::Invalid(_) => "manifest_invalid",
            // SPEC §7 groups every artifact check under `manifest_*`.
            Self::ScreenshotMissing => "manifest_screenshot_missing",
            Self::Unavailable => "storage_unavailable",
        }
    }
}

fn is_not_found<E>(err: &SdkError<E>) -> bool {
    matches!(err, SdkError::ServiceError(e) if e.raw().status().as_u16() == 404)
}

/// Streams the manifest once: every chunk goes to a SHA-256 thread and to a
/// streaming JSON reader thread, so memory stays at a few chunks whatever
/// the object's size, and hashing and parsing run on separate cores.
#[tracing::instrument(name = "verify_manifest", skip_all)]
pub async fn verify_manifest(
    s3: &aws_sdk_s3::Client,
    manifest: &ArtifactUrl,
    expected: &ExpectedIdentity<'_>,
) -> Result<(), ManifestError> {
    let body = open_manifest(s3, manifest).await?;
    let (hash_tx, hash_rx) = mpsc::channel::<Bytes>(8);
    let (json_tx, json_rx) = mpsc::channel::<Bytes>(8);
    let hasher = tokio::task::spawn_blocking(move || hash_chunks(hash_rx));
    let identity = IdentityOwned {
        page_import_id: expected.page_import_id.to_owned(),
        attempt: expected.attempt,
        nonce: expected.nonce.to_owned(),
    };
    let checker = tokio::task::spawn_blocking(move || check_identity(ChannelReader::new(json_rx), &identity));
    feed(body, &hash_tx, json_tx).await?;
    drop(hash_tx);
    let digest = hasher.await.map_err(|_| ManifestError::Unavailable)?;
    let identity_result = checker.await.map_err(|_| ManifestError::Unavailable)?;

    if CaptureHash::from_digest(digest) != expected.capture_hash {
        return Err(ManifestError::HashMismatch);
    }
    identity_result
}

/// The manifest's body, once S3 answered and its length (when S3 says it)
/// is within the limit.
async fn open_manifest(s3: &aws_sdk_s3::Client, manifest: &ArtifactUrl) -> Result<ByteStream, ManifestError> {
    let object = s3
        .get_object()
        .bucket(&manifest.bucket)
        .key(&manifest.key)
        .send()
        .await
        .map_err(|err| {
            if is_not_found(&err) {
                ManifestError::Missing
            } else {
                tracing::warn!(error = %aws_sdk_s3::error::DisplayErrorContext(&err), "GetObject failed");
                ManifestError::Unavailable
            }
        })?;
    // No length given: the stream's own count below holds the limit.
    if object.content_length().is_some_and(|n| n as u64 > MAX_MANIFEST_BYTES) {
        return Err(ManifestError::TooLarge);
    }
    Ok(object.body)
}

/// Sends every chunk of `body` to the hasher and, until it has read the
/// identity fields and stopped, to the JSON checker; the whole stream at
/// most `MAX_MANIFEST_BYTES`.
async fn feed(
    mut body: ByteStream,
    hash_tx: &mpsc::Sender<Bytes>,
    json_tx: mpsc::Sender<Bytes>,
) -> Result<(), ManifestError> {
    let mut json_tx = Some(json_tx);
    let mut total: u64 = 0;
    loop {
        let chunk = match body.try_next().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(()),
            Err(err) => {
                tracing::warn!(error = %err, "manifest stream failed");
                return Err(ManifestError::Unavailable);
            }
        };
        total += chunk.len() as u64;
        if total > MAX_MANIFEST_BYTES {
            return Err(ManifestError::TooLarge);
        }
        if hash_tx.send(chunk.clone()).await.is_err() {
            return Err(ManifestError::Unavailable);
        }
        // The checker may stop early once it has seen the identity fields.
        if let Some(tx) = &json_tx {
            if tx.send(chunk).await.is_err() {
                json_tx = None;
            }
        }
    }
}

/// Whether the screenshot object exists (HeadObject).
#[tracing::instrument(name = "verify_screenshot", skip_all)]
pub async fn verify_exists(s3: &aws_sdk_s3::Client, artifact: &ArtifactUrl) -> Result<(), ManifestError> {
    match s3
        .head_object()
        .bucket(&artifact.bucket)
        .key(&artifact.key)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Err(ManifestError::ScreenshotMissing),
        Err(err) => {
            tracing::warn!(error = %aws_sdk_s3::error::DisplayErrorContext(&err), "HeadObject failed");
            Err(ManifestError::Unavailable)
        }
    }
}

/// A presigned GET for a stored artifact, valid for [`PRESIGN_TTL`].
pub async fn presigned_get(s3: &aws_sdk_s3::Client, artifact: &ArtifactUrl) -> anyhow::Result<String> {
    let request = s3
        .get_object()
        .bucket(&artifact.bucket)
        .key(&artifact.key)
        .presigned(PresigningConfig::expires_in(PRESIGN_TTL)?)
        .await?;
    Ok(request.uri().to_owned())
}

fn hash_chunks(mut rx: mpsc::Receiver<Bytes>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    while let Some(chunk) = rx.blocking_recv() {
        hasher.update(&chunk);
    }
    hasher.finalize().into()
}

struct IdentityOwned {
    page_import_id: String,
    attempt: i32,
    nonce: String,
}

/// Reads the whole manifest: one JSON object (SPEC §7) holding each of the
/// four identity fields exactly once, wherever they stand, and nothing after
/// it. Every other value is skipped without being kept, so memory stays
/// small whatever the size; a truncated object or a repeated identity field
/// (which readers could take either way) is refused.
fn check_identity(reader: impl Read, expected: &IdentityOwned) -> Result<(), ManifestError> {
    let invalid = |e: struson::reader::ReaderError| ManifestError::Invalid(e.to_string());
    let mut json = JsonStreamReader::new(reader);
    if json.peek().map_err(invalid)? != ValueType::Object {
        return Err(ManifestError::Invalid("the top level is not an object".into()));
    }
    json.begin_object().map_err(invalid)?;
    let mut seen = [false; 4];
    let mut mismatch = None;
    while json.has_next().map_err(invalid)? {
        let name = json.next_name_owned().map_err(invalid)?;
        let Some(field) = IDENTITY.iter().position(|f| *f == name) else {
            json.skip_value().map_err(invalid)?;
            continue;
        };
        if std::mem::replace(&mut seen[field], true) {
            return Err(ManifestError::Invalid(format!("duplicate {name}")));
        }
        let want = if matches!(IDENTITY[field], "schemaVersion" | "attempt") {
            ValueType::Number
        } else {
            ValueType::String
        };
        let matches = if json.peek().map_err(invalid)? != want {
            json.skip_value().map_err(invalid)?;
            false
        } else {
            match IDENTITY[field] {
                "schemaVersion" => json.next_number_as_str().map_err(invalid)? == SCHEMA_VERSION.to_string(),
                "attempt" => json.next_number_as_str().map_err(invalid)? == expected.attempt.to_string(),
                "pageImportId" => json.next_str().map_err(invalid)? == expected.page_import_id,
                _ => bool::from(
                    json.next_str()
                        .map_err(invalid)?
                        .as_bytes()
                        .ct_eq(expected.nonce.as_bytes()),
                ),
            }
        };
        if !matches && mismatch.is_none() {
            mismatch = Some(IDENTITY[field]);
        }
    }
    json.end_object().map_err(invalid)?;
    json.consume_trailing_whitespace().map_err(invalid)?;
    let missing: Vec<&str> = IDENTITY.iter().zip(seen).filter(|(_, s)| !s).map(|(f, _)| *f).collect();
    if !missing.is_empty() {
        return Err(ManifestError::Invalid(format!("missing {}", missing.join(", "))));
    }
    match mismatch {
        Some(field) => Err(ManifestError::IdentityMismatch(field)),
        None => Ok(()),
    }
}

/// `Read` over chunks arriving on a channel.
struct ChannelReader {
    rx: mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl ChannelReader {
    fn new(rx: mpsc::Receiver<Bytes>) -> Self {
        Self {
            rx,
            current: Bytes::new(),
        }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "01936f3e-5a1b-7c2d-9e4f-0a1b2c3d4e5f";

    pub(super) fn expected() -> IdentityOwned {
        IdentityOwned {
            page_import_id: ID.into(),
            attempt: 1,
            nonce: "n0nce".into(),
        }
    }

    #[test]
    fn artifact_urls_must_stay_under_the_jobs_prefix() {
        let ok = format!("s3://bucket/page-imports/{ID}/1/capture.json");
        assert_eq!(
            ArtifactUrl::parse(&ok, "bucket", ID, 1).unwrap().key,
            format!("page-imports/{ID}/1/capture.json")
        );
        assert!(ArtifactUrl::parse(
            &format!("s3://bucket/page-imports/{ID}/1/dir/shot.png"),
            "bucket",
            ID,
            1
        )
        .is_ok());
        for bad in [
            format!("s3://other/page-imports/{ID}/1/capture.json"),
            format!("s3://bucket/page-imports/{ID}/2/capture.json"),
            "s3://bucket/page-imports/0193ffff-0000-7000-8000-000000000000/1/capture.json".to_owned(),
            format!("s3://bucket/page-imports/{ID}/1/../../other/1/capture.json"),
            format!("s3://bucket/page-imports/{ID}/1/./capture.json"),
            format!("s3://bucket/page-imports/{ID}/1//capture.json"),
            format!("s3://bucket/page-imports/{ID}/1/"),
            format!("s3://bucket/page-imports/{ID}/1/%2e%2e/x"),
            format!("s3://bucket/page-imports/{ID}/1/a\\b"),
            format!("s3://bucket/page-imports/{ID}/1/a?b"),
            format!("https://bucket/page-imports/{ID}/1/capture.json"),
            format!("s3://bucket/other/page-imports/{ID}/1/capture.json"),
            format!("s3://bucket/page-imports/{ID}/1/{}", "a".repeat(1000)),
            "s3://bucket".to_owned(),
        ] {
            assert!(ArtifactUrl::parse(&bad, "bucket", ID, 1).is_err(), "{bad}");
        }
    }

    fn check(json: &str) -> Result<(), ManifestError> {
        check_identity(json.as_bytes(), &expected())
    }

    #[test]
    fn identity_fields_are_found_anywhere_at_the_top_level() {
        assert_eq!(
            check(&format!(
                r#"{{"dom": {{"pageImportId": "x"}}, "schemaVersion": 1, "pageImportId": "{ID}", "assets": [1, "a"], "attempt": 1, "nonce": "n0nce"}}"#
            )),
            Ok(())
        );
    }

    #[test]
    fn identity_mismatches_name_the_field() {
        for (json, field) in [
            (
                format!(r#"{{"schemaVersion":2,"pageImportId":"{ID}","attempt":1,"nonce":"n0nce"}}"#),
                "schemaVersion",
            ),
            (
                format!(r#"{{"schemaVersion":"1","pageImportId":"{ID}","attempt":1,"nonce":"n0nce"}}"#),
                "schemaVersion",
            ),
            (
                r#"{"schemaVersion":1,"pageImportId":"other","attempt":1,"nonce":"n0nce"}"#.to_owned(),
                "pageImportId",
            ),
            (
                format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":2,"nonce":"n0nce"}}"#),
                "attempt",
            ),
            (
                format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":1.0,"nonce":"n0nce"}}"#),
                "attempt",
            ),
            (
                format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":1,"nonce":"wrong"}}"#),
                "nonce",
            ),
        ] {
            assert_eq!(check(&json), Err(ManifestError::IdentityMismatch(field)), "{json}");
        }
    }

    #[test]
    fn non_objects_missing_and_duplicate_fields_are_invalid() {
        for json in [
            "[]".to_owned(),
            "\"x\"".to_owned(),
            "".to_owned(),
            "{".to_owned(),
            format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":1}}"#),
            r#"{"schemaVersion":1,"schemaVersion":1}"#.to_owned(),
            format!(
                r#"{{"deep": {}1{}, "schemaVersion": 1}}"#,
                "[".repeat(1000),
                "]".repeat(1000)
            ),
            // Complete identity, then cut off: the whole object must parse.
            format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":1,"nonce":"n0nce","x": tru"#),
            format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":1,"nonce":"n0nce""#),
            // An identity field repeated after all four were seen.
            format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":1,"nonce":"n0nce","attempt":2}}"#),
            format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":1,"nonce":"n0nce","nonce":"n0nce"}}"#),
            // Something after the object.
            format!(r#"{{"schemaVersion":1,"pageImportId":"{ID}","attempt":1,"nonce":"n0nce"}} {{}}"#),
        ] {
            assert!(matches!(check(&json), Err(ManifestError::Invalid(_))), "{json}");
        }
    }
}
#[cfg(test)]
mod big_tests {
    #[test]
    fn identity_after_a_huge_string() {
        let mut json = String::from("{\"dom\":\"");
        json.push_str(&"<div class=\\\"row\\\">x</div>".repeat(200_000));
        json.push_str("\",\"schemaVersion\":1,\"pageImportId\":\"01936f3e-5a1b-7c2d-9e4f-0a1b2c3d4e5f\",\"attempt\":1,\"nonce\":\"n0nce\"}");
        let r = super::check_identity(json.as_bytes(), &super::tests::expected());
        assert_eq!(r, Ok(()));
    }
}
