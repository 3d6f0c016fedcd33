//! The service's connections: the main pool, and those of the coalesced
//! statements (`coalesce`), each with its session settings.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};

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

/// The `application_name` of the coalesced statements' connections, as
/// `pg_stat_activity` shows them.
pub const APPLICATION_NAME: &str = "page-import coalesced";

/// The connections of one kind of coalesced statement (`coalesce`), with
/// their own statement timeout and pinned plans, one per batch in flight.
/// Not a `PgPool`: a pool pings every connection given back to it (sqlx
/// 0.8, `PoolConnection::return_to_pool`), a round trip after each batch,
/// which was 6 % of the service's CPU in P1 (`perf`, bench/results
/// `D-dispatch.md`), and needed a spare connection per slot so that the
/// next batch did not wait for it. A batch takes a connection
/// ([`take`](Self::take)) and gives it back only if its statement ended
/// cleanly; one that failed or was cancelled mid-statement is closed with
/// its batch, and the next batch connects anew (a connection broken by a
/// database restart fails one batch, 503, as on the main pool).
#[derive(Clone)]
pub struct BatchConnections {
    options: PgConnectOptions,
    statement_timeout: String,
    idle: Arc<Mutex<Vec<PgConnection>>>,
}

impl BatchConnections {
    /// Connecting as `pool` does, lazily.
    pub fn new(pool: &PgPool, statement_timeout: Duration) -> Self {
        Self {
            options: (*pool.connect_options()).clone().application_name(APPLICATION_NAME),
            statement_timeout: statement_timeout.as_millis().to_string(),
            idle: Arc::default(),
        }
    }

    /// An idle connection, or a new one.
    pub async fn take(&self) -> sqlx::Result<BatchConnection> {
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => {
                let mut conn = self.options.connect().await?;
                set_session(&mut conn, &[("statement_timeout", &self.statement_timeout)]).await?;
                set_session(&mut conn, super::PINNED_PLAN).await?;
                conn
            }
        };
        Ok(BatchConnection {
            conn,
            idle: Arc::clone(&self.idle),
        })
    }

    /// Closes the idle connections (those of batches in flight close as
    /// their batches end: nothing gives them back after this).
    pub async fn close(&self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner));
        for conn in idle {
            let _ = conn.close().await;
        }
    }
}

/// A connection a batch took: dropped, it closes; given back, the next
/// batch uses it.
pub struct BatchConnection {
    conn: PgConnection,
    idle: Arc<Mutex<Vec<PgConnection>>>,
}

impl BatchConnection {
    /// For the next batch: its statement ended cleanly.
    pub fn give_back(self) {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(self.conn);
    }
}

impl std::ops::Deref for BatchConnection {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl std::ops::DerefMut for BatchConnection {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}

/// Session settings, one `SET` each (names and values are ours, not input).
async fn set_session(conn: &mut sqlx::PgConnection, settings: &[(&str, &str)]) -> sqlx::Result<()> {
    use sqlx::Executor;
    for (name, value) in settings {
        conn.execute(format!("set {name} = '{value}'").as_str()).await?;
    }
    Ok(())
}
