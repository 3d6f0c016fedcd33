//! The capture backlog (SPEC §12): queued attempts (attempt rows whose
//! `queued_seq` is set, migration `…_capture_queue_on_import.sql`), the
//! slots of attempts in flight (`capture_slot`) and each organization's
//! place in the round robin (`capture_org`), as migration
//! `…_capture_backlog.sql` describes them. The rules that use them are in
//! `service::dispatch`.

use sqlx::PgConnection;

use crate::db::label::Label;
use crate::domain::reader::{ColorScheme, Consent};
use crate::queue::messages::{CaptureSettings, ViewportMessage};

/// The advisory lock one dispatch pass holds for its transaction: passes on
/// every replica take turns, so what one counts is not changing under it.
const DISPATCH_LOCK: i64 = 0x7061_6765_5f69_6d70; // "page_imp"

/// Admission (SPEC §12), in one place: the CTE `admission` of each
/// statement that queues attempts (a create's, `page_import::
/// insert_many_queued`; a next attempt's, `page_import::start_next_attempt`),
/// spliced in between the statement's pieces: `admitting!(m!([before],
/// [after], …))` is `m!([before, ADMISSION, after], …)`, where `m` takes a
/// statement in pieces (`query_page_import!`, `db::query_pieces!`).
///
/// It reads the statement's CTE `wanted(organization_id, n)` (each
/// organization once: an upsert cannot touch a row twice) and its `$1`,
/// `ORG_MAX_QUEUED` (null: admit every one, a re-dispatch of an import
/// admitted already). It locks each organization's backlog row
/// (`capture_org`, made when missing) in organization order until the
/// commit, so concurrent statements cannot together pass the limit; admits
/// of each organization's `n` as many as keep its queued count at most
/// `$1`, counts them as queued in the same update, and answers
/// `(organization_id, admitted, queued, dispatch_interval_secs)`. The
/// statement then queues exactly the admitted attempts; whatever takes an
/// attempt off the queue uncounts it (`capture_dequeued`, migration
/// `…_capture_queue_on_import.sql`).
///
/// SQL written into each statement, not a function they call: as a
/// PL/pgSQL function (`capture_admit`, which this replaces) it was 4 % of
/// a create's throughput in `pgbench`, one call, its result set and a plan
/// of its own per statement. `admitted` is a scratch column: an upsert's
/// `returning` sees the row as it became, not what was added to it.
macro_rules! admitting {
    ($query:ident!([$($before:literal),+], [$($after:literal),+] $($rest:tt)*)) => {
        $query!([$($before,)+ r#"admission as (
            insert into capture_org as c (organization_id, queued, has_queued, admitted)
            select w.organization_id, least(w.n, $1::int8), least(w.n, $1::int8) > 0, w.n
            from wanted w
            order by w.organization_id
            on conflict (organization_id) do update
            set queued = c.queued + least(excluded.admitted, greatest(0, coalesce($1::int8 - c.queued, excluded.admitted))),
                has_queued = c.queued + least(excluded.admitted, greatest(0, coalesce($1::int8 - c.queued, excluded.admitted))) > 0,
                admitted = least(excluded.admitted, greatest(0, coalesce($1::int8 - c.queued, excluded.admitted)))
            returning c.organization_id, least(c.admitted, $1::int8)::int as admitted, c.queued, c.dispatch_interval_secs
        )"#, $($after),+] $($rest)*)
    };
}
pub(crate) use admitting;

/// An organization's backlog as admission sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrgBacklog {
    /// Its queued attempts.
    pub queued: i32,
    /// Seconds between its recent dispatches, smoothed; `None` before its second.
    pub dispatch_interval_secs: Option<f64>,
}

/// The organization's backlog as it is now, without a lock: what a refused
/// create answers with (its `Retry-After`).
pub async fn org_backlog(conn: &mut PgConnection, organization_id: i64) -> sqlx::Result<Option<OrgBacklog>> {
    sqlx::query_as!(
        OrgBacklog,
        "select queued, dispatch_interval_secs from capture_org where organization_id = $1",
        organization_id,
    )
    .fetch_optional(conn)
    .await
}

