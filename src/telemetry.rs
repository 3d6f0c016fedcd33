//! Logs and traces: the set-up both binaries share
//! (`page_import_platform::telemetry`), and this service's log throttle.

pub use page_import_platform::telemetry::init;

/// `service.name` of this service's spans unless `OTEL_SERVICE_NAME` says otherwise.
pub const SERVICE_NAME: &str = "page-import";

/// Lets one log line through per period and counts the ones it holds back, so
/// an outage of a dependency yields a warning every few seconds (with how
/// many were suppressed) instead of one per failed call. Metrics still count
/// every failure.
pub struct Throttle {
    period_ms: u64,
    epoch: std::time::Instant,
    next_at_ms: std::sync::atomic::AtomicU64,
    suppressed: std::sync::atomic::AtomicU64,
}

impl Throttle {
    pub fn new(period: std::time::Duration) -> Self {
        Self {
            period_ms: period.as_millis() as u64,
            epoch: std::time::Instant::now(),
            next_at_ms: std::sync::atomic::AtomicU64::new(0),
            suppressed: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// `Some(suppressed since the last line)` when this line may be logged.
    pub fn permit(&self) -> Option<u64> {
        self.permit_at(self.epoch.elapsed().as_millis() as u64)
    }

    fn permit_at(&self, now_ms: u64) -> Option<u64> {
        use std::sync::atomic::Ordering::Relaxed;
        let next = self.next_at_ms.load(Relaxed);
        if now_ms >= next
            && self
                .next_at_ms
                .compare_exchange(next, now_ms + self.period_ms, Relaxed, Relaxed)
                .is_ok()
        {
            Some(self.suppressed.swap(0, Relaxed))
        } else {
            self.suppressed.fetch_add(1, Relaxed);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_with_the_count_held_back() {
        let t = Throttle::new(std::time::Duration::from_secs(10));
        assert_eq!(t.permit_at(0), Some(0));
        assert_eq!(t.permit_at(1), None);
        assert_eq!(t.permit_at(9_999), None);
        assert_eq!(t.permit_at(10_000), Some(2));
        assert_eq!(t.permit_at(10_001), None);
        assert_eq!(t.permit_at(25_000), Some(1));
    }
}
