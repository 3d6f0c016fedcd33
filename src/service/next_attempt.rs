//! Starting the next capture attempt of an import (SPEC §7 "Attempts"): the
//! one rule the sweeper (a timeout), the webhook (a retryable failure) and a
//! manual retry share. The caller owns the transaction, holds the row's lock
//! and has decided the import may move on.
//!
//! It also decides the new attempt's trace (SPEC §9): a manual retry
//! continues the retry request's trace; a re-dispatch (a timeout, a
//! retryable failure) starts a trace of its own, linked to the one that
//! created the import.

use page_import_platform::telemetry::trace_context;
use sqlx::PgConnection;
use tracing::Instrument;

use crate::db::page_import::{self as db, NextAttempt, NextStarted};
use crate::domain::lifecycle::AttemptReason;
use crate::domain::Nonce;

/// Moves the import from `attempt` to `attempt + 1` with a fresh nonce,
/// records why in its history, and queues the new attempt for a capture
/// slot (`service::dispatch` writes and publishes its message), all in the
/// caller's transaction, admitted as `next.max_queued` says. `None` when
/// the row is gone or not at `attempt`; a refused attempt writes no import
/// or attempt. Not instrumented: a manual retry's attempt carries on the caller's span
/// (`Span::current()`), which a span of this function's own (a `debug`
/// one, not exported) would hide.
pub async fn start(
    conn: &mut PgConnection,
    id: &str,
    attempt: i32,
    next: NextAttempt<'_>,
) -> sqlx::Result<Option<NextStarted>> {
    let nonce = Nonce::generate();
    // A manual retry is a request: its trace goes on. Anything else (a
    // timeout, a retryable failure) is a re-dispatch of the service's own.
    let trace = if next.reason == AttemptReason::Manual {
        tracing::Span::current()
    } else {
        let root = tracing::info_span!(parent: None, "redispatch", page_import_id = %id, attempt = attempt + 1,
                                       reason = next.reason.as_str());
        trace_context::link(&root, db::created_traceparent(conn, id).await?.as_deref());
        root
    };
    let traceparent = trace_context::of(&trace);
    let started = db::start_next_attempt(conn, id, attempt, &nonce, &next, traceparent.as_deref())
        .instrument(trace.clone())
        .await?;
    if let Some(NextStarted::Queued(queued)) = started {
        trace.in_scope(|| {
            tracing::info!(page_import_id = %id, attempt = queued, reason = next.reason.as_str(), "attempt queued");
        });
    }
    Ok(started)
}
