//! Benchmark D1 (`bench/run --only D`): what choosing the next attempt
//! costs, against the size of the backlog (SPEC §12 "Scale").
//!
//! For each backlog size, a fresh backlog of that many queued attempts
//! spread over 10 000 organizations (seeded in SQL, as creates leave them:
//! `page_import`, its attempt with its `queued_seq`, each organization's
//! `capture_org` count as admission keeps it), then the slots filled to
//! `CAPTURE_MAX_IN_FLIGHT` 64 by the service's own pass
//! (`service::dispatch::grant`). Measured: one slot frees (an in-flight
//! import ends), then one pass grants it (the dispatch lock, the release of
//! ended slots, the in-flight count, the round robin's pick, the move to the
//! outbox, the commit). The SQS call that follows is the outbox's, the same
//! for every backlog size, and is left out. Prints a Markdown table; asserts
//! nothing.

use std::time::{Duration, Instant};

use clap::Parser;
use page_import::queue::messages::CaptureDestination;
use page_import::service::dispatch::{grant, CaptureLimits, GrantRules};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

#[derive(Parser)]
struct Cli {
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Backlog sizes, comma-separated.
    #[arg(long, default_value = "1000,100000,1000000", value_delimiter = ',')]
    sizes: Vec<i64>,
    /// Organizations the backlog is spread over.
    #[arg(long, default_value_t = 10_000)]
    orgs: i64,
    /// Measured dispatches per size.
    #[arg(long, default_value_t = 2000)]
    dispatches: usize,
}

const LIMITS: CaptureLimits = CaptureLimits {
    max_in_flight: 64,
    max_in_flight_per_org: 16,
    max_queued: i64::MAX,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&cli.database_url)
        .await?;
    println!("\n## D1 dispatch cost against the backlog\n");
    println!(
        "{} organizations, CAPTURE_MAX_IN_FLIGHT 64 (16 per organization), {} dispatches per size; \
         one slot freed, then one pass granting it (one transaction, commit included).\n",
        cli.orgs, cli.dispatches
    );
    println!("| queued attempts | seed | p50 | p99 | mean | passes/s |");
    println!("|---|---|---|---|---|---|");
    let mut first_p50 = None;
    let destination = CaptureDestination {
        bucket: "bench-artifacts".to_owned(),
        callback_url: "http://127.0.0.1/internal/page-imports/callback".to_owned(),
    };
    for &size in &cli.sizes {
        let seeded = Instant::now();
        seed(&pool, size, cli.orgs).await?;
        let seed_secs = seeded.elapsed().as_secs_f64();
        fill(&pool, &destination).await?;
        // A backlog smaller than the dispatches measured runs out first.
        let dispatches = cli.dispatches.min(usize::try_from(size - 65).unwrap_or(0)).max(1);
        let mut took = Vec::with_capacity(dispatches);
        for _ in 0..dispatches {
            end_one_in_flight(&pool).await?;
            let started = Instant::now();
            let mut tx = pool.begin().await?;
            let granted = grant(&mut tx, rules(&destination), 1).await?;
            tx.commit().await?;
            took.push(started.elapsed());
            anyhow::ensure!(granted.messages.len() == 1, "a pass granted {}", granted.messages.len());
        }
        took.sort();
        let p = |q: f64| took[((took.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
        let mean = took.iter().sum::<Duration>().as_secs_f64() * 1000.0 / took.len() as f64;
        let p50 = p(0.5);
        let ratio = first_p50.get_or_insert(p50);
        println!(
            "| {size} | {seed_secs:.1} s | {p50:.2} ms ({:.2}× the first) | {:.2} ms | {mean:.2} ms | {:.0} |",
            p50 / *ratio,
            p(0.99),
            1000.0 / mean
        );
    }
    Ok(())
}

/// A backlog of `size` queued attempts, round robin over `orgs`
/// organizations, nothing in flight.
async fn seed(pool: &PgPool, size: i64, orgs: i64) -> anyhow::Result<()> {
    let statements = [
        "truncate organization, project, page_import, page_import_deletion, capture_org, outbox_message cascade"
            .to_owned(),
        format!("insert into organization (id, name) select g, 'org' from generate_series(1, {orgs}) g"),
        format!("insert into project (id, organization_id, name) select g, g, 'p' from generate_series(1, {orgs}) g"),
        format!(
            "insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height,
                                      nonce, created_by, updated_by)
             select 'bench-' || lpad(g::text, 8, '0'), 1 + g % {orgs}, 1 + g % {orgs}, 'https://example.com/pricing',
                    1440, 900, 'Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6', 'bench', 'bench'
             from generate_series(1, {size}) g"
        ),
        "insert into page_import_attempt (page_import_id, attempt, reason, started_by, organization_id, queued_seq)
         select id, 1, 'create', 'bench', organization_id, nextval('page_import_queued_seq') from page_import order by id"
            .to_owned(),
        // Counted as queued, as the statements that queue attempts count them.
        "insert into capture_org (organization_id, queued, has_queued)
         select organization_id, count(*), true from page_import group by organization_id"
            .to_owned(),
        "vacuum analyze".to_owned(),
    ];
    for sql in statements {
        sqlx::raw_sql(&sql).execute(pool).await?;
    }
    Ok(())
}

/// Passes until the slots are full.
async fn fill(pool: &PgPool, destination: &CaptureDestination) -> anyhow::Result<()> {
    loop {
        let mut tx = pool.begin().await?;
        let granted = grant(&mut tx, rules(destination), 100).await?;
        tx.commit().await?;
        if granted.messages.is_empty() {
            return Ok(());
        }
    }
}

/// One in-flight attempt ends (its import fails), freeing its slot, and
/// the outbox row of an earlier grant goes (as SQS would have taken it).
async fn end_one_in_flight(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::raw_sql(
        "update page_import set status = '2'
         where id = (select page_import_id from capture_slot s
                     join page_import p on p.id = s.page_import_id and p.status = '0'
                     order by s.granted_at limit 1);
         delete from outbox_message where id = (select min(id) from outbox_message);",
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// How the bench's passes grant: [`LIMITS`], a lease of 30 s.
fn rules(destination: &CaptureDestination) -> GrantRules<'_> {
    GrantRules {
        limits: &LIMITS,
        destination,
        lease: Duration::from_secs(30),
    }
}
