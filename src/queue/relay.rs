//! The relay: publishes what the after-commit publisher did not (an SQS
//! outage, a crash after commit, a saturated publisher). Each pass claims
//! due messages for a lease (`db::outbox::claim_due`), drops the capture
//! messages whose attempt can no longer run (`ended.rs`), and sends the
//! rest in batches, rescheduling what failed with backoff.

use futures::StreamExt;

use super::{Inner, QueueName, BATCH_SIZE, MAX_BATCHES_IN_FLIGHT};
use crate::db::outbox::{self, OutboxMessage};

const CLAIM_LIMIT: i64 = 100;

impl Inner {
    pub(super) async fn relay_once(&self) -> anyhow::Result<usize> {
        let claimed = async {
            let mut conn = self.pool.acquire().await?;
            outbox::claim_due(&mut conn, CLAIM_LIMIT, self.lease).await
        };
        let mut claimed = claimed.await.inspect_err(|err| self.relay_error("claim", err))?;
        if claimed.is_empty() {
            return Ok(0);
        }
        self.drop_ended_captures(&mut claimed).await;
        if claimed.is_empty() {
            return Ok(0);
        }
        let held: Vec<_> = claimed.iter().map(|m| (m.id, m.attempts)).collect();
        let groups = self.batches_by_queue(claimed);
        // Every claimed row stays leased until the whole pass is done, however
        // many rounds its sends take.
        let pass = futures::stream::iter(groups)
            .map(|(queue, batch)| async move { (queue, self.publish_batch(self.lane(queue), batch, true).await) })
            .buffer_unordered(MAX_BATCHES_IN_FLIGHT)
            .collect::<Vec<_>>();
        let outcomes = self.hold_leases(&held, pass).await;
        let mut published = 0;
        let mut reachable = Vec::new();
        for (queue, outcome) in outcomes {
            if let Ok(outcome) = outcome {
                published += outcome.sent;
                if outcome.sent > 0 && !reachable.contains(&queue) {
                    reachable.push(queue);
                }
            }
        }
        // SQS took this queue's messages: the rest waiting out a backoff go now.
        for queue in reachable {
            self.release_deferred(self.lane(queue)).await;
        }
        Ok(published)
    }

    /// The claimed messages in batches of at most [`BATCH_SIZE`], one queue each.
    fn batches_by_queue(&self, claimed: Vec<OutboxMessage>) -> Vec<(QueueName, Vec<OutboxMessage>)> {
        let mut by_queue: [Vec<OutboxMessage>; 2] = [Vec::new(), Vec::new()];
        for message in claimed {
            match QueueName::parse(&message.queue) {
                Some(queue) => by_queue[queue as usize].push(message),
                // The table's check constraint makes this unreachable.
                None => self.relay_error("unknown_queue", &message.queue),
            }
        }
        let mut groups = Vec::new();
        for (queue, mine) in QueueName::ALL.into_iter().zip(by_queue) {
            groups.extend(mine.chunks(BATCH_SIZE).map(|chunk| (queue, chunk.to_vec())));
        }
        groups
    }
}
