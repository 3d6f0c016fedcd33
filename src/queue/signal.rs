//! The dispatcher's wake-up (`service::dispatch` waits on it): what queues
//! an attempt or ends one says so here. It lives beside the publisher,
//! which ends an attempt too (a message SQS refuses), so that neither the
//! queue nor the services import each other for it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

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

    /// A new attempt of `id`, of organization `organization_id`, was
    /// queued (a manual retry).
    pub fn attempt_queued(&self, id: &str, organization_id: i64) {
        self.notifier.changed(id);
        self.dispatch.queued(organization_id);
    }
}

/// Wakes this process's dispatcher: an attempt was queued, or one ended
/// (its slot may be free). A wake-up while a pass runs is kept, so the pass
/// after it sees it. A queued attempt that no pass could dispatch changes
/// nothing: while every slot is taken, or while its organization holds all
/// the slots it may (`CAPTURE_MAX_IN_FLIGHT_PER_ORG`), as the last pass
/// found, its wake-up is dropped until an attempt ends here (or the
/// dispatcher's timer runs, for what ended elsewhere). Under a burst of
/// one organization's creates the dispatcher would otherwise pass after
/// every create for nothing.
#[derive(Clone, Default)]
pub struct DispatchSignal(Arc<Signals>);

#[derive(Default)]
struct Signals {
    queued: Notify,
    freed: Notify,
    blocked: Mutex<Blocked>,
}

/// What the last pass found no slot for.
#[derive(Default)]
struct Blocked {
    /// Every slot is taken.
    full: bool,
    /// Organizations holding all the slots they may.
    organizations: HashSet<i64>,
}

impl DispatchSignal {
    /// An attempt of `organization_id` was queued.
    pub fn queued(&self, organization_id: i64) {
        let blocked = {
            let blocked = self.0.blocked.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            blocked.full || blocked.organizations.contains(&organization_id)
        };
        if !blocked {
            self.0.queued.notify_one();
        }
    }

    /// An attempt ended: its slot is released by the next pass, which any
    /// queued attempt may take.
    pub fn freed(&self) {
        *self.0.blocked.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Blocked::default();
        self.0.freed.notify_one();
    }
}

impl DispatchSignal {
    /// What the pass that just ended found no slot for (nothing after a
    /// failed pass). Set before the dispatcher waits again: an attempt that
    /// ended during the pass left its own wake-up, whose pass sets it anew.
    pub fn passed(&self, full: bool, organizations_at_limit: &[i64]) {
        let mut blocked = self.0.blocked.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        blocked.full = full;
        blocked.organizations = organizations_at_limit.iter().copied().collect();
    }

    /// Resolves at the next [`DispatchSignal::freed`] (or one kept from a pass).
    pub async fn freed_notified(&self) {
        self.0.freed.notified().await;
    }

    /// Resolves at the next [`DispatchSignal::queued`] that was not dropped
    /// (or one kept).
    pub async fn queued_notified(&self) {
        self.0.queued.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn woken(signal: &DispatchSignal) -> bool {
        tokio::time::timeout(Duration::from_millis(50), signal.queued_notified())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_queued_attempt_no_pass_could_dispatch_wakes_nobody_until_a_slot_frees() {
        let signal = DispatchSignal::default();
        signal.queued(1);
        assert!(woken(&signal).await, "nothing blocked: a wake-up");

        signal.passed(false, &[1]);
        signal.queued(1);
        assert!(!woken(&signal).await, "organization 1 holds all its slots");
        signal.queued(2);
        assert!(woken(&signal).await, "organization 2 may still get a slot");

        signal.passed(true, &[]);
        signal.queued(2);
        assert!(!woken(&signal).await, "every slot is taken");

        signal.freed();
        signal.queued(1);
        assert!(woken(&signal).await, "a slot freed: any queued attempt may take it");
    }
}
