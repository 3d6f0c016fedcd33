//! The capture job as it travels on the queue (SPEC §7 "Queue message").

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The only message version this contract knows.
pub const SCHEMA_VERSION: u32 = 1;

/// The W3C trace context of the attempt (SPEC §9): the name of the capture
/// message's SQS message attribute (a `String`) that carries it to the
/// worker, and of the header on the worker's callbacks that carries it back.
/// Outside the body and outside the signature: it only labels logs and
/// spans, and a message or callback without it is still whole.
pub const TRACEPARENT: &str = "traceparent";

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
    /// The reader's colour scheme, language, clock and consent choice (SPEC
    /// §14). A message without them (an older service) means the defaults.
    #[serde(default)]
    pub color_scheme: ColorScheme,
    #[serde(default = "default_locale")]
    pub locale: Cow<'a, str>,
    #[serde(default = "default_time_zone")]
    pub time_zone: Cow<'a, str>,
    #[serde(default)]
    pub consent: Consent,
    pub artifacts: Artifacts<'a>,
    pub callback_url: Cow<'a, str>,
}

/// The version of a set's message (SPEC §15 "The message"). A worker that
/// does not know it leaves the message to SQS's redrive.
pub const SET_SCHEMA_VERSION: u32 = 2;

/// An import set's first attempts, dispatched together (SPEC §15): one
/// worker captures `jobs` in order in one browser context, and each member
/// is called back on its own. Holds one capture slot until its last member
/// ends. Its `Debug` leaves the nonces out, as [`CaptureJob`]'s does.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SetJob<'a> {
    pub schema_version: u32,
    pub set_id: Cow<'a, str>,
    pub jobs: Vec<CaptureJob<'a>>,
}

impl std::fmt::Debug for SetJob<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetJob")
            .field("schema_version", &self.schema_version)
            .field("set_id", &self.set_id)
            .field("jobs", &self.jobs)
            .finish()
    }
}

/// The SQS deduplication id of a set's message: `set:{setId}`.
pub fn set_deduplication_id(set_id: &str) -> String {
    format!("set:{set_id}")
}

/// `locale` when the request names none (SPEC §6).
pub const DEFAULT_LOCALE: &str = "en-US";
/// `timeZone` when the request names none (SPEC §6).
pub const DEFAULT_TIME_ZONE: &str = "UTC";

fn default_locale() -> Cow<'static, str> {
    DEFAULT_LOCALE.into()
}

fn default_time_zone() -> Cow<'static, str> {
    DEFAULT_TIME_ZONE.into()
}

/// `prefers-color-scheme` of the capture (SPEC §14).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ColorScheme {
    #[default]
    Light,
    Dark,
}

impl ColorScheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Light => "light",
            Self::Dark => "dark",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Light, Self::Dark].into_iter().find(|v| v.as_str() == s)
    }
}

/// What the capture does about a consent banner (SPEC §14): decline it as
/// a reader would, or keep it in the capture.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Consent {
    #[default]
    Decline,
    Keep,
}

impl Consent {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decline => "decline",
            Self::Keep => "keep",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Decline, Self::Keep].into_iter().find(|v| v.as_str() == s)
    }
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
    /// A phone or tablet of this size and scale, not a desktop window
    /// (SPEC §14). Absent in a message means `false`.
    #[serde(default)]
    pub mobile: bool,
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
            .field("color_scheme", &self.color_scheme)
            .field("locale", &self.locale)
            .field("time_zone", &self.time_zone)
            .field("consent", &self.consent)
            .field("artifacts", &self.artifacts)
            .finish_non_exhaustive()
    }
}

/// The S3 prefix an attempt's artifacts must live under.
pub fn artifact_prefix(page_import_id: &str, attempt: i32) -> String {
    format!("page-imports/{page_import_id}/{attempt}/")
}

/// Where every import's artifacts live: `page-imports/{id}/{attempt}/…`.
pub const ARTIFACT_ROOT: &str = "page-imports/";

/// The prefix of every attempt of one import: `page-imports/{id}/`.
pub fn import_prefix(page_import_id: &str) -> String {
    format!("{ARTIFACT_ROOT}{page_import_id}/")
}

/// The import whose prefix holds `key` (an object key, or an import's
/// prefix `page-imports/{id}/`): what lies between the root and the next
/// `/`. `None` outside the root, or without a `/` after it
/// (`page-imports/{id}.json` is in no import's prefix). Not checked to be
/// an id the service issues: [`is_import_id`] says.
pub fn import_of(key: &str) -> Option<&str> {
    let (id, _) = key.strip_prefix(ARTIFACT_ROOT)?.split_once('/')?;
    Some(id)
}

