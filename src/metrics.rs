//! Prometheus metrics (SPEC §9) through the `metrics` facade.

use std::collections::HashMap;
use std::sync::{OnceLock, PoisonError, RwLock};
use std::time::Duration;

use axum::http::Method;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide recorder once and returns its handle.
fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full("http_request_duration_seconds".into()),
                &[
                    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                ],
            )
            .expect("static buckets are valid")
            .set_buckets_for_metric(
                Matcher::Full(QUEUE_WAIT.into()),
                &[
                    0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0,
                ],
            )
            .expect("static buckets are valid")
            .install_recorder()
            .expect("no other metrics recorder is installed");
        // `install_recorder` starts no upkeep: histogram samples would pile
        // up in memory between scrapes (unbounded with no scraper, ~80 KB/s
        // at 5 000 req/s) and a scrape would drain them all at once.
        page_import_platform::telemetry::register_metrics();
        register_counters();
        let upkeep = handle.clone();
        std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || loop {
                std::thread::sleep(UPKEEP_INTERVAL);
                upkeep.run_upkeep();
            })
            .expect("spawn the metrics upkeep thread");
        handle
    })
}

const UPKEEP_INTERVAL: Duration = Duration::from_secs(1);

const ERASURE_FAILURES: &str = "page_import_erasure_failures_total";
const ERASURE_OBJECTS_DELETED: &str = "page_import_erasure_objects_deleted_total";
const ADMISSION_REJECTED: &str = "page_import_admission_rejected_total";
const DISPATCH_REJECTED: &str = "page_import_dispatch_rejected_total";
const CREATED: &str = "page_imports_created_total";
const FINISHED: &str = "page_imports_finished_total";
const CODE2DES_CREATED: &str = "code2des_jobs_created_total";
const OUTBOX_PUBLISHED: &str = "outbox_published_total";
const OUTBOX_PUBLISH_FAILURES: &str = "outbox_publish_failures_total";
const OUTBOX_DUPLICATES: &str = "outbox_duplicate_publishes_total";
const CIRCUIT_OPEN: &str = "sqs_publish_circuit_open";
const WEBHOOK_REJECTIONS: &str = "webhook_rejections_total";
const ATTEMPTS_STARTED: &str = "page_import_attempts_started_total";
const QUEUE_WAIT: &str = "page_import_capture_queue_wait_seconds";
const SWEEPER_TIMED_OUT: &str = "sweeper_timed_out_total";

/// Every counter and histogram the alert rules (deploy/prometheus) and
/// SPEC §9, §12 and §13 read, with the label sets known ahead, at 0 from
/// the process's start: a series absent until its first event is one no
/// alert or rate ever sees. The outbox's series per queue are registered
/// by the publisher, which knows its queues (`Metrics::outbox_queue`).
fn register_counters() {
    for name in [
        ERASURE_FAILURES,
        ERASURE_OBJECTS_DELETED,
        DISPATCH_REJECTED,
        CREATED,
        CODE2DES_CREATED,
        SWEEPER_TIMED_OUT,
    ] {
        metrics::counter!(name).increment(0);
    }
    metrics::counter!(ADMISSION_REJECTED, "reason" => "too_many_queued").increment(0);
    for status in ["completed", "failed"] {
        metrics::counter!(FINISHED, "status" => status).increment(0);
    }
    // The reason an alert reads: a failed signature check. The others
    // are the codes of the answers the route gives, as they occur.
    metrics::counter!(WEBHOOK_REJECTIONS, "reason" => crate::error::ApiError::UNAUTHORIZED).increment(0);
    for reason in crate::domain::lifecycle::AttemptReason::NEXT {
        metrics::counter!(ATTEMPTS_STARTED, "reason" => reason.as_str()).increment(0);
    }
    // A histogram with no sample yet is rendered with its buckets at 0.
    let _ = metrics::histogram!(QUEUE_WAIT);
}

