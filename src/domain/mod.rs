//! Newtypes that parse: a value of one of these types has passed its rules.

pub mod callback;
pub mod cursor;
mod field_error;
pub mod lifecycle;
pub mod new_import;
pub mod new_set;
pub mod reader;

/// The public-address and host rules live in the contract crate: the worker
/// enforces the same rules at egress.
pub use page_import_contract::{ip, source_url};

pub use field_error::FieldError;
pub use source_url::{SourceUrl, SourceUrlError, SourceUrlPolicy};

/// Every time the API answers with: RFC 3339, UTC, milliseconds
/// (`2026-11-29T12:00:00.123Z`).
pub fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Whether `s` can be the id of a row: 1–255 ASCII letters, digits or `-`
/// (UUIDs, and the ids a cursor carries). Anything else names nothing, and
/// must not reach a query: PostgreSQL rejects a NUL byte with an error
/// instead of a miss.
pub fn is_resource_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 255 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

use base64::Engine;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::fmt;

use secrecy::{ExposeSecret, SecretString};

/// The lifecycle status of imports and Code2Des jobs alike: SPEC's codes
/// '0', '1', '2', stored as the `page_import_status` or `code2des_status` enum
/// (two SQL types with the same labels, one Rust type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    Processing,
    Completed,
    Failed,
}

impl JobStatus {
    /// The enum label in PostgreSQL.
    fn code(self) -> &'static str {
        match self {
            Self::Processing => "0",
            Self::Completed => "1",
            Self::Failed => "2",
        }
    }
}

impl sqlx::Type<sqlx::Postgres> for JobStatus {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        sqlx::postgres::PgTypeInfo::with_name("page_import_status")
    }

    fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
        *ty == sqlx::postgres::PgTypeInfo::with_name("page_import_status")
            || *ty == sqlx::postgres::PgTypeInfo::with_name("code2des_status")
    }
}

impl sqlx::Encode<'_, sqlx::Postgres> for JobStatus {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <&str as sqlx::Encode<sqlx::Postgres>>::encode(self.code(), buf)
    }
}

impl sqlx::Decode<'_, sqlx::Postgres> for JobStatus {
    fn decode(value: sqlx::postgres::PgValueRef<'_>) -> Result<Self, sqlx::error::BoxDynError> {
        match <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)? {
            "0" => Ok(Self::Processing),
            "1" => Ok(Self::Completed),
            "2" => Ok(Self::Failed),
            other => Err(format!("unknown status label {other:?}").into()),
        }
    }
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Processing => "processing",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "processing" => Some(Self::Processing),
            "completed" => Some(Self::Completed),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// Browser viewport: width 200–3840, height 200–2160, scale 0.5–4, and
/// whether it is a phone's or tablet's (SPEC §14).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    pub width: i32,
    pub height: i32,
    pub device_scale_factor: f32,
    pub mobile: bool,
}

impl Viewport {
    pub fn parse(width: i64, height: i64, scale: Option<f64>, mobile: bool) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        if !(200..=3840).contains(&width) {
            errors.push(FieldError::new(
                "viewport.width",
                "out_of_range",
                "width must be an integer from 200 to 3840",
            ));
        }
        if !(200..=2160).contains(&height) {
            errors.push(FieldError::new(
                "viewport.height",
                "out_of_range",
                "height must be an integer from 200 to 2160",
            ));
        }
        let scale = scale.unwrap_or(1.0);
        if !scale.is_finite() || !(0.5..=4.0).contains(&scale) {
            errors.push(FieldError::new(
                "viewport.deviceScaleFactor",
                "out_of_range",
                "deviceScaleFactor must be a number from 0.5 to 4",
            ));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Self {
            width: width as i32,
            height: height as i32,
            device_scale_factor: scale as f32,
            mobile,
        })
    }
}

/// An optional readiness CSS selector, checked by a real selector parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadySelector(String);

impl ReadySelector {
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        let err = |code, msg: &str| FieldError::new("readySelector", code, msg);
        let chars = s.chars().count();
        if chars == 0 || chars > 512 {
            return Err(err("invalid_length", "readySelector must be 1 to 512 characters"));
        }
        if s.chars().any(char::is_control) {
            return Err(err(
                "control_character",
                "readySelector must not contain control characters",
            ));
        }
        if !s.chars().all(page_import_contract::job::sqs_can_carry) {
            return Err(err(
                "unsupported_character",
                "readySelector contains a character a queue message cannot carry",
            ));
        }
        if s.trim().is_empty() || scraper::Selector::parse(s).is_err() {
            return Err(err("invalid_selector", "readySelector is not a valid CSS selector"));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The per-job correlation fence: 32 CSPRNG bytes, base64url, held in a
/// `secrecy` box: never printed by `Debug`, zeroed when dropped.
pub struct Nonce(SecretString);

impl Nonce {
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes).into())
    }

    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Nonce").field(&self.0).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn resource_ids_are_what_rows_can_have() {
        assert!(is_resource_id("0193ffff-0000-7000-8000-000000000000"));
        assert!(is_resource_id(&"a".repeat(255)));
        for bad in ["", "a\0b", "a b", "a/b", "a.json", "é", "a\n"] {
            assert!(!is_resource_id(bad), "{bad:?}");
        }
        assert!(!is_resource_id(&"a".repeat(256)));
    }

    proptest! {
        #[test]
        fn one_byte_outside_the_alphabet_is_never_an_id(
            head in "[A-Za-z0-9-]{0,100}",
            bad in any::<char>().prop_filter("outside the alphabet", |c| !c.is_ascii_alphanumeric() && *c != '-'),
            tail in "[A-Za-z0-9-]{0,100}",
        ) {
            let with_bad = format!("{}{}{}", head, bad, tail);
            let without = format!("{}{}", head, tail);
            prop_assert!(!is_resource_id(&with_bad));
            prop_assert_eq!(is_resource_id(&without), !without.is_empty());
        }
    }

    #[test]
    fn viewport_bounds() {
        assert!(Viewport::parse(200, 200, None, false).is_ok());
        assert!(Viewport::parse(3840, 2160, Some(4.0), true).unwrap().mobile);
        assert_eq!(Viewport::parse(199, 2161, Some(0.49), false).unwrap_err().len(), 3);
        assert_eq!(
            Viewport::parse(1440, 900, None, false).unwrap().device_scale_factor,
            1.0
        );
        assert!(Viewport::parse(1440, 900, Some(f64::NAN), false).is_err());
    }

    #[test]
    fn ready_selector_uses_a_real_parser() {
        for ok in [
            "#app",
            "main > .content:not(.hidden)",
            "[data-ready=\"1\"]",
            "div:nth-child(2n+1)",
        ] {
            assert!(ReadySelector::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "#", "div[", ">>", "a\u{1}b", "  ", "div {", "::"] {
            assert!(ReadySelector::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            ReadySelector::parse(&"a".repeat(513)).unwrap_err().code,
            "invalid_length"
        );
        for unsendable in ["#a\u{FFFF}", "[title=\"\u{FFFE}\"]"] {
            assert_eq!(
                ReadySelector::parse(unsendable).unwrap_err().code,
                "unsupported_character"
            );
        }
    }

    #[test]
    fn nonce_is_32_random_bytes_and_never_debug_printed() {
        let a = Nonce::generate();
        let b = Nonce::generate();
        assert_ne!(a.expose(), b.expose());
        assert_eq!(a.expose().len(), 43);
        assert!(!format!("{a:?}").contains(a.expose()));
    }
}
