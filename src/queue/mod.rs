//! Publishing outbox messages to SQS: straight after commit, and by the relay
//! for whatever is left (SQS outage, crash after commit).
//!
//! Each queue is a `Lane` with its own circuit breaker, so one queue's
//! outage does not pause the other's publishing. While a message is being
//! sent its lease is held (`hold_leases`), however long the send takes, so
//! no other publisher takes it meanwhile. When SQS takes a queue's messages
//! again (its breaker closes, a relay batch gets through), the messages that
//! were left waiting become due at once (`release_deferred`).

mod breaker;
pub mod messages;
mod signal;

pub use signal::{Committed, DispatchSignal};

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::operation::send_message_batch::{SendMessageBatchError, SendMessageBatchOutput};
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use futures::StreamExt;
use page_import_contract::job::TRACEPARENT;
use page_import_platform::telemetry::trace_context;
use rand::Rng;
use sqlx::PgPool;
use tokio::sync::{mpsc, Notify, Semaphore};

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
/// Failed SendMessageBatch calls in a row that pause a queue's after-commit publishing.
const BREAKER_THRESHOLD: u32 = 3;
/// While paused, one after-commit batch per this period probes SQS.
const BREAKER_COOLDOWN: Duration = Duration::from_secs(1);
/// Ids of messages left to the relay that a lane remembers, to make them due
/// when SQS is back. Past this many (a long outage under load) the oldest are
/// forgotten: the relay still takes them when their lease runs out.
const DEFERRED_REMEMBERED: usize = 100_000;

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
    /// Announces the imports whose attempt SQS accepted (`dispatchedAt`),
    /// and those whose attempt a refused message ended (its slot is free).
    committed: Committed,
    failure_log: Throttle,
    /// Woken when messages were made due early: the relay need not wait for its tick.
    due_now: Notify,
}

/// One queue: its URL, its breaker, and the messages its after-commit
/// publisher left to the relay (ids still under their writer's lease).
struct Lane {
    name: QueueName,
    url: String,
    breaker: Breaker,
    deferred: Mutex<VecDeque<(i64, Instant)>>,
}

impl Lane {
    fn new(name: QueueName, url: String) -> Self {
        Self {
            name,
            url,
            breaker: Breaker::new(BREAKER_THRESHOLD, BREAKER_COOLDOWN),
            deferred: Mutex::new(VecDeque::new()),
        }
    }

    fn defer(&self, ids: impl IntoIterator<Item = i64>) {
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

/// Where and how a [`Publisher`] publishes.
pub struct PublisherSettings {
    pub page_import_queue_url: String,
    pub code2des_queue_url: String,
    /// `OUTBOX_MAX_BACKOFF_MS`.
    pub max_backoff: Duration,
    /// `OUTBOX_LEASE_MS`.
    pub lease: Duration,
}

impl Publisher {
    /// Must be called inside a Tokio runtime: it starts the task that
    /// publishes messages right after their commit.
    pub fn new(
        sqs: aws_sdk_sqs::Client,
        pool: PgPool,
        settings: PublisherSettings,
        metrics: crate::metrics::Metrics,
        committed: Committed,
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
            committed,
            failure_log: Throttle::new(FAILURE_LOG_PERIOD),
            due_now: Notify::new(),
        });
        let (after_commit, rx) = mpsc::channel(AFTER_COMMIT_QUEUE);
        tokio::spawn(publish_after_commit_loop(inner.clone(), rx));
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

    /// One relay pass: claims due messages and publishes them in batches.
    /// Returns how many were published.
    #[tracing::instrument(name = "outbox.relay", level = "debug", skip_all)]
    pub async fn relay_once(&self) -> anyhow::Result<usize> {
        self.inner.relay_once().await
    }

    /// Probes each queue whose breaker is open, once per cooldown, with one
    /// cheap call (`GetQueueAttributes`). Without it a breaker opened by
    /// failed creates stays open after SQS is back until the next create
    /// probes it, and the messages it deferred wait out their lease. Called
    /// by the relay on every tick.
    #[tracing::instrument(name = "outbox.probe", level = "debug", skip_all)]
    pub async fn probe_open_breakers(&self) {
        for lane in &self.inner.lanes {
            if lane.breaker.is_tripped() && lane.breaker.allow() {
                let probe = self.inner.sqs.get_queue_attributes().queue_url(&lane.url).send().await;
                self.inner.record_outcome(lane, probe.is_ok()).await;
            }
        }
    }

    /// Resolves when messages were made due early (SQS is back): the relay
    /// runs then instead of waiting for its next tick.
    pub async fn due_now(&self) {
        self.inner.due_now.notified().await;
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
        let inner = inner.clone();
        tokio::spawn(async move {
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
            drop(permit);
        });
    }
}

/// Outbox ids SQS did not take, each with why (an error code or message).
type Unsent = Vec<(i64, String)>;

/// What one SendMessageBatch call did.
#[derive(Default)]
struct Outcome {
    sent: usize,
    failed: usize,
}

impl Inner {
    fn lane(&self, queue: QueueName) -> &Lane {
        &self.lanes[queue as usize]
    }

