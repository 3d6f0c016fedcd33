//! Publishing outbox messages to SQS: straight after commit, and by the relay
//! for whatever is left (SQS outage, crash after commit).

pub mod messages;

use std::time::Duration;

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use rand::Rng;
use sqlx::PgPool;

use crate::db::outbox::{self, OutboxMessage};

const BATCH_SIZE: usize = 10;
const CLAIM_LIMIT: i64 = 100;

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

#[derive(Clone)]
pub struct Publisher {
    sqs: aws_sdk_sqs::Client,
    pool: PgPool,
    page_import_queue_url: String,
    code2des_queue_url: String,
    max_backoff: Duration,
    lease: Duration,
    metrics: crate::metrics::Metrics,
}

impl Publisher {
    pub fn new(
        sqs: aws_sdk_sqs::Client,
        pool: PgPool,
        page_import_queue_url: String,
        code2des_queue_url: String,
        max_backoff: Duration,
        lease: Duration,
        metrics: crate::metrics::Metrics,
    ) -> Self {
        Self {
            sqs,
            pool,
            page_import_queue_url,
            code2des_queue_url,
            max_backoff,
            lease,
            metrics,
        }
    }

    /// How long a publisher holds a claimed message before another may take
    /// it; longer than the SDK's whole operation timeout in production, so a
    /// lease does not run out mid-send.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    fn queue_url(&self, queue: &str) -> Option<&str> {
        match queue {
            "page_import" => Some(&self.page_import_queue_url),
            "code2des" => Some(&self.code2des_queue_url),
            _ => None,
        }
    }

    /// Publishes one message whose lease the caller holds (it was inserted
    /// leased). Runs detached from the request. A failure writes nothing: the
    /// lease runs out and the relay takes the message, which keeps the
    /// database work of a create the same whether SQS is up or down.
    pub fn publish_after_commit(&self, message: OutboxMessage) {
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(err) = this.publish_batch(&message.queue.clone(), vec![message], false).await {
                tracing::warn!(error = %err, "publish after commit failed; the relay will retry");
            }
        });
    }

    /// One relay pass: claims due messages and publishes them in batches.
    /// Returns how many were published.
    pub async fn relay_once(&self) -> anyhow::Result<usize> {
        let mut conn = self.pool.acquire().await?;
        let claimed = outbox::claim_due(&mut conn, CLAIM_LIMIT, self.lease).await?;
        drop(conn);
        if claimed.is_empty() {
            return Ok(0);
        }
        let mut published = 0;
        for queue in ["page_import", "code2des"] {
            let mine: Vec<_> = claimed.iter().filter(|m| m.queue == queue).cloned().collect();
            for chunk in mine.chunks(BATCH_SIZE) {
                published += self.publish_batch(queue, chunk.to_vec(), true).await.unwrap_or(0);
            }
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
        let (sent, failed): (Vec<i64>, Vec<(i64, String)>) = match result {
            Ok(out) => {
                let sent = out.successful().iter().filter_map(|s| s.id().parse().ok()).collect();
                let failed = out
                    .failed()
                    .iter()
                    .filter_map(|f| Some((f.id().parse().ok()?, f.code().to_owned())))
                    .collect();
                (sent, failed)
            }
            Err(err) => {
                let why = aws_sdk_sqs::error::DisplayErrorContext(&err).to_string();
                (Vec::new(), messages.iter().map(|m| (m.id, why.clone())).collect())
            }
        };

        if !sent.is_empty() {
            let mut conn = self.pool.acquire().await?;
            outbox::delete_published(&mut conn, &sent).await?;
            self.metrics.outbox_published(queue, sent.len() as u64);
        }
        if reschedule && !failed.is_empty() {
            let mut conn = self.pool.acquire().await?;
            for (id, why) in &failed {
                let attempts = messages.iter().find(|m| m.id == *id).map_or(1, |m| m.attempts);
                outbox::reschedule(&mut conn, &[*id], self.backoff(attempts), why).await?;
            }
        }
        if let Some((_, why)) = failed.first() {
            self.metrics.outbox_publish_failed(queue, failed.len() as u64);
            tracing::warn!(queue, failed = failed.len(), error = %why, "SQS publish failed");
        }
        Ok(sent.len())
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
