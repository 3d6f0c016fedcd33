//! Queue message bodies (SPEC §7 and §8). The capture job is part of the
//! worker contract, so it lives in the contract crate.

use serde::Serialize;

pub use page_import_contract::job::{
    artifact_prefix, Artifacts, CaptureJob, ColorScheme, Consent, SetJob, Source, Viewport as ViewportMessage,
    SET_SCHEMA_VERSION,
};

use crate::config::Config;

/// Where every capture job sends its results: the artifact bucket and the
/// callback URL, the two settings a capture message carries.
#[derive(Debug, Clone)]
pub struct CaptureDestination {
    pub bucket: String,
    pub callback_url: String,
}

impl CaptureDestination {
    pub fn new(config: &Config) -> Self {
        Self {
            bucket: config.shared.artifact_bucket.clone(),
            callback_url: format!("{}{}", config.public_base_url, page_import_contract::CALLBACK_PATH),
        }
    }
}

/// What every attempt of an import captures, as stored with it: the page,
/// and the reader who sees it (SPEC §6, §14).
pub struct CaptureSettings<'a> {
    pub source_url: &'a str,
    pub viewport: ViewportMessage,
    pub ready_selector: Option<&'a str>,
    pub color_scheme: ColorScheme,
    pub locale: &'a str,
    pub time_zone: &'a str,
    pub consent: Consent,
}

/// The queue message of one capture attempt (SPEC §7), as its JSON body:
/// the one place a create, a timed-out or retryable attempt and a manual
/// retry build it.
pub fn capture_job_body(
    destination: &CaptureDestination,
    id: &str,
    attempt: i32,
    nonce: &str,
    settings: &CaptureSettings<'_>,
) -> String {
    let job = capture_job(destination, id, attempt, nonce, settings);
    serde_json::to_string(&job).expect("a capture job serializes")
}

/// One member's job in an import set's message (SPEC §15 "The message"):
/// its own capture message, as it would go alone.
pub struct SetMember<'a> {
    pub id: &'a str,
    pub attempt: i32,
    pub nonce: &'a str,
    pub settings: CaptureSettings<'a>,
}

/// The queue message of an import set's first attempts (SPEC §15):
/// `{"schemaVersion": 2, "setId", "jobs": [...]}`, the members in order.
pub fn set_job_body(destination: &CaptureDestination, set_id: &str, members: &[SetMember<'_>]) -> String {
    let job = SetJob {
        schema_version: SET_SCHEMA_VERSION,
        set_id: set_id.into(),
        jobs: members
            .iter()
            .map(|m| capture_job(destination, m.id, m.attempt, m.nonce, &m.settings))
            .collect(),
    };
    serde_json::to_string(&job).expect("a set job serializes")
}

fn capture_job<'a>(
    destination: &'a CaptureDestination,
    id: &'a str,
    attempt: i32,
    nonce: &'a str,
    settings: &CaptureSettings<'a>,
) -> CaptureJob<'a> {
    CaptureJob {
        schema_version: page_import_contract::job::SCHEMA_VERSION,
        page_import_id: id.into(),
        attempt,
        nonce: nonce.into(),
        source: Source {
            kind: "public_url".into(),
            url: settings.source_url.into(),
        },
        viewport: settings.viewport,
        ready_selector: settings.ready_selector.map(Into::into),
        color_scheme: settings.color_scheme,
        locale: settings.locale.into(),
        time_zone: settings.time_zone.into(),
        consent: settings.consent,
        artifacts: Artifacts {
            bucket: destination.bucket.as_str().into(),
            prefix: artifact_prefix(id, attempt).into(),
        },
        callback_url: destination.callback_url.as_str().into(),
    }
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

impl Code2DesJob<'_> {
    /// The `schemaVersion` of the Code2Des queue message (SPEC §8).
    pub const SCHEMA_VERSION: u32 = 1;
}