    fn lane_of(&self, queue: &str) -> Option<&Lane> {
        QueueName::parse(queue).map(|q| self.lane(q))
    }

    async fn relay_once(&self) -> anyhow::Result<usize> {
        let claimed = async {
            let mut conn = self.pool.acquire().await?;
            outbox::claim_due(&mut conn, CLAIM_LIMIT, self.lease).await
        };
        let mut claimed = claimed.await.inspect_err(|err| self.relay_error("claim", err))?;
        if claimed.is_empty() {
            return Ok(0);
        }
        self.drop_ended_captures(&mut claimed).await;
        if claimed.is_empty() {
            return Ok(0);
        }
        let held: Vec<_> = claimed.iter().map(|m| (m.id, m.attempts)).collect();
        let mut batches = Vec::new();
        for message in claimed {
            match self.lane_of(&message.queue) {
                Some(lane) => batches.push((lane, message)),
                None => {
                    // The table's check constraint makes this unreachable.
                    self.relay_error("unknown_queue", &message.queue);
                }
            }
        }
        let mut groups: Vec<(QueueName, Vec<OutboxMessage>)> = Vec::new();
        for lane in &self.lanes {
            let mine: Vec<_> = batches
                .iter()
                .filter(|(l, _)| l.name == lane.name)
                .map(|(_, m)| m.clone())
                .collect();
            groups.extend(mine.chunks(BATCH_SIZE).map(|chunk| (lane.name, chunk.to_vec())));
        }
        // Every claimed row stays leased until the whole pass is done, however
        // many rounds its sends take.
        let pass = futures::stream::iter(groups)
            .map(|(queue, batch)| async move { (queue, self.publish_batch(self.lane(queue), batch, true).await) })
            .buffer_unordered(MAX_BATCHES_IN_FLIGHT)
            .collect::<Vec<_>>();
        let outcomes = self.hold_leases(&held, pass).await;
        let mut published = 0;
        let mut reachable = Vec::new();
        for (queue, outcome) in outcomes {
            if let Ok(outcome) = outcome {
                published += outcome.sent;
                if outcome.sent > 0 && !reachable.contains(&queue) {
                    reachable.push(queue);
                }
            }
        }
        // SQS took this queue's messages: the rest waiting out a backoff go now.
        for queue in reachable {
            self.release_deferred(self.lane(queue)).await;
        }
        Ok(published)
    }

    /// Runs `send` while extending the leases of `held` every third of a
    /// lease (`lease::renewing`), so a send slower than the lease does not
    /// let another publisher take the same messages.
    async fn hold_leases<T>(&self, held: &[(i64, i32)], send: impl Future<Output = T>) -> T {
        crate::lease::renewing(self.lease / 3, send, || async {
            let extended = async {
                let mut conn = self.pool.acquire().await?;
                outbox::extend_leases(&mut conn, held, self.lease).await
            };
            if let Err(err) = extended.await {
                self.relay_error("extend_lease", &err);
            }
        })
        .await
    }

