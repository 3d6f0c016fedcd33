//! Holding a lease while work runs: the outbox publisher's on the messages
//! it sends, an erasure pass's on the imports it erases. Each renews every
//! third of its lease, so work slower than the lease (SDK retries, a slow
//! endpoint) is not taken over by another replica meanwhile.

use std::future::Future;
use std::time::Duration;

/// Runs `work` to its end, calling `renew` every `every` while it runs
/// (first after `every`; a renewal that runs long delays the next rather
/// than bunching them).
pub async fn renewing<T, R>(every: Duration, work: impl Future<Output = T>, mut renew: impl FnMut() -> R) -> T
where
    R: Future<Output = ()>,
{
    let mut renewals = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    renewals.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = renewals.tick() => renew().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn renews_every_period_while_the_work_runs_and_not_after() {
        let renewed = AtomicUsize::new(0);
        let work = tokio::time::sleep(Duration::from_millis(1050));
        let every = Duration::from_millis(100);
        renewing(every, work, || async {
            renewed.fetch_add(1, Ordering::SeqCst);
        })
        .await;
        assert_eq!(renewed.load(Ordering::SeqCst), 10);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(renewed.load(Ordering::SeqCst), 10);
    }
}
