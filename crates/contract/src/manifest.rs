//! The identity a capture manifest (`capture.json`) carries at its top level
//! (SPEC §7): the service refuses a manifest whose identity differs from the
//! job's, and a worker writes these fields first.

use serde::Serialize;

/// The `schemaVersion` of every manifest (SPEC §7).
pub const SCHEMA_VERSION: u32 = 1;

/// The top-level field names, in the order a worker writes them.
pub const IDENTITY_FIELDS: [&str; 4] = ["schemaVersion", "pageImportId", "attempt", "nonce"];

/// The manifest's first four fields.
#[derive(Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestIdentity<'a> {
    pub schema_version: u32,
    pub page_import_id: &'a str,
    pub attempt: i32,
    pub nonce: &'a str,
}

impl<'a> ManifestIdentity<'a> {
    /// The identity of the manifest of `attempt` of `page_import_id`, at
    /// this contract's [`SCHEMA_VERSION`].
    pub fn new(page_import_id: &'a str, attempt: i32, nonce: &'a str) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            page_import_id,
            attempt,
            nonce,
        }
    }
}

/// A capture's hash: the SHA-256 of its manifest, written `sha256:` + 64
/// lowercase hex digits (SPEC §7). Parsed from a callback, computed while the
/// manifest is verified, and compared as digests, not as text.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CaptureHash([u8; 32]);

impl CaptureHash {
    pub const PREFIX: &'static str = "sha256:";

    pub fn from_digest(digest: [u8; 32]) -> Self {
        Self(digest)
    }

    /// Only the written form: the prefix and 64 lowercase hex digits.
    pub fn parse(s: &str) -> Option<Self> {
        let hex = s.strip_prefix(Self::PREFIX)?.as_bytes();
        if hex.len() != 64 {
            return None;
        }
        let nibble = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        let mut digest = [0u8; 32];
        for (byte, pair) in digest.iter_mut().zip(hex.chunks_exact(2)) {
            *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
        }
        Some(Self(digest))
    }
}

impl std::fmt::Display for CaptureHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Self::PREFIX)?;
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl std::fmt::Debug for CaptureHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CaptureHash({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_written_in_the_documented_order() {
        let identity = ManifestIdentity::new("id", 3, "n");
        let json = serde_json::to_string(&identity).unwrap();
        let positions: Vec<usize> = IDENTITY_FIELDS.iter().map(|f| json.find(f).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{json}");
    }

    use proptest::prelude::*;

    #[test]
    fn capture_hash_is_written_and_parsed_in_one_form() {
        let hash = CaptureHash::from_digest([0xab; 32]);
        assert_eq!(hash.to_string(), format!("sha256:{}", "ab".repeat(32)));
        assert_eq!(CaptureHash::parse(&hash.to_string()), Some(hash));
        for bad in [
            format!("sha256:{}", "A".repeat(64)),
            format!("sha1:{}", "a".repeat(64)),
            format!("sha256:{}", "a".repeat(63)),
            format!("sha256:{}", "a".repeat(65)),
            format!("SHA256:{}", "a".repeat(64)),
            format!(" sha256:{}", "a".repeat(64)),
            format!("sha256:{}g", "a".repeat(63)),
            "sha256:".to_owned(),
            String::new(),
        ] {
            assert_eq!(CaptureHash::parse(&bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn every_digest_round_trips(digest in any::<[u8; 32]>()) {
            let hash = CaptureHash::from_digest(digest);
            prop_assert_eq!(CaptureHash::parse(&hash.to_string()), Some(hash));
        }

        #[test]
        fn parse_accepts_exactly_the_written_form(s in "(sha256:)?[0-9a-fA-F]{62,66}") {
            let written = s.strip_prefix("sha256:").is_some_and(|hex| {
                hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            });
            prop_assert_eq!(CaptureHash::parse(&s).is_some(), written);
        }
    }
}
