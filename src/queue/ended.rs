//! The capture messages whose attempt can no longer run (its import
//! deleted, its attempt ended or moved on while the message waited) are
//! never published (SPEC §12): the relay drops them before it sends.

use super::Inner;
use crate::db::outbox::{self, OutboxMessage};

impl Inner {
    /// Leaves out of `claimed`, and out of the outbox, the capture messages
    /// whose attempt can no longer run (`outbox::drop_ended_captures`). On a
    /// database error nothing is left out.
    pub(super) async fn drop_ended_captures(&self, claimed: &mut Vec<OutboxMessage>) {
        let ids: Vec<i64> = claimed.iter().map(|m| m.id).collect();
        let dropped = async {
            let mut conn = self.pool.acquire().await?;
            outbox::drop_ended_captures(&mut conn, &ids).await
        };
        match dropped.await {
            Ok(dropped) if !dropped.is_empty() => {
                tracing::info!(
                    messages = dropped.len(),
                    "not published: their imports were deleted or their attempts ended"
                );
                claimed.retain(|m| !dropped.contains(&m.id));
            }
            Ok(_) => {}
            Err(err) => self.relay_error("drop_ended", &err),
        }
    }
}
