//! The service's connections: the main pool, and those of the coalesced
//! statements (`coalesce`), each with its session settings.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

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

/// How long a coalesced statement's connection may stay idle, and live,
/// before it is closed rather than used (sqlx's pool defaults): a server,
/// a proxy or a NAT that drops idle or old connections then fails no batch.
const BATCH_IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
const BATCH_MAX_LIFETIME: Duration = Duration::from_secs(30 * 60);

/// The connections of one kind of coalesced statement (`coalesce`), with
/// their own statement timeout and pinned plans, one per batch in flight.
/// Not a `PgPool`: a pool pings every connection given back to it (sqlx
/// 0.8, `PoolConnection::return_to_pool`), a round trip after each batch,
/// which was 6 % of the service's CPU in P1 (`bench/results/D-dispatch.md`),
/// and needed a spare connection per slot so that the next batch did not
/// wait for it. A batch takes a connection ([`take`](Self::take)) and gives
/// it back when its statement ended with an answer from the server (rows,
/// or the server's own error); one that met anything else (an I/O error, a
/// connection the server ended) or was cancelled mid-statement is closed
/// with its batch, and the next batch connects anew (a broken connection
/// fails one batch, 503, as on the main pool). Idle or old connections are
/// closed instead of used ([`BATCH_IDLE_TIMEOUT`], [`BATCH_MAX_LIFETIME`]).
#[derive(Clone)]
pub struct BatchConnections {
    options: PgConnectOptions,
    statement_timeout: String,
    shared: Arc<Mutex<Shared>>,
}

#[derive(Default)]
struct Shared {
    idle: Vec<Idle>,
    closed: bool,
}

struct Idle {
    conn: PgConnection,
    opened: Instant,
    since: Instant,
}

impl BatchConnections {
    /// Connecting as `pool` does, lazily.
    pub fn new(pool: &PgPool, statement_timeout: Duration) -> Self {
        Self {
            options: (*pool.connect_options()).clone().application_name(APPLICATION_NAME),
            statement_timeout: statement_timeout.as_millis().to_string(),
            shared: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most recently idle connection still fit for use, or a new one;
    /// an error once [`close`](Self::close)d.
    pub async fn take(&self) -> sqlx::Result<BatchConnection> {
        let (fresh, stale) = {
            let mut shared = self.lock();
            if shared.closed {
                return Err(sqlx::Error::PoolClosed);
            }
            let now = Instant::now();
            let (fit, stale): (Vec<Idle>, Vec<Idle>) = std::mem::take(&mut shared.idle).into_iter().partition(|c| {
                now.duration_since(c.since) < BATCH_IDLE_TIMEOUT && now.duration_since(c.opened) < BATCH_MAX_LIFETIME
            });
            shared.idle = fit;
            (shared.idle.pop(), stale)
        };
        for old in stale {
            let _ = old.conn.close().await;
        }
        let (conn, opened) = match fresh {
            Some(idle) => (idle.conn, idle.opened),
            None => (self.connect().await?, Instant::now()),
        };
        Ok(BatchConnection {
            conn,
            opened,
            home: self.clone(),
        })
    }

    async fn connect(&self) -> sqlx::Result<PgConnection> {
        let mut conn = self.options.connect().await?;
        set_session(&mut conn, &[("statement_timeout", &self.statement_timeout)]).await?;
        set_session(&mut conn, super::PINNED_PLAN).await?;
        Ok(conn)
    }

    /// Closes the idle connections, and every one given back after this
    /// (those of batches in flight close as their batches end).
    pub async fn close(&self) {
        let idle = {
            let mut shared = self.lock();
            shared.closed = true;
            std::mem::take(&mut shared.idle)
        };
        for idle in idle {
            let _ = idle.conn.close().await;
        }
    }
}

/// A connection a batch took: dropped, it closes; given back, the next
/// batch uses it.
pub struct BatchConnection {
    conn: PgConnection,
    opened: Instant,
    home: BatchConnections,
}

impl BatchConnection {
    /// For the next batch: the statements on it ended with the server's
    /// answer ([`leaves_connection_fit`]).
    pub fn give_back(self) {
        let mut shared = self.home.lock();
        if !shared.closed {
            shared.idle.push(Idle {
                conn: self.conn,
                opened: self.opened,
                since: Instant::now(),
            });
        }
    }
}

/// Whether a connection whose statement failed with `err` is fit for the
/// next batch: the server's own error (a constraint, a timeout it enforced)
/// leaves it so; anything on the way to or from the server does not, nor a
/// server error that says it is going away (`database_unavailable`).
pub fn leaves_connection_fit(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(_)) && !super::database_unavailable(err)
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
