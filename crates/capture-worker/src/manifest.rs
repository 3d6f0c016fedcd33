//! `failure.json` as the worker writes it (SPEC §10), and what the worker
//! reads off the bytes it stores. `capture.json`'s types are the contract's
//! ([`page_import_contract::capture`]).

use page_import_contract::capture::BlockedRequest;
use serde::{Deserialize, Serialize};

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
    /// The first 1 000 refused requests the page made, as in `capture.json`.
    pub blocked_requests: Vec<BlockedRequest>,
    /// The refused requests past them (SPEC §10); 0 when none were left out
    /// (and when read from a record an older worker wrote, without it).
    #[serde(default)]
    pub blocked_requests_omitted: u64,
}

impl FailureRecord {
    /// The `schemaVersion` this worker writes.
    pub const SCHEMA_VERSION: u32 = 1;
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
