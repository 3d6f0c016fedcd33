//! One `SendMessageBatch` and what its answer writes: the accepted rows
//! leave the outbox (and start their attempts' clocks), the failed ones are
//! rescheduled with backoff, and the refused ones (`refusal.rs`) are
//! reported to whoever ends their attempts.

use std::time::Duration;

use aws_sdk_sqs::error::SdkError;
use aws_sdk_sqs::operation::send_message_batch::{SendMessageBatchError, SendMessageBatchOutput};
use aws_sdk_sqs::types::{BatchResultErrorEntry, MessageAttributeValue, SendMessageBatchRequestEntry};
use page_import_contract::job::TRACEPARENT;
use page_import_platform::telemetry::trace_context;
use rand::Rng;

use super::lane::Lane;
use super::refusal::{Refusal, RefusedCapture};
use super::{Inner, QueueName};
use crate::db::outbox::{self, OutboxMessage};

/// Outbox ids SQS did not take, each with why (an error code or message).
type Unsent = Vec<(i64, String)>;

/// What one SendMessageBatch call did.
#[derive(Default)]
pub(super) struct Outcome {
    pub sent: usize,
    pub failed: usize,
}

impl Inner {
    /// Sends up to ten messages with SendMessageBatch, deletes the accepted
    /// ones, and (when asked) reschedules the rest with backoff. Every error
    /// is logged and counted; an error after SQS accepted a message means it
    /// will be published again, and is counted as a duplicate publish.
    #[tracing::instrument(name = "outbox.publish_batch", skip_all, fields(queue = lane.name.as_str(), n = messages.len()))]
    pub(super) async fn publish_batch(
        &self,
        lane: &Lane,
        messages: Vec<OutboxMessage>,
        reschedule: bool,
    ) -> anyhow::Result<Outcome> {
        let queue = lane.name.as_str();
        // One span per message, in the trace its row carries (the attempt's,
        // SPEC §9), from before the send to the end of this call; the
        // message carries it on.
        let spans: Vec<tracing::Span> = messages
            .iter()
            .map(|m| {
                let span = tracing::info_span!(parent: None, "publish", queue, outbox_id = m.id);
                trace_context::continue_from(&span, m.traceparent.as_deref());
                span
            })
            .collect();
        let entries = batch_entries(&messages, &spans, lane.url.ends_with(".fifo"))?;
        let result = self
            .sqs
            .send_message_batch()
            .queue_url(&lane.url)
            .set_entries(Some(entries))
            .send()
            .await;
        // SQS answered; refusing what was sent is no outage.
        let refused = result
            .as_ref()
            .err()
            .and_then(Refusal::of_call)
            .filter(Refusal::is_senders_fault)
            .map(|r| r.code.to_owned());
        self.record_outcome(lane, result.is_ok() || refused.is_some()).await;
        if let Some(code) = refused {
            if messages.len() > 1 {
                // Which message SQS refused it does not say: each goes alone.
                return self.publish_one_by_one(lane, messages, reschedule).await;
            }
            let rejected: Unsent = messages.iter().map(|m| (m.id, code.clone())).collect();
            self.reject(lane, &rejected).await;
            return Ok(Outcome::default());
        }
        let (sent, failed, rejected) = self.sort_answer(queue, &messages, result, reschedule);
        if !rejected.is_empty() {
            self.reject(lane, &rejected).await;
        }
        if !sent.is_empty() {
            self.delete_sent(queue, &sent).await;
        }
        if reschedule && !failed.is_empty() {
            self.reschedule_failed(&messages, &failed).await;
        }
        if !failed.is_empty() {
            self.metrics.outbox_publish_failed(queue, failed.len() as u64);
        }
        Ok(Outcome {
            sent: sent.len(),
            failed: failed.len(),
        })
    }

    /// SQS's answer to a batch, sorted: the ids it took, the messages that
    /// failed for now (with why: kept only when they are `reschedule`d, as
    /// the relay's `last_error`) and those it rejected as the sender's fault.
    fn sort_answer(
        &self,
        queue: &str,
        messages: &[OutboxMessage],
        result: Result<SendMessageBatchOutput, SdkError<SendMessageBatchError>>,
        reschedule: bool,
    ) -> (Vec<i64>, Unsent, Unsent) {
        match result {
            Ok(out) => {
                let sent = out.successful().iter().filter_map(|s| s.id().parse().ok()).collect();
                let (failed, rejected) = sort_failed(out.failed());
                if let Some((_, code)) = failed.first() {
                    self.warn_failed(queue, failed.len(), code);
                }
                (sent, failed, rejected)
            }
            Err(err) => {
                let why = aws_sdk_sqs::error::DisplayErrorContext(&err);
                self.warn_failed(queue, messages.len(), &why);
                self.metrics.outbox_relay_error("send");
                // The whole error chain is long (≈ 1 KB): it is only kept
                // where it is stored, as the relay's `last_error`.
                let why = if reschedule { why.to_string() } else { String::new() };
                (
                    Vec::new(),
                    messages.iter().map(|m| (m.id, why.clone())).collect(),
                    Vec::new(),
                )
            }
        }
    }

    /// Deletes the outbox rows of the messages SQS took, and tells their
    /// imports' streams (a dispatched attempt).
    async fn delete_sent(&self, queue: &str, sent: &[i64]) {
        self.metrics.outbox_published(queue, sent.len() as u64);
        let deleted = async {
            let mut conn = self.pool.acquire().await?;
            outbox::delete_published(&mut conn, sent).await
        };
        match deleted.await {
            Ok(published) => {
                // Fewer rows than SQS took: another publisher had taken
                // some of these (a lease ran out) and published them first.
                self.duplicates(queue, sent.len().saturating_sub(published.deleted as usize));
                for (id, waited) in &published.dispatched {
                    self.metrics.capture_queue_wait(*waited);
                    self.committed.changed(id);
                }
            }
            Err(err) => {
                // The rows stay; their lease runs out and they go again.
                self.relay_error("delete", &err);
                self.duplicates(queue, sent.len());
            }
        }
    }

