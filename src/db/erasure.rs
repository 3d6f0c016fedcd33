//! The deletion ledger (`page_import_deletion`) and the erasure audit trail
//! (`page_import_erasure`) of SPEC §13, as migration `…_erasure.sql`
//! describes them. PostgreSQL's triggers write the ledger; these functions
//! claim, renew, release and finish its entries. The rules that use them are
//! in `service::erasure`.

use std::time::Duration;

use sqlx::PgConnection;

/// One ledger entry, claimed by a pass under `lease`.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub page_import_id: String,
    /// Seconds from the database's now to the end of the late writers'
    /// window (`CAPTURE_TIMEOUT_SECS` after the last dispatch); ≤ 0 once it
    /// is over or when the import was never dispatched.
    pub window_left_secs: f64,
    /// The late writes counted when it was claimed: a finish that finds
    /// another count does not finish.
    pub late_writes: i32,
    /// Failed erasures so far, for the backoff.
    pub failures: i32,
}

/// Claims up to `limit` due entries for `lease_for`, in the order they fell
/// due: a soft delete's once `erase_after` has passed, a row delete's at
/// once, none another pass holds, none waiting for a retry, and never one
/// whose row is live. Entries not yet due are not read. The
/// last dispatch is read again from a soft-deleted row's attempts, which
/// may have been dispatched after the delete (an outbox message in flight).
pub async fn claim(
    conn: &mut PgConnection,
    lease: &str,
    lease_for: Duration,
    erase_after: Duration,
    capture_timeout: Duration,
    limit: i64,
) -> sqlx::Result<Vec<Claimed>> {
    sqlx::query_as!(
        Claimed,
        r#"
        -- The due head of each kind, through its own index (migration
        -- `…_erasure_due_order.sql`), merged in the order they fell due
        -- (when that is: `…_erasure_due.sql`).
        with row_deleted as (
            select d.page_import_id, erasure_due_at(d.soft, d.recorded_at, d.deleted_at, $3) as due
            from page_import_deletion d
            where not d.soft
              and coalesce(d.retry_at, '-infinity') <= now()
              and coalesce(d.leased_until, '-infinity') < now()
              and not exists (select 1 from page_import p where p.id = d.page_import_id and p.deleted_at is null)
            order by d.recorded_at
            limit $5
            for update of d skip locked
        ), soft_deleted as (
            select d.page_import_id, erasure_due_at(d.soft, d.recorded_at, d.deleted_at, $3) as due
            from page_import_deletion d
            where d.soft and d.deleted_at <= erasure_soft_deleted_due_before($3)
              and coalesce(d.retry_at, '-infinity') <= now()
              and coalesce(d.leased_until, '-infinity') < now()
              and not exists (select 1 from page_import p where p.id = d.page_import_id and p.deleted_at is null)
            order by d.deleted_at
            limit $5
            for update of d skip locked
        ), due as (
            select page_import_id from (select * from row_deleted union all select * from soft_deleted) heads
            order by due
            limit $5
        )
        update page_import_deletion d
        set lease = $1, leased_until = now() + make_interval(secs => $2), picked_at = coalesce(d.picked_at, now())
        from due
        where d.page_import_id = due.page_import_id
        returning d.page_import_id,
                  coalesce(extract(epoch from greatest(
                      d.last_dispatched_at,
                      (select max(a.dispatched_at) from page_import_attempt a where a.page_import_id = d.page_import_id)
                  ) + make_interval(secs => $4) - now())::float8, 0) as "window_left_secs!",
                  d.late_writes, d.failures
        "#,
        lease,
        lease_for.as_secs_f64(),
        erase_after.as_secs_f64(),
        capture_timeout.as_secs_f64(),
        limit,
    )
    .fetch_all(conn)
    .await
}

/// Extends the lease of every entry the pass still holds under `lease`;
/// returns how many it holds (an entry whose lease ran out and that another
/// pass claimed is no longer among them).
pub async fn renew(conn: &mut PgConnection, lease: &str, lease_for: Duration) -> sqlx::Result<u64> {
    let renewed = sqlx::query!(
        "update page_import_deletion set leased_until = now() + make_interval(secs => $2)
         where lease = $1",
        lease,
        lease_for.as_secs_f64(),
    )
    .execute(conn)
    .await?;
    Ok(renewed.rows_affected())
}