/// Cheap to clone; every method records into the process-wide registry.
#[derive(Clone)]
pub struct Metrics(&'static PrometheusHandle);

impl Default for Metrics {
    fn default() -> Self {
        Self(handle())
    }
}

impl Metrics {
    pub fn render(&self) -> String {
        self.0.render()
    }

    /// One answered request: `http_requests_total` and
    /// `http_request_duration_seconds` of its method, route and status.
    pub fn request(&self, method: &Method, route: &str, status: u16, elapsed: Duration) {
        let series = request_series(method, route, status);
        series.count.increment(1);
        series.duration.record(elapsed.as_secs_f64());
    }

    pub fn import_created(&self) {
        metrics::counter!(CREATED).increment(1);
    }

    pub fn import_finished(&self, status: &'static str) {
        metrics::counter!(FINISHED, "status" => status).increment(1);
    }

    pub fn code2des_created(&self) {
        metrics::counter!(CODE2DES_CREATED).increment(1);
    }

    /// The series of one outbox queue, at 0 (its circuit closed) until the
    /// publisher records something.
    pub fn outbox_queue(&self, queue: &'static str) {
        metrics::counter!(OUTBOX_PUBLISHED, "queue" => queue).increment(0);
        metrics::counter!(OUTBOX_PUBLISH_FAILURES, "queue" => queue).increment(0);
        metrics::counter!(OUTBOX_DUPLICATES, "queue" => queue).increment(0);
        metrics::gauge!(CIRCUIT_OPEN, "queue" => queue).set(0.0);
    }

    pub fn outbox_published(&self, queue: &str, n: u64) {
        metrics::counter!(OUTBOX_PUBLISHED, "queue" => queue.to_owned()).increment(n);
    }

    pub fn outbox_publish_failed(&self, queue: &str, n: u64) {
        metrics::counter!(OUTBOX_PUBLISH_FAILURES, "queue" => queue.to_owned()).increment(n);
    }

    /// Messages the after-commit publisher left to the relay without a call:
    /// `circuit_open` (SQS kept failing) or `saturated` (its queue was full).
    pub fn outbox_deferred(&self, reason: &'static str, n: u64) {
        metrics::counter!("outbox_publish_deferred_total", "reason" => reason).increment(n);
    }

    pub fn sqs_circuit_open(&self, queue: &'static str, open: bool) {
        metrics::gauge!(CIRCUIT_OPEN, "queue" => queue).set(if open { 1.0 } else { 0.0 });
    }

    /// Errors of the publishing machinery by stage: `claim`, `send`,
    /// `delete`, `reschedule`, `extend_lease`, `make_due`.
    pub fn outbox_relay_error(&self, stage: &'static str) {
        metrics::counter!("outbox_relay_errors_total", "stage" => stage).increment(1);
    }

    /// Messages SQS accepted more than once (a failed delete after a send,
    /// or another publisher that published them first).
    pub fn outbox_duplicate_publishes(&self, queue: &str, n: u64) {
        metrics::counter!(OUTBOX_DUPLICATES, "queue" => queue.to_owned()).increment(n);
    }

    pub fn outbox_oldest_age(&self, seconds: f64) {
        metrics::gauge!("outbox_oldest_message_age_seconds").set(seconds);
    }

    pub fn outbox_backlog(&self, n: i64) {
        metrics::gauge!("outbox_backlog").set(n as f64);
    }

    pub fn webhook_rejected(&self, reason: &'static str) {
        metrics::counter!(WEBHOOK_REJECTIONS, "reason" => reason).increment(1);
    }

    /// Attempts started after the first, by reason: `sweeper`, `retryable`, `manual`.
    pub fn attempts_started(&self, reason: crate::domain::lifecycle::AttemptReason, n: u64) {
        metrics::counter!(ATTEMPTS_STARTED, "reason" => reason.as_str()).increment(n);
    }

    /// Capture attempts waiting for a slot, in the whole deployment (SPEC §12).
    pub fn capture_queued(&self, n: i64) {
        metrics::gauge!("page_import_capture_queued").set(n as f64);
    }

    /// The limits an alert compares its gauges with: `CAPTURE_MAX_IN_FLIGHT`
    /// and this replica's `EVENTS_MAX_STREAMS`. Set once, at start.
    pub fn limits(&self, capture_max_in_flight: i64, events_max_streams: usize) {
        metrics::gauge!("page_import_capture_in_flight_limit").set(capture_max_in_flight as f64);
        metrics::gauge!("page_import_events_streams_limit").set(events_max_streams as f64);
    }

    /// `/events` streams open on this replica, read when scraped.
    pub fn events_streams_open(&self, n: usize) {
        metrics::gauge!("page_import_events_streams_open").set(n as f64);
    }

    /// Capture attempts holding a slot, in the whole deployment (SPEC §12).
    pub fn capture_in_flight(&self, n: i64) {
        metrics::gauge!("page_import_capture_in_flight").set(n as f64);
    }

    /// From an attempt's start to SQS accepting its message.
    pub fn capture_queue_wait(&self, seconds: f64) {
        metrics::histogram!(QUEUE_WAIT).record(seconds.max(0.0));
    }

    /// A create or retry refused by admission (SPEC §12).
    pub fn admission_rejected(&self, reason: &'static str) {
        metrics::counter!(ADMISSION_REJECTED, "reason" => reason).increment(1);
    }

    /// Imports whose erasure is due and not finished, how many of them
    /// failed their last try, and how long the oldest of them has been due
    /// (SPEC §13).
    pub fn erasure_pending(&self, pending: crate::db::erasure::Pending) {
        metrics::gauge!("page_import_erasure_pending").set(pending.pending as f64);
        metrics::gauge!("page_import_erasure_failing").set(pending.failing as f64);
        metrics::gauge!("page_import_erasure_oldest_pending_seconds").set(pending.oldest_seconds);
    }

    pub fn erasure_objects_deleted(&self, n: u64) {
        metrics::counter!(ERASURE_OBJECTS_DELETED).increment(n);
    }

    pub fn erasure_failed(&self) {
        metrics::counter!(ERASURE_FAILURES).increment(1);
    }

    /// Capture messages SQS refused as the sender's fault (SPEC §12).
    pub fn dispatch_rejected(&self, n: u64) {
        metrics::counter!(DISPATCH_REJECTED).increment(n);
    }

    pub fn sweeper_failed_imports(&self, n: u64) {
        metrics::counter!(SWEEPER_TIMED_OUT).increment(n);
    }

    /// 1 while a supervised background task runs, 0 while it waits to
    /// restart. Its restart counter shows from the task's first start, at 0.
    pub fn task_up(&self, task: &'static str, up: bool) {
        metrics::gauge!("background_task_up", "task" => task).set(if up { 1.0 } else { 0.0 });
        metrics::counter!("background_task_restarts_total", "task" => task).increment(0);
    }

    pub fn task_restarted(&self, task: &'static str) {
        metrics::counter!("background_task_restarts_total", "task" => task).increment(1);
    }
}

/// The two series of one (method, route, status), registered once. Looking
/// a series up by its labels builds a key of owned strings and hashes it
/// in the registry; every request did that twice (`bench/results/issue-56-reads.md`).
#[derive(Clone)]
struct RequestSeries {
    count: metrics::Counter,
    duration: metrics::Histogram,
}

/// Route → (method, status, series). Routes are the router's matched
/// paths (and `unmatched`), so the map is as bounded as the label sets
/// the registry holds anyway.
type SeriesByRoute = HashMap<Box<str>, Vec<(Method, u16, RequestSeries)>>;

static REQUEST_SERIES: OnceLock<RwLock<SeriesByRoute>> = OnceLock::new();

fn request_series(method: &Method, route: &str, status: u16) -> RequestSeries {
    let map = REQUEST_SERIES.get_or_init(RwLock::default);
    let find = |m: &SeriesByRoute| {
        m.get(route)?
            .iter()
            .find(|(mth, st, _)| mth == method && *st == status)
            .map(|(_, _, series)| series.clone())
    };
    if let Some(series) = find(&map.read().unwrap_or_else(PoisonError::into_inner)) {
        return series;
    }
    let labels = [
        ("method", method.as_str().to_owned()),
        ("route", route.to_owned()),
        ("status", status.to_string()),
    ];
    let series = RequestSeries {
        count: metrics::counter!("http_requests_total", &labels),
        duration: metrics::histogram!("http_request_duration_seconds", &labels),
    };
    let mut map = map.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(first) = find(&map) {
        return first;
    }
    map.entry(route.into())
        .or_default()
        .push((method.clone(), status, series.clone()));
    series
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each (method, route, status) keeps its own two series across
    /// requests, as when every request looked them up by its labels.
    #[test]
    fn a_requests_series_are_found_again_by_method_route_and_status() {
        let metrics = Metrics::default();
        let route = "/unit-test/{id}";
        let ms = Duration::from_millis(2);
        for status in [200, 200, 404, 200] {
            metrics.request(&Method::GET, route, status, ms);
        }
        metrics.request(&Method::DELETE, route, 200, ms);
        let text = metrics.render();
        let value = |name: &str, method: &str, status: u16| {
            let head = format!(r#"{name}{{method="{method}",route="{route}",status="{status}"}} "#);
            text.lines()
                .find_map(|l| l.strip_prefix(&head))
                .unwrap_or_else(|| panic!("no {head} in\n{text}"))
                .to_owned()
        };
        assert_eq!(value("http_requests_total", "GET", 200), "3");
        assert_eq!(value("http_requests_total", "GET", 404), "1");
        assert_eq!(value("http_requests_total", "DELETE", 200), "1");
        assert_eq!(value("http_request_duration_seconds_count", "GET", 200), "3");
        assert_eq!(value("http_request_duration_seconds_count", "DELETE", 200), "1");
    }
}
