//! The application state: what the handlers share, built once at start-up.
//! It knows nothing of HTTP routes (`router.rs`) or handlers (`http/`).

use std::sync::Arc;

use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

use crate::auth::Authenticator;
use crate::aws::AwsClients;
use crate::changes::{Changes, Notifier};
use crate::coalesce;
use crate::config::Config;
use crate::db::page_import::coalesced;
use crate::db::pool;
use crate::dns::DnsChecker;
use crate::domain::SourceUrlPolicy;
use crate::metrics::Metrics;
use crate::queue::messages::CaptureDestination;
use crate::queue::{Committed, DispatchSignal};
use crate::queue::{Listeners, Publisher, PublisherSettings};
use crate::service::callbacks::Callbacks;
use crate::service::code2des::Code2DesJobs;
use crate::service::create::Creator;
use crate::service::dispatch::{CaptureLimits, Dispatcher};
use crate::service::dispatch_rejected::DispatchRejected;
use crate::service::erasure::Eraser;
use crate::service::imports::Imports;
use crate::service::retry::Retrier;
use crate::service::sets::ImportSets;
use crate::service::sweeper::Sweeper;

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
    /// The bucket and callback URL of every capture message.
    pub destination: Arc<CaptureDestination>,
    pub auth: Arc<Authenticator>,
    pub publisher: Publisher,
    pub s3: aws_sdk_s3::Client,
    pub dns: Option<Arc<DnsChecker>>,
    pub metrics: Metrics,
    /// Coalesced reads by id: `(id, actor)` → the row if visible.
    pub reads: coalesced::Reads,
    /// Coalesced creates without an idempotency key.
    pub creates: coalesced::Creates,
    /// Open `/events` streams and the change notifications they wait for.
    pub changes: Arc<Changes>,
    /// Announces changed imports after their commit (`changes.rs`).
    pub notifier: Notifier,
    /// Which supervised background tasks are running (`/readyz`).
    pub tasks: Arc<crate::supervisor::Tasks>,
    /// `CAPTURE_MAX_IN_FLIGHT`, `…_PER_ORG` and `ORG_MAX_QUEUED` (SPEC §12).
    pub capture_limits: CaptureLimits,
    /// Wakes this process's dispatcher.
    pub dispatch: DispatchSignal,
    /// The two above, paired: what a committed transition tells.
    pub committed: Committed,
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

/// Each service, given what it uses from the state: the one place that
/// knows which part of the state a service uses. A service is a struct of
/// what it uses and its operations are methods: borrowed for a request's
/// services, owned for the background tasks, which outlive any request.
impl Shared {
    pub fn imports(&self) -> Imports<'_> {
        Imports {
            reads: &self.reads,
            pool: &self.pool,
            committed: &self.committed,
            s3: &self.s3,
        }
    }

    pub fn creator(&self) -> Creator<'_> {
        Creator {
            pool: &self.pool,
            creates: &self.creates,
            dns: self.dns.as_deref(),
            limits: &self.capture_limits,
            dispatch: &self.dispatch,
            metrics: &self.metrics,
        }
    }

    pub fn import_sets(&self) -> ImportSets<'_> {
        ImportSets {
            pool: &self.pool,
            dns: self.dns.as_deref(),
            limits: &self.capture_limits,
            dispatch: &self.dispatch,
            committed: &self.committed,
            metrics: &self.metrics,
        }
    }

    pub fn retrier(&self) -> Retrier<'_> {
        Retrier {
            pool: &self.pool,
            limits: &self.capture_limits,
            committed: &self.committed,
            metrics: &self.metrics,
        }
    }

    pub fn callbacks(&self) -> Callbacks<'_> {
        Callbacks {
            pool: &self.pool,
            s3: &self.s3,
            destination: &self.destination,
            max_attempts: self.config.capture_max_attempts,
            committed: &self.committed,
            metrics: &self.metrics,
        }
    }

    pub fn code2des_jobs(&self) -> Code2DesJobs<'_> {
        Code2DesJobs {
            pool: &self.pool,
            publisher: &self.publisher,
            metrics: &self.metrics,
        }
    }

    pub fn sweeper(&self) -> Sweeper {
        Sweeper {
            pool: self.pool.clone(),
            capture_timeout: self.config.capture_timeout,
            max_attempts: self.config.capture_max_attempts,
            committed: self.committed.clone(),
            metrics: self.metrics.clone(),
        }
    }

    pub fn eraser(&self) -> Eraser {
        Eraser {
            pool: self.pool.clone(),
            s3: self.s3.clone(),
            bucket: self.config.shared.artifact_bucket.clone(),
            erase_after: self.config.erase_after_delete,
            capture_timeout: self.config.capture_timeout,
            interval: self.config.erase_interval,
            lease: crate::service::erasure::LEASE,
            metrics: self.metrics.clone(),
        }
    }

    pub fn dispatcher(&self) -> Dispatcher {
        Dispatcher {
            pool: self.pool.clone(),
            publisher: self.publisher.clone(),
            signal: self.dispatch.clone(),
            limits: self.capture_limits,
            destination: self.destination.clone(),
            metrics: self.metrics.clone(),
        }
    }
}

