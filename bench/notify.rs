//! Benchmark N (`bench/run --only N`): what change notifications cost the
//! writers. Callback-shaped transitions (the row locked, its fence read, the
//! row and its attempt finished: `db::page_import::{lock_fence, finish}`,
//! the service's own write path) at 8, 32 and 64 concurrent writers, each in
//! its own transaction on fresh `processing` rows, with a listener connected
//! throughout, in three modes:
//!
//! - `off`: no notification at all;
//! - `after-commit`: the service's notifier (`changes::Notifier`), handed each
//!   id after its commit;
//! - `trigger`: the former `page_import_changed` trigger, `pg_notify` inside
//!   the writing transaction.
//!
//! Beside them, pgbench of a one-row update of distinct rows, no trigger.
//! Reported per mode: transitions per second, and the delivery latency from
//! a writer's commit returning to the listener receiving the id (p50, p99).
//! Prints a Markdown table; asserts nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use page_import::changes::{Notifier, CHANNEL};
use page_import::db::page_import::{finish, lock_fence, Finish};
use page_import::domain::lifecycle::{AttemptOutcome, CAPTURE_WORKER};
use page_import::domain::JobStatus;
use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
struct Cli {
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Seconds per measured run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Concurrent writers, comma-separated.
    #[arg(long, default_value = "8,32,64", value_delimiter = ',')]
    writers: Vec<usize>,
    /// Fresh rows made for each run (a run stops early if it uses them up).
    #[arg(long, default_value_t = 200_000)]
    rows: i64,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Off,
    AfterCommit,
    Trigger,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::AfterCommit => "after-commit",
            Self::Trigger => "trigger",
        }
    }
}

struct Run {
    tps: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    delivered: usize,
}

const PROJECT: i64 = 9_001;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let setup = PgPool::connect(&cli.database_url).await?;
    sqlx::query("insert into organization (id, name) values ($1, 'bench N') on conflict do nothing")
        .bind(PROJECT)
        .execute(&setup)
        .await?;
    sqlx::query("insert into project (id, organization_id, name) values ($1, $1, 'bench N') on conflict do nothing")
        .bind(PROJECT)
        .execute(&setup)
        .await?;

    println!(
        "\n## N: change notifications against the writers ({} s per run, fsync on)\n",
        cli.seconds
    );
    println!("| writers | off (tx/s) | after-commit (tx/s) | after-commit ÷ off | trigger (tx/s) | trigger ÷ off | pgbench one-row update (tx/s) | delivery after commit p50 / p99 | delivery with the trigger p50 / p99 |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut run_no = 0;
    for &writers in &cli.writers {
        let mut runs = HashMap::new();
        for mode in [Mode::Off, Mode::AfterCommit, Mode::Trigger] {
            run_no += 1;
            let prefix = format!("n{run_no}-");
            make_rows(&setup, &prefix, cli.rows).await?;
            let run = measure(&cli, mode, writers, &prefix).await?;
            eprintln!(
                "[bench N] {writers} writers, {}: {:.0} tx/s, {} delivered",
                mode.name(),
                run.tps,
                run.delivered
            );
            runs.insert(mode.name(), run);
        }
        run_no += 1;
        let prefix = format!("n{run_no}-");
        make_rows(&setup, &prefix, cli.rows).await?;
        let plain = pgbench(&cli, writers, &prefix)?;
        let (off, after, trigger) = (&runs["off"], &runs["after-commit"], &runs["trigger"]);
        let latency = |r: &Run| match (r.p50_ms, r.p99_ms) {
            (Some(a), Some(b)) => format!("{a:.1} / {b:.1} ms"),
            _ => "–".into(),
        };
        println!(
            "| {writers} | {:.0} | {:.0} | {:.2}× | {:.0} | {:.2}× | {plain:.0} | {} | {} |",
            off.tps,
            after.tps,
            after.tps / off.tps,
            trigger.tps,
            trigger.tps / off.tps,
            latency(after),
            latency(trigger),
        );
        sqlx::query("delete from page_import where project_id = $1")
            .bind(PROJECT)
            .execute(&setup)
            .await?;
    }
    Ok(())
}

/// `rows` fresh `processing` imports named `{prefix}{n}`, each with its first attempt.
async fn make_rows(pool: &PgPool, prefix: &str, rows: i64) -> anyhow::Result<()> {
    sqlx::query(
        "with made as (
             insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height,
                                      device_scale_factor, nonce, created_by, updated_by)
             select $1 || g, $2, $2, 'https://example.com/', 1440, 900, 1, 'nonce', 'bench', 'bench'
             from generate_series(1, $3) g
             returning id
         )
         insert into page_import_attempt (page_import_id, attempt, reason, started_by, dispatched_at)
         select id, 1, 'create', 'bench', now() from made",
    )
    .bind(prefix)
    .bind(PROJECT)
    .bind(rows)
    .execute(pool)
    .await?;
    sqlx::raw_sql("vacuum analyze page_import").execute(pool).await?;
    Ok(())
}

