//! The transactional outbox. A message row is deleted once SQS accepted it;
//! `available_at` is both the retry schedule and a lease held by whoever is
//! publishing it, so replicas never publish the same row at the same time.

use std::time::Duration;

use sqlx::PgConnection;

/// Its `Debug` leaves the body out: a capture job's body carries the nonce.
#[derive(Clone)]
pub struct OutboxMessage {
    pub id: i64,
    pub queue: String,
    pub body: String,
    pub message_group_id: String,
    pub deduplication_id: String,
    pub attempts: i32,
    /// The W3C `traceparent` sent as the SQS message attribute of that
    /// name (SPEC §9); `None` sends none.
    pub traceparent: Option<String>,
}

impl std::fmt::Debug for OutboxMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxMessage")
            .field("id", &self.id)
            .field("queue", &self.queue)
            .field("deduplication_id", &self.deduplication_id)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A message to write: its body and what SQS is told with it.
pub struct NewMessage {
    pub body: String,
    pub message_group_id: String,
    pub deduplication_id: String,
    pub traceparent: Option<String>,
}

/// Writes `messages` for `queue`, in order, leased for `lease` to the
/// after-commit publisher (the relay takes one whose publisher did not
/// send it once the lease ends). Returns the rows written, in order.
pub async fn insert(
    conn: &mut PgConnection,
    queue: &str,
    messages: &[NewMessage],
    lease: Duration,
) -> sqlx::Result<Vec<OutboxMessage>> {
    let bodies: Vec<&str> = messages.iter().map(|m| m.body.as_str()).collect();
    let groups: Vec<&str> = messages.iter().map(|m| m.message_group_id.as_str()).collect();
    let dedups: Vec<&str> = messages.iter().map(|m| m.deduplication_id.as_str()).collect();
    let traceparents: Vec<Option<&str>> = messages.iter().map(|m| m.traceparent.as_deref()).collect();
    sqlx::query_as!(
        OutboxMessage,
        r#"
        insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at, traceparent)
        select $1, m.body, m.message_group_id, m.deduplication_id,
               now() + make_interval(secs => $6::bigint / 1000.0), m.traceparent
        from unnest($2::text[], $3::text[], $4::text[], $5::text[]) with ordinality
            as m(body, message_group_id, deduplication_id, traceparent, ord)
        order by m.ord
        returning id, queue, body, message_group_id, deduplication_id, attempts, traceparent
        "#,
        queue,
        &bodies as &[&str],
        &groups as &[&str],
        &dedups as &[&str],
        &traceparents as &[Option<&str>],
        millis(lease),
    )
    .fetch_all(conn)
    .await
}

/// Claims up to `limit` due messages for `lease`, earliest due first,
/// skipping rows another replica is claiming right now. The inner select is
/// one range scan of `outbox_message_due_idx` that stops after `limit` rows,
/// and the update probes the primary key once per claimed row: the cost does
/// not grow with the backlog (`bench/claim.py`). Claiming clears `deferred`,
/// so the row is never made due under its publisher (`make_due`).
pub async fn claim_due(conn: &mut PgConnection, limit: i64, lease: Duration) -> sqlx::Result<Vec<OutboxMessage>> {
    sqlx::query_as!(
        OutboxMessage,
        r#"
        with due as materialized (
            select id from outbox_message
            where available_at <= now()
            order by available_at, id
            limit $1
            for update skip locked
        )
        update outbox_message o
        set available_at = now() + make_interval(secs => $2::bigint / 1000.0),
            attempts = o.attempts + 1,
            deferred = false
        from due
        where o.id = due.id
        returning o.id, o.queue, o.body, o.message_group_id, o.deduplication_id, o.attempts, o.traceparent
        "#,
        limit,
        millis(lease),
    )
    .fetch_all(conn)
    .await
}