impl AppState {
    /// Builds the state: a lazily connecting pool (start-up does not need the
    /// database to be up), the AWS clients and the JWKS cache.
    pub async fn new(config: Config) -> anyhow::Result<Self> {
        let options: PgConnectOptions = secrecy::ExposeSecret::expose_secret(&config.database_url).parse()?;
        let pool = pool::main_pool(options, config.database_max_connections);
        let aws = crate::aws::clients(config.shared.s3_force_path_style, None).await;
        Self::from_parts(config, pool, aws)
    }

    pub fn from_parts(config: Config, pool: PgPool, aws: AwsClients) -> anyhow::Result<Self> {
        let metrics = Metrics::default();
        metrics.limits(config.capture_max_in_flight, config.events_max_streams);
        let notifier = Notifier::default();
        let dispatch = DispatchSignal::default();
        let publisher = Publisher::new(
            aws.sqs,
            pool.clone(),
            PublisherSettings {
                page_import_queue_url: config.shared.page_import_queue_url.clone(),
                code2des_queue_url: config.code2des_queue_url.clone(),
                max_backoff: config.outbox_max_backoff,
                lease: config.outbox_lease,
            },
            metrics.clone(),
            Listeners {
                committed: Committed::new(notifier.clone(), dispatch.clone()),
                refused: Arc::new(DispatchRejected {
                    pool: pool.clone(),
                    metrics: metrics.clone(),
                    committed: Committed::new(notifier.clone(), dispatch.clone()),
                }),
            },
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
        let capture_limits = CaptureLimits {
            max_in_flight: config.capture_max_in_flight,
            max_in_flight_per_org: config.capture_max_in_flight_per_org,
            max_queued: config.org_max_queued,
        };
        let (reads, creates) = coalesced_statements(&config, &pool);
        let changes = Changes::new(config.events_max_streams);
        Ok(Self(Arc::new(Shared {
            changes,
            committed: Committed::new(notifier.clone(), dispatch.clone()),
            notifier,
            capture_limits,
            dispatch,
            tasks: Arc::default(),
            reads,
            creates,
            destination: Arc::new(CaptureDestination::new(&config)),
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

/// The coalesced reads by id and creates, each on connections of its own
/// (in addition to the main pool), which live and close with the main pool.
fn coalesced_statements(config: &Config, pool: &PgPool) -> (coalesced::Reads, coalesced::Creates) {
    let slots = config.database_coalesce_slots;
    let limits = coalesce::Limits::for_request_timeout(config.database_coalesce_queue, config.request_timeout);
    let statement_timeout = limits.statement_timeout();
    // Both keep one generic plan per connection, made so that it cannot
    // depend on statistics (`db::PINNED_PLAN`).
    let reads = pool::BatchConnections::new(pool, statement_timeout);
    let creates = pool::BatchConnections::new(pool, statement_timeout);
    tokio::spawn({
        let (pool, reads, creates) = (pool.clone(), reads.clone(), creates.clone());
        async move {
            pool.close_event().await;
            reads.close().await;
            creates.close().await;
        }
    });
    (
        coalesced::reads(reads, slots as usize, limits),
        coalesced::creates(creates, slots as usize, limits, config.org_max_queued),
    )
}
