//! Change notifications for the `/page-imports/{id}/events` streams
//! (`http::events`, SPEC §6): the notifier that announces them and the
//! listener that hears them.
//!
//! The code that changes an import hands its id to the process's one
//! [`Notifier`] after the commit. The notifier sends the ids, many in one
//! `NOTIFY` on the channel `page_import_changed`, in a transaction of its
//! own: no transaction that writes `page_import` takes PostgreSQL's
//! instance-wide notify lock (held through its commit's WAL flush, it
//! serialized every writer: bench N). Each process keeps one listening
//! connection and fans the notifications out in memory to the streams
//! watching those ids, so a change committed by any replica reaches every
//! replica.
//!
//! A notification can be lost: a process that dies between its commit and
//! the send, a `NOTIFY` that fails, a change made by hand in SQL. So every
//! stream also re-reads its row every `EVENTS_REREAD_INTERVAL_MS` (10 s),
//! and after the listening connection was lost the listener reconnects and
//! tells every stream to re-read at once. A stream sends an event only when
//! its row's representation changed, so a re-read that finds nothing new
//! sends nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::PgPool;
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub const CHANNEL: &str = "page_import_changed";
const RECONNECT_EVERY: Duration = Duration::from_secs(1);
/// PostgreSQL refuses a `NOTIFY` payload of 8 000 bytes or more.
const MAX_PAYLOAD: usize = 7_999;
/// Under load, at most one `NOTIFY` per this period; when idle, at once.
const NOTIFY_GAP: Duration = Duration::from_millis(2);

/// The streams of one process: who watches which id, and how many may.
pub struct Changes {
    watchers: Mutex<HashMap<String, watch::Sender<u64>>>,
    slots: Arc<Semaphore>,
    /// Cancelled when the process shuts down: open streams end.
    pub closing: CancellationToken,
}

/// One open stream's place: its slot and its view of its row's changes.
pub struct Subscription {
    pub changes: watch::Receiver<u64>,
    id: String,
    feed: Arc<Changes>,
    _slot: OwnedSemaphorePermit,
}

impl Changes {
    pub fn new(max_streams: usize) -> Arc<Self> {
        Arc::new(Self {
            watchers: Mutex::new(HashMap::new()),
            slots: Arc::new(Semaphore::new(max_streams)),
            closing: CancellationToken::new(),
        })
    }

    /// A stream slot watching `id`, or `None` when every slot is taken.
    pub fn subscribe(self: &Arc<Self>, id: &str) -> Option<Subscription> {
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        let changes = self
            .watchers
            .lock()
            .expect("watchers lock")
            .entry(id.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        Some(Subscription {
            changes,
            id: id.to_owned(),
            feed: self.clone(),
            _slot: slot,
        })
    }

    /// One stream slot watching every id of `ids` (an import set's
    /// members, SPEC §15), or `None` when every slot is taken.
    pub fn subscribe_all(self: &Arc<Self>, ids: &[String]) -> Option<Subscriptions> {
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        let mut watchers = self.watchers.lock().expect("watchers lock");
        let changes = ids
            .iter()
            .map(|id| {
                let rx = watchers
                    .entry(id.clone())
                    .or_insert_with(|| watch::channel(0).0)
                    .subscribe();
                (id.clone(), rx)
            })
            .collect();
        Some(Subscriptions {
            changes,
            feed: self.clone(),
            _slot: slot,
        })
    }

    /// Forgets `id` when its last watcher (the one dropping) goes.
    fn forget(&self, id: &str) {
        let mut watchers = self.watchers.lock().expect("watchers lock");
        // The dropping subscription's receiver is still counted.
        if watchers.get(id).is_some_and(|tx| tx.receiver_count() <= 1) {
            watchers.remove(id);
        }
    }

    pub fn open_streams(&self) -> usize {
        self.watchers
            .lock()
            .expect("watchers lock")
            .values()
            .map(watch::Sender::receiver_count)
            .sum()
    }

    fn changed(&self, id: &str) {
        if let Some(tx) = self.watchers.lock().expect("watchers lock").get(id) {
            tx.send_modify(|n| *n += 1);
        }
    }

    fn changed_all(&self) {
        for tx in self.watchers.lock().expect("watchers lock").values() {
            tx.send_modify(|n| *n += 1);
        }
    }

    /// The process's one listening connection, until `shutdown`; every
    /// `reread` it also tells every stream to re-read its row, for the
    /// notifications that were lost.
    pub async fn listen(self: Arc<Self>, pool: PgPool, reread: Duration, shutdown: CancellationToken) {
        loop {
            let mut listener = tokio::select! {
                () = shutdown.cancelled() => return,
                listener = connect(&pool) => listener,
            };
            // Whatever changed while nobody listened (a lost connection, a
            // restart after a panic) is re-read by every open stream.
            if !self.watchers.lock().expect("watchers lock").is_empty() {
                tracing::info!("change listener (re)connected; streams re-read their rows");
                self.changed_all();
            }
            let mut next_reread = Instant::now() + reread;
            loop {
                let received = tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep_until(next_reread) => {
                        next_reread = Instant::now() + reread;
                        self.changed_all();
                        continue;
                    }
                    received = listener.try_recv() => received,
                };
                match received {
                    Ok(Some(notification)) => notification.payload().split(',').for_each(|id| self.changed(id)),
                    Ok(None) | Err(_) => {
                        tracing::warn!("change listener lost its connection");
                        break;
                    }
                }
            }
        }
    }
}

