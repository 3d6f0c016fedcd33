//! Publishing outbox messages to SQS, one room per job:
//!
//! - `after_commit`: straight after a commit, batching what queues up;
//! - `relay`: whatever is left (an SQS outage, a crash after commit);
//! - `lease`: holding a message's lease while it is being sent;
//! - `lane`: each queue's circuit breaker, and the messages it left to the
//!   relay, made due at once when SQS takes the queue's messages again;
//! - `ended`: dropping the capture messages whose attempt can no longer run;
//! - `send`: one `SendMessageBatch` and what its answer writes, with
//!   `refusal`, the one rule of what SQS refused as the sender's fault.
//!
//! A capture message SQS refuses ends its attempt: a lifecycle rule, which
//! the service that owns it writes ([`RefusedCaptures`]); the queue only
//! reports it.

mod after_commit;
mod breaker;
mod ended;
mod lane;
mod lease;
pub mod messages;
mod refusal;
mod relay;
mod send;
mod signal;

pub use refusal::{RefusedCapture, RefusedCaptures};
pub use signal::{Committed, DispatchSignal};

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::{mpsc, Notify};

use crate::db::outbox::OutboxMessage;
use crate::telemetry::Throttle;
use lane::Lane;

const BATCH_SIZE: usize = 10;
/// SendMessageBatch calls in flight at once, per publisher.
const MAX_BATCHES_IN_FLIGHT: usize = 4;
/// Messages waiting for the after-commit publisher before it sheds to the relay.
const AFTER_COMMIT_QUEUE: usize = 4096;
/// One "SQS publish failed" line per period; `suppressed` counts the rest.
const FAILURE_LOG_PERIOD: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueName {
    PageImport,
    Code2Des,
}

impl QueueName {
    pub const ALL: [Self; 2] = [Self::PageImport, Self::Code2Des];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::PageImport => "page_import",
            Self::Code2Des => "code2des",
        }
    }

    /// The `outbox_message.queue` value back as a name.
    pub fn parse(queue: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|q| q.as_str() == queue)
    }
}

/// Publishes outbox messages. Cheap to clone.
#[derive(Clone)]
pub struct Publisher {
    inner: Arc<Inner>,
    after_commit: mpsc::Sender<OutboxMessage>,
}

struct Inner {
    sqs: aws_sdk_sqs::Client,
    pool: PgPool,
    lanes: [Lane; 2],
    max_backoff: Duration,
    lease: Duration,
    metrics: crate::metrics::Metrics,
    /// Announces the imports whose attempt SQS accepted (`dispatchedAt`).
    committed: Committed,
    /// Ends the attempts whose capture message SQS refused.
    refused: Arc<dyn RefusedCaptures>,
    failure_log: Throttle,
    /// Woken when messages were made due early: the relay need not wait for its tick.
    due_now: Notify,
}

/// Where and how a [`Publisher`] publishes.
pub struct PublisherSettings {
    pub page_import_queue_url: String,
    pub code2des_queue_url: String,
    /// `OUTBOX_MAX_BACKOFF_MS`.
    pub max_backoff: Duration,
    /// `OUTBOX_LEASE_MS`.
    pub lease: Duration,
}

/// What a [`Publisher`] tells, and whom.
pub struct Listeners {
    /// Told of the imports whose attempt SQS accepted.
    pub committed: Committed,
    /// Ends the attempts whose capture message SQS refused.
    pub refused: Arc<dyn RefusedCaptures>,
}

impl Publisher {
    /// Must be called inside a Tokio runtime: it starts the task that
    /// publishes messages right after their commit.
    pub fn new(
        sqs: aws_sdk_sqs::Client,
        pool: PgPool,
        settings: PublisherSettings,
        metrics: crate::metrics::Metrics,
        listeners: Listeners,
    ) -> Self {
        for queue in QueueName::ALL {
            metrics.outbox_queue(queue.as_str());
        }
        let inner = Arc::new(Inner {
            sqs,
            pool,
            lanes: [
                Lane::new(QueueName::PageImport, settings.page_import_queue_url),
                Lane::new(QueueName::Code2Des, settings.code2des_queue_url),
            ],
            max_backoff: settings.max_backoff,
            lease: settings.lease,
            metrics,
            committed: listeners.committed,
            refused: listeners.refused,
            failure_log: Throttle::new(FAILURE_LOG_PERIOD),
            due_now: Notify::new(),
        });
        let after_commit = after_commit::start(inner.clone());
        Self { inner, after_commit }
    }

    /// Whether after-commit publishing to `queue` is paused by its circuit
    /// breaker (SQS keeps failing and no probe is due).
    pub fn paused(&self, queue: QueueName) -> bool {
        self.inner.lane(queue).breaker.is_open()
    }

    /// How long a publisher holds a claimed message before another may take
    /// it, unless it is still sending it (`hold_leases` extends it then).
    pub fn lease(&self) -> Duration {
        self.inner.lease
    }

    /// One relay pass: claims due messages and publishes them in batches.
    /// Returns how many were published.
    #[tracing::instrument(name = "outbox.relay", level = "debug", skip_all)]
    pub async fn relay_once(&self) -> anyhow::Result<usize> {
        self.inner.relay_once().await
    }

    /// Resolves when messages were made due early (SQS is back): the relay
    /// runs then instead of waiting for its next tick.
    pub async fn due_now(&self) {
        self.inner.due_now.notified().await;
    }
}

impl Inner {
    fn lane(&self, queue: QueueName) -> &Lane {
        &self.lanes[queue as usize]
    }

    fn lane_of(&self, queue: &str) -> Option<&Lane> {
        QueueName::parse(queue).map(|q| self.lane(q))
    }

    fn duplicates(&self, queue: &str, n: usize) {
        if n > 0 {
            tracing::warn!(queue, messages = n, "outbox messages published more than once");
            self.metrics.outbox_duplicate_publishes(queue, n as u64);
        }
    }

    fn relay_error(&self, stage: &'static str, err: &dyn std::fmt::Display) {
        tracing::warn!(stage, error = %err, "outbox publishing error");
        self.metrics.outbox_relay_error(stage);
    }
}
