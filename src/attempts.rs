//! Starting the next capture attempt of an import (SPEC §7 "Attempts"): the
//! one rule the sweeper (a timeout), the webhook (a retryable failure) and a
//! manual retry share. The caller owns the transaction.

use sqlx::PgConnection;

use crate::config::Config;
use crate::db::page_import::{self as db, ResumeFrom};
use crate::domain::Nonce;
use crate::queue::messages::{capture_job_body, ViewportMessage};

/// Moves the import from `attempt` to `attempt + 1` with a fresh nonce and
/// writes the new attempt's queue message (the relay publishes it), all in
/// the caller's transaction. `None` when the row is no longer at `attempt`
/// in the state `from` expects, or is deleted: someone else moved it first.
pub async fn start_next(
    conn: &mut PgConnection,
    config: &Config,
    id: &str,
    attempt: i32,
    from: ResumeFrom<'_>,
    actor: &str,
) -> sqlx::Result<Option<i32>> {
    let Some(source) = db::capture_source(conn, id).await? else {
        return Ok(None);
    };
    let next = attempt + 1;
    let nonce = Nonce::generate();
    let body = capture_job_body(
        config,
        id,
        next,
        nonce.expose(),
        &source.source_url,
        ViewportMessage {
            width: source.viewport_width,
            height: source.viewport_height,
            device_scale_factor: source.device_scale_factor,
        },
        source.ready_selector.as_deref(),
    );
    let queued = db::start_next_attempt(conn, id, attempt, from, &nonce, actor, &body).await?;
    Ok(queued.map(|_| next))
}
