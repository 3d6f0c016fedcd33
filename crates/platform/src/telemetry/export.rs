//! OTLP/HTTP export of spans, with the SDK's own batch processor and
//! standard variables (`OTEL_EXPORTER_OTLP_*`, `OTEL_BSP_*`), bounded so a
//! collector that is down or slow never holds anything up: a span that finds
//! the queue full, or whose batch the collector did not take, is dropped and
//! counted in [`SPANS_DROPPED`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, Span, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;

/// Counter of spans never exported, by `reason`: `queue_full` (the batch
/// queue was at `OTEL_BSP_MAX_QUEUE_SIZE`), `export_failed` (the collector
/// refused, failed or timed out on their batch) or `shutdown` (still queued
/// when the shutdown's flush ran out of time).
pub const SPANS_DROPPED: &str = "trace_spans_dropped_total";

/// The SDK's default `OTEL_BSP_MAX_QUEUE_SIZE`.
const DEFAULT_MAX_QUEUE: usize = 2048;

/// The OTLP endpoint for traces, when one is configured: nothing is built,
/// and nothing waits for a collector, without one.
pub fn endpoint() -> Option<String> {
    ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
}

/// Why no exporter was built for a configured endpoint. Its text never
/// holds the endpoint, which may carry credentials.
#[derive(Debug)]
pub enum ExportError {
    /// The exporter's HTTP client is built without TLS: a collector is
    /// reached in plain HTTP, as a local agent or sidecar is.
    Https,
    /// The SDK refused a setting: the variable it names.
    Build(String),
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Https => {
                f.write_str("an https:// OTLP endpoint is not supported (plain http:// to a local collector)")
            }
            Self::Build(setting) => write!(f, "the OTLP exporter could not be built: check {setting}"),
        }
    }
}

/// The batch processor of the OTLP/HTTP exporter, the SDK's in every
/// respect but the count of what it drops (see [`Counted`]).
pub fn processor(endpoint: &str) -> Result<Counted, ExportError> {
    if endpoint.trim_start().to_ascii_lowercase().starts_with("https:") {
        return Err(ExportError::Https);
    }
    // Endpoint, headers, timeout and protocol (`http/protobuf` unless
    // `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) come from the SDK's variables.
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| {
            // The SDK's message is "<variable>: <reason>", and the reason may
            // quote the endpoint: only the variable's name is kept.
            let text = e.to_string();
            let setting = text
                .split(": ")
                .find(|part| part.starts_with("OTEL_"))
                .unwrap_or("the OTEL_EXPORTER_OTLP_* settings");
            ExportError::Build(setting.to_owned())
        })?;
    // Read here as well as by the SDK, which does not tell the value it
    // read: this wrapper must hold the same bound (set below, so the two
    // agree whatever the SDK would make of a malformed value).
    let max_queue = std::env::var("OTEL_BSP_MAX_QUEUE_SIZE")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_QUEUE);
    Ok(Counted::new(exporter, max_queue))
}

/// The SDK's [`BatchSpanProcessor`] keeps its count of dropped spans to
/// itself, so this one keeps its own: spans handed to the batch processor
/// and not yet taken by the exporter are `pending`, and a span that would
/// make them more than the queue holds is dropped here (and counted) rather
/// than there. The batch processor's queue therefore never overflows.
#[derive(Debug)]
pub struct Counted {
    inner: BatchSpanProcessor,
    pending: Arc<AtomicUsize>,
    max_queue: usize,
}

impl Counted {
    fn new<E: SpanExporter + 'static>(exporter: E, max_queue: usize) -> Self {
        let pending = Arc::new(AtomicUsize::new(0));
        let exporter = CountedExporter {
            inner: exporter,
            pending: pending.clone(),
        };
        let config = BatchConfigBuilder::default().with_max_queue_size(max_queue).build();
        Self {
            inner: BatchSpanProcessor::new(exporter, config),
            pending,
            max_queue,
        }
    }
}

/// Makes [`SPANS_DROPPED`] show (at 0) on the process's metrics recorder,
/// installed before this is called.
pub fn register_metrics() {
    for reason in ["queue_full", "export_failed", "shutdown"] {
        metrics::counter!(SPANS_DROPPED, "reason" => reason).increment(0);
    }
}

fn dropped(reason: &'static str, n: usize) {
    metrics::counter!(SPANS_DROPPED, "reason" => reason).increment(n as u64);
}

impl SpanProcessor for Counted {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let room = self.pending.fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
            (p < self.max_queue).then_some(p + 1)
        });
        if room.is_err() {
            dropped("queue_full", 1);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let result = self.inner.shutdown_with_timeout(timeout);
        let unsent = self.pending.swap(0, Ordering::AcqRel);
        if unsent > 0 {
            dropped("shutdown", unsent);
            tracing::warn!(spans = unsent, "spans not exported by the end of the shutdown flush");
        }
        result
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[derive(Debug)]
struct CountedExporter<E> {
    inner: E,
    pending: Arc<AtomicUsize>,
}

impl<E: SpanExporter> SpanExporter for CountedExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        // Out of the queue: room for as many new spans.
        self.pending.fetch_sub(n, Ordering::AcqRel);
        let result = self.inner.export(batch).await;
        if result.is_err() {
            dropped("export_failed", n);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
