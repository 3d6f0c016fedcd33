//! Background tasks (relay, sweeper, change listener) run supervised: a task
//! that panics, or returns while the service is not shutting down, is logged,
//! counted and restarted after a backoff; while it is down `/readyz` answers
//! 503 naming it, so an orchestrator notices a replica that stopped relaying.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// First restart delay; doubles per quick failure up to `RESTART_MAX`.
pub const RESTART_MIN: Duration = Duration::from_secs(1);
pub const RESTART_MAX: Duration = Duration::from_secs(30);
/// A task that ran this long before failing restarts after `RESTART_MIN` again.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// Which supervised tasks are running. Cheap to share.
#[derive(Default)]
pub struct Tasks {
    up: Mutex<BTreeMap<&'static str, bool>>,
}

impl Tasks {
    /// The names of the tasks that are down right now.
    pub fn dead(&self) -> Vec<&'static str> {
        let up = self.up.lock().unwrap_or_else(|e| e.into_inner());
        up.iter().filter(|(_, up)| !**up).map(|(name, _)| *name).collect()
    }

    /// The names of the tasks that run right now.
    pub fn running(&self) -> Vec<&'static str> {
        let up = self.up.lock().unwrap_or_else(|e| e.into_inner());
        up.iter().filter(|(_, up)| **up).map(|(name, _)| *name).collect()
    }

    fn set(&self, name: &'static str, up: bool, metrics: &Metrics) {
        self.up.lock().unwrap_or_else(|e| e.into_inner()).insert(name, up);
        metrics.task_up(name, up);
    }
}

/// Runs `make()` as task `name` until `shutdown`, restarting it whenever it
/// panics or returns early. `backoff` is (first delay, largest delay).
pub fn supervise<F, Fut>(
    tasks: Arc<Tasks>,
    metrics: Metrics,
    name: &'static str,
    shutdown: CancellationToken,
    backoff: (Duration, Duration),
    make: F,
) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut delay = backoff.0;
        loop {
            tasks.set(name, true, &metrics);
            let started = Instant::now();
            let outcome = tokio::spawn(make()).await;
            if shutdown.is_cancelled() {
                return;
            }
            match outcome {
                Err(err) if err.is_panic() => {
                    let panic = err.into_panic();
                    let message = panic
                        .downcast_ref::<&str>()
                        .copied()
                        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                        .unwrap_or("(no message)");
                    tracing::error!(
                        task = name,
                        panic = message,
                        restart_in_ms = delay.as_millis() as u64,
                        "background task panicked; restarting"
                    );
                }
                _ => tracing::error!(
                    task = name,
                    restart_in_ms = delay.as_millis() as u64,
                    "background task stopped on its own; restarting"
                ),
            }
            tasks.set(name, false, &metrics);
            metrics.task_restarted(name);
            if started.elapsed() >= HEALTHY_RUN {
                delay = backoff.0;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(backoff.1);
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_panicking_task_is_reported_dead_then_restarted() {
        let tasks = Arc::new(Tasks::default());
        let runs = Arc::new(AtomicU32::new(0));
        let shutdown = CancellationToken::new();
        let (release, released) = (
            Arc::new(tokio::sync::Notify::new()),
            Arc::new(tokio::sync::Notify::new()),
        );
        let handle = supervise(
            tasks.clone(),
            Metrics::default(),
            "flaky",
            shutdown.clone(),
            (Duration::from_millis(300), Duration::from_millis(300)),
            {
                let (runs, released) = (runs.clone(), released.clone());
                move || {
                    let (runs, released) = (runs.clone(), released.clone());
                    async move {
                        if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                            panic!("first run fails");
                        }
                        released.notified().await;
                    }
                }
            },
        );
        // Down between the panic and the restart.
        let mut saw_dead = false;
        for _ in 0..100 {
            if tasks.dead() == ["flaky"] {
                saw_dead = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(saw_dead, "the panicked task is reported dead");
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 2, "restarted once");
        assert!(tasks.dead().is_empty(), "up again after the restart");
        shutdown.cancel();
        released.notify_one();
        drop(release);
        handle.await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2, "not restarted after shutdown");
    }

    #[tokio::test]
    async fn a_task_that_returns_early_is_restarted_but_not_after_shutdown() {
        let tasks = Arc::new(Tasks::default());
        let runs = Arc::new(AtomicU32::new(0));
        let shutdown = CancellationToken::new();
        let handle = supervise(
            tasks.clone(),
            Metrics::default(),
            "quitter",
            shutdown.clone(),
            (Duration::from_millis(10), Duration::from_millis(10)),
            {
                let runs = runs.clone();
                move || {
                    let runs = runs.clone();
                    async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                    }
                }
            },
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(runs.load(Ordering::SeqCst) >= 3, "restarted each time it returned");
        shutdown.cancel();
        handle.await.unwrap();
    }
}