/// Whether `id` is an import id as the service issues them: a uuid in its
/// canonical lowercase hyphenated form, the only form artifact keys carry.
pub fn is_import_id(id: &str) -> bool {
    uuid::Uuid::try_parse(id).is_ok_and(|u| u.hyphenated().to_string() == id)
}

/// An object key of the shape an attempt writes (SPEC §13 "Never deleted"):
/// `page-imports/{uuid}/{attempt}/{name}`, the uuid in its canonical
/// lowercase hyphenated form, the attempt a positive decimal integer with no
/// leading zero, the name not empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptKey<'a> {
    pub page_import_id: &'a str,
    pub attempt: i32,
}

impl<'a> AttemptKey<'a> {
    /// `None` for every key of another shape: erasure leaves those alone.
    pub fn parse(key: &'a str) -> Option<Self> {
        let rest = key.strip_prefix(ARTIFACT_ROOT)?;
        let (id, rest) = rest.split_once('/')?;
        let (attempt, name) = rest.split_once('/')?;
        if !is_import_id(id) || name.is_empty() {
            return None;
        }
        if attempt.starts_with('0') || !attempt.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let attempt: i32 = attempt.parse().ok()?;
        Some(Self {
            page_import_id: id,
            attempt,
        })
    }
}

/// The SQS deduplication id of an attempt's capture message: `{id}:{attempt}`.
/// Also how the outbox names the attempt a message carries (publishing it
/// stamps that attempt's `dispatched_at`: `db::outbox::delete_published`
/// reads it back).
pub fn deduplication_id(page_import_id: &str, attempt: i32) -> String {
    format!("{page_import_id}:{attempt}")
}

