//! The identity a capture manifest (`capture.json`) carries at its top level
//! (SPEC §7): the service refuses a manifest whose identity differs from the
//! job's, and a worker writes these fields first.

use serde::Serialize;

/// The top-level field names, in the order a worker writes them.
pub const IDENTITY_FIELDS: [&str; 4] = ["schemaVersion", "pageImportId", "attempt", "nonce"];

/// The manifest's first four fields.
#[derive(Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestIdentity<'a> {
    pub schema_version: u32,
    pub page_import_id: &'a str,
    pub attempt: i32,
    pub nonce: &'a str,
}

/// `sha256:` + 64 lowercase hex digits: how a capture's hash is written.
pub fn capture_hash(digest: &[u8; 32]) -> String {
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Whether `s` is written as [`capture_hash`] writes it.
pub fn is_capture_hash(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_written_in_the_documented_order() {
        let identity = ManifestIdentity {
            schema_version: 1,
            page_import_id: "id",
            attempt: 3,
            nonce: "n",
        };
        let json = serde_json::to_string(&identity).unwrap();
        let positions: Vec<usize> = IDENTITY_FIELDS.iter().map(|f| json.find(f).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{json}");
    }

    #[test]
    fn capture_hash_format() {
        let hash = capture_hash(&[0xab; 32]);
        assert_eq!(hash, format!("sha256:{}", "ab".repeat(32)));
        assert!(is_capture_hash(&hash));
        assert!(!is_capture_hash(&format!("sha256:{}", "A".repeat(64))));
        assert!(!is_capture_hash(&format!("sha1:{}", "a".repeat(64))));
        assert!(!is_capture_hash(&format!("sha256:{}", "a".repeat(63))));
    }
}
