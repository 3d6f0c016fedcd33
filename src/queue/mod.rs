//! Publishing outbox messages to SQS: straight after commit, and by the relay
//! for whatever is left (SQS outage, crash after commit).

mod breaker;
pub mod messages;

use std::time::Duration;

use std::sync::Arc;

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use rand::Rng;
use sqlx::PgPool;
use tokio::sync::{mpsc, Semaphore};

use crate::db::outbox::{self, OutboxMessage};
use crate::telemetry::Throttle;
use breaker::Breaker;

const BATCH_SIZE: usize = 10;
const CLAIM_LIMIT: i64 = 100;
/// SendMessageBatch calls in flight at once, per publisher.
const MAX_BATCHES_IN_FLIGHT: usize = 4;
/// Messages waiting for the after-commit publisher before it sheds to the relay.
const AFTER_COMMIT_QUEUE: usize = 4096;
/// One "SQS publish failed" line per period; `suppressed` counts the rest.
const FAILURE_LOG_PERIOD: Duration = Duration::from_secs(10);
/// Failed SendMessageBatch calls in a row that pause after-commit publishing.
const BREAKER_THRESHOLD: u32 = 3;
/// While paused, one after-commit batch per this period probes SQS.
const BREAKER_COOLDOWN: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueName {
    PageImport,
    Code2Des,
}

impl QueueName {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PageImport => "page_import",
            Self::Code2Des => "code2des",
        }
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
    page_import_queue_url: String,
    code2des_queue_url: String,
    max_backoff: Duration,
    lease: Duration,
    metrics: crate::metrics::Metrics,
    failure_log: Throttle,
    breaker: Breaker,
}

impl Publisher {
    /// Must be called inside a Tokio runtime: it starts the task that
    /// publishes messages right after their commit.
    pub fn new(
        sqs: aws_sdk_sqs::Client,
        pool: PgPool,
        page_import_queue_url: String,
        code2des_queue_url: String,
        max_backoff: Duration,
        lease: Duration,
        metrics: crate::metrics::Metrics,
    ) -> Self {
        let inner = Arc::new(Inner {
            sqs,
            pool,
            page_import_queue_url,
            code2des_queue_url,
            max_backoff,
            lease,
            metrics,
            failure_log: Throttle::new(FAILURE_LOG_PERIOD),
            breaker: Breaker::new(BREAKER_THRESHOLD, BREAKER_COOLDOWN),
        });
        let (after_commit, rx) = mpsc::channel(AFTER_COMMIT_QUEUE);
        tokio::spawn(publish_after_commit_loop(inner.clone(), rx));
        Self { inner, after_commit }
    }

    /// Whether after-commit publishing is paused by the circuit breaker
    /// (SQS keeps failing and no probe is due).
    pub fn paused(&self) -> bool {
        self.inner.breaker.is_open()
    }

    /// How long a publisher holds a claimed message before another may take
    /// it; longer than the SDK's whole operation timeout in production, so a
    /// lease does not run out mid-send.
    pub fn lease(&self) -> Duration {
        self.inner.lease
    }

    /// Hands a just-committed message (inserted leased to its writer) to the
    /// after-commit publisher. Never waits: if that publisher is saturated
    /// the message is left to the relay, as it is when a publish fails. A
    /// failure writes nothing either: the lease runs out and the relay takes
    /// the message, which keeps a create's database work the same whether SQS
    /// is up or down.
    ///
    /// While SQS keeps failing (the circuit breaker is open) the message is
    /// left to the relay without a call (`breaker.rs`).
    pub fn publish_after_commit(&self, message: OutboxMessage) {
        if self.inner.breaker.is_open() {
            self.inner.metrics.outbox_deferred("circuit_open", 1);
            return;
        }
        if self.after_commit.try_send(message).is_err() {
            self.inner.metrics.outbox_deferred("saturated", 1);
            tracing::debug!("after-commit publisher saturated; the relay will publish");
        }
    }

    /// One relay pass: claims due messages and publishes them in batches.
    /// Returns how many were published.
    pub async fn relay_once(&self) -> anyhow::Result<usize> {
        self.inner.relay_once().await
    }
}

/// Sends what arrives, batching whatever queued up while earlier sends were
/// in flight: one message alone at low rates (least latency), full batches
/// under load (fewest calls).
async fn publish_after_commit_loop(inner: Arc<Inner>, mut rx: mpsc::Receiver<OutboxMessage>) {
    let in_flight = Arc::new(Semaphore::new(MAX_BATCHES_IN_FLIGHT));
    while let Some(first) = rx.recv().await {
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < BATCH_SIZE {
            match rx.try_recv() {
                Ok(message) => batch.push(message),
                Err(_) => break,
            }
        }
        if !inner.breaker.allow() {
            // SQS keeps failing and this batch is not the probe: the relay
            // takes these messages once their lease runs out.
            inner.metrics.outbox_deferred("circuit_open", batch.len() as u64);
            continue;
        }
        let inner = inner.clone();
        tokio::spawn(async move {
            for queue in ["page_import", "code2des"] {
                let mine: Vec<_> = batch.iter().filter(|m| m.queue == queue).cloned().collect();
                if mine.is_empty() {
                    continue;
                }
                if let Err(err) = inner.publish_batch(queue, mine, false).await {
                    tracing::warn!(error = %err, "publish after commit failed; the relay will retry");
                }
            }
            drop(permit);
        });
    }
}

impl Inner {
    fn queue_url(&self, queue: &str) -> Option<&str> {
        match queue {
            "page_import" => Some(&self.page_import_queue_url),
            "code2des" => Some(&self.code2des_queue_url),
            _ => None,
        }
    }