    /// Sends up to ten messages with SendMessageBatch, deletes the accepted
    /// ones, and (when asked) reschedules the rest with backoff. Every error
    /// is logged and counted; an error after SQS accepted a message means it
    /// will be published again, and is counted as a duplicate publish.
    #[tracing::instrument(name = "outbox.publish_batch", skip_all, fields(queue = lane.name.as_str(), n = messages.len()))]
    async fn publish_batch(
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
            .and_then(|err| refused_as_senders_fault(err.code()));
        self.record_outcome(lane, result.is_ok() || refused.is_some()).await;
        if let Some(code) = refused {
            if messages.len() > 1 {
                // Which message SQS refused it does not say: each goes alone.
                return self.publish_one_by_one(lane, messages, reschedule).await;
            }
            let rejected: Unsent = messages.iter().map(|m| (m.id, code.to_owned())).collect();
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
                let (mut failed, mut rejected) = (Unsent::new(), Unsent::new());
                for entry in out.failed() {
                    let Ok(id) = entry.id().parse() else { continue };
                    let unsent = (id, entry.code().to_owned());
                    if entry.sender_fault() {
                        rejected.push(unsent);
                    } else {
                        failed.push(unsent);
                    }
                }
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

    /// Messages SQS refused as the sender's fault (an invalid body, an
    /// oversized message) are not retried: they leave the outbox, and the
    /// capture attempt each carries ends failed, `dispatch_rejected`, its
    /// slot freed by the next dispatch pass (SPEC §12). A message of
    /// another queue is kept and retried as before: it holds no slot. A
    /// database error keeps them all for the relay, which meets the same
    /// refusal again.
    async fn reject(&self, lane: &Lane, rejected: &[(i64, String)]) {
        let queue = lane.name.as_str();
        for (id, code) in rejected {
            tracing::error!(queue, outbox_id = id, code = %code, "SQS refused a message as the sender's fault");
        }
        if lane.name != QueueName::PageImport {
            return;
        }
        let ids: Vec<i64> = rejected.iter().map(|(id, _)| *id).collect();
        let code = rejected.first().map_or("", |(_, code)| code.as_str());
        let message = format!("The capture job could not be queued: SQS refused its message ({code})");
        let ended = async {
            let mut conn = self.pool.acquire().await?;
            outbox::reject(&mut conn, &ids, &message).await
        };
        match ended.await {
            Ok(imports) => {
                self.metrics.dispatch_rejected(ids.len() as u64);
                for id in &imports {
                    tracing::warn!(page_import_id = %id, reason = "dispatch_rejected", "capture attempt failed: SQS refused its message");
                    self.metrics.import_finished("failed");
                }
                self.committed.attempts_ended(imports.iter().map(String::as_str));
            }
            Err(err) => self.relay_error("reject", &err),
        }
    }

    /// Leaves out of `claimed`, and out of the outbox, the capture messages
    /// whose attempt can no longer run (`outbox::drop_ended_captures`). On a
    /// database error nothing is left out.
    async fn drop_ended_captures(&self, claimed: &mut Vec<OutboxMessage>) {
        let ids: Vec<i64> = claimed.iter().map(|m| m.id).collect();
        let dropped = async {
            let mut conn = self.pool.acquire().await?;
            outbox::drop_ended_captures(&mut conn, &ids).await
        };
        match dropped.await {
            Ok(dropped) if !dropped.is_empty() => {
                tracing::info!(
                    messages = dropped.len(),
                    "not published: their imports were deleted or their attempts ended"
                );
                claimed.retain(|m| !dropped.contains(&m.id));
            }
            Ok(_) => {}
            Err(err) => self.relay_error("drop_ended", &err),
        }
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

    /// Feeds the lane's breaker with every call's outcome, the relay's too
    /// (a relay call that gets through closes it, and releases what waited).
    async fn record_outcome(&self, lane: &Lane, ok: bool) {
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
    async fn release_deferred(&self, lane: &Lane) {
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

/// The error code of a SendMessageBatch call that SQS refused for what was
/// sent, not for its own state: an invalid body (`InvalidMessageContents`),
/// a parameter SQS will never take (`InvalidParameterValue`: an oversized
/// message), a batch too long. Throttling, outages and a queue that does not
/// exist are not among them: those are retried.
fn refused_as_senders_fault(code: Option<&str>) -> Option<&str> {
    let code = code?;
    // The JSON protocol names `com.amazonaws.sqs#Code`, the query protocol
    // `AWS.SimpleQueueService.Code`.
    let bare = code.rsplit(['#', '.']).next().unwrap_or(code);
    matches!(
        bare,
        "InvalidMessageContents" | "InvalidParameterValue" | "BatchRequestTooLong" | "MessageTooLong"
    )
    .then_some(code)
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
    use super::refused_as_senders_fault;

    #[test]
    fn only_a_refusal_of_what_was_sent_is_the_senders_fault() {
        for code in [
            "InvalidMessageContents",
            "InvalidParameterValue",
            "com.amazonaws.sqs#InvalidMessageContents",
            "AWS.SimpleQueueService.BatchRequestTooLong",
        ] {
            assert_eq!(refused_as_senders_fault(Some(code)), Some(code));
        }
        for code in [
            "RequestThrottled",
            "ThrottlingException",
            "AWS.SimpleQueueService.NonExistentQueue",
            "QueueDoesNotExist",
            "InternalFailure",
            "ServiceUnavailable",
            "InvalidSecurity",
        ] {
            assert_eq!(refused_as_senders_fault(Some(code)), None, "{code}");
        }
        assert_eq!(refused_as_senders_fault(None), None);
    }
}
