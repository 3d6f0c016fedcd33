//! `tracing` set-up for both binaries (SPEC §9): log lines (JSON by default,
//! or pretty) filtered by `RUST_LOG`, every span at `info` and above an
//! OpenTelemetry span, and,
//! with `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) set, the
//! spans exported over OTLP/HTTP by a batch processor that never makes a
//! request or a capture wait for the collector (`export`).
//!
//! Spans exist whether or not they are exported: their ids are what the
//! `trace_id` and `span_id` of a JSON log line are, and what a `traceparent`
//! carries on (`trace_context`).

mod export;
pub mod trace_context;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::dispatcher::WeakDispatch;
use tracing::Level;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::LogFormat;

pub use export::{register_metrics, SPANS_DROPPED};

/// How long a shutdown waits for the last spans to reach the collector.
pub const FLUSH_BOUND: Duration = Duration::from_secs(3);

/// The tracer provider of the process; [`Telemetry::shutdown`] flushes it.
pub struct Telemetry {
    provider: SdkTracerProvider,
    exporting: bool,
}

impl Telemetry {
    /// Exports the spans still queued, waiting at most [`FLUSH_BOUND`]
    /// (a collector that is down must not hold up a shutdown), and stops
    /// the exporter. Blocking: call it from a blocking context.
    pub fn shutdown(&self) {
        if self.exporting {
            if let Err(e) = self.provider.shutdown_with_timeout(FLUSH_BOUND) {
                tracing::warn!(error = %e, "spans not flushed at shutdown");
            }
        }
    }
}

/// Installs the global subscriber and the W3C trace-context propagator.
/// `service_name` is the `service.name` of the exported spans unless
/// `OTEL_SERVICE_NAME` says otherwise. Tests may initialise more than once;
/// the first subscriber wins.
pub fn init(format: LogFormat, service_name: &'static str) -> Telemetry {
    let mut provider = SdkTracerProvider::builder().with_resource(resource(service_name));
    let mut exporting = false;
    let mut export_error = None;
    if let Some(endpoint) = export::endpoint() {
        match export::processor(&endpoint) {
            Ok(processor) => {
                provider = provider.with_span_processor(processor);
                exporting = true;
            }
            Err(e) => export_error = Some(e),
        }
    }
    let provider = provider.build();
    // Spans at `info` and above, whatever `RUST_LOG` lets through to the
    // log lines: a quieter log does not cut the traces short, and a louder
    // one does not make every library's debug span an exported one. Of the
    // events, only warnings and errors join their span (as span events):
    // the rest are log lines, and a span event per request's log line
    // doubled what an exported request cost (bench T). No thread, code
    // location or busy/idle attributes, and no OpenTelemetry context made
    // current on each enter: nothing here reads them.
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(service_name))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_context_activation(false)
        .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
            let most = if meta.is_span() { Level::INFO } else { Level::WARN };
            *meta.level() <= most
        }));
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));

    let dispatch = DispatchSlot::default();
    let logs = match format {
        LogFormat::Json => json_logs(dispatch.0.clone()).boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer().with_writer(std::io::stderr).boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(dispatch)
        .with(otel)
        .with(logs.with_filter(filter()))
        .try_init();
    if let Some(e) = export_error {
        tracing::error!(error = %e, "spans are not exported");
    }
    Telemetry { provider, exporting }
}

/// `service.name` from `OTEL_SERVICE_NAME` when set, else the binary's own;
/// `OTEL_RESOURCE_ATTRIBUTES` adds the rest (the SDK's detectors).
fn resource(service_name: &'static str) -> Resource {
    let builder = Resource::builder();
    match std::env::var("OTEL_SERVICE_NAME") {
        Ok(name) if !name.trim().is_empty() => builder.build(),
        _ => builder.with_service_name(service_name).build(),
    }
}

/// The subscriber the process runs, kept for the log lines' id lookup: an
/// event is formatted inside a dispatch, where `dispatcher::get_default`
/// answers "none".
#[derive(Default, Clone)]
struct DispatchSlot(Arc<OnceLock<WeakDispatch>>);

impl<S: tracing::Subscriber> Layer<S> for DispatchSlot {
    fn on_register_dispatch(&self, subscriber: &tracing::Dispatch) {
        let _ = self.0.set(subscriber.downgrade());
    }
}

/// The JSON log line: time, level, the event's fields flattened, target,
/// its span and span list (as tracing-subscriber's own JSON format has
/// them), and the OpenTelemetry `trace_id` and `span_id` of its span.
fn json_logs<S>(dispatch: Arc<OnceLock<WeakDispatch>>) -> json_subscriber::JsonLayer<S, fn() -> std::io::Stderr>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let mut layer = json_subscriber::JsonLayer::stderr();
    layer
        .with_timer("timestamp", tracing_subscriber::fmt::time::SystemTime)
        .with_level("level")
        .with_flattened_event()
        .with_target("target")
        .with_current_span("span")
        .with_span_list("spans");
    layer.add_multiple_dynamic_fields(move |event, ctx, writer| {
        let span = match event.parent() {
            Some(id) => ctx.span(id),
            None if event.is_contextual() => ctx.lookup_current(),
            None => None,
        };
        let (Some(span), Some(dispatch)) = (span, dispatch.get().and_then(WeakDispatch::upgrade)) else {
            return;
        };
        // The nearest span that is a trace's (a debug span is not).
        let Some(cx) = span
            .scope()
            .find_map(|s| tracing_opentelemetry::get_otel_context(&s.id(), &dispatch))
        else {
            return;
        };
        let otel_span = cx.span();
        let ids = otel_span.span_context();
        if ids.is_valid() {
            let _ = writer.write_field("trace_id", ids.trace_id().to_string());
            let _ = writer.write_field("span_id", ids.span_id().to_string());
        }
    });
    layer
}
