//! Queue message bodies (SPEC §7 and §8). The capture job is part of the
//! worker contract, so it lives in the contract crate.

use serde::Serialize;

pub use page_import_contract::job::{artifact_prefix, Artifacts, CaptureJob, Source, Viewport as ViewportMessage};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Code2DesJob<'a> {
    pub schema_version: u32,
    pub code2des_id: &'a str,
    pub page_import_id: &'a str,
    pub result_url: &'a str,
    pub capture_hash: &'a str,
}
