//! The create and the read by id, coalesced (the engine: `coalesce.rs`):
//! many requests, one statement of `db::page_import`.

use page_import_platform::telemetry::trace_context;
use sqlx::PgConnection;
use tracing::Instrument;

use crate::coalesce::{fan_out, CoalesceError, Coalescer, Limits, MAX_BATCH};
use crate::db::database_unavailable;
use crate::db::page_import::{self, PageImport, PendingCreate};
use crate::db::pool::{leaves_connection_fit, BatchConnections};

/// Coalesced reads by id: `(id, actor)` → the row if the actor may see it.
pub type Reads = Coalescer<(String, String), Option<PageImport>>;
/// Coalesced creates without an idempotency key: the row and its outbox id,
/// or `None` when the project is not visible.
pub type Creates = Coalescer<PendingCreate, Option<PageImport>>;

pub fn reads(connections: BatchConnections, concurrency: usize, limits: Limits) -> Reads {
    Coalescer::new("read_page_import", concurrency, MAX_BATCH, limits, move |batch| {
        let connections = connections.clone();
        async move { run_reads(&connections, batch).await }
    })
}

/// Creates admitted against `max_queued` (`ORG_MAX_QUEUED`).
pub fn creates(connections: BatchConnections, concurrency: usize, limits: Limits, max_queued: i64) -> Creates {
    Coalescer::new("create_page_import", concurrency, MAX_BATCH, limits, move |batch| {
        let connections = connections.clone();
        async move { run_creates(&connections, batch, max_queued).await }
    })
}

/// One batch of reads as one statement.
pub async fn run_reads(
    connections: &BatchConnections,
    batch: Vec<(String, String)>,
) -> Vec<Result<Option<PageImport>, CoalesceError>> {
    let n = batch.len();
    let (ids, actors): (Vec<String>, Vec<String>) = batch.into_iter().unzip();
    let mut conn = match connections.take().await {
        Ok(conn) => conn,
        Err(err) => return fan_out(err, n),
    };
    match page_import::find_visible_many(&mut conn, &ids, &actors).await {
        Ok(rows) => {
            conn.give_back();
            rows.into_iter().map(Ok).collect()
        }
        Err(err) => {
            if leaves_connection_fit(&err) {
                conn.give_back();
            }
            fan_out(err, n)
        }
    }
}

/// One batch of creates as one statement. One bad create must not fail the
/// others: a batch that failed for any reason but an unavailable database is
/// retried one create at a time.
///
/// Its span is in the trace of its one create, or, shared by several, a
/// trace of its own linked to each of theirs (SPEC §9).
pub async fn run_creates(
    connections: &BatchConnections,
    batch: Vec<PendingCreate>,
    max_queued: i64,
) -> Vec<Result<Option<PageImport>, CoalesceError>> {
    let span = tracing::info_span!(parent: None, "db.create_batch", creates = batch.len());
    match batch.as_slice() {
        [one] => {
            trace_context::continue_from(&span, one.traceparent.as_deref());
        }
        many => many
            .iter()
            .for_each(|c| trace_context::link(&span, c.traceparent.as_deref())),
    }
    run_creates_in(connections, batch, max_queued).instrument(span).await
}

async fn run_creates_in(
    connections: &BatchConnections,
    batch: Vec<PendingCreate>,
    max_queued: i64,
) -> Vec<Result<Option<PageImport>, CoalesceError>> {
    let mut conn = match connections.take().await {
        Ok(conn) => conn,
        Err(err) => return fan_out(err, batch.len()),
    };
    match page_import::insert_many_queued(&mut conn, &batch, max_queued).await {
        Ok(rows) => {
            conn.give_back();
            rows.into_iter().map(Ok).collect()
        }
        Err(err) if batch.len() > 1 && !database_unavailable(&err) => {
            tracing::warn!(error = %err, size = batch.len(), "coalesced create failed; retrying one by one");
            let mut out = Vec::with_capacity(batch.len());
            let mut fit = true;
            for c in &batch {
                let one = insert_one(&mut conn, c, max_queued).await;
                fit &= one.as_ref().err().is_none_or(leaves_connection_fit);
                out.push(one.map_err(CoalesceError::from));
            }
            if fit {
                conn.give_back();
            }
            out
        }
        Err(err) => {
            if leaves_connection_fit(&err) {
                conn.give_back();
            }
            fan_out(err, batch.len())
        }
    }
}

async fn insert_one(conn: &mut PgConnection, c: &PendingCreate, max_queued: i64) -> sqlx::Result<Option<PageImport>> {
    let mut one = page_import::insert_many_queued(conn, std::slice::from_ref(c), max_queued).await?;
    Ok(one.pop().flatten())
}
