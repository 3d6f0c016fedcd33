//! The worker's Prometheus metrics: the one place that names them. The
//! recorder is installed with histogram buckets (so captures can be
//! aggregated across the fleet), and every series an alert reads
//! (deploy/prometheus) is shown at 0 from the start: a counter absent until
//! its first increment is one no rate or alert ever sees.

use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use page_import_contract::capture::{ConsentInfo, ConsentOutcome};

use crate::failure::Cause;

const CAPTURES: &str = "worker_captures_total";
const CAPTURE_SECONDS: &str = "worker_capture_seconds";
const MANIFEST_BYTES: &str = "worker_manifest_bytes";
const BROWSER_CRASHES: &str = "worker_browser_crashes_total";
const BROWSER_RELAUNCHES: &str = "worker_browser_relaunches_total";
const BROWSER_RESTARTS: &str = "worker_browser_restarts_total";
const DROPPED: &str = "worker_capture_data_dropped_total";
/// Consent banners by outcome and CMP (SPEC §14): `cmp` is the name of the
/// rule that recognized it, `none` without one.
const CONSENT: &str = "worker_consent_outcomes_total";
/// Frames that showed a CMP's marks and were given autoconsent (SPEC §14
/// "Cost": a page without a CMP never is).
const CONSENT_ENGINES: &str = "worker_consent_engine_loads_total";
/// What a capture may leave out when Chromium does not answer for it
/// ([`dropped`]).
const DROPPABLE: [&str; 3] = ["asset_body", "platform_fonts", "frame_snapshot"];

/// Installs the process-wide recorder; `browser_max_captures` is
/// `BROWSER_MAX_CAPTURES`, the recycling period the relaunch alert compares
/// with.
pub fn install(browser_max_captures: u32) -> anyhow::Result<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(CAPTURE_SECONDS.into()),
            &[
                0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0,
            ],
        )?
        .set_buckets_for_metric(
            Matcher::Full(MANIFEST_BYTES.into()),
            &[1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8],
        )?
        .install_recorder()?;
    page_import_platform::telemetry::register_metrics();
    metrics::counter!(CAPTURES, "outcome" => "completed", "class" => "none").increment(0);
    for cause in Cause::one_of_each() {
        metrics::counter!(CAPTURES, "outcome" => cause.reason(), "class" => cause.class()).increment(0);
    }
    for name in [BROWSER_CRASHES, BROWSER_RELAUNCHES, BROWSER_RESTARTS, CONSENT_ENGINES] {
        metrics::counter!(name).increment(0);
    }
    for what in DROPPABLE {
        metrics::counter!(DROPPED, "what" => what).increment(0);
    }
    for outcome in [
        ConsentOutcome::Declined,
        ConsentOutcome::Hidden,
        ConsentOutcome::None,
        ConsentOutcome::Kept,
    ] {
        metrics::counter!(CONSENT, "outcome" => outcome.as_str(), "cmp" => "none").increment(0);
    }
    let _ = metrics::histogram!(CAPTURE_SECONDS);
    let _ = metrics::histogram!(MANIFEST_BYTES);
    metrics::gauge!("worker_browser_max_captures").set(f64::from(browser_max_captures));
    Ok(handle)
}

/// A capture's consent outcome (counted once per capture, when decided).
pub fn consent(consent: &ConsentInfo) {
    let cmp = consent.cmp.clone().unwrap_or_else(|| "none".to_owned());
    metrics::counter!(CONSENT, "outcome" => consent.outcome.as_str(), "cmp" => cmp).increment(1);
}

/// autoconsent loaded in a frame that showed a CMP's marks.
pub fn consent_engine_loaded() {
    metrics::counter!(CONSENT_ENGINES).increment(1);
}

pub fn capture_completed() {
    metrics::counter!(CAPTURES, "outcome" => "completed", "class" => "none").increment(1);
}

pub fn capture_failed(cause: &Cause) {
    metrics::counter!(CAPTURES, "outcome" => cause.reason(), "class" => cause.class()).increment(1);
}

/// The capture's own time, whatever its outcome: from taking a browser to
/// the page's answers or failure (uploads and the callback are not in it).
pub fn capture_took(elapsed: Duration) {
    metrics::histogram!(CAPTURE_SECONDS).record(elapsed.as_secs_f64());
}

pub fn manifest_bytes(n: usize) {
    metrics::histogram!(MANIFEST_BYTES).record(n as f64);
}

/// The browser crashed during a capture.
pub fn browser_crashed() {
    metrics::counter!(BROWSER_CRASHES).increment(1);
}

/// A live browser was retired after `BROWSER_MAX_CAPTURES` captures.
pub fn browser_relaunched() {
    metrics::counter!(BROWSER_RELAUNCHES).increment(1);
}

/// The browser was found dead and a new one started.
pub fn browser_restarted() {
    metrics::counter!(BROWSER_RESTARTS).increment(1);
}

/// A part of a capture left out because Chromium's answer for it was
/// unusable: `asset_body` (a response body Chromium did not give, or that
/// is not base64), `platform_fonts` (no answer for a text node's fonts),
/// `frame_snapshot` (a cross-site frame that could not be snapshotted or
/// placed). Logged where it happens.
pub fn dropped(what: &'static str) {
    debug_assert!(DROPPABLE.contains(&what), "{what}");
    metrics::counter!(DROPPED, "what" => what).increment(1);
}

/// The running Chromium's version, as a label.
pub fn browser_version(version: &str) {
    metrics::gauge!("worker_browser_info", "version" => version.to_owned()).set(1.0);
}