    /// Gives each failed message its next try, after its backoff.
    async fn reschedule_failed(&self, messages: &[OutboxMessage], failed: &Unsent) {
        let retries: Vec<(i64, Duration, &str)> = failed
            .iter()
            .map(|(id, why)| {
                let attempts = messages.iter().find(|m| m.id == *id).map_or(1, |m| m.attempts);
                (*id, self.backoff(attempts), why.as_str())
            })
            .collect();
        let rescheduled = async {
            let mut conn = self.pool.acquire().await?;
            outbox::reschedule(&mut conn, &retries).await
        };
        if let Err(err) = rescheduled.await {
            // The rows keep their lease and go again when it runs out.
            self.relay_error("reschedule", &err);
        }
    }

    /// Sends each message in a batch of its own, after SQS refused the
    /// batch as a whole: the refused one is found, the others go.
    async fn publish_one_by_one(
        &self,
        lane: &Lane,
        messages: Vec<OutboxMessage>,
        reschedule: bool,
    ) -> anyhow::Result<Outcome> {
        let mut outcome = Outcome::default();
        for message in messages {
            let one = Box::pin(self.publish_batch(lane, vec![message], reschedule)).await?;
            outcome.sent += one.sent;
            outcome.failed += one.failed;
        }
        Ok(outcome)
    }

    /// Messages SQS refused as the sender's fault are not retried (SPEC
    /// §12): a capture message's attempt ends `dispatch_rejected`, written
    /// by the service that ends attempts (`RefusedCaptures`). A message of
    /// another queue is kept and retried as before: it holds no slot.
    async fn reject(&self, lane: &Lane, rejected: &[(i64, String)]) {
        let queue = lane.name.as_str();
        for (id, code) in rejected {
            tracing::error!(queue, outbox_id = id, code = %code, "SQS refused a message as the sender's fault");
        }
        if lane.name != QueueName::PageImport {
            return;
        }
        let refused: Vec<RefusedCapture> = rejected
            .iter()
            .map(|(id, code)| RefusedCapture {
                outbox_id: *id,
                code: code.clone(),
            })
            .collect();
        self.refused.end_attempts(&refused).await;
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

/// The failed entries of a batch SQS answered: those failed for now (to be
/// retried) and those refused as the sender's fault (`Refusal`), each with
/// its code.
fn sort_failed(entries: &[BatchResultErrorEntry]) -> (Unsent, Unsent) {
    let (mut failed, mut rejected) = (Unsent::new(), Unsent::new());
    for entry in entries {
        let Ok(id) = entry.id().parse() else { continue };
        let unsent = (id, entry.code().to_owned());
        if Refusal::of_entry(entry).is_senders_fault() {
            rejected.push(unsent);
        } else {
            failed.push(unsent);
        }
    }
    (failed, rejected)
}

/// The batch's entries: each message's body, its `traceparent` (its
/// publish span's, or the stored one as it is when this process makes no
/// spans) and, on a FIFO queue, its group and deduplication id.
fn batch_entries(
    messages: &[OutboxMessage],
    spans: &[tracing::Span],
    fifo: bool,
) -> anyhow::Result<Vec<SendMessageBatchRequestEntry>> {
    let entries = messages
        .iter()
        .zip(spans)
        .map(|(m, span)| {
            let mut entry = SendMessageBatchRequestEntry::builder()
                .id(m.id.to_string())
                .message_body(&m.body);
            let traceparent = m
                .traceparent
                .as_ref()
                .map(|stored| trace_context::of(span).unwrap_or_else(|| stored.clone()));
            if let Some(traceparent) = traceparent {
                let value = MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(traceparent)
                    .build()?;
                entry = entry.message_attributes(TRACEPARENT, value);
            }
            if fifo {
                entry = entry
                    .message_group_id(&m.message_group_id)
                    .message_deduplication_id(&m.deduplication_id);
            }
            entry.build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use aws_sdk_sqs::types::BatchResultErrorEntry;

    use super::sort_failed;

    fn entry(id: &str, code: &str, sender_fault: bool) -> BatchResultErrorEntry {
        BatchResultErrorEntry::builder()
            .id(id)
            .code(code)
            .sender_fault(sender_fault)
            .build()
            .unwrap()
    }

    /// A KMS throttle of an encrypted queue comes back per entry with
    /// `SenderFault` set: it is retried, not ended `dispatch_rejected`. An
    /// oversized message is refused for good; SQS's own failure retried.
    #[test]
    fn a_failed_entry_is_refused_only_for_what_it_is() {
        let (failed, rejected) = sort_failed(&[
            entry("1", "KmsThrottled", true),
            entry("2", "KMS.ThrottlingException", true),
            entry("3", "RequestThrottled", true),
            entry("4", "InvalidParameterValue", true),
            entry("5", "InternalError", false),
            entry("6", "KmsAccessDenied", true),
        ]);
        let ids = |unsent: &[(i64, String)]| unsent.iter().map(|(id, _)| *id).collect::<Vec<_>>();
        assert_eq!(ids(&failed), [1, 2, 3, 5, 6]);
        assert_eq!(rejected, [(4, "InvalidParameterValue".to_owned())]);
    }
}
