//! Background tasks: the outbox relay, the capture dispatcher (its rules are
//! `service::dispatch`), the sweeper (its rule is `service::sweeper`), the
//! eraser (`service::erasure`), and the change notifier and listener of event
//! streams (`changes.rs`). All are safe to run in every replica (SKIP LOCKED) and
//! stop when the token is cancelled.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::db;
use crate::service::erasure::Eraser;
use crate::service::sweeper::Sweeper;
use crate::state::AppState;
use crate::supervisor;

/// How often the relay counts the whole outbox for `outbox_backlog`. The
/// count reads every row: 35 ms of PostgreSQL CPU at 50 000 rows (a minute
/// of SQS outage at 800 creates/s), which once a second showed up in the
/// creates' p99. The oldest message's age, one index probe, is updated on
/// every tick instead.
const BACKLOG_EVERY: Duration = Duration::from_secs(15);

/// Starts every background task under supervision (`supervisor.rs`): a
/// panicking task is restarted, and `/readyz` reports it while it is down.
pub fn spawn_all(state: &AppState, shutdown: CancellationToken) -> Vec<JoinHandle<()>> {
    let backoff = (supervisor::RESTART_MIN, supervisor::RESTART_MAX);
    let supervise = |name, make| {
        supervisor::supervise(
            state.tasks.clone(),
            state.metrics.clone(),
            name,
            shutdown.clone(),
            backoff,
            make,
        )
    };
    vec![
        supervise("relay", {
            let (state, shutdown) = (state.clone(), shutdown.clone());
            Box::new(move || relay(state.clone(), shutdown.clone()).boxed()) as Task
        }),
        supervise("events_listener", {
            let (state, shutdown) = (state.clone(), shutdown.clone());
            Box::new(move || {
                let reread = state.config.events_reread_interval;
                state
                    .changes
                    .clone()
                    .listen(state.pool.clone(), reread, shutdown.clone())
                    .boxed()
            })
        }),
        supervise("notifier", {
            let (notifier, pool, shutdown) = (state.notifier.clone(), state.pool.clone(), shutdown.clone());
            Box::new(move || notifier.clone().run(pool.clone(), shutdown.clone()).boxed())
        }),
        supervise("dispatcher", {
            let (dispatcher, interval, shutdown) = (
                state.dispatcher(),
                state.config.capture_dispatch_interval,
                shutdown.clone(),
            );
            Box::new(move || dispatcher.clone().run(interval, shutdown.clone()).boxed())
        }),
        supervise("sweeper", {
            let (sweeper_, interval, shutdown) = (state.sweeper(), state.config.sweeper_interval, shutdown.clone());
            Box::new(move || sweeper(sweeper_.clone(), interval, shutdown.clone()).boxed())
        }),
        supervise("eraser", {
            let (eraser_, interval, shutdown) = (state.eraser(), state.config.erase_interval, shutdown.clone());
            Box::new(move || eraser(eraser_.clone(), interval, shutdown.clone()).boxed())
        }),
    ]
}

type Task = Box<dyn Fn() -> BoxFuture<'static, ()> + Send>;

/// Sleeps for `period`, or returns `false` at once when shutting down.
async fn tick(shutdown: &CancellationToken, period: Duration) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => false,
        () = tokio::time::sleep(period) => true,
    }
}

async fn relay(state: AppState, shutdown: CancellationToken) {
    let mut counted = None;
    loop {
        // The next tick, or sooner when SQS is back and waiting messages were made due.
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(state.config.outbox_relay_interval) => {}
            () = state.publisher.due_now() => {}
        }
        state.publisher.probe_open_breakers().await;
        // Drain while there is work, then wait for the next tick.
        loop {
            match state.publisher.relay_once().await {
                Ok(0) => break,
                Ok(n) => tracing::info!(published = n, "outbox relay published"),
                // Logged and counted where it happened (`queue::relay_error`).
                Err(_) => break,
            }
            if shutdown.is_cancelled() {
                return;
            }
        }
        if let Ok(mut conn) = state.pool.acquire().await {
            if let Ok(age) = db::outbox::oldest_age(&mut conn).await {
                state.metrics.outbox_oldest_age(age);
            }
            if counted.is_none_or(|at: Instant| at.elapsed() >= BACKLOG_EVERY) {
                if let Ok(n) = db::outbox::backlog(&mut conn).await {
                    state.metrics.outbox_backlog(n);
                    counted = Some(Instant::now());
                }
            }
        }
    }
}

async fn sweeper(sweeper: Sweeper, interval: Duration, shutdown: CancellationToken) {
    while tick(&shutdown, interval).await {
        if let Err(err) = sweeper.sweep_once().await {
            tracing::warn!(error = %err, "sweeper pass failed");
        }
    }
}

/// An erasure pass right away (entries left by a replica that stopped are
/// not kept waiting), then one every `ERASE_INTERVAL_SECS`.
async fn eraser(eraser: Eraser, interval: Duration, shutdown: CancellationToken) {
    loop {
        match eraser.pass_once().await {
            Ok(report) if report != Default::default() => tracing::info!(?report, "erasure pass"),
            Ok(_) => {}
            Err(err) => tracing::warn!(error = format!("{err:#}"), "erasure pass failed"),
        }
        if !tick(&shutdown, interval).await {
            return;
        }
    }
}
