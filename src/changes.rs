//! The change listener: notifications of changed imports for the
//! `/page-imports/{id}/events` streams (`http::events`, SPEC §6).
//!
//! PostgreSQL announces every change to a `page_import` row on the channel
//! `page_import_changed` (a trigger, see the migrations), so a change
//! committed by any replica reaches every replica. Each process keeps one
//! listening connection and fans the notifications out in memory to the
//! streams watching that id. After the listening connection was lost, it
//! reconnects and tells every stream to re-read its row, because
//! notifications sent meanwhile are gone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::PgPool;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

pub const CHANNEL: &str = "page_import_changed";
const RECONNECT_EVERY: Duration = Duration::from_secs(1);

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

    /// The process's one listening connection, until `shutdown`.
    pub async fn listen(self: Arc<Self>, pool: PgPool, shutdown: CancellationToken) {
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
            loop {
                let received = tokio::select! {
                    () = shutdown.cancelled() => return,
                    received = listener.try_recv() => received,
                };
                match received {
                    Ok(Some(notification)) => self.changed(notification.payload()),
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

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut watchers = self.feed.watchers.lock().expect("watchers lock");
        // This subscription's receiver is still counted while it drops.
        if watchers.get(&self.id).is_some_and(|tx| tx.receiver_count() <= 1) {
            watchers.remove(&self.id);
        }
    }
}
