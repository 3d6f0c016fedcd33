//! The router: every route group from `routes.rs` with its layers (body
//! limits, CORS, timeouts, request ids, the request's span and access line,
//! metrics, panics as 500), and the second listener's `/metrics` router.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use page_import_contract::job::TRACEPARENT;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};

use crate::config::Config;
use crate::error::ApiError;
use crate::http;
use crate::http::ops::ApiDocument;
use crate::openapi;
use crate::request_span::RequestSpanLayer;
use crate::routes;
use crate::state::AppState;

pub fn router(state: AppState) -> Router {
    let x_request_id = HeaderName::from_static("x-request-id");

    let (user, _) = routes::user().split_for_parts();
    let user = user
        // Set before the CORS layer wraps the routes, so a preflight reaches it
        // (a fallback set later replaces the layered default one).
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(http::USER_BODY_LIMIT));
    let user = match cors(&state.config.cors_allowed_origins) {
        Some(cors) => user.layer(cors).layer(middleware::from_fn_with_state(
            state.config.clone(),
            no_cors_for_other_origins,
        )),
        None => user,
    };

    let (callbacks, _) = routes::callbacks().split_for_parts();
    let callbacks = callbacks.layer(DefaultBodyLimit::max(http::WEBHOOK_BODY_LIMIT));

    let (ops, _) = routes::ops().split_for_parts();
    let ops = ops.layer(Extension(ApiDocument(openapi::document().into())));
    // With METRICS_ADDR, /metrics lives only on that listener (`metrics_router`).
    let ops = if state.config.metrics_addr.is_none() {
        ops.merge(routes::metrics().split_for_parts().0)
    } else {
        ops
    };

    Router::new()
        .merge(user)
        .merge(callbacks)
        .merge(ops)
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::Internal(anyhow::anyhow!("handler panicked")).into_response()
        }))
        .layer(PropagateRequestIdLayer::new(x_request_id.clone()))
        .layer(RequestSpanLayer)
        .layer(SetRequestIdLayer::new(x_request_id, MakeRequestUuid))
        .with_state(state)
}

/// The second listener's router when `METRICS_ADDR` is set: `/metrics` only.
pub fn metrics_router(state: AppState) -> Router {
    let (metrics, _) = routes::metrics().split_for_parts();
    metrics.fallback(|| async { ApiError::NotFound }).with_state(state)
}

/// CORS for the user routes (SPEC §6): exact origins, no credentials; none
/// at all when no origin is configured.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let origins: Vec<HeaderValue> = origins
        .iter()
        .map(|o| HeaderValue::from_str(o).expect("origins are validated by Config"))
        .collect();
    let header = |name: &'static str| HeaderName::from_static(name);
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header("idempotency-key"),
                header::IF_NONE_MATCH,
                header("x-request-id"),
                header(TRACEPARENT),
            ])
            .expose_headers([
                header::LOCATION,
                header::ETAG,
                header("idempotent-replayed"),
                header::RETRY_AFTER,
                header("x-request-id"),
            ])
            .max_age(Duration::from_secs(600)),
    )
}

/// tower-http's layer adds `Access-Control-Expose-Headers` (and, to
/// preflights, the allowed methods and headers) whatever the origin; SPEC §6
/// gives an origin that is not allowed no `Access-Control-*` header at all.
async fn no_cors_for_other_origins(State(config): State<Arc<Config>>, req: Request, next: Next) -> Response {
    let allowed = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| config.cors_allowed_origins.iter().any(|a| a == o));
    let mut response = next.run(req).await;
    if !allowed {
        let names: Vec<HeaderName> = response
            .headers()
            .keys()
            .filter(|k| k.as_str().starts_with("access-control-"))
            .cloned()
            .collect();
        for name in names {
            response.headers_mut().remove(name);
        }
    }
    response
}

const WEBHOOK_ROUTE: &str = "/webhooks/page-imports";
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(120);

/// Per-request timeout (503 problem+json) and request metrics by route.
async fn observe(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    // Verifying a manifest of up to 256 MiB may take longer than a user request.
    let timeout = if route == WEBHOOK_ROUTE {
        state.config.request_timeout.max(WEBHOOK_TIMEOUT)
    } else {
        state.config.request_timeout
    };
    let mut req = req;
    req.extensions_mut().insert(crate::http::Deadline(started + timeout));
    let response = match tokio::time::timeout(timeout, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout.into_response(),
    };
    state
        .metrics
        .request(&method, route, response.status().as_u16(), started.elapsed());
    response
}
