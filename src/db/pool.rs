//! The service's connection pools: the main pool, and the pools of the
//! coalesced statements (`coalesce`), each with its session settings.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

/// The main pool, connecting lazily (start-up does not need the database to
/// be up). `statement_timeout` bounds every query, so a dead database fails
/// fast.
pub fn main_pool(options: PgConnectOptions, max_connections: u32) -> PgPool {
    PgPoolOptions::new()
        // Set after connecting, not as a startup option, which PgBouncer
        // refuses by default.
        .after_connect(|conn, _| Box::pin(async move { set_session(conn, &[("statement_timeout", "5000")]).await }))
        .max_connections(max_connections)
        // No ping before each use: it is a full round trip per request. A
        // connection broken by a database restart fails its next query
        // (503) and is discarded, so recovery does not need it.
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(3))
        .connect_lazy_with(options)
}

/// The connections of one kind of coalesced statement, with their own
/// statement timeout and pinned plans.
pub fn batch_pool(pool: &PgPool, slots: u32, statement_timeout: Duration) -> PgPool {
    let statement_timeout = statement_timeout.as_millis().to_string();
    PgPoolOptions::new()
        .after_connect(move |conn, _| {
            let statement_timeout = statement_timeout.clone();
            Box::pin(async move {
                set_session(conn, &[("statement_timeout", &statement_timeout)]).await?;
                set_session(conn, super::PINNED_PLAN).await
            })
        })
        // One spare per slot: a connection goes back to the pool in a task of
        // its own after each batch, and with no spare the next batch waited
        // for that hop (−14 % create throughput, measured).
        .max_connections(2 * slots)
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(3))
        .connect_lazy_with((*pool.connect_options()).clone())
}

/// Session settings, one `SET` each (names and values are ours, not input).
async fn set_session(conn: &mut sqlx::PgConnection, settings: &[(&str, &str)]) -> sqlx::Result<()> {
    use sqlx::Executor;
    for (name, value) in settings {
        conn.execute(format!("set {name} = '{value}'").as_str()).await?;
    }
    Ok(())
}