/// Of `ids`, those the pass still holds under `lease` and whose row is not
/// live, read under the lock [`finish`] takes (an undo of the soft delete
/// in progress is waited for). What a pass deletes objects of.
pub async fn still_erasable(
    conn: &mut PgConnection,
    lease: &str,
    ids: &[String],
) -> sqlx::Result<std::collections::HashSet<String>> {
    let held = sqlx::query_scalar!(
        r#"
        select d.page_import_id from page_import_deletion d
        where d.lease = $1 and d.page_import_id = any($2)
          and not exists (select 1 from page_import p where p.id = d.page_import_id and p.deleted_at is null)
        order by d.page_import_id
        for update of d
        "#,
        lease,
        ids,
    )
    .fetch_all(conn)
    .await?;
    Ok(held.into_iter().collect())
}

/// One entry given back, not to be claimed again for `retry_in`: the late
/// writers' window is still open, an object appeared, or S3 failed
/// (`failed`). The objects already deleted are counted.
#[derive(Debug, Clone)]
pub struct Release {
    pub page_import_id: String,
    pub retry_in: Duration,
    pub objects_deleted: i64,
    pub failed: bool,
}

/// Gives entries back, in one statement (one commit for the batch), where
/// the pass still holds them.
pub async fn release(conn: &mut PgConnection, lease: &str, entries: &[Release]) -> sqlx::Result<()> {
    let ids: Vec<&str> = entries.iter().map(|e| e.page_import_id.as_str()).collect();
    let retry: Vec<f64> = entries.iter().map(|e| e.retry_in.as_secs_f64()).collect();
    let objects: Vec<i64> = entries.iter().map(|e| e.objects_deleted).collect();
    let failed: Vec<bool> = entries.iter().map(|e| e.failed).collect();
    sqlx::query!(
        "update page_import_deletion d
         set lease = null, leased_until = null, retry_at = now() + make_interval(secs => r.retry_in),
             objects_deleted = d.objects_deleted + r.objects, failures = d.failures + r.failed::int
         from unnest($2::text[], $3::float8[], $4::int8[], $5::bool[]) as r(id, retry_in, objects, failed)
         where d.page_import_id = r.id and d.lease = $1",
        lease,
        &ids as &[&str],
        &retry,
        &objects,
        &failed,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// An entry whose prefix was found empty after its late writers' window.
#[derive(Debug, Clone)]
pub struct Finish {
    pub page_import_id: String,
    /// The late writes its claim saw.
    pub late_writes: i32,
    pub objects_deleted: i64,
}

/// Finishes erasures, in one transaction for the batch: for each entry the
/// pass still holds and no late write came to since its claim (its ledger
/// row locked, so a late writer's note waits for the commit), the
/// soft-deleted row goes (its attempt history and `code2des` rows by the
/// cascade), then the ledger entry, and the audit row is written (or counts
/// the objects of one more erasure, after a late writer). Returns the ids
/// finished; the others stay for a later pass.
pub async fn finish(conn: &mut PgConnection, lease: &str, entries: &[Finish]) -> sqlx::Result<Vec<String>> {
    let ids: Vec<&str> = entries.iter().map(|e| e.page_import_id.as_str()).collect();
    let late: Vec<i32> = entries.iter().map(|e| e.late_writes).collect();
    let mut tx = sqlx::Connection::begin(conn).await?;
    let done: Vec<String> = sqlx::query_scalar!(
        r#"
        select d.page_import_id from page_import_deletion d
        join unnest($2::text[], $3::int4[]) as f(id, late_writes) on f.id = d.page_import_id
        where d.lease = $1 and d.late_writes = f.late_writes
        order by d.page_import_id
        for update of d
        "#,
        lease,
        &ids as &[&str],
        &late,
    )
    .fetch_all(&mut *tx)
    .await?;
    // The row first: its delete trigger writes the ledger entry deleted next.
    // Only a soft-deleted one: `claim` never takes a live row, and an undo
    // is refused once an erasure was picked up (the trigger).
    sqlx::query!(
        "delete from page_import where id = any($1) and deleted_at is not null",
        &done
    )
    .execute(&mut *tx)
    .await?;
    let objects: Vec<i64> = done
        .iter()
        .map(|id| {
            entries
                .iter()
                .find(|e| &e.page_import_id == id)
                .map_or(0, |e| e.objects_deleted)
        })
        .collect();
    sqlx::query!(
        r#"
        with gone as (
            delete from page_import_deletion d
            using unnest($1::text[], $2::int8[]) as f(id, objects)
            where d.page_import_id = f.id
            returning d.page_import_id, d.organization_id, d.project_id, d.deleted_at, d.deleted_by,
                      d.objects_deleted + f.objects as objects
        )
        insert into page_import_erasure as e
            (id, organization_id, project_id, deleted_at, deleted_by, erased_at, objects_deleted)
        select page_import_id, organization_id, project_id, deleted_at, deleted_by, now(), objects
        from gone
        on conflict (id) do update
            set erased_at = excluded.erased_at, objects_deleted = e.objects_deleted + excluded.objects_deleted
        "#,
        &done,
        &objects,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(done)
}

/// A callback arrived for an import that is deleted: being erased (its row
/// soft-deleted, or gone with its entry still in the ledger) or erased (its
/// audit row). Its entry counts the late write, or is written again from the
/// audit row, so that whatever that worker wrote is erased too. `false`
/// when the import is not known as deleted at all.
pub async fn note_late_writer(conn: &mut PgConnection, id: &str) -> sqlx::Result<bool> {
    let noted = sqlx::query!(
        r#"
        insert into page_import_deletion as d
            (page_import_id, organization_id, project_id, deleted_at, deleted_by, soft, late_writes)
        select page_import_id, organization_id, project_id, deleted_at, deleted_by, soft, 1
        from (
            select id as page_import_id, organization_id, project_id, deleted_at, deleted_by, true as soft, 1 as rank
            from page_import where id = $1 and deleted_at is not null
            union all
            select page_import_id, organization_id, project_id, deleted_at, deleted_by, soft, 2
            from page_import_deletion where page_import_id = $1
            union all
            select id, organization_id, project_id, deleted_at, deleted_by, false, 3
            from page_import_erasure where id = $1
            order by rank
            limit 1
        ) known
        on conflict (page_import_id) do update set late_writes = d.late_writes + 1, retry_at = null
        "#,
        id,
    )
    .execute(conn)
    .await?;
    Ok(noted.rows_affected() == 1)
}

/// Whether an import id is known: a row, or a ledger entry. What the orphan
/// sweep never erases.
pub async fn is_known(conn: &mut PgConnection, id: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"select exists (select 1 from page_import where id = $1)
               or exists (select 1 from page_import_deletion where page_import_id = $1) as "known!""#,
        id,
    )
    .fetch_one(conn)
    .await
}

/// The erasures that are due and not finished (SPEC §13).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pending {
    pub pending: i64,
    /// Of them, those whose last try failed (they wait for their backoff).
    pub failing: i64,
    /// How long the oldest has been due, in seconds; 0 when none is.
    pub oldest_seconds: f64,
}

/// Imports whose erasure is due and not finished, how many of them failed
/// their last try, and how long the oldest has been due.
pub async fn pending(conn: &mut PgConnection, erase_after: Duration) -> sqlx::Result<Pending> {
    let row = sqlx::query!(
        r#"
        select count(*) as "pending!",
               count(*) filter (where failures > 0) as "failing!",
               coalesce(extract(epoch from now() - min(due))::float8, 0) as "oldest!"
        from (
            select erasure_due_at(soft, recorded_at, deleted_at, $1) as due, failures from page_import_deletion
            where not soft
            union all
            select erasure_due_at(soft, recorded_at, deleted_at, $1), failures from page_import_deletion
            where soft and deleted_at <= erasure_soft_deleted_due_before($1)
        ) d
        "#,
        erase_after.as_secs_f64(),
    )
    .fetch_one(conn)
    .await?;
    Ok(Pending {
        pending: row.pending,
        failing: row.failing,
        oldest_seconds: row.oldest,
    })
}
