//! The opaque list cursor: base64url of `v1:{created_at µs}:{id}`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};

use super::FieldError;
use super::JobStatus;

/// A list request's page: its size, status filter and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    /// 1–100.
    pub limit: i64,
    pub status: Option<JobStatus>,
    pub after: Option<KeysetPosition>,
}

impl ListPage {
    /// `limit` 1–100 (default 20), a known `status`, a cursor this service
    /// issued; every broken rule is one field error.
    pub fn parse(limit: Option<i64>, status: Option<&str>, cursor: Option<&str>) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let limit = limit.unwrap_or(20);
        if !(1..=100).contains(&limit) {
            errors.push(FieldError::new("limit", "out_of_range", "limit must be from 1 to 100"));
        }
        let status = status.and_then(|s| {
            let parsed = JobStatus::parse(s);
            if parsed.is_none() {
                errors.push(FieldError::new(
                    "status",
                    "invalid_status",
                    "status must be processing, completed or failed",
                ));
            }
            parsed
        });
        let after = cursor.and_then(|c| {
            let parsed = decode(c);
            if parsed.is_none() {
                errors.push(FieldError::new(
                    "cursor",
                    "invalid_cursor",
                    "cursor is not one this service issued",
                ));
            }
            parsed
        });
        if errors.is_empty() {
            Ok(Self { limit, status, after })
        } else {
            Err(errors)
        }
    }
}

/// Position after which the next page starts (exclusive), newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeysetPosition {
    pub created_at: DateTime<Utc>,
    pub id: String,
}

const MAX_CURSOR_LEN: usize = 512;

pub fn encode(position: &KeysetPosition) -> String {
    let raw = format!("v1:{}:{}", position.created_at.timestamp_micros(), position.id);
    URL_SAFE_NO_PAD.encode(raw)
}

/// `None` for anything this service did not produce.
pub fn decode(cursor: &str) -> Option<KeysetPosition> {
    if cursor.len() > MAX_CURSOR_LEN {
        return None;
    }
    let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let raw = std::str::from_utf8(&raw).ok()?;
    let rest = raw.strip_prefix("v1:")?;
    let (micros, id) = rest.split_once(':')?;
    if micros.starts_with('+') {
        return None;
    }
    let created_at = DateTime::from_timestamp_micros(micros.parse().ok()?)?;
    if !super::is_resource_id(id) {
        return None;
    }
    Some(KeysetPosition {
        created_at,
        id: id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn list_pages_default_to_20_and_report_every_broken_rule() {
        let page = ListPage::parse(None, None, None).unwrap();
        assert_eq!((page.limit, page.status, page.after), (20, None, None));
        let page = ListPage::parse(Some(100), Some("failed"), None).unwrap();
        assert_eq!(page.status, Some(JobStatus::Failed));
        let errors = ListPage::parse(Some(0), Some("done"), Some("not-a-cursor")).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_ref()).collect();
        assert_eq!(fields, ["limit", "status", "cursor"]);
        assert!(ListPage::parse(Some(101), None, None).is_err());
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips_a_real_position() {
        let position = KeysetPosition {
            created_at: DateTime::from_timestamp_micros(1_796_000_000_123_456).unwrap(),
            id: "01936f3e-5a1b-7c2d-9e4f-0a1b2c3d4e5f".into(),
        };
        assert_eq!(decode(&encode(&position)), Some(position));
    }

    #[test]
    fn rejects_foreign_cursors() {
        for bad in [
            "",
            "abc",
            "djE6",
            "!!!",
            &URL_SAFE_NO_PAD.encode("v2:1:x"),
            &URL_SAFE_NO_PAD.encode("v1:x:id"),
            &URL_SAFE_NO_PAD.encode("v1:1:"),
            &URL_SAFE_NO_PAD.encode("v1:1:a'b"),
            &URL_SAFE_NO_PAD.encode("v1:+1:a"),
            &URL_SAFE_NO_PAD.encode(format!("v1:{}:a", i64::MAX)),
        ] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn decode_never_panics(s in "\\PC{0,600}") {
            let _ = decode(&s);
        }

        #[test]
        fn decode_inverts_encode(micros in -62_000_000_000_000_000i64..250_000_000_000_000_000, id in "[a-zA-Z0-9-]{1,255}") {
            let position = KeysetPosition { created_at: DateTime::from_timestamp_micros(micros).unwrap(), id };
            prop_assert_eq!(decode(&encode(&position)), Some(position));
        }
    }
}
