//! `capture-worker`: the reference capture worker (SPEC §10). It reads jobs
//! from SQS, renders them in headless Chromium behind its own egress proxy,
//! stores the artifacts in S3 and calls the service's signed webhook. It has
//! no database access at all.

mod browser;
mod callback;
mod capture;
mod cdp;
mod commands;
mod config;
mod consent;
mod details;
mod dom;
mod egress;
mod emulation;
mod failed_requests;
mod failure;
mod health;
mod job;
mod looks;
mod manifest;
mod metrics;
mod page;
mod page_state;
mod protocol;
mod queue;
mod reaper;
mod room;
mod set;
mod targets;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio_util::sync::CancellationToken;

use crate::browser::BrowserSlot;
use crate::callback::CallbackClient;
use crate::capture::CaptureSettings;
use crate::config::Config;
use crate::egress::{EgressPolicy, EgressProxy};
use crate::job::Worker;

/// `service.name` of the worker's spans unless `OTEL_SERVICE_NAME` says otherwise.
const SERVICE_NAME: &str = "capture-worker";

/// How long the callback is retried (SPEC §10: up to 10 minutes).
const CALLBACK_BUDGET: Duration = Duration::from_secs(600);

fn main() -> std::process::ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    let telemetry = page_import_platform::telemetry::init(config.shared.log_format, SERVICE_NAME);
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let code = match runtime.block_on(run(config)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "capture worker stopped");
            std::process::ExitCode::FAILURE
        }
    };
    // The last spans, with a bound (`FLUSH_BOUND`).
    telemetry.shutdown();
    code
}

async fn run(config: Config) -> anyhow::Result<()> {
    not_dumpable()?;
    reaper::start()?;
    let metrics = metrics::install(config.browser_max_captures)?;
    for addr in &config.egress_allow {
        tracing::warn!(%addr, "EGRESS_ALLOW lets the browser reach this non-public address: development and tests only");
    }
    let policy = Arc::new(EgressPolicy::new(config.egress_allow.iter().copied()));
    // Traffic outside a capture's own context (Chromium's background
    // requests) meets the same rules here.
    let guard = EgressProxy::start(policy.clone(), u64::MAX).await?;
    let aws = page_import_platform::aws::clients(config.shared.s3_force_path_style, None).await;
    let worker = Arc::new(worker(&config, policy, &guard, aws.s3).await?);
    let queue = Arc::new(queue::Queue {
        sqs: aws.sqs,
        url: config.shared.page_import_queue_url.clone(),
        bucket: config.shared.artifact_bucket.clone(),
    });

    let shutdown = CancellationToken::new();
    listen(&config, metrics, &shutdown);
    tracing::info!(
        concurrency = config.concurrency,
        autoconsent = consent::AUTOCONSENT_VERSION.trim(),
        consent_marks = consent::plan().top.marks.len(),
        consent_unmarked = ?consent::plan().unmarked,
        "capture worker started"
    );
    let receiving = queue::Receiving {
        concurrency: config.concurrency,
        wait_secs: config.receive_wait_secs,
    };
    let running = queue::run(queue, worker.clone(), receiving, shutdown.clone());
    tokio::pin!(running);
    tokio::select! {
        () = &mut running => {}
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(config.shutdown_grace).await;
        } => tracing::warn!("captures still running after the shutdown grace period; stopping anyway"),
    }
    worker.browsers.shutdown().await;
    drop(guard);
    tokio::task::spawn_blocking(|| reaper::kill_all_children(Duration::from_secs(5))).await?;
    tracing::info!("capture worker stopped");
    Ok(())
}

/// A worker not running as root runs Chromium as its own user, and a
/// process of the same user may read a dumpable process's
/// /proc/PID/environ and memory: this one holds WEBHOOK_SECRET and the
/// AWS keys. Not dumpable, they are the kernel's to guard (exec resets
/// it, so Chromium is unaffected).
fn not_dumpable() -> anyhow::Result<()> {
    // SAFETY: prctl with PR_SET_DUMPABLE takes one integer argument.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error()).context("prctl(PR_SET_DUMPABLE, 0)");
    }
    Ok(())
}

/// The worker, its browser warm behind `guard`'s proxy.
async fn worker(
    config: &Config,
    policy: Arc<EgressPolicy>,
    guard: &EgressProxy,
    s3: aws_sdk_s3::Client,
) -> anyhow::Result<Worker> {
    let browsers = BrowserSlot::new(
        config.chromium_path.clone(),
        guard.url(),
        config.chromium_user.clone(),
        config.browser_max_captures,
        config.max_heap_mib,
    );
    // Warm, so the first capture does not pay for the launch; and a worker
    // that cannot start a sandboxed browser stops here (it never falls back
    // to an unsandboxed one).
    browsers
        .warm()
        .await
        .context("a sandboxed Chromium could not be started")?;
    Ok(Worker {
        s3,
        browsers,
        policy,
        settings: CaptureSettings {
            navigation_timeout: config.navigation_timeout,
            ready_timeout: config.ready_timeout,
            max_height_px: config.max_height_px,
            max_bytes: config.max_bytes,
        },
        callbacks: CallbackClient::new(config.shared.webhook_secrets.primary().clone(), CALLBACK_BUDGET),
    })
}

/// The health listener, if configured, and the signals that cancel
/// `shutdown`.
fn listen(config: &Config, metrics: PrometheusHandle, shutdown: &CancellationToken) {
    if let Some(addr) = config.health_addr {
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            if let Err(e) = health::serve(addr, metrics, shutdown).await {
                tracing::error!(error = %e, "health listener failed");
            }
        });
    }
    let stop = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown requested");
        stop.cancel();
    });
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
