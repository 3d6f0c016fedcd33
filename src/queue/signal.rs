//! The dispatcher's wake-up (`service::dispatch` waits on it): what queues
//! an attempt or ends one says so here. It lives beside the publisher,
//! which ends an attempt too (a message SQS refuses), so that neither the
//! queue nor the services import each other for it.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::changes::Notifier;

/// What a committed change tells this process: the one place that pairs
/// the import's `/events` streams (on every replica, through the notifier,
/// `changes.rs`) with this process's dispatcher. Call it after the commit.
#[derive(Clone)]
pub struct Committed {
    notifier: Notifier,
    dispatch: DispatchSignal,
}

impl Committed {
    pub fn new(notifier: Notifier, dispatch: DispatchSignal) -> Self {
        Self { notifier, dispatch }
    }

    /// The import changed; no attempt began or ended (its message was
    /// accepted by SQS, say).
    pub fn changed(&self, id: &str) {
        self.notifier.changed(id);
    }

    /// Attempts of these imports ended (finished, failed, timed out,
    /// deleted, refused by SQS, or followed by a next attempt): their slots
    /// may be free. Nothing is said when there are none.
    pub fn attempts_ended<'a>(&self, ids: impl IntoIterator<Item = &'a str>) {
        let mut any = false;
        for id in ids {
            self.notifier.changed(id);
            any = true;
        }
        if any {
            self.dispatch.freed();
        }
    }

    pub fn attempt_ended(&self, id: &str) {
        self.attempts_ended([id]);
    }

    /// A new attempt of `id` was queued (a manual retry).
    pub fn attempt_queued(&self, id: &str) {
        self.notifier.changed(id);
        self.dispatch.queued();
    }
}

/// Wakes this process's dispatcher: an attempt was queued, or one ended
/// (its slot may be free). A wake-up while a pass runs is kept, so the pass
/// after it sees it. While every slot is taken a queued attempt changes
/// nothing, so the dispatcher ignores those wake-ups until one is freed (or
/// its timer runs): under a burst of creates with the fleet busy it would
/// otherwise pass after every create for nothing.
#[derive(Clone, Default)]
pub struct DispatchSignal(Arc<Signals>);

#[derive(Default)]
struct Signals {
    queued: Notify,
    freed: Notify,
}

impl DispatchSignal {
    /// An attempt was queued.
    pub fn queued(&self) {
        self.0.queued.notify_one();
    }

    /// An attempt ended: its slot is released by the next pass.
    pub fn freed(&self) {
        self.0.freed.notify_one();
    }
}

impl DispatchSignal {
    /// Resolves at the next [`DispatchSignal::freed`] (or one kept from a pass).
    pub async fn freed_notified(&self) {
        self.0.freed.notified().await;
    }

    /// Resolves at the next [`DispatchSignal::queued`] (or one kept).
    pub async fn queued_notified(&self) {
        self.0.queued.notified().await;
    }
}