/// Takes the dispatch lock for the caller's transaction, waiting for a pass
/// of another replica to commit.
pub async fn lock_dispatch(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query!("select pg_advisory_xact_lock($1)", DISPATCH_LOCK)
        .execute(conn)
        .await?;
    Ok(())
}

/// Releases the slot of every attempt that is no longer its import's live
/// `processing` attempt: it ended (a terminal callback, the sweeper's
/// timeout), the next attempt replaced it, or the import was deleted. This
/// is the one place the end of an attempt frees its slot, whichever path
/// ended it. Reads only the slots (at most about `CAPTURE_MAX_IN_FLIGHT`
/// rows, plus those ended since the last pass) and each one's import by
/// its key: a scalar subquery, which the planner cannot turn into a join
/// (an anti-join hashed every `processing` import, 3 ms a pass at 18 000
/// of them, once their statistics were stale).
pub async fn release_ended_slots(conn: &mut PgConnection) -> sqlx::Result<u64> {
    let released = sqlx::query!(
        r#"
        delete from capture_slot s
        where not coalesce((
            select p.attempt = s.attempt and page_import_running(p.status, p.deleted_at)
            from page_import p
            where p.id = s.page_import_id
        ), false)
        "#
    )
    .execute(conn)
    .await?;
    Ok(released.rows_affected())
}

/// Attempts in flight, per organization: an import set's first attempts,
/// which share one slot (SPEC §15: `capture_slot.set_id`), count once.
pub async fn in_flight_by_org(conn: &mut PgConnection) -> sqlx::Result<Vec<(i64, i64)>> {
    let rows = sqlx::query!(
        r#"select organization_id, count(distinct coalesce(set_id, page_import_id)) as "n!"
           from capture_slot group by organization_id"#
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.organization_id, r.n)).collect())
}

/// A queued attempt [`pick`] chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picked {
    pub page_import_id: String,
    pub attempt: i32,
    pub organization_id: i64,
}

/// Chooses up to `free` queued attempts in round-robin order: the
/// organizations with queued attempts, least recently dispatched first,
/// each with no more than its room under `per_org` (`busy` names the
/// organizations with attempts in flight, and how many), its attempts oldest
/// first; one attempt per organization per round. Of an import set's first
/// attempts only the first still queued is picked: it leads the others into
/// the set's one message (`service::dispatch`, SPEC §15). Reads the round robin's
/// index for at most `free` organizations (and the full ones it skips, at
/// most `busy.len()`), and each one's oldest attempts by index: the cost
/// does not grow with the backlog.
pub async fn pick(conn: &mut PgConnection, free: i64, per_org: i64, busy: &[(i64, i64)]) -> sqlx::Result<Vec<Picked>> {
    let (busy_orgs, busy_counts): (Vec<i64>, Vec<i64>) = busy.iter().copied().unzip();
    let rows = sqlx::query!(
        r#"
        with busy as (
            select * from unnest($3::int8[], $4::int8[]) as b(organization_id, in_flight)
        ), orgs as materialized (
            select c.organization_id, c.last_turn, $2::int8 - coalesce(b.in_flight, 0) as room
            from capture_org c
            left join busy b on b.organization_id = c.organization_id
            where c.has_queued and coalesce(b.in_flight, 0) < $2::int8
            order by c.last_turn, c.organization_id
            limit $1
        )
        select q.page_import_id, q.attempt, o.organization_id as "organization_id!"
        from orgs o
        cross join lateral (
            select q.page_import_id, q.attempt, q.queued_seq from page_import_attempt q
            where q.organization_id = o.organization_id and q.queued_seq is not null
              and not (q.attempt = 1 and exists (
                  select 1 from page_import_set_member m
                  join page_import_set_member e on e.set_id = m.set_id and e.ord < m.ord
                  join page_import_attempt ea on ea.page_import_id = e.page_import_id and ea.attempt = 1
                  where m.page_import_id = q.page_import_id and ea.queued_seq is not null
              ))
            order by q.queued_seq
            limit least(o.room, $1)
        ) q
        order by row_number() over (partition by o.organization_id order by q.queued_seq), o.last_turn, o.organization_id
        limit $1
        "#,
        free,
        per_org,
        &busy_orgs,
        &busy_counts,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Picked {
            page_import_id: r.page_import_id,
            attempt: r.attempt,
            organization_id: r.organization_id,
        })
        .collect())
}

