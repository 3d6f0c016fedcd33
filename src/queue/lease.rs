//! Holding the leases of the messages a publisher is sending: a row's
//! `available_at` is its lease (`db::outbox`), which another publisher
//! respects until it runs out.

use std::future::Future;

use super::Inner;
use crate::db::outbox;

impl Inner {
    /// Runs `send` while extending the leases of `held` every third of a
    /// lease (`lease::renewing`), so a send slower than the lease does not
    /// let another publisher take the same messages.
    pub(super) async fn hold_leases<T>(&self, held: &[(i64, i32)], send: impl Future<Output = T>) -> T {
        crate::lease::renewing(self.lease / 3, send, || async {
            let extended = async {
                let mut conn = self.pool.acquire().await?;
                outbox::extend_leases(&mut conn, held, self.lease).await
            };
            if let Err(err) = extended.await {
                self.relay_error("extend_lease", &err);
            }
        })
        .await
    }
}
