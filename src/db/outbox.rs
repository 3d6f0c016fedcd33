//! The transactional outbox. A message row is deleted once SQS accepted it;
//! `available_at` is both the retry schedule and a lease held by whoever is
//! publishing it, so replicas never publish the same row at the same time.

use std::time::Duration;

use sqlx::PgConnection;

#[derive(Debug, Clone)]
pub struct OutboxMessage {
    pub id: i64,
    pub queue: String,
    pub body: String,
    pub message_group_id: String,
    pub deduplication_id: String,
    pub attempts: i32,
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Claims up to `limit` due messages for `lease`, skipping rows another
/// replica is claiming right now.
pub async fn claim_due(conn: &mut PgConnection, limit: i64, lease: Duration) -> sqlx::Result<Vec<OutboxMessage>> {
    sqlx::query_as!(
        OutboxMessage,
        r#"
        update outbox_message o
        set available_at = now() + make_interval(secs => $2::bigint / 1000.0),
            attempts = o.attempts + 1
        where o.id in (
            select id from outbox_message
            where available_at <= now()
            order by id
            limit $1
            for update skip locked
        )
        returning o.id, o.queue, o.body, o.message_group_id, o.deduplication_id, o.attempts
        "#,
        limit,
        millis(lease),
    )
    .fetch_all(conn)
    .await
}

/// Removes messages SQS has accepted.
pub async fn delete_published(conn: &mut PgConnection, ids: &[i64]) -> sqlx::Result<u64> {
    let result = sqlx::query!("delete from outbox_message where id = any($1)", ids)
        .execute(conn)
        .await?;
    Ok(result.rows_affected())
}

/// Schedules another try after `delay`, keeping the last error for operators.
pub async fn reschedule(conn: &mut PgConnection, ids: &[i64], delay: Duration, error: &str) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        update outbox_message
        set available_at = now() + make_interval(secs => $2::bigint / 1000.0),
            last_error = left($3, 1000)
        where id = any($1)
        "#,
        ids,
        millis(delay),
        error,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Messages not yet accepted by SQS.
pub async fn backlog(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"select count(*) as "count!" from outbox_message"#)
        .fetch_one(conn)
        .await
}
