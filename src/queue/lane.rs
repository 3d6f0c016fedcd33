//! One lane per queue: its URL, its circuit breaker (`breaker.rs`), and the
//! messages its after-commit publisher left to the relay. One queue's
//! outage does not pause the other's publishing. When SQS takes a queue's
//! messages again (its breaker closes, a relay batch gets through), the
//! messages left waiting become due at once (`release_deferred`) instead of
//! at the end of their lease or backoff.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::breaker::Breaker;
use super::{Inner, Publisher, QueueName};
use crate::db::outbox;

/// Failed SendMessageBatch calls in a row that pause a queue's after-commit publishing.
const BREAKER_THRESHOLD: u32 = 3;
/// While paused, one after-commit batch per this period probes SQS.
const BREAKER_COOLDOWN: Duration = Duration::from_secs(1);
/// Ids of messages left to the relay that a lane remembers, to make them due
/// when SQS is back. Past this many (a long outage under load) the oldest are
/// forgotten: the relay still takes them when their lease runs out.
const DEFERRED_REMEMBERED: usize = 100_000;

/// One queue: its URL, its breaker, and the messages its after-commit
/// publisher left to the relay (ids still under their writer's lease).
pub(super) struct Lane {
    pub(super) name: QueueName,
    pub(super) url: String,
    pub(super) breaker: Breaker,
    deferred: Mutex<VecDeque<(i64, Instant)>>,
}

impl Lane {
    pub(super) fn new(name: QueueName, url: String) -> Self {
        Self {
            name,
            url,
            breaker: Breaker::new(BREAKER_THRESHOLD, BREAKER_COOLDOWN),
            deferred: Mutex::new(VecDeque::new()),
        }
    }

    pub(super) fn defer(&self, ids: impl IntoIterator<Item = i64>) {
        let now = Instant::now();
        let mut deferred = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            if deferred.len() == DEFERRED_REMEMBERED {
                deferred.pop_front();
            }
            deferred.push_back((id, now));
        }
    }

    /// The remembered ids still under their writer's lease (older ones are
    /// the relay's by now).
    fn take_deferred(&self, lease: Duration) -> Vec<i64> {
        let taken = std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|e| e.into_inner()));
        taken
            .into_iter()
            .filter(|(_, at)| at.elapsed() < lease)
            .map(|(id, _)| id)
            .collect()
    }
}

impl Publisher {
    /// Probes each queue whose breaker is open, once per cooldown, with one
    /// cheap call (`GetQueueAttributes`). Without it a breaker opened by
    /// failed creates stays open after SQS is back until the next create
    /// probes it, and the messages it deferred wait out their lease. Called
    /// by the relay on every tick.
    #[tracing::instrument(name = "outbox.probe", level = "debug", skip_all)]
    pub async fn probe_open_breakers(&self) {
        let inner = &self.inner;
        for lane in &inner.lanes {
            if lane.breaker.is_tripped() && lane.breaker.allow() {
                let probe = inner.sqs.get_queue_attributes().queue_url(&lane.url).send().await;
                inner.record_outcome(lane, probe.is_ok()).await;
            }
        }
    }
}

impl Inner {
    /// Feeds the lane's breaker with every call's outcome, the relay's too
    /// (a relay call that gets through closes it, and releases what waited).
    pub(super) async fn record_outcome(&self, lane: &Lane, ok: bool) {
        let queue = lane.name.as_str();
        match lane.breaker.record(ok) {
            Some(true) => {
                self.metrics.sqs_circuit_open(queue, true);
                tracing::warn!(
                    queue,
                    failed_calls = BREAKER_THRESHOLD,
                    probe_every_ms = BREAKER_COOLDOWN.as_millis() as u64,
                    "SQS keeps failing: after-commit publishing paused, new messages are left to the relay"
                );
            }
            Some(false) => {
                self.metrics.sqs_circuit_open(queue, false);
                tracing::info!(queue, "SQS reachable again: after-commit publishing resumed");
                self.release_deferred(lane).await;
            }
            None => {}
        }
    }

    /// Makes the lane's waiting messages due now (`outbox::make_due`) and
    /// wakes the relay, instead of leaving them to their lease or backoff.
    pub(super) async fn release_deferred(&self, lane: &Lane) {
        let unclaimed = lane.take_deferred(self.lease);
        let made = async {
            let mut conn = self.pool.acquire().await?;
            outbox::make_due(&mut conn, lane.name.as_str(), &unclaimed).await
        };
        match made.await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(
                    queue = lane.name.as_str(),
                    messages = n,
                    "waiting outbox messages made due"
                );
                self.due_now.notify_one();
            }
            Err(err) => self.relay_error("make_due", &err),
        }
    }
}