/// A listening connection, retried every second until PostgreSQL answers.
async fn connect(pool: &PgPool) -> PgListener {
    loop {
        let attempt = async {
            // A connection of its own: the pool's idle ones may all be broken
            // after a database restart (they are not pinged before use).
            let fresh = PgPoolOptions::new()
                .max_connections(1)
                .connect_lazy_with((*pool.connect_options()).clone());
            let mut listener = PgListener::connect_with(&fresh).await?;
            // Reconnection is ours (to re-read every row after it), not sqlx's.
            listener.ignore_pool_close_event(true);
            listener.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        match attempt.await {
            Ok(listener) => return listener,
            Err(e) => {
                tracing::debug!(error = %e, "change listener cannot connect yet");
                tokio::time::sleep(RECONNECT_EVERY).await;
            }
        }
    }
}

/// Announces the imports this process changed, after their commit: the
/// writers call [`Notifier::changed`], which never waits, and
/// [`Notifier::run`] sends the ids. One `NOTIFY` is in flight at a time;
/// the ids that arrive meanwhile go in the next, as many as fit its payload.
#[derive(Clone, Default)]
pub struct Notifier(Arc<Pending>);

#[derive(Default)]
struct Pending {
    ids: Mutex<Vec<String>>,
    wake: Notify,
}

impl Notifier {
    /// Announces that import `id` changed. Call it after the change committed.
    pub fn changed(&self, id: &str) {
        self.0.ids.lock().expect("notifier lock").push(id.to_owned());
        self.0.wake.notify_one();
    }

    /// Sends what [`Notifier::changed`] was given, until `shutdown`. A send
    /// that fails is logged and dropped: the streams' periodic re-read
    /// covers it.
    pub async fn run(self, pool: PgPool, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = self.0.wake.notified() => {}
            }
            loop {
                let started = Instant::now();
                let mut ids = std::mem::take(&mut *self.0.ids.lock().expect("notifier lock"));
                if ids.is_empty() {
                    break;
                }
                ids.sort_unstable();
                ids.dedup();
                for payload in payloads(&ids) {
                    if let Err(err) = notify(&pool, &payload).await {
                        tracing::warn!(error = %err, "change notification not sent; streams re-read on their timer");
                    }
                }
                tokio::time::sleep_until(started + NOTIFY_GAP).await;
            }
        }
    }
}

/// The ids as `NOTIFY` payloads: comma-separated (an id never holds a
/// comma: `domain::is_resource_id`), each payload under PostgreSQL's limit.
pub fn payloads(ids: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        match out.last_mut() {
            Some(last) if last.len() + 1 + id.len() <= MAX_PAYLOAD => {
                last.push(',');
                last.push_str(id);
            }
            _ => out.push(id.clone()),
        }
    }
    out
}

/// One `NOTIFY` in a transaction of its own, committed without waiting for
/// its WAL flush: a notification is a hint (a lost one is covered by the
/// streams' re-read), and the notify lock is held until the commit returns.
async fn notify(pool: &PgPool, payload: &str) -> sqlx::Result<()> {
    sqlx::query("select set_config('synchronous_commit', 'off', true), pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(pool)
        .await?;
    Ok(())
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.feed.forget(&self.id);
    }
}

/// One open stream's place watching several ids: one slot.
pub struct Subscriptions {
    changes: Vec<(String, watch::Receiver<u64>)>,
    feed: Arc<Changes>,
    _slot: OwnedSemaphorePermit,
}

impl Subscriptions {
    /// Resolves when any of the ids changed; false once the notifications
    /// closed.
    pub async fn changed(&mut self) -> bool {
        if self.changes.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.changes.iter_mut().map(|(_, rx)| Box::pin(rx.changed()));
        futures::future::select_all(waits).await.0.is_ok()
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        let ids: Vec<String> = self.changes.iter().map(|(id, _)| id.clone()).collect();
        // Each receiver still counts while `forget` looks: drop them one by one.
        for id in ids {
            self.feed.forget(&id);
            self.changes.retain(|(other, _)| *other != id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_carry_every_id_once_each_under_the_limit() {
        let ids: Vec<String> = (0..1_000).map(|n| format!("0193ffff-0000-7000-8000-{n:012}")).collect();
        let sent = payloads(&ids);
        assert!(sent.len() > 1, "36 000 bytes of ids need several payloads");
        assert!(sent.iter().all(|p| p.len() <= MAX_PAYLOAD));
        let back: Vec<&str> = sent.iter().flat_map(|p| p.split(',')).collect();
        assert_eq!(back, ids.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(payloads(&ids[..3]).len(), 1);
        assert!(payloads(&[]).is_empty());
    }
}
