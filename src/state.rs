//! The application state: what the handlers share, built once at start-up.
//! It knows nothing of HTTP routes (`router.rs`) or handlers (`http/`).

use std::sync::Arc;

use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

use crate::auth::Authenticator;
use crate::aws::AwsClients;
use crate::config::Config;
use crate::db::{coalesce, pool};
use crate::dns::DnsChecker;
use crate::domain::SourceUrlPolicy;
use crate::events::Events;
use crate::metrics::Metrics;
use crate::queue::Publisher;

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
        let pool = pool::main_pool(options, config.database_max_connections);
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
        let read_pool = pool::batch_pool(&pool, slots, statement_timeout);
        let create_pool = pool::batch_pool(&pool, slots, statement_timeout);
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
