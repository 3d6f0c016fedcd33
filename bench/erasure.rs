//! Benchmark X: erasure (SPEC §13). Run against a migrated database and
//! the AWS emulator (the environment `scripts/dev` prints):
//! `cargo run --release --example erase_cost -- --imports 300`.
//!
//! X1, throughput. `--imports` imports of `--objects` objects each, their
//! rows deleted in SQL (the ledger's triggers record them), then one
//! erasure pass of the service's own code (`Eraser::pass_once`: claims,
//! listings, `DeleteObjects` batches, second listings, finishes), timed.
//! Against it: the same keys written again and deleted by a plain loop of
//! `DeleteObjects` calls of 1 000 keys, with no listing and no database.
//!
//! X2, under load. A create-like write load (each transaction inserts one
//! `page_import` row and its attempt, as a create does) runs at full speed
//! from `--writers` connections for `--seconds`: alone; while `--imports`
//! rows are deleted in waves of 50 (their ledger entries left alone); and
//! while as many rows, with their objects, are deleted in waves and an
//! eraser runs every second. The erasure's cost is the last run against the
//! second. Also reported: the lag from each row delete to its finished
//! erasure (`erased_at − deleted_at` of the audit rows). Prints Markdown;
//! asserts nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use clap::Parser;
use futures::StreamExt;
use page_import::metrics::Metrics;
use page_import::service::erasure::Eraser;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

#[derive(Parser)]
struct Cli {
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Imports erased in E1 (and again in E2).
    #[arg(long, default_value_t = 300)]
    imports: usize,
    /// Objects per import.
    #[arg(long, default_value_t = 20)]
    objects: usize,
    /// Connections of E2's write load.
    #[arg(long, default_value_t = 4)]
    writers: usize,
    /// Seconds of each half of E2.
    #[arg(long, default_value_t = 15)]
    seconds: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let pool = PgPoolOptions::new()
        .max_connections(cli.writers as u32 + 4)
        .connect(&cli.database_url)
        .await?;
    let s3 = page_import::aws::clients(true, None).await.s3;
    let bucket = format!("erase-bench-{}", uuid::Uuid::new_v4().simple());
    s3.create_bucket().bucket(&bucket).send().await?;
    let eraser = Eraser {
        pool: pool.clone(),
        s3: s3.clone(),
        bucket: bucket.clone(),
        erase_after: Duration::ZERO,
        capture_timeout: Duration::ZERO,
        interval: Duration::from_secs(1),
        lease: page_import::service::erasure::LEASE,
        metrics: Metrics::default(),
    };
    let project = seed_project(&pool).await?;

    println!("\n## X1 erasure throughput\n");
    let ids = seed_imports(&pool, project, cli.imports).await?;
    let keys = keys_of(&ids, cli.objects);
    let seeded = Instant::now();
    put_all(&s3, &bucket, &keys).await?;
    let seed_secs = seeded.elapsed().as_secs_f64();
    sqlx::query("delete from page_import where project_id = $1")
        .bind(project)
        .execute(&pool)
        .await?;
    let started = Instant::now();
    let report = eraser.pass_once().await?;
    let pass_secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(report.erased == ids.len(), "{report:?}");

    put_all(&s3, &bucket, &keys).await?;
    let started = Instant::now();
    for batch in keys.chunks(1000) {
        let objects = batch
            .iter()
            .map(|key| ObjectIdentifier::builder().key(key).build())
            .collect::<Result<Vec<_>, _>>()?;
        s3.delete_objects()
            .bucket(&bucket)
            .delete(Delete::builder().set_objects(Some(objects)).quiet(true).build()?)
            .send()
            .await?;
    }
    let plain_secs = started.elapsed().as_secs_f64();
    let n = keys.len() as f64;
    println!(
        "{} imports × {} objects = {} objects (seeded by {} concurrent PutObject in {:.1} s).\n",
        ids.len(),
        cli.objects,
        keys.len(),
        PUTS_IN_FLIGHT,
        seed_secs
    );
    println!("| | seconds | objects/s | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| plain DeleteObjects loop (1 000 keys a call) | {plain_secs:.2} | {:.0} | 1.00 |",
        n / plain_secs
    );
    println!(
        "| erasure pass (claims, listings, deletes, second listings, finishes) | {pass_secs:.2} | {:.0} | {:.2} |",
        n / pass_secs,
        plain_secs / pass_secs
    );

