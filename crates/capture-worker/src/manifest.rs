//! `capture.json` and `failure.json` as the worker writes them (SPEC §10).

use page_import_contract::manifest::ManifestIdentity;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capture::Timings;
use crate::dom::Dom;
use crate::egress::BlockedRequest;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest<'a> {
    /// `schemaVersion`, `pageImportId`, `attempt`, `nonce`, first.
    #[serde(flatten)]
    pub identity: ManifestIdentity<'a>,
    pub captured_at: String,
    pub worker: WorkerInfo<'a>,
    pub source: SourceInfo<'a>,
    pub viewport: page_import_contract::job::Viewport,
    pub page: PageInfo,
    pub readiness: Readiness<'a>,
    pub screenshot: ScreenshotInfo<'a>,
    pub assets: Vec<AssetInfo<'a>>,
    pub fonts: &'a Value,
    pub blocked_requests: &'a [BlockedRequest],
    pub timings: &'a Timings,
    pub dom: Dom<'a>,
}

#[derive(Serialize)]
pub struct WorkerInfo<'a> {
    pub version: &'a str,
    pub browser: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo<'a> {
    pub requested_url: &'a str,
    pub final_url: &'a str,
    pub http_status: Option<u16>,
    pub title: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    pub content_height: u32,
    pub captured_height: u32,
    pub truncated: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness<'a> {
    pub ready_selector: Option<&'a str>,
    pub matched: Option<bool>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScreenshotInfo<'a> {
    pub key: &'a str,
    pub pixel_width: u32,
    pub pixel_height: u32,
    pub sha256: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssetInfo<'a> {
    pub url: &'a str,
    pub kind: &'a str,
    pub mime_type: &'a str,
    pub bytes: usize,
    pub sha256: String,
    pub key: String,
}

/// `failure.json`: enough to send the same `failed` callback again.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureRecord {
    pub schema_version: u32,
    pub page_import_id: String,
    pub attempt: i32,
    pub reason: String,
    pub message: String,
    pub retryable: bool,
    pub failed_at: String,
    pub elapsed_ms: u64,
    pub blocked_requests: Vec<BlockedRequest>,
}

/// Width and height from a PNG's IHDR chunk.
pub fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" || &png[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&png[16..20]), be(&png[20..24])))
}

/// File extension of an asset key, from its MIME type.
pub fn extension(mime_type: &str) -> &'static str {
    match mime_type.split(';').next().unwrap_or_default().trim() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/avif" => "avif",
        "image/svg+xml" => "svg",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "text/css" => "css",
        "font/woff2" | "application/font-woff2" => "woff2",
        "font/woff" | "application/font-woff" => "woff",
        "font/ttf" | "application/x-font-ttf" | "font/sfnt" => "ttf",
        "font/otf" | "application/x-font-otf" => "otf",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_size_reads_the_header() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&2880u32.to_be_bytes());
        png.extend_from_slice(&1800u32.to_be_bytes());
        assert_eq!(png_size(&png), Some((2880, 1800)));
        assert_eq!(png_size(b"GIF89a"), None);
    }

    #[test]
    fn extensions_follow_the_mime_type() {
        assert_eq!(extension("image/svg+xml"), "svg");
        assert_eq!(extension("text/css; charset=utf-8"), "css");
        assert_eq!(extension("font/woff2"), "woff2");
        assert_eq!(extension("application/octet-stream"), "bin");
    }
}
