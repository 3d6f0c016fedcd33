//! A request's span and its access line (SPEC §9): the outermost layer but
//! the request id's.
//!
//! The span is entered while the request's future is polled, and so is
//! current for every line and child span the handler makes; it is not
//! entered around the response body's frames, which hyper polls after the
//! handler has answered and which log nothing (tower-http's `TraceLayer`
//! entered it there too: two more enters and exits through every layer
//! of the subscriber per request, issue 56).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::response::Response;
use page_import_contract::job::TRACEPARENT;
use page_import_platform::telemetry::trace_context;
use tower::{Layer, Service};
use tower_http::request_id::RequestId;
use tracing::Instrument;

/// The target of the access lines: `RUST_LOG=info,page_import::access=debug`
/// shows the probes' too.
pub const ACCESS_TARGET: &str = "page_import::access";

/// The paths monitoring polls: Prometheus scrapes `/metrics` every 15 s
/// (`scripts/dev` runs one), load balancers and orchestrators probe the
/// other two every few seconds.
const PROBES: [&str; 3] = ["/metrics", "/healthz", "/readyz"];

/// Wraps a router's routes in [`RequestSpan`].
#[derive(Clone, Copy, Default)]
pub struct RequestSpanLayer;

impl<S> Layer<S> for RequestSpanLayer {
    type Service = RequestSpan<S>;

    fn layer(&self, inner: S) -> RequestSpan<S> {
        RequestSpan { inner }
    }
}

/// Runs a request in its span ([`span_of`]) and logs its access line.
#[derive(Clone)]
pub struct RequestSpan<S> {
    inner: S,
}

impl<S> Service<Request> for RequestSpan<S>
where
    S: Service<Request, Response = Response>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let span = span_of(&req);
        let probe = PROBES.contains(&req.uri().path());
        let started = Instant::now();
        let answer = self.inner.call(req);
        Box::pin(
            async move {
                let response = answer.await?;
                access_line(&response, started.elapsed(), probe);
                Ok(response)
            }
            .instrument(span),
        )
    }
}

/// A request's span, with its method, path and request id. W3C Trace
/// Context (SPEC §9): a valid `traceparent` is continued (a caller's, or a
/// worker's on its callback); otherwise the request starts a trace.
fn span_of(req: &Request) -> tracing::Span {
    let request_id = req
        .extensions()
        .get::<RequestId>()
        .and_then(|id| id.header_value().to_str().ok())
        .unwrap_or("-");
    let span = tracing::info_span!(
        "request",
        method = req.method().as_str(),
        path = req.uri().path(),
        request_id
    );
    let traceparent = req.headers().get(TRACEPARENT).and_then(|v| v.to_str().ok());
    trace_context::continue_from(&span, traceparent);
    span
}

/// A line per response, at INFO, but at DEBUG for a probe's ([`PROBES`]),
/// so that the lines of the requests someone made are not lost among
/// scrapes in a console at the default `RUST_LOG=info`.
fn access_line(response: &Response, latency: Duration, probe: bool) {
    let status = response.status().as_u16();
    let latency_ms = latency.as_secs_f64() * 1e3;
    if probe {
        tracing::debug!(target: ACCESS_TARGET, status, latency_ms, "finished processing request");
    } else {
        tracing::info!(target: ACCESS_TARGET, status, latency_ms, "finished processing request");
    }
}
