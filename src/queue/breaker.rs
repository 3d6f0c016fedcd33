//! A circuit breaker for the after-commit publisher.
//!
//! During an SQS outage every create would otherwise start its own doomed
//! `SendMessageBatch` (request signing, a connection attempt, the SDK's
//! retries). Once the SDK's retry budget is spent those calls fail at once,
//! so the publisher runs flat out making them: under load that is most of the
//! service's CPU, taken from the requests it is trying to serve. After
//! `threshold` failed calls in a row the breaker opens: the after-commit
//! publisher stops calling SQS and leaves new messages to the relay (exactly
//! what a failed publish does). Every `cooldown` one batch goes through as a
//! probe; a success, the probe's or the relay's, closes the breaker.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

pub struct Breaker {
    threshold: u32,
    cooldown_ms: u64,
    epoch: Instant,
    /// Failed calls in a row; 0 after any success.
    failures: AtomicU32,
    /// While open: when the next probe may go (ms since `epoch`).
    next_probe_ms: AtomicU64,
}

impl Breaker {
    pub fn new(threshold: u32, cooldown: Duration) -> Self {
        Self {
            threshold: threshold.max(1),
            cooldown_ms: cooldown.as_millis() as u64,
            epoch: Instant::now(),
            failures: AtomicU32::new(0),
            next_probe_ms: AtomicU64::new(0),
        }
    }

    /// Whether a call may go to SQS now. While the breaker is open, one
    /// caller per cooldown is let through as the probe; it claims the probe
    /// by moving the next probe time on, so a probe that never reports back
    /// cannot keep the breaker open for good.
    pub fn allow(&self) -> bool {
        // Closed (the usual case): no clock read.
        !self.tripped() || self.allow_at(self.now_ms())
    }

    /// Whether the breaker is open and no probe is due: a cheap check that
    /// claims nothing.
    pub fn is_open(&self) -> bool {
        self.tripped() && self.is_open_at(self.now_ms())
    }

    /// Whether enough calls failed in a row to open it (a probe may be due).
    pub fn is_tripped(&self) -> bool {
        self.tripped()
    }

    /// Records the outcome of a call to SQS. Returns `Some(open)` when the
    /// breaker has just changed state.
    pub fn record(&self, ok: bool) -> Option<bool> {
        self.record_at(ok, self.now_ms())
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn tripped(&self) -> bool {
        self.failures.load(Relaxed) >= self.threshold
    }

    fn allow_at(&self, now_ms: u64) -> bool {
        if !self.tripped() {
            return true;
        }
        let next = self.next_probe_ms.load(Relaxed);
        now_ms >= next
            && self
                .next_probe_ms
                .compare_exchange(next, now_ms + self.cooldown_ms, Relaxed, Relaxed)
                .is_ok()
    }

    fn is_open_at(&self, now_ms: u64) -> bool {
        self.tripped() && now_ms < self.next_probe_ms.load(Relaxed)
    }

    fn record_at(&self, ok: bool, now_ms: u64) -> Option<bool> {
        if ok {
            let before = self.failures.swap(0, Relaxed);
            return (before >= self.threshold).then_some(false);
        }
        let before = self
            .failures
            .fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_add(1)))
            .unwrap_or_else(|n| n);
        if before + 1 >= self.threshold {
            self.next_probe_ms.store(now_ms + self.cooldown_ms, Relaxed);
        }
        (before + 1 == self.threshold).then_some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> Breaker {
        Breaker::new(3, Duration::from_millis(1000))
    }

    /// Opened at t = 0 ms by three failures.
    fn opened() -> Breaker {
        let b = breaker();
        for _ in 0..3 {
            b.record_at(false, 0);
        }
        b
    }

    #[test]
    fn stays_closed_below_the_threshold_and_a_success_resets_the_count() {
        let b = breaker();
        assert_eq!(b.record_at(false, 0), None);
        assert_eq!(b.record_at(false, 1), None);
        assert_eq!(b.record_at(true, 2), None, "it was never open");
        assert_eq!(b.record_at(false, 3), None);
        assert_eq!(b.record_at(false, 4), None);
        assert!(b.allow_at(5) && b.allow_at(5), "closed: every call goes");
        assert!(!b.is_open_at(5));
    }

    #[test]
    fn opens_after_threshold_failures_in_a_row() {
        let b = breaker();
        b.record_at(false, 0);
        b.record_at(false, 0);
        assert_eq!(b.record_at(false, 10), Some(true), "the third failure opens it");
        assert!(b.is_open_at(10));
        assert!(!b.allow_at(10));
        assert!(!b.allow_at(1009), "nothing goes during the cooldown");
        assert!(b.is_open_at(1009));
    }

    #[test]
    fn lets_one_probe_through_per_cooldown() {
        let b = opened();
        assert!(!b.is_open_at(1000), "a probe is due");
        assert!(b.allow_at(1000), "the first caller after the cooldown probes");
        assert!(!b.allow_at(1000), "a second caller does not");
        assert!(!b.allow_at(1999));
        assert!(b.is_open_at(1999));
        // The probe never reported back (its task died): another one may go.
        assert!(b.allow_at(2000));
    }

    #[test]
    fn a_failed_probe_reopens_for_a_full_cooldown() {
        let b = opened();
        assert!(b.allow_at(1500));
        assert_eq!(b.record_at(false, 1700), None, "still open, no change of state");
        assert!(!b.allow_at(2600));
        assert!(b.allow_at(2700));
    }

    #[test]
    fn a_success_closes_it() {
        let b = breaker();
        for _ in 0..5 {
            b.record_at(false, 0);
        }
        assert_eq!(b.record_at(true, 100), Some(false), "e.g. the relay got through");
        assert!(!b.is_open_at(100));
        assert!(b.allow_at(100) && b.allow_at(100));
        assert_eq!(b.record_at(false, 200), None, "one failure does not reopen it");
        assert!(b.allow_at(200));
    }

    #[test]
    fn concurrent_callers_after_the_cooldown_get_exactly_one_probe() {
        let b = std::sync::Arc::new(opened());
        let allowed: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let b = b.clone();
                    s.spawn(move || (0..1000).filter(|_| b.allow_at(1000)).count())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(allowed, 1);
    }
}
