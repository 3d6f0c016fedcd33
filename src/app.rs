//! Application state, router and middleware stack.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use crate::auth::Authenticator;
use crate::aws::AwsClients;
use crate::config::Config;
use crate::db::coalesce;
use crate::dns::DnsChecker;
use crate::domain::SourceUrlPolicy;
use crate::error::ApiError;
use crate::events::Events;
use crate::http;
use crate::metrics::Metrics;
use crate::queue::Publisher;
use crate::routes;

/// Everything a handler needs. One `Arc`: axum clones the state for every
/// request (router, middleware, extractors), and one reference count is
/// cheaper to bump than one per field.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
    pub config: Arc<Config>,
    pub pool: PgPool,
    pub auth: Arc<Authenticator>,
    pub publisher: Publisher,
    pub s3: aws_sdk_s3::Client,
    pub dns: Option<Arc<DnsChecker>>,
    pub metrics: Metrics,
    /// Coalesced reads by id: `(id, actor)` → the row if visible.
    pub reads: coalesce::Reads,
    /// Coalesced creates without an idempotency key.
    pub creates: coalesce::Creates,
    /// Open `/events` streams and the change notifications they wait for.
    pub events: Arc<Events>,
    /// Which supervised background tasks are running (`/readyz`).
    pub tasks: Arc<crate::supervisor::Tasks>,
}

impl axum::extract::FromRef<AppState> for Arc<Authenticator> {
    fn from_ref(state: &AppState) -> Self {
        state.auth.clone()
    }
}

impl Shared {
    pub fn source_url_policy(&self) -> SourceUrlPolicy {
        SourceUrlPolicy {
            allow_private: self.config.allow_private_source_urls,
        }
    }
}

impl AppState {
    /// Builds the state: a lazily connecting pool (start-up does not need the
    /// database to be up), the AWS clients and the JWKS cache.
    pub async fn new(config: Config) -> anyhow::Result<Self> {
        let options: PgConnectOptions = secrecy::ExposeSecret::expose_secret(&config.database_url).parse()?;
        let pool = PgPoolOptions::new()
            // statement_timeout bounds every query; a dead database fails
            // fast. Set after connecting, not as a startup option, which
            // PgBouncer refuses by default.
            .after_connect(|conn, _| Box::pin(async move { set_session(conn, &[("statement_timeout", "5000")]).await }))
            .max_connections(config.database_max_connections)
            // No ping before each use: it is a full round trip per request. A
            // connection broken by a database restart fails its next query
            // (503) and is discarded, so recovery does not need it.
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(3))
            .connect_lazy_with(options);
        let aws = crate::aws::clients(config.s3_force_path_style, None).await;
        Self::from_parts(config, pool, aws)
    }

    pub fn from_parts(config: Config, pool: PgPool, aws: AwsClients) -> anyhow::Result<Self> {
        let metrics = Metrics::default();
        let publisher = Publisher::new(
            aws.sqs,
            pool.clone(),
            config.page_import_queue_url.clone(),
            config.code2des_queue_url.clone(),
            config.outbox_max_backoff,
            config.outbox_lease,
            metrics.clone(),
        );
        let dns = if config.source_url_dns_check {
            Some(Arc::new(DnsChecker::new(&config.dns_nameservers)?))
        } else {
            None
        };
        let auth = Arc::new(Authenticator::new(
            config.auth_jwks_url.clone(),
            config.auth_issuer.clone(),
            config.auth_audience.clone(),
        ));
        // Coalesced statements have their own connections: a pool for
        // creates and one for reads.
        let slots = config.database_coalesce_slots;
        let limits = coalesce::Limits::for_request_timeout(config.database_coalesce_queue, config.request_timeout);
        let statement_timeout = limits.statement_timeout();
        // Both keep one generic plan per connection, made so that it cannot
        // depend on statistics (`db::PINNED_PLAN`).
        let read_pool = batch_pool(&pool, slots, statement_timeout);
        let create_pool = batch_pool(&pool, slots, statement_timeout);
        // They live and close with the main pool.
        tokio::spawn({
            let (pool, read_pool, create_pool) = (pool.clone(), read_pool.clone(), create_pool.clone());
            async move {
                pool.close_event().await;
                read_pool.close().await;
                create_pool.close().await;
            }
        });
        let reads = coalesce::reads(read_pool, slots as usize, limits);
        let creates = coalesce::creates(create_pool, slots as usize, limits);
        let events = Events::new(config.events_max_streams);
        Ok(Self(Arc::new(Shared {
            events,
            tasks: Arc::default(),
            reads,
            creates,
            config: Arc::new(config),
            pool,
            auth,
            publisher,
            s3: aws.s3,
            dns,
            metrics,
        })))
    }
}

/// The connections of one kind of coalesced statement, with their own
/// statement timeout and pinned plans.
fn batch_pool(pool: &PgPool, slots: u32, statement_timeout: Duration) -> PgPool {
    let statement_timeout = statement_timeout.as_millis().to_string();
    PgPoolOptions::new()
        .after_connect(move |conn, _| {
            let statement_timeout = statement_timeout.clone();
            Box::pin(async move {
                set_session(conn, &[("statement_timeout", &statement_timeout)]).await?;
                set_session(conn, crate::db::PINNED_PLAN).await
            })
        })
        // One spare per slot: a connection goes back to the pool in a task of
        // its own after each batch, and with no spare the next batch waited
        // for that hop (−14 % create throughput, measured).
        .max_connections(2 * slots)
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(3))
        .connect_lazy_with((*pool.connect_options()).clone())
}

/// Session settings, one `SET` each (names and values are ours, not input).
async fn set_session(conn: &mut sqlx::PgConnection, settings: &[(&str, &str)]) -> sqlx::Result<()> {
    use sqlx::Executor;
    for (name, value) in settings {
        conn.execute(format!("set {name} = '{value}'").as_str()).await?;
    }
    Ok(())
}

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
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request| {
                    let request_id = req
                        .extensions()
                        .get::<RequestId>()
                        .and_then(|id| id.header_value().to_str().ok())
                        .unwrap_or("-");
                    tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id)
                })
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
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
    let method = req.method().as_str().to_owned();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
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
        .request(&method, &route, response.status().as_u16(), started.elapsed());
    response
}
