//! Publishing a message straight after the commit that wrote it, batching
//! whatever queued up while earlier sends were in flight: one message alone
//! at low rates (least latency), full batches under load (fewest calls).
//! What this publisher does not send (saturated, SQS failing, its breaker
//! open) is left to the relay, remembered by its lane (`lane.rs`).

use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};

use super::{Inner, Publisher, AFTER_COMMIT_QUEUE, BATCH_SIZE, MAX_BATCHES_IN_FLIGHT};
use crate::db::outbox::OutboxMessage;

/// Starts the after-commit publisher's task; the sender feeds it.
pub(super) fn start(inner: Arc<Inner>) -> mpsc::Sender<OutboxMessage> {
    let (after_commit, rx) = mpsc::channel(AFTER_COMMIT_QUEUE);
    tokio::spawn(publish_after_commit_loop(inner, rx));
    after_commit
}

impl Publisher {
    /// Hands a just-committed message (inserted leased to its writer) to the
    /// after-commit publisher. Never waits: if that publisher is saturated
    /// the message is left to the relay, as it is when a publish fails. A
    /// failure writes nothing either: the message is remembered in memory
    /// and made due when SQS takes messages again (or the relay takes it when
    /// its lease runs out), which keeps a create's database work the same
    /// whether SQS is up or down.
    ///
    /// While SQS keeps failing (the queue's breaker is open) the message is
    /// left to the relay without a call (`breaker.rs`).
    pub fn publish_after_commit(&self, message: OutboxMessage) {
        let Some(lane) = self.inner.lane_of(&message.queue) else {
            tracing::error!(queue = %message.queue, "outbox message for an unknown queue; the relay will report it");
            return;
        };
        if lane.breaker.is_open() {
            self.inner.metrics.outbox_deferred("circuit_open", 1);
            lane.defer([message.id]);
            return;
        }
        let id = message.id;
        if self.after_commit.try_send(message).is_err() {
            self.inner.metrics.outbox_deferred("saturated", 1);
            lane.defer([id]);
            tracing::debug!("after-commit publisher saturated; the relay will publish");
        }
    }
}

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
        let inner = inner.clone();
        tokio::spawn(async move {
            publish_by_lane(&inner, batch).await;
            drop(permit);
        });
    }
}

/// Sends each queue's messages of `batch`, or leaves them to the relay.
async fn publish_by_lane(inner: &Inner, batch: Vec<OutboxMessage>) {
    for lane in &inner.lanes {
        let mine: Vec<_> = batch
            .iter()
            .filter(|m| m.queue == lane.name.as_str())
            .cloned()
            .collect();
        if mine.is_empty() {
            continue;
        }
        if !lane.breaker.allow() {
            // SQS keeps failing and this batch is not the probe.
            inner.metrics.outbox_deferred("circuit_open", mine.len() as u64);
            lane.defer(mine.iter().map(|m| m.id));
            continue;
        }
        let held: Vec<_> = mine.iter().map(|m| (m.id, m.attempts)).collect();
        let ids: Vec<i64> = mine.iter().map(|m| m.id).collect();
        match inner.hold_leases(&held, inner.publish_batch(lane, mine, false)).await {
            Ok(outcome) if outcome.failed == 0 => {}
            _ => lane.defer(ids),
        }
    }
}