/// Locks the organizations' rows in id order (the order creates lock them
/// in), before [`dispatch`] writes them.
pub async fn lock_orgs(conn: &mut PgConnection, organization_ids: &[i64]) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        select organization_id from capture_org
        where organization_id = any($1)
        order by organization_id
        for no key update
        "#,
        organization_ids,
    )
    .fetch_all(conn)
    .await?;
    Ok(())
}

/// The fields of an import a capture message is built from
/// (`db::capture::dispatch` reads them).
pub struct CaptureSource {
    pub source_url: String,
    pub viewport_width: i32,
    pub viewport_height: i32,
    pub device_scale_factor: f32,
    pub viewport_mobile: bool,
    pub ready_selector: Option<String>,
    pub color_scheme: Label<ColorScheme>,
    pub locale: String,
    pub time_zone: String,
    pub consent: Label<Consent>,
}

impl CaptureSource {
    /// The settings the import's every attempt captures with.
    pub fn settings(&self) -> CaptureSettings<'_> {
        CaptureSettings {
            source_url: &self.source_url,
            viewport: ViewportMessage {
                width: self.viewport_width,
                height: self.viewport_height,
                device_scale_factor: self.device_scale_factor,
                mobile: self.viewport_mobile,
            },
            ready_selector: self.ready_selector.as_deref(),
            color_scheme: self.color_scheme.0,
            locale: &self.locale,
            time_zone: &self.time_zone,
            consent: self.consent.0,
        }
    }
}

/// An attempt [`dispatch`] took from the queue: what its message is built
/// from (`service::dispatch`).
pub struct Taken {
    pub id: String,
    pub attempt: i32,
    pub project_id: i64,
    pub nonce: String,
    /// The attempt's trace (SPEC §9), which its message carries.
    pub traceparent: Option<String>,
    pub source: CaptureSource,
}

/// What [`dispatch`] did with the picked attempts.
pub struct Dispatched {
    /// The attempts that took a slot, in order, for their outbox messages.
    pub taken: Vec<Taken>,
    /// Picked imports that left the queue undispatched: no longer live.
    pub dropped: usize,
    /// Of `taken`, those whose import's slot was still held by the attempt
    /// they moved past: they took it over, and add nothing to the slots in
    /// flight.
    pub took_over: usize,
}