async fn measure(cli: &Cli, mode: Mode, writers: usize, prefix: &str) -> anyhow::Result<Run> {
    let pool = PgPoolOptions::new()
        .max_connections(writers as u32 + 2)
        .min_connections(writers as u32 + 2)
        .connect(&cli.database_url)
        .await?;
    if mode == Mode::Trigger {
        install_trigger(&pool).await?;
    }
    let committed: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let received: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut listener = PgListener::connect(&cli.database_url).await?;
    listener.listen(CHANNEL).await?;
    let listening = tokio::spawn({
        let received = received.clone();
        async move {
            while let Ok(notification) = listener.recv().await {
                let at = Instant::now();
                let mut received = received.lock().unwrap();
                for id in notification.payload().split(',') {
                    received.entry(id.to_owned()).or_insert(at);
                }
            }
        }
    });
    let stop_notifier = CancellationToken::new();
    let notifier = Notifier::default();
    if mode == Mode::AfterCommit {
        tokio::spawn(notifier.clone().run(pool.clone(), stop_notifier.clone()));
    }

    let next = Arc::new(AtomicU64::new(1));
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let (pool, next, done, committed, notifier) = (
                pool.clone(),
                next.clone(),
                done.clone(),
                committed.clone(),
                notifier.clone(),
            );
            let (prefix, rows) = (prefix.to_owned(), cli.rows as u64);
            tokio::spawn(async move {
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k > rows {
                        break;
                    }
                    let id = format!("{prefix}{k}");
                    transition(&pool, &id).await.expect("a transition");
                    let at = Instant::now();
                    if mode == Mode::AfterCommit {
                        notifier.changed(&id);
                    }
                    committed.lock().unwrap().insert(id, at);
                    n += 1;
                }
                n
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(cli.seconds)).await;
    done.store(true, Ordering::Relaxed);
    let mut total = 0;
    for task in tasks {
        total += task.await?;
    }
    let elapsed = started.elapsed().as_secs_f64().min(cli.seconds as f64 + 1.0);
    // Stragglers: the last notifications of the run.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop_notifier.cancel();
    listening.abort();
    if mode == Mode::Trigger {
        drop_trigger(&pool).await?;
    }
    pool.close().await;

    let committed = committed.lock().unwrap();
    let received = received.lock().unwrap();
    let mut latencies: Vec<f64> = committed
        .iter()
        .filter_map(|(id, at)| {
            received
                .get(id)
                .map(|r| r.saturating_duration_since(*at).as_secs_f64() * 1e3)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    Ok(Run {
        tps: total as f64 / elapsed,
        p50_ms: pick(0.5),
        p99_ms: pick(0.99),
        delivered: latencies.len(),
    })
}

/// One callback-shaped transition, as `service::callbacks` makes it after
/// the artifacts checked out: the row locked and its fence read, then the
/// row and its attempt finished, in one transaction.
async fn transition(pool: &PgPool, id: &str) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let fence = lock_fence(&mut tx, id).await?.expect("the row exists");
    let finished = Finish {
        nonce: Some(&fence.nonce),
        status: JobStatus::Completed,
        outcome: AttemptOutcome::Completed,
        result_url: Some("s3://bench/page-imports/x/1/capture.json"),
        capture_hash: Some("sha256:0000000000000000000000000000000000000000000000000000000000000000"),
        screenshot_url: Some("s3://bench/page-imports/x/1/screenshot.png"),
        error_message: None,
        actor: CAPTURE_WORKER,
    };
    anyhow::ensure!(finish(&mut tx, id, fence.attempt, &finished).await?, "not finished");
    tx.commit().await?;
    Ok(())
}

/// The trigger of migration `20261201000001_page_import_changes`, dropped by
/// `20261202000002_notify_after_commit`.
async fn install_trigger(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::query(
        "create or replace function bench_notify_change() returns trigger language plpgsql as $$
         begin perform pg_notify('page_import_changed', new.id); return null; end $$",
    )
    .execute(pool)
    .await?;
    sqlx::query(
        "create trigger bench_page_import_changed after update on page_import
         for each row execute function bench_notify_change()",
    )
    .execute(pool)
    .await?;
    Ok(())
}

async fn drop_trigger(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::query("drop trigger bench_page_import_changed on page_import")
        .execute(pool)
        .await?;
    sqlx::query("drop function bench_notify_change()").execute(pool).await?;
    Ok(())
}

/// pgbench: a one-row update of random rows of this run, no trigger.
fn pgbench(cli: &Cli, clients: usize, prefix: &str) -> anyhow::Result<f64> {
    let script = std::env::temp_dir().join(format!("bench-n-{}.sql", std::process::id()));
    std::fs::write(
        &script,
        format!(
            "\\set n random(1, {rows})\nupdate page_import set updated_at = now(), updated_by = 'pgbench' where id = '{prefix}' || :n;\n",
            rows = cli.rows
        ),
    )?;
    let out = std::process::Command::new("pgbench")
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &clients.to_string(),
            "-j",
            "2",
            "-T",
            &cli.seconds.to_string(),
            "-f",
        ])
        .arg(&script)
        .arg(&cli.database_url)
        .output()?;
    std::fs::remove_file(&script).ok();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("pgbench said: {text}{}", String::from_utf8_lossy(&out.stderr)))
}
