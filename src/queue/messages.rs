//! Queue message bodies (SPEC §7 and §8).

use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureJob<'a> {
    pub schema_version: u32,
    pub page_import_id: &'a str,
    pub attempt: i32,
    pub nonce: &'a str,
    pub source: Source<'a>,
    pub viewport: ViewportMessage,
    pub ready_selector: Option<&'a str>,
    pub artifacts: Artifacts<'a>,
    pub callback_url: String,
}

#[derive(Serialize)]
pub struct Source<'a> {
    pub kind: &'a str,
    pub url: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewportMessage {
    pub width: i32,
    pub height: i32,
    pub device_scale_factor: f32,
}

#[derive(Serialize)]
pub struct Artifacts<'a> {
    pub bucket: &'a str,
    pub prefix: String,
}

/// The S3 prefix a job's artifacts must live under.
pub fn artifact_prefix(page_import_id: &str, attempt: i32) -> String {
    format!("page-imports/{page_import_id}/{attempt}/")
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Code2DesJob<'a> {
    pub schema_version: u32,
    pub code2des_id: &'a str,
    pub page_import_id: &'a str,
    pub result_url: &'a str,
    pub capture_hash: &'a str,
}