    println!("\n## X2 erasure under a write load\n");
    let alone = write_load(&pool, project, cli.writers, cli.seconds, &[], None).await?;
    // The same deletions with no eraser, then with one: what erasing costs.
    let deleted_only = seed_imports(&pool, project, cli.imports).await?;
    let deleting = write_load(&pool, project, cli.writers, cli.seconds, &deleted_only, None).await?;
    sqlx::query("delete from page_import_deletion where page_import_id = any($1)")
        .bind(&deleted_only)
        .execute(&pool)
        .await?;
    let ids = seed_imports(&pool, project, cli.imports).await?;
    put_all(&s3, &bucket, &keys_of(&ids, cli.objects)).await?;
    let erasing = write_load(&pool, project, cli.writers, cli.seconds, &ids, Some(&eraser)).await?;
    // The last wave's erasure may finish after the load stopped.
    for _ in 0..10 {
        if eraser.pass_once().await?.erased == 0 {
            break;
        }
    }
    let lags: Vec<f64> = sqlx::query_scalar(
        "select extract(epoch from erased_at - deleted_at)::float8 from page_import_erasure
         where id = any($1) order by 1",
    )
    .bind(&ids)
    .fetch_all(&pool)
    .await?;
    let pct = |p: f64| lags[((lags.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{} writers, {} s each; {} imports ({} objects each) deleted in waves of 50 spread over the run; \
         in the last, an eraser runs every 1 s.\n",
        cli.writers,
        cli.seconds,
        ids.len(),
        cli.objects
    );
    println!("| | writes/s | ratio |");
    println!("|---|---|---|");
    println!("| write load alone | {alone:.0} | {:.3} |", alone / deleting);
    println!("| with the deletions, no eraser | {deleting:.0} | 1.000 |");
    println!(
        "| with the deletions and the eraser | {erasing:.0} | {:.3} |",
        erasing / deleting
    );
    println!(
        "\nLag from a row's delete to its finished erasure, {} imports: p50 {:.2} s, p99 {:.2} s, max {:.2} s.",
        lags.len(),
        pct(0.5),
        pct(0.99),
        lags[lags.len() - 1]
    );
    Ok(())
}

const PUTS_IN_FLIGHT: usize = 32;

async fn seed_project(pool: &PgPool) -> anyhow::Result<i64> {
    let org: i64 = sqlx::query_scalar("insert into organization (name) values ('erase-bench') returning id")
        .fetch_one(pool)
        .await?;
    Ok(
        sqlx::query_scalar("insert into project (organization_id, name) values ($1, 'erase-bench') returning id")
            .bind(org)
            .fetch_one(pool)
            .await?,
    )
}

/// Imports with one attempt, dispatched an hour ago.
async fn seed_imports(pool: &PgPool, project: i64, n: usize) -> anyhow::Result<Vec<String>> {
    let ids: Vec<String> = (0..n).map(|_| uuid::Uuid::now_v7().to_string()).collect();
    sqlx::query(
        "with rows as (
             insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height,
                                      nonce, created_by, updated_by)
             select n.id, p.organization_id, p.id, 'https://example.com/', 1440, 900, md5(n.id), 'bench', 'bench'
             from unnest($1::text[]) as n(id), project p where p.id = $2
             returning page_import.id
         )
         insert into page_import_attempt (page_import_id, attempt, reason, started_by, dispatched_at)
         select rows.id, 1, 'create', 'bench', now() - interval '1 hour' from rows",
    )
    .bind(&ids)
    .bind(project)
    .execute(pool)
    .await?;
    Ok(ids)
}

fn keys_of(ids: &[String], objects: usize) -> Vec<String> {
    ids.iter()
        .flat_map(|id| (0..objects).map(move |i| format!("page-imports/{id}/1/assets/{i:03}.png")))
        .collect()
}

async fn put_all(s3: &aws_sdk_s3::Client, bucket: &str, keys: &[String]) -> anyhow::Result<()> {
    let puts = futures::stream::iter(keys)
        .map(|key| {
            s3.put_object()
                .bucket(bucket)
                .key(key)
                .body(ByteStream::from_static(b"0123456789abcdef"))
                .send()
        })
        .buffer_unordered(PUTS_IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    for put in puts {
        put?;
    }
    Ok(())
}

/// Runs the write load for `seconds`, deleting `deletes` in waves of 50
/// spread over the run, and with `eraser`, running a pass every second
/// beside it. Returns the writes per second.
async fn write_load(
    pool: &PgPool,
    project: i64,
    writers: usize,
    seconds: u64,
    deletes: &[String],
    eraser: Option<&Eraser>,
) -> anyhow::Result<f64> {
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let (pool, stop, writes) = (pool.clone(), stop.clone(), writes.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let id = uuid::Uuid::now_v7().to_string();
                    sqlx::query(
                        "with row as (
                             insert into page_import (id, organization_id, project_id, source_url, viewport_width,
                                                      viewport_height, nonce, created_by, updated_by)
                             select $1, organization_id, id, 'https://example.com/', 1440, 900, md5($1), 'load', 'load'
                             from project where id = $2
                             returning id
                         )
                         insert into page_import_attempt (page_import_id, attempt, reason, started_by)
                         select id, 1, 'create', 'load' from row",
                    )
                    .bind(&id)
                    .bind(project)
                    .execute(&pool)
                    .await
                    .expect("a write");
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let started = Instant::now();
    let run = Duration::from_secs(seconds);
    let waves: Vec<&[String]> = deletes.chunks(50).collect();
    let every = Duration::from_secs_f64(seconds as f64 / waves.len().max(1) as f64);
    let deleting = async {
        for wave in waves {
            sqlx::query("delete from page_import where id = any($1)")
                .bind(wave)
                .execute(pool)
                .await?;
            tokio::time::sleep(every).await;
        }
        anyhow::Ok(())
    };
    let erasing = async {
        while let Some(eraser) = eraser.filter(|_| started.elapsed() < run) {
            eraser.pass_once().await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        anyhow::Ok(())
    };
    let (d, e) = tokio::join!(deleting, erasing);
    d?;
    e?;
    tokio::time::sleep(run.saturating_sub(started.elapsed())).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    for task in tasks {
        task.await?;
    }
    Ok(writes.load(Ordering::Relaxed) as f64 / elapsed)
}