/// `s3://{bucket}/{key}`: how artifacts are named in callbacks and rows.
/// Whether SQS can carry `c` in a message body: `#x9 | #xA | #xD |
/// #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF`. SQS refuses a body with
/// any other character (`InvalidMessageContents`), so every string that
/// goes into a capture message is held to this (SPEC §6).
pub fn sqs_can_carry(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

pub fn s3_url(bucket: &str, key: &str) -> String {
    format!("s3://{bucket}/{key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqs_carries_what_its_message_bodies_may_hold() {
        for c in [
            '\t',
            '\n',
            '\r',
            ' ',
            'a',
            'é',
            '\u{D7FF}',
            '\u{E000}',
            '\u{FFFD}',
            '\u{10000}',
            '😀',
            '\u{10FFFF}',
        ] {
            assert!(sqs_can_carry(c), "{c:?}");
        }
        for c in ['\0', '\u{1}', '\u{8}', '\u{B}', '\u{1F}', '\u{FFFE}', '\u{FFFF}'] {
            assert!(!sqs_can_carry(c), "{c:?}");
        }
    }
    use proptest::prelude::*;

    const ID: &str = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

    #[test]
    fn an_imports_id_is_what_lies_between_the_root_and_the_next_slash() {
        assert_eq!(import_of(&format!("page-imports/{ID}/1/capture.json")), Some(ID));
        assert_eq!(import_of(&import_prefix(ID)), Some(ID));
        assert_eq!(import_of(&format!("page-imports/{ID}.json")), None);
        assert_eq!(import_of(&format!("other/{ID}/1/x")), None);
        assert_eq!(import_of("page-imports//x"), Some(""));
    }

    #[test]
    fn attempt_keys_are_exactly_the_shape_attempts_write() {
        let key = format!("{ID}/2/capture.json");
        let parsed =
            AttemptKey::parse(&format!("page-imports/{key}")).map(|k| (k.page_import_id.to_owned(), k.attempt));
        assert_eq!(parsed, Some((ID.to_owned(), 2)));
        assert!(AttemptKey::parse(&format!("page-imports/{ID}/1/assets/a/b.png")).is_some());
        for other in [
            format!("page-imports/{ID}/"),
            format!("page-imports/{ID}/1/"),
            format!("page-imports/{ID}/capture.json"),
            format!("page-imports/{ID}/0/capture.json"),
            format!("page-imports/{ID}/01/capture.json"),
            format!("page-imports/{ID}/-1/capture.json"),
            format!("page-imports/{ID}/+1/capture.json"),
            format!("page-imports/{ID}/99999999999/capture.json"),
            format!("page-imports/{}/1/capture.json", ID.to_uppercase()),
            format!("page-imports/{}/1/capture.json", ID.replace('-', "")),
            "page-imports/not-a-uuid/1/capture.json".to_owned(),
            format!("other/{ID}/1/capture.json"),
            format!("/page-imports/{ID}/1/capture.json"),
            "page-imports/".to_owned(),
        ] {
            assert_eq!(AttemptKey::parse(&other), None, "{other}");
        }
    }

    proptest! {
        /// Whatever the key, parsing never panics, and a parsed key is the
        /// prefix of its attempt followed by a name.
        #[test]
        fn a_parsed_key_starts_with_its_attempts_prefix(key in "(page-imports/)?[0-9a-fA-F-]{0,40}(/[0-9+-]{0,4})?(/[a-z./]{0,8})?") {
            if let Some(parsed) = AttemptKey::parse(&key) {
                let prefix = artifact_prefix(parsed.page_import_id, parsed.attempt);
                prop_assert!(key.starts_with(&prefix) && key.len() > prefix.len());
                prop_assert!(parsed.attempt >= 1);
            }
        }

        /// Every key an attempt can write parses back to that attempt.
        #[test]
        fn every_key_an_attempt_writes_parses(id in any::<u128>(), attempt in 1..=i32::MAX, name in "[a-z0-9._-]{1,12}(/[a-z0-9._-]{1,12})?") {
            let id = uuid::Uuid::from_u128(id).hyphenated().to_string();
            let key = format!("{}{name}", artifact_prefix(&id, attempt));
            let parsed = AttemptKey::parse(&key).unwrap();
            prop_assert_eq!(parsed.page_import_id, id.as_str());
            prop_assert_eq!(parsed.attempt, attempt);
        }
    }

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
                mobile: true,
            },
            ready_selector: Some("#app".into()),
            color_scheme: ColorScheme::Dark,
            locale: "ja-JP".into(),
            time_zone: "Asia/Tokyo".into(),
            consent: Consent::Keep,
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
        assert!(json.contains(r#""colorScheme":"dark","locale":"ja-JP","timeZone":"Asia/Tokyo","consent":"keep""#));
    }

    /// A message of a service that predates SPEC §14's fields is captured
    /// with their defaults (SPEC §7: `schemaVersion` stays 1).
    #[test]
    fn a_sets_message_round_trips_and_its_debug_hides_every_nonce() {
        let one: CaptureJob<'static> = serde_json::from_value(serde_json::json!({
            "schemaVersion": 1, "pageImportId": "a", "attempt": 1, "nonce": "n0nce-secret",
            "source": {"kind": "url", "url": "https://example.com/"},
            "viewport": {"width": 390, "height": 844, "deviceScaleFactor": 3.0, "mobile": true},
            "readySelector": null, "artifacts": {"bucket": "b", "prefix": "page-imports/a/1/"},
            "callbackUrl": "https://svc/webhooks/page-imports"
        }))
        .unwrap();
        let set = SetJob {
            schema_version: SET_SCHEMA_VERSION,
            set_id: "s".into(),
            jobs: vec![one.clone(), one],
        };
        let json = serde_json::to_value(&set).unwrap();
        assert_eq!(json["schemaVersion"], 2);
        assert_eq!(json["setId"], "s");
        assert_eq!(json["jobs"][1]["viewport"]["mobile"], true);
        assert_eq!(serde_json::from_value::<SetJob<'static>>(json).unwrap(), set);
        assert!(!format!("{set:?}").contains("n0nce-secret"));
        assert_eq!(set_deduplication_id("s"), "set:s");
    }

    #[test]
    fn a_message_without_the_readers_settings_means_the_defaults() {
        let json = r#"{"schemaVersion":1,"pageImportId":"abc","attempt":1,"nonce":"n",
            "source":{"kind":"public_url","url":"https://example.com/"},
            "viewport":{"width":390,"height":844,"deviceScaleFactor":3.0},
            "readySelector":null,"artifacts":{"bucket":"b","prefix":"page-imports/abc/1/"},
            "callbackUrl":"http://127.0.0.1/webhooks/page-imports"}"#;
        let job: CaptureJob<'static> = serde_json::from_str(json).unwrap();
        assert!(!job.viewport.mobile);
        assert_eq!(job.color_scheme, ColorScheme::Light);
        assert_eq!(job.locale, DEFAULT_LOCALE);
        assert_eq!(job.time_zone, DEFAULT_TIME_ZONE);
        assert_eq!(job.consent, Consent::Decline);
    }
}