/// Dispatches the `picked` attempts, in order: each leaves the queue (its
/// `queued_seq` cleared, which `capture_dequeued` uncounts) and takes a
/// slot; each organization dispatched to moves to the back of the
/// round robin, in the order of its last attempt here, with its dispatch
/// interval updated (each sample at most a minute: an organization that was
/// idle for hours, then queues a burst, is not told to come back in an
/// hour). An attempt or import another transaction holds (a soft delete, a
/// cascade) is skipped, never waited for: that transaction takes its
/// organization's row after them, the reverse of this pass, which holds
/// the organizations' rows already (`lock_orgs`); the import's key share
/// is what the slot's foreign key needs. A picked attempt that may no
/// longer run (its import not `processing` and live, its status set in
/// SQL; or moved past it) leaves the queue undispatched (`dropped`); one
/// that left the queue meanwhile (deleted) is not touched.
pub async fn dispatch(conn: &mut PgConnection, picked: &[Picked]) -> sqlx::Result<Dispatched> {
    let ids: Vec<&str> = picked.iter().map(|p| p.page_import_id.as_str()).collect();
    let attempts: Vec<i32> = picked.iter().map(|p| p.attempt).collect();
    let rows = sqlx::query!(
        r#"
        with free as (
            select a.page_import_id, a.attempt, p.ord
            from unnest($1::text[], $2::int4[]) with ordinality as p(id, attempt, ord)
            join page_import_attempt a on a.page_import_id = p.id and a.attempt = p.attempt
            join page_import pi on pi.id = a.page_import_id
            where a.queued_seq is not null
            for no key update of a skip locked
            for key share of pi skip locked
        ), left_queue as (
            update page_import_attempt a
            set queued_seq = null
            from free f
            where a.page_import_id = f.page_import_id and a.attempt = f.attempt
            returning a.page_import_id, a.attempt, a.organization_id, a.traceparent, f.ord
        ), rows as (
            select l.page_import_id as id, l.attempt, l.organization_id, l.traceparent, l.ord, pi.project_id,
                   pi.nonce, pi.source_url, pi.viewport_width, pi.viewport_height, pi.device_scale_factor,
                   pi.viewport_mobile, pi.ready_selector, pi.color_scheme, pi.locale, pi.time_zone, pi.consent,
                   page_import_running(pi.status, pi.deleted_at) and pi.attempt = l.attempt as running,
                   -- Its import's slot already counted among those in flight
                   -- (held by the attempt this one moved past): taken over,
                   -- not added. A set's slot held by other members too
                   -- (`set_id`) stays theirs: this one adds its own.
                   exists (select 1 from capture_slot s where s.page_import_id = l.page_import_id
                           and (s.set_id is null or not exists (
                               select 1 from capture_slot o
                               where o.set_id = s.set_id and o.page_import_id <> s.page_import_id))) as took_over
            from left_queue l
            join page_import pi on pi.id = l.page_import_id
        ), taken as (
            select * from rows where running
        ), slots as (
            -- An import's slot held by an older attempt is that attempt's,
            -- which has ended: its next attempt (committed after this pass
            -- released the ended slots) takes the slot over.
            insert into capture_slot as s (page_import_id, attempt, organization_id)
            select id, attempt, organization_id from taken
            on conflict (page_import_id) do update
            set attempt = excluded.attempt, organization_id = excluded.organization_id, granted_at = now(),
                set_id = null
            where s.attempt < excluded.attempt
        ), turns as (
            -- Numbered after the sort: the organization whose last attempt
            -- came last here goes to the very back.
            select organization_id, n, nextval('capture_turn_seq') as turn
            from (select organization_id, count(*) as n, max(ord) as last from taken group by organization_id) g
            order by last
        ), moved as (
            update capture_org c
            set last_turn = t.turn,
                dispatch_interval_secs = case
                    when c.last_dispatched_at is null then null
                    when c.dispatch_interval_secs is null
                        then least(extract(epoch from now() - c.last_dispatched_at)::float8, 60) / t.n
                    else 0.8 * c.dispatch_interval_secs
                         + 0.2 * least(extract(epoch from now() - c.last_dispatched_at)::float8, 60) / t.n
                end,
                last_dispatched_at = now()
            from turns t
            where c.organization_id = t.organization_id
        )
        select t.id as "id!", t.attempt as "attempt!", t.project_id as "project_id!", t.nonce as "nonce!",
               t.source_url as "source_url!", t.viewport_width as "viewport_width!",
               t.viewport_height as "viewport_height!", t.device_scale_factor as "device_scale_factor!",
               t.viewport_mobile as "viewport_mobile!", t.ready_selector,
               t.color_scheme as "color_scheme!: Label<ColorScheme>", t.locale as "locale!",
               t.time_zone as "time_zone!", t.consent as "consent!: Label<Consent>", t.traceparent,
               t.running as "running!", t.took_over as "took_over!"
        from rows t
        order by t.ord
        "#,
        &ids as &[&str],
        &attempts,
    )
    .fetch_all(conn)
    .await?;
    let left = rows.len();
    let took_over = rows.iter().filter(|r| r.running && r.took_over).count();
    let taken: Vec<Taken> = rows
        .into_iter()
        .filter(|r| r.running)
        .map(|r| Taken {
            id: r.id,
            attempt: r.attempt,
            project_id: r.project_id,
            nonce: r.nonce,
            traceparent: r.traceparent,
            source: CaptureSource {
                source_url: r.source_url,
                viewport_width: r.viewport_width,
                viewport_height: r.viewport_height,
                device_scale_factor: r.device_scale_factor,
                viewport_mobile: r.viewport_mobile,
                ready_selector: r.ready_selector,
                color_scheme: r.color_scheme,
                locale: r.locale,
                time_zone: r.time_zone,
                consent: r.consent,
            },
        })
        .collect();
    Ok(Dispatched {
        dropped: left - taken.len(),
        took_over,
        taken,
    })
}

/// Queued attempts of the whole deployment: reads the round robin's index
/// (one entry per organization with a backlog).
pub async fn queued_total(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"select coalesce(sum(queued), 0)::int8 as "n!" from capture_org where has_queued"#)
        .fetch_one(conn)
        .await
}
