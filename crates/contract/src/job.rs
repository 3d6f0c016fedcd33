//! The capture job as it travels on the queue (SPEC §7 "Queue message").

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The only message version this contract knows.
pub const SCHEMA_VERSION: u32 = 1;

/// The queue message. The service serializes it from borrowed fields; a
/// worker deserializes an owned `CaptureJob<'static>`. Its `Debug` leaves the
/// nonce out.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CaptureJob<'a> {
    pub schema_version: u32,
    pub page_import_id: Cow<'a, str>,
    pub attempt: i32,
    pub nonce: Cow<'a, str>,
    pub source: Source<'a>,
    pub viewport: Viewport,
    pub ready_selector: Option<Cow<'a, str>>,
    pub artifacts: Artifacts<'a>,
    pub callback_url: Cow<'a, str>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Source<'a> {
    pub kind: Cow<'a, str>,
    pub url: Cow<'a, str>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Viewport {
    pub width: i32,
    pub height: i32,
    pub device_scale_factor: f32,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Artifacts<'a> {
    pub bucket: Cow<'a, str>,
    pub prefix: Cow<'a, str>,
}

impl std::fmt::Debug for CaptureJob<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureJob")
            .field("page_import_id", &self.page_import_id)
            .field("attempt", &self.attempt)
            .field("nonce", &"**redacted**")
            .field("source", &self.source)
            .field("viewport", &self.viewport)
            .field("ready_selector", &self.ready_selector)
            .field("artifacts", &self.artifacts)
            .finish_non_exhaustive()
    }
}

/// The S3 prefix an attempt's artifacts must live under.
pub fn artifact_prefix(page_import_id: &str, attempt: i32) -> String {
    format!("page-imports/{page_import_id}/{attempt}/")
}

/// The SQS deduplication id of an attempt's capture message: `{id}:{attempt}`.
/// Also how the outbox names the attempt a message carries (publishing it
/// stamps that attempt's `dispatched_at`: `db::outbox::delete_published`
/// reads it back).
pub fn deduplication_id(page_import_id: &str, attempt: i32) -> String {
    format!("{page_import_id}:{attempt}")
}

/// `s3://{bucket}/{key}`: how artifacts are named in callbacks and rows.
pub fn s3_url(bucket: &str, key: &str) -> String {
    format!("s3://{bucket}/{key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_debug_hides_the_nonce() {
        let job = CaptureJob {
            schema_version: SCHEMA_VERSION,
            page_import_id: "abc".into(),
            attempt: 2,
            nonce: "secret-nonce".into(),
            source: Source {
                kind: "public_url".into(),
                url: "https://example.com/".into(),
            },
            viewport: Viewport {
                width: 1440,
                height: 900,
                device_scale_factor: 2.0,
            },
            ready_selector: Some("#app".into()),
            artifacts: Artifacts {
                bucket: "b".into(),
                prefix: artifact_prefix("abc", 2).into(),
            },
            callback_url: "http://127.0.0.1:8080/webhooks/page-imports".into(),
        };
        let json = serde_json::to_string(&job).unwrap();
        assert!(json.starts_with(r#"{"schemaVersion":1,"pageImportId":"abc","attempt":2,"nonce":"secret-nonce""#));
        assert!(json.contains(r#""prefix":"page-imports/abc/2/""#));
        let back: CaptureJob<'static> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, job);
        assert!(!format!("{back:?}").contains("secret-nonce"));
    }
}