/// Pushes the leases of messages still being published further out, so a
/// slow send does not let another publisher take them (and publish them a
/// second time). A row is extended only while it is still this publisher's:
/// claimed `attempts` times, as it was when this publisher took it, and not
/// already rescheduled by this pass (`deferred`: its backoff stands).
pub async fn extend_leases(conn: &mut PgConnection, held: &[(i64, i32)], lease: Duration) -> sqlx::Result<u64> {
    let ids: Vec<i64> = held.iter().map(|h| h.0).collect();
    let attempts: Vec<i32> = held.iter().map(|h| h.1).collect();
    let extended = sqlx::query!(
        r#"
        update outbox_message o
        set available_at = now() + make_interval(secs => $3::bigint / 1000.0)
        from unnest($1::int8[], $2::int4[]) as h(id, attempts)
        where o.id = h.id and o.attempts = h.attempts and not o.deferred
        "#,
        &ids,
        &attempts,
        millis(lease),
    )
    .execute(conn)
    .await?;
    Ok(extended.rows_affected())
}

/// SQS takes messages again: every message of `queue` waiting out a backoff,
/// and the given ones still under their writer's first lease (`attempts` 0:
/// no relay has claimed them), become due now instead of at the end of their
/// wait. A row some publisher holds right now is neither (a claim clears
/// `deferred` and counts an attempt), so nothing is published twice.
pub async fn make_due(conn: &mut PgConnection, queue: &str, unclaimed: &[i64]) -> sqlx::Result<u64> {
    let made = sqlx::query!(
        r#"
        update outbox_message
        set available_at = now(), deferred = false
        where id in (
            select id from outbox_message where queue = $1 and deferred
            union
            select id from outbox_message where id = any($2) and attempts = 0
        )
        and available_at > now()
        "#,
        queue,
        unclaimed,
    )
    .execute(conn)
    .await?;
    Ok(made.rows_affected())
}

/// What [`delete_published`] did.
#[derive(Debug, Default)]
pub struct Published {
    /// Rows deleted (fewer than asked: another publisher had taken some).
    pub deleted: u64,
    /// The imports whose current attempt's clock this started, and how long
    /// each attempt had waited since it started (SPEC §12's queue wait).
    pub dispatched: Vec<(String, f64)>,
}

/// Removes messages SQS has accepted, and starts the clock of the capture
/// attempts they carry (`dispatched_at`, set once: a duplicate publish does
/// not restart it). The capture message's deduplication id names the attempt
/// (`capture_message_attempt`, migration `…_capture_message_attempt.sql`;
/// a row that names none, written by hand or by an older release, stamps
/// nothing rather than failing the delete).
pub async fn delete_published(conn: &mut PgConnection, ids: &[i64]) -> sqlx::Result<Published> {
    let row = sqlx::query!(
        r#"
        with sent as (
            delete from outbox_message where id = any($1)
            returning queue, deduplication_id
        ), dispatched as (
            update page_import_attempt a
            set dispatched_at = now()
            from sent
            cross join lateral capture_message_attempt(sent.queue, sent.deduplication_id) m
            where a.page_import_id = m.page_import_id
              and a.attempt = m.attempt
              and a.dispatched_at is null
            returning a.page_import_id, extract(epoch from now() - a.started_at)::float8 as waited
        )
        select (select count(*) from sent) as "deleted!",
               coalesce((select array_agg(page_import_id) from dispatched), '{}') as "ids!: Vec<String>",
               coalesce((select array_agg(waited) from dispatched), '{}') as "waits!: Vec<f64>"
        "#,
        ids
    )
    .fetch_one(conn)
    .await?;
    Ok(Published {
        deleted: row.deleted as u64,
        dispatched: row.ids.into_iter().zip(row.waits).collect(),
    })
}

/// A capture message SQS refused, out of the outbox: the attempt it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedAttempt {
    pub outbox_id: i64,
    pub page_import_id: String,
    pub attempt: i32,
}

