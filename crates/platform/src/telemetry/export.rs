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
/// queue was at `OTEL_BSP_MAX_QUEUE_SIZE`) or `export_failed` (the
/// collector refused, failed or timed out on their batch).
pub const SPANS_DROPPED: &str = "trace_spans_dropped_total";

/// The SDK's default `OTEL_BSP_MAX_QUEUE_SIZE`.
const DEFAULT_MAX_QUEUE: usize = 2048;

/// Whether an OTLP endpoint for traces is configured: nothing is built, and
/// nothing waits for a collector, without one.
pub fn configured() -> bool {
    ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
}

/// The batch processor of the OTLP/HTTP exporter, the SDK's in every
/// respect but the count of what it drops (see [`Counted`]).
pub fn processor() -> Result<Counted, opentelemetry_otlp::ExporterBuildError> {
    // Endpoint, headers, timeout and protocol (`http/protobuf` unless
    // `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) come from the SDK's variables.
    let exporter = opentelemetry_otlp::SpanExporter::builder().with_http().build()?;
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
    for reason in ["queue_full", "export_failed"] {
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
        if self.pending.fetch_add(1, Ordering::AcqRel) >= self.max_queue {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            dropped("queue_full", 1);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
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
