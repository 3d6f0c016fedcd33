//! Starting the next capture attempt of an import (SPEC §7 "Attempts"): the
//! one rule the sweeper (a timeout), the webhook (a retryable failure) and a
//! manual retry share. The caller owns the transaction, holds the row's lock
//! and has decided the import may move on.

use sqlx::PgConnection;

use crate::db::page_import::{self as db, NextAttempt};
use crate::domain::Nonce;
use crate::queue::messages::{capture_job_body, CaptureDestination, ViewportMessage};

/// Moves the import from `attempt` to `attempt + 1` with a fresh nonce,
/// records why in its history, and queues the new attempt with its message
/// for a capture slot (`service::dispatch` publishes it), all in the
/// caller's transaction. `None` when
/// the row is gone or not at `attempt`.
pub async fn start(
    conn: &mut PgConnection,
    destination: &CaptureDestination,
    id: &str,
    attempt: i32,
    next: NextAttempt<'_>,
) -> sqlx::Result<Option<i32>> {
    let Some(source) = db::capture_source(conn, id).await? else {
        return Ok(None);
    };
    let nonce = Nonce::generate();
    let body = capture_job_body(
        destination,
        id,
        attempt + 1,
        nonce.expose(),
        &source.source_url,
        ViewportMessage {
            width: source.viewport_width,
            height: source.viewport_height,
            device_scale_factor: source.device_scale_factor,
        },
        source.ready_selector.as_deref(),
    );
    let started = db::start_next_attempt(conn, id, attempt, &nonce, &next, &body).await?;
    Ok(started.then_some(attempt + 1))
}