    async fn relay_once(&self) -> anyhow::Result<usize> {
        let mut conn = self.pool.acquire().await?;
        let claimed = outbox::claim_due(&mut conn, CLAIM_LIMIT, self.lease).await?;
        drop(conn);
        if claimed.is_empty() {
            return Ok(0);
        }
        let mut batches = Vec::new();
        for queue in ["page_import", "code2des"] {
            let mine: Vec<_> = claimed.iter().filter(|m| m.queue == queue).cloned().collect();
            batches.extend(mine.chunks(BATCH_SIZE).map(|chunk| (queue, chunk.to_vec())));
        }
        let mut published = 0;
        for group in batches.chunks(MAX_BATCHES_IN_FLIGHT) {
            let sends = group
                .iter()
                .map(|(queue, batch)| self.publish_batch(queue, batch.clone(), true));
            published += futures::future::join_all(sends)
                .await
                .into_iter()
                .map(|r| r.unwrap_or(0))
                .sum::<usize>();
        }
        Ok(published)
    }

    /// Sends up to ten messages with SendMessageBatch, deletes the accepted
    /// ones, and (when asked) reschedules the rest with backoff.
    async fn publish_batch(
        &self,
        queue: &str,
        messages: Vec<OutboxMessage>,
        reschedule: bool,
    ) -> anyhow::Result<usize> {
        let Some(url) = self.queue_url(queue) else {
            anyhow::bail!("outbox row for unknown queue {queue}");
        };
        let fifo = url.ends_with(".fifo");
        let entries = messages
            .iter()
            .map(|m| {
                let mut entry = SendMessageBatchRequestEntry::builder()
                    .id(m.id.to_string())
                    .message_body(&m.body);
                if fifo {
                    entry = entry
                        .message_group_id(&m.message_group_id)
                        .message_deduplication_id(&m.deduplication_id);
                }
                entry.build()
            })
            .collect::<Result<Vec<_>, _>>()?;

        let result = self
            .sqs
            .send_message_batch()
            .queue_url(url)
            .set_entries(Some(entries))
            .send()
            .await;
        self.record_outcome(result.is_ok());
        let (sent, failed): (Vec<i64>, Vec<(i64, String)>) = match result {
            Ok(out) => {
                let sent = out.successful().iter().filter_map(|s| s.id().parse().ok()).collect();
                let failed: Vec<(i64, String)> = out
                    .failed()
                    .iter()
                    .filter_map(|f| Some((f.id().parse().ok()?, f.code().to_owned())))
                    .collect();
                if let Some((_, code)) = failed.first() {
                    self.warn_failed(queue, failed.len(), code);
                }
                (sent, failed)
            }
            Err(err) => {
                let why = aws_sdk_sqs::error::DisplayErrorContext(&err);
                self.warn_failed(queue, messages.len(), &why);
                // The whole error chain is long (≈ 1 KB): it is only kept
                // where it is stored, as the relay's `last_error`.
                let why = if reschedule { why.to_string() } else { String::new() };
                (Vec::new(), messages.iter().map(|m| (m.id, why.clone())).collect())
            }
        };

        if !sent.is_empty() {
            let mut conn = self.pool.acquire().await?;
            outbox::delete_published(&mut conn, &sent).await?;
            self.metrics.outbox_published(queue, sent.len() as u64);
        }
        if reschedule && !failed.is_empty() {
            let retries: Vec<(i64, Duration, &str)> = failed
                .iter()
                .map(|(id, why)| {
                    let attempts = messages.iter().find(|m| m.id == *id).map_or(1, |m| m.attempts);
                    (*id, self.backoff(attempts), why.as_str())
                })
                .collect();
            let mut conn = self.pool.acquire().await?;
            outbox::reschedule(&mut conn, &retries).await?;
        }
        if !failed.is_empty() {
            self.metrics.outbox_publish_failed(queue, failed.len() as u64);
        }
        Ok(sent.len())
    }

    /// Feeds the circuit breaker with every call's outcome, the relay's too
    /// (a relay call that gets through closes it).
    fn record_outcome(&self, ok: bool) {
        match self.breaker.record(ok) {
            Some(true) => {
                self.metrics.sqs_circuit_open(true);
                tracing::warn!(
                    failed_calls = BREAKER_THRESHOLD,
                    probe_every_ms = BREAKER_COOLDOWN.as_millis() as u64,
                    "SQS keeps failing: after-commit publishing paused, new messages are left to the relay"
                );
            }
            Some(false) => {
                self.metrics.sqs_circuit_open(false);
                tracing::info!("SQS reachable again: after-commit publishing resumed");
            }
            None => {}
        }
    }

    /// At most one line per `FAILURE_LOG_PERIOD`: an SQS outage would
    /// otherwise log a line for every batch (hundreds per second under load).
    fn warn_failed(&self, queue: &str, failed: usize, why: &dyn std::fmt::Display) {
        if let Some(suppressed) = self.failure_log.permit() {
            tracing::warn!(queue, failed, suppressed, error = %why, "SQS publish failed");
        }
    }

    /// Exponential backoff with full jitter: 0.5 s, 1 s, 2 s … up to the cap.
    fn backoff(&self, attempts: i32) -> Duration {
        let exp = attempts.clamp(1, 16) as u32 - 1;
        let cap = Duration::from_millis(500)
            .saturating_mul(1 << exp)
            .min(self.max_backoff);
        let jitter = rand::rng().random_range(0.5..=1.0);
        cap.mul_f64(jitter)
    }
}