/// Messages SQS refused as the sender's fault (SPEC §12) leave the outbox
/// (they are never retried). Returns the capture attempts they named
/// (`capture_message_attempt`), for `service::dispatch_rejected` to end.
pub async fn delete_refused(conn: &mut PgConnection, ids: &[i64]) -> sqlx::Result<Vec<RefusedAttempt>> {
    sqlx::query_as!(
        RefusedAttempt,
        r#"
        with refused as (
            delete from outbox_message where id = any($1)
            returning id, queue, deduplication_id
        )
        select r.id as "outbox_id!", m.page_import_id as "page_import_id!", m.attempt as "attempt!"
        from refused r
        cross join lateral capture_message_attempt(r.queue, r.deduplication_id) m
        "#,
        ids,
    )
    .fetch_all(conn)
    .await
}

/// Of the claimed messages `ids`, removes those whose capture attempts can
/// no longer run (all of a set's): their import was deleted (soft, or its row gone and in
/// the erasure ledger) or its attempt ended or moved on while the message
/// waited (an SQS outage). They are never published (SPEC §12). A message
/// that names no attempt, or an import never known here, is left to be
/// published. Returns the ids removed.
pub async fn drop_ended_captures(conn: &mut PgConnection, ids: &[i64]) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar!(
        r#"
        with named as (
            select o.id, m.page_import_id as import_id, m.attempt
            from outbox_message o
            cross join lateral capture_message_attempt(o.queue, o.deduplication_id) m
            where o.id = any($1)
        ), judged as (
            select n.id,
                   exists (
                       select 1 from page_import p
                       where p.id = n.import_id
                         and (not page_import_running(p.status, p.deleted_at) or p.attempt <> n.attempt)
                   )
                   or exists (select 1 from page_import_deletion d where d.page_import_id = n.import_id) as ended
            from named n
        ), ended as (
            -- A set's message names its members' attempts: dropped only
            -- when none of them can run any more (SPEC §15).
            select j.id from judged j group by j.id having bool_and(j.ended)
        )
        delete from outbox_message o using ended e where o.id = e.id
        returning o.id
        "#,
        ids,
    )
    .fetch_all(conn)
    .await
}

/// Schedules another try for each message after its own delay, keeping its
/// last error for operators: one statement for the whole failed batch. The
/// rows are `deferred`: `make_due` ends their wait once SQS takes messages.
pub async fn reschedule(conn: &mut PgConnection, retries: &[(i64, Duration, &str)]) -> sqlx::Result<()> {
    let ids: Vec<i64> = retries.iter().map(|r| r.0).collect();
    let delays: Vec<i64> = retries.iter().map(|r| millis(r.1)).collect();
    let errors: Vec<&str> = retries.iter().map(|r| r.2).collect();
    sqlx::query!(
        r#"
        update outbox_message o
        set available_at = now() + make_interval(secs => r.delay_ms / 1000.0),
            last_error = left(r.error, 1000),
            deferred = true
        from unnest($1::int8[], $2::int8[], $3::text[]) as r(id, delay_ms, error)
        where o.id = r.id
        "#,
        &ids,
        &delays,
        &errors as &[&str],
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Age of the oldest message not yet accepted by SQS (0 when none): one
/// primary-key probe, cheap at any backlog.
pub async fn oldest_age(conn: &mut PgConnection) -> sqlx::Result<f64> {
    let age = sqlx::query_scalar!(
        r#"select extract(epoch from now() - created_at)::float8 as "age!"
           from outbox_message order by id limit 1"#
    )
    .fetch_optional(conn)
    .await?;
    Ok(age.unwrap_or(0.0).max(0.0))
}

/// Messages not yet accepted by SQS. Reads every row: see `BACKLOG_EVERY`.
pub async fn backlog(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"select count(*) as "count!" from outbox_message"#)
        .fetch_one(conn)
        .await
}

#[cfg(test)]
mod tests {
    #[test]
    fn debug_leaves_the_body_and_its_nonce_out() {
        let message = super::OutboxMessage {
            id: 7,
            queue: "page_import".into(),
            body: r#"{"nonce":"s3cr3t-nonce"}"#.into(),
            message_group_id: "1".into(),
            deduplication_id: "x:1".into(),
            attempts: 0,
            traceparent: None,
        };
        let printed = format!("{message:?}");
        assert!(!printed.contains("s3cr3t"), "{printed}");
        assert!(printed.contains("x:1"), "{printed}");
    }
}
