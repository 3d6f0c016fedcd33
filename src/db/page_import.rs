//! The `page_import` table. Every user-facing query is limited to the
//! caller's organizations through `member_organizations` (the tenancy rule,
//! written once: migration `…_tenancy.sql`), so another tenant's row reads
//! exactly like a missing one.

pub mod coalesced;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::db::capture::{admitting, OrgBacklog};
use crate::db::label::Label;
use crate::db::query_pieces;
use crate::domain::cursor::KeysetPosition;
use crate::domain::lifecycle::{AttemptOutcome, AttemptReason};
use crate::domain::reader::{ColorScheme, Consent, ReaderSettings};
use crate::domain::{JobStatus, Nonce, ReadySelector, SourceUrl, Viewport};

/// A row as users may see it: everything but the nonce.
#[derive(Debug, Clone, PartialEq)]
pub struct PageImport {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub source_kind: String,
    pub source_url: String,
    pub viewport_width: i32,
    pub viewport_height: i32,
    pub device_scale_factor: f32,
    pub viewport_mobile: bool,
    pub ready_selector: Option<String>,
    pub color_scheme: ColorScheme,
    pub locale: String,
    pub time_zone: String,
    pub consent: Consent,
    pub status: JobStatus,
    pub attempt: i32,
    pub result_url: Option<String>,
    pub capture_hash: Option<String>,
    pub screenshot_url: Option<String>,
    pub error_message: Option<String>,
    /// When SQS accepted the current attempt's message; `None` while the
    /// attempt waits for a capture slot (SPEC §12).
    pub dispatched_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub created_by: String,
    /// The import set it belongs to (SPEC §15), if any.
    pub set_id: Option<String>,
}

/// `sqlx::query!` over the one select list of a [`PageImport`] (every column
/// but the nonce, from a row aliased `pi`, and its current attempt's
/// dispatch time, one primary-key probe), written once here. The statement
/// is `head` + the list + `tail`: `tail` may add columns (`, x as y`) before
/// its `from`; `head` may be given in pieces, `[a, b]` (a statement that
/// splices in [`admitting!`]). Checked at compile time like any `query!`,
/// because the pieces are literals (sqlx joins literals joined with `+`).
macro_rules! query_page_import {
    ($head:literal, $tail:literal, $($args:tt)*) => {
        query_page_import!([$head], $tail, $($args)*)
    };
    ([$($head:literal),+], $tail:literal, $($args:tt)*) => {
        sqlx::query!(
            $($head +)+ r#"select pi.id, pi.organization_id, pi.project_id, pi.source_kind, pi.source_url,
                      pi.viewport_width, pi.viewport_height, pi.device_scale_factor, pi.viewport_mobile,
                      pi.ready_selector, pi.color_scheme as "color_scheme: Label<ColorScheme>", pi.locale,
                      pi.time_zone, pi.consent as "consent: Label<Consent>", pi.status as "status: JobStatus", pi.attempt, pi.result_url, pi.capture_hash,
                      pi.screenshot_url, pi.error_message,
                      (select a.dispatched_at from page_import_attempt a
                       where a.page_import_id = pi.id and a.attempt = pi.attempt) as dispatched_at,
                      pi.created_at, pi.updated_at, pi.created_by,
                      (select m.set_id from page_import_set_member m where m.page_import_id = pi.id) as set_id"#
                + $tail,
            $($args)*
        )
    };
}

/// The [`PageImport`] in a record of [`query_page_import!`] (moving its
/// columns out; the record's added columns stay usable).
macro_rules! page_import_from {
    ($r:ident) => {
        PageImport {
            id: $r.id,
            organization_id: $r.organization_id,
            project_id: $r.project_id,
            source_kind: $r.source_kind,
            source_url: $r.source_url,
            viewport_width: $r.viewport_width,
            viewport_height: $r.viewport_height,
            device_scale_factor: $r.device_scale_factor,
            viewport_mobile: $r.viewport_mobile,
            ready_selector: $r.ready_selector,
            color_scheme: $r.color_scheme.0,
            locale: $r.locale,
            time_zone: $r.time_zone,
            consent: $r.consent.0,
            status: $r.status,
            attempt: $r.attempt,
            result_url: $r.result_url,
            capture_hash: $r.capture_hash,
            screenshot_url: $r.screenshot_url,
            error_message: $r.error_message,
            dispatched_at: $r.dispatched_at,
            created_at: $r.created_at,
            updated_at: $r.updated_at,
            created_by: $r.created_by,
            set_id: $r.set_id,
        }
    };
}
pub(crate) use {page_import_from, query_page_import};

/// One create: the row's fields (its queue message is built when the
/// attempt is dispatched: `db::capture::dispatch`).
pub struct PendingCreate {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub actor: String,
    pub source_url: SourceUrl,
    pub viewport: Viewport,
    pub ready_selector: Option<ReadySelector>,
    pub reader: ReaderSettings,
    pub nonce: Nonce,
    /// The W3C `traceparent` the first attempt's message carries (SPEC §9).
    pub traceparent: Option<String>,
}

/// The one statement that creates imports: inserts each row and its first
/// attempt, queued for a capture slot (`queued_seq`, SPEC §12), but only
/// where the project belongs to the organization, the actor is a member of
/// it, and the organization holds fewer than `max_queued` queued attempts
/// with this batch's earlier creates counted (admission: [`admitting!`],
/// which also counts the admitted as queued). Each organization's backlog row is locked, in organization
/// order, until the commit, so concurrent creates cannot together pass the
/// limit. Many creates share the statement (one commit, one WAL flush:
/// `coalesce`); a create with an `Idempotency-Key` runs it alone inside its
/// transaction. One answer per create, in order: the row, or `None` when
/// that create's project is not visible or its organization's backlog is
/// full (the caller tells which, `service::create`).
pub async fn insert_many_queued(
    conn: &mut PgConnection,
    batch: &[PendingCreate],
    max_queued: i64,
) -> sqlx::Result<Vec<Option<PageImport>>> {
    let ids: Vec<&str> = batch.iter().map(|c| c.id.as_str()).collect();
    let orgs: Vec<i64> = batch.iter().map(|c| c.organization_id).collect();
    let projects: Vec<i64> = batch.iter().map(|c| c.project_id).collect();
    let actors: Vec<&str> = batch.iter().map(|c| c.actor.as_str()).collect();
    let urls: Vec<&str> = batch.iter().map(|c| c.source_url.as_str()).collect();
    let widths: Vec<i32> = batch.iter().map(|c| c.viewport.width).collect();
    let heights: Vec<i32> = batch.iter().map(|c| c.viewport.height).collect();
    let scales: Vec<f32> = batch.iter().map(|c| c.viewport.device_scale_factor).collect();
    let mobiles: Vec<bool> = batch.iter().map(|c| c.viewport.mobile).collect();
    let schemes: Vec<&str> = batch.iter().map(|c| c.reader.color_scheme.as_str()).collect();
    let locales: Vec<&str> = batch.iter().map(|c| c.reader.locale.as_str()).collect();
    let zones: Vec<&str> = batch.iter().map(|c| c.reader.time_zone.as_str()).collect();
    let consents: Vec<&str> = batch.iter().map(|c| c.reader.consent.as_str()).collect();
    let selectors: Vec<Option<&str>> = batch
        .iter()
        .map(|c| c.ready_selector.as_ref().map(ReadySelector::as_str))
        .collect();
    let nonces: Vec<&str> = batch.iter().map(|c| c.nonce.expose()).collect();
    let traceparents: Vec<Option<&str>> = batch.iter().map(|c| c.traceparent.as_deref()).collect();
    let rows = admitting!(query_page_import!(
        [r#"
        -- db::page_import::insert_many_queued (named for pg_stat_activity, which shows 1 KiB of it)
        with req as (
            select * from unnest($2::text[], $3::int8[], $4::int8[], $5::text[], $6::text[], $7::int4[],
                                 $8::int4[], $9::float4[], $10::text[], $11::text[], $13::text[], $14::bool[],
                                 $15::text[], $16::text[], $17::text[], $18::text[])
                with ordinality
                as r(id, organization_id, project_id, actor, source_url, width, height, scale, ready_selector,
                     nonce, traceparent, mobile, color_scheme, locale, time_zone, consent, ord)
        ), visible as (
            select r.*
            from req r
            -- A primary-key lookup per request, whatever the statistics (db::PINNED_PLAN).
            cross join lateral (select p.id, p.organization_id from project p where p.id = r.project_id offset 0) p
            where p.organization_id = r.organization_id
              and exists (select 1 from member_organizations(r.actor) o where o.organization_id = p.organization_id)
        ), wanted as (
            select organization_id, count(*)::int as n from visible group by organization_id
        ), "#],
        [r#", admitted as (
            -- Each organization's first `admitted` requests, in order.
            select v.*
            from (select v.*, row_number() over (partition by v.organization_id order by v.ord) as nth
                  from visible v) v
            join admission b on b.organization_id = v.organization_id
            where v.nth <= b.admitted
        ), inserted as (
            insert into page_import (
                id, organization_id, project_id, source_url, viewport_width, viewport_height,
                device_scale_factor, viewport_mobile, ready_selector, color_scheme, locale, time_zone, consent,
                nonce, created_by, updated_by
            )
            select a.id, a.organization_id, a.project_id, a.source_url, a.width, a.height, a.scale, a.mobile,
                   a.ready_selector, a.color_scheme::color_scheme, a.locale, a.time_zone,
                   a.consent::consent_mode, a.nonce, a.actor, a.actor
            from admitted a
            returning *
        ), history as (
            -- The first attempt, queued for a capture slot.
            insert into page_import_attempt (page_import_id, attempt, reason, started_by, traceparent,
                                             organization_id, queued_seq)
            select i.id, i.attempt, $12, i.created_by, r.traceparent, i.organization_id,
                   nextval('page_import_queued_seq')
            from inserted i join req r on r.id = i.id
            order by r.ord
        )
        "#],
        r#"
        from inserted pi
        "#,
        max_queued,
        &ids as &[&str],
        &orgs,
        &projects,
        &actors as &[&str],
        &urls as &[&str],
        &widths,
        &heights,
        &scales,
        &selectors as &[Option<&str>],
        &nonces as &[&str],
        AttemptReason::Create.as_str(),
        &traceparents as &[Option<&str>],
        &mobiles,
        &schemes as &[&str],
        &locales as &[&str],
        &zones as &[&str],
        &consents as &[&str],
    ))
    .fetch_all(conn)
    .await?;
    let mut created: std::collections::HashMap<String, PageImport> = rows
        .into_iter()
        .map(|r| {
            let row = page_import_from!(r);
            (row.id.clone(), row)
        })
        .collect();
    Ok(batch.iter().map(|c| created.remove(&c.id)).collect())
}

/// A live (not deleted) row the actor may see: [`find_visible_many`] with
/// one pair (one statement for both).
pub async fn find_visible(conn: &mut PgConnection, id: &str, actor: &str) -> sqlx::Result<Option<PageImport>> {
    let mut found = find_visible_many(conn, &[id.to_owned()], &[actor.to_owned()]).await?;
    Ok(found.pop().flatten())
}

/// Rows by id for many `(id, actor)` pairs in one statement (the
/// coalesced read by id): one answer per pair, in order.
pub async fn find_visible_many(
    conn: &mut PgConnection,
    ids: &[String],
    actors: &[String],
) -> sqlx::Result<Vec<Option<PageImport>>> {
    let rows = query_page_import!(
        "",
        r#", r.ord as "ord!"
        from unnest($1::text[], $2::text[]) with ordinality as r(id, subject, ord)
        -- A primary-key lookup per id, whatever the statistics (db::PINNED_PLAN).
        cross join lateral (select * from page_import p where p.id = r.id offset 0) pi
        where pi.deleted_at is null
          and exists (select 1 from member_organizations(r.subject) o where o.organization_id = pi.organization_id)
        "#,
        ids,
        actors,
    )
    .fetch_all(conn)
    .await?;
    let mut out: Vec<Option<PageImport>> = (0..ids.len()).map(|_| None).collect();
    for r in rows {
        let slot = usize::try_from(r.ord - 1).ok().and_then(|i| out.get_mut(i));
        if let Some(slot) = slot {
            *slot = Some(page_import_from!(r));
        }
    }
    Ok(out)
}

/// Whether the project belongs to the organization and the actor is a member.
pub async fn project_visible(
    conn: &mut PgConnection,
    organization_id: i64,
    project_id: i64,
    actor: &str,
) -> sqlx::Result<bool> {
    let visible = sqlx::query_scalar!(
        r#"
        select exists (
            select 1
            from project p
            where p.id = $1 and p.organization_id = $2
              and exists (select 1 from member_organizations($3) o where o.organization_id = p.organization_id)
        ) as "visible!"
        "#,
        project_id,
        organization_id,
        actor,
    )
    .fetch_one(conn)
    .await?;
    Ok(visible)
}

/// One page of live rows of a project, newest first, strictly after `after`.
/// Both branches are a single index range scan, whatever the page depth.
pub async fn list_page(
    conn: &mut PgConnection,
    project_id: i64,
    status: Option<JobStatus>,
    after: Option<&KeysetPosition>,
    limit: i64,
) -> sqlx::Result<Vec<PageImport>> {
    // 'infinity' sorts after every timestamp, so the first page needs no special case.
    let (after_at, after_id) = match after {
        Some(p) => (Some(p.created_at), p.id.as_str()),
        None => (None, ""),
    };
    match status {
        None => query_page_import!(
            "",
            r#"
                from page_import pi
                where pi.project_id = $1
                  and pi.deleted_at is null
                  and (pi.created_at, pi.id) < (coalesce($2, 'infinity'::timestamptz), $3)
                order by pi.created_at desc, pi.id desc
                limit $4
                "#,
            project_id,
            after_at,
            after_id,
            limit,
        )
        .fetch_all(conn)
        .await
        .map(|rows| rows.into_iter().map(|r| page_import_from!(r)).collect()),
        Some(status) => query_page_import!(
            "",
            r#"
                from page_import pi
                where pi.project_id = $1
                  and pi.status = $2
                  and pi.deleted_at is null
                  and (pi.created_at, pi.id) < (coalesce($3, 'infinity'::timestamptz), $4)
                order by pi.created_at desc, pi.id desc
                limit $5
                "#,
            project_id,
            status as JobStatus,
            after_at,
            after_id,
            limit,
        )
        .fetch_all(conn)
        .await
        .map(|rows| rows.into_iter().map(|r| page_import_from!(r)).collect()),
    }
}

/// Soft delete; `false` when there was no live row the actor may see. A
/// queued attempt leaves the capture queue with it (it is never dispatched;
/// `capture_dequeued` uncounts it); the slot of one in flight is released
/// by the next dispatch pass.
pub async fn soft_delete(conn: &mut PgConnection, id: &str, actor: &str) -> sqlx::Result<bool> {
    let deleted = sqlx::query_scalar!(
        r#"
        with deleted as (
            update page_import pi
            set deleted_at = now(), deleted_by = $2, updated_at = now(), updated_by = $2
            where pi.id = $1
              and pi.deleted_at is null
              and exists (select 1 from member_organizations($2) o where o.organization_id = pi.organization_id)
            returning pi.id
        ), unqueued as (
            update page_import_attempt a set queued_seq = null
            from deleted d
            where a.page_import_id = d.id and a.queued_seq is not null
        )
        select count(*) as "deleted!" from deleted
        "#,
        id,
        actor,
    )
    .fetch_one(conn)
    .await?;
    Ok(deleted == 1)
}

/// A `processing` import whose current attempt was dispatched longer ago than
/// the capture timeout.
pub struct TimedOut {
    pub id: String,
    pub organization_id: i64,
    pub attempt: i32,
    /// The attempt's trace (SPEC §9), for the lines that say how it ended.
    pub traceparent: Option<String>,
}

/// Locks up to `limit` timed-out imports (skipping rows another replica has
/// locked) for the caller's transaction, in organization order (the order
/// in which their next attempts lock the organizations' backlog rows:
/// [`admitting!`]). An attempt whose message SQS has
/// not accepted yet has no `dispatched_at` and never times out. A set
/// member's first attempt (SPEC §15, captured after the members before it
/// in one message) is timed from when the last of those ended (their
/// attempts finished, or their imports deleted), not from the set's
/// dispatch, and not at all while one of them may still run (decision 0047).
pub async fn lock_timed_out(
    conn: &mut PgConnection,
    timeout: std::time::Duration,
    limit: i64,
) -> sqlx::Result<Vec<TimedOut>> {
    sqlx::query_as!(
        TimedOut,
        r#"
        select p.id, p.organization_id, p.attempt, a.traceparent
        from page_import_attempt a
        join page_import p on p.id = a.page_import_id and p.attempt = a.attempt
        where a.finished_at is null
          and a.dispatched_at < now() - make_interval(secs => $1)
          and page_import_running(p.status, p.deleted_at)
          and not (a.attempt = 1 and exists (
              select 1
              from page_import_set_member m
              join page_import_set_member e on e.set_id = m.set_id and e.ord < m.ord
              join page_import ep on ep.id = e.page_import_id
              join page_import_attempt ea on ea.page_import_id = e.page_import_id and ea.attempt = 1
              where m.page_import_id = p.id
                and coalesce(ea.finished_at, ep.deleted_at, 'infinity') >= now() - make_interval(secs => $1)
          ))
        order by a.dispatched_at
        limit $2
        for update of p skip locked
        "#,
        timeout.as_secs_f64(),
        limit,
    )
    .fetch_all(conn)
    .await
    .map(|mut rows| {
        rows.sort_by_key(|r| r.organization_id);
        rows
    })
}

/// The `traceparent` of the import's first attempt: the trace that created
/// it, which a re-dispatched attempt links to (SPEC §9). `None` also for an
/// import created before traces were kept.
pub async fn created_traceparent(conn: &mut PgConnection, id: &str) -> sqlx::Result<Option<String>> {
    let found = sqlx::query_scalar!(
        "select traceparent from page_import_attempt where page_import_id = $1 and attempt = 1",
        id
    )
    .fetch_optional(conn)
    .await?;
    Ok(found.flatten())
}

/// How an attempt ends in a terminal status: the row's new status and
/// payload, who made the transition, and the outcome the history records.
pub struct Finish<'a> {
    /// The nonce the callback named: SPEC §7's conditional `UPDATE … WHERE
    /// id AND attempt AND nonce`. `None` for the sweeper, which holds the
    /// row it read from [`lock_timed_out`].
    pub nonce: Option<&'a str>,
    pub status: JobStatus,
    pub outcome: AttemptOutcome,
    pub result_url: Option<&'a str>,
    pub capture_hash: Option<&'a str>,
    pub screenshot_url: Option<&'a str>,
    pub error_message: Option<&'a str>,
    pub actor: &'a str,
}

/// Ends attempt `attempt` of the import in a terminal status, and its
/// history row with the outcome passed, in one statement. The caller holds
/// the row's lock ([`lock_fence`], [`lock_timed_out`]) and has decided the
/// transition is allowed (`service::callbacks::judge`, the sweeper's
/// timeout). The statement is still SPEC §7's conditional `UPDATE`: it
/// refuses a row that is not live and processing at `attempt` (with
/// `nonce`, when given), a guard against a caller that forgot: `false`
/// then, and nothing is written.
#[tracing::instrument(name = "db.finish_attempt", skip_all)]
pub async fn finish(conn: &mut PgConnection, id: &str, attempt: i32, finish: &Finish<'_>) -> sqlx::Result<bool> {
    let finished = sqlx::query_scalar!(
        r#"
        with done as (
            update page_import
            set status = $3, result_url = $4, capture_hash = $5, screenshot_url = $6, error_message = $7,
                updated_at = now(), updated_by = $8
            where id = $1 and attempt = $2 and page_import_running(status, deleted_at)
              and ($10::text is null or nonce = $10)
            returning id
        ), history as (
            update page_import_attempt a
            set finished_at = now(), outcome = $9, error_message = $7
            from done d
            where a.page_import_id = d.id and a.attempt = $2
        )
        select count(*) as "finished!" from done
        "#,
        id,
        attempt,
        finish.status as JobStatus,
        finish.result_url,
        finish.capture_hash,
        finish.screenshot_url,
        finish.error_message,
        finish.actor,
        finish.outcome.as_str(),
        finish.nonce,
    )
    .fetch_one(conn)
    .await?;
    Ok(finished == 1)
}

/// Why the next attempt starts, who starts it, and how the current one
/// ended (`None` when it had already ended: a manual retry of a failed import).
pub struct NextAttempt<'a> {
    /// The status the row must be in: processing (a timeout, a retryable
    /// failure) or failed (a manual retry).
    pub from: JobStatus,
    pub reason: AttemptReason,
    pub actor: &'a str,
    pub ended: Option<AttemptOutcome>,
    /// `ORG_MAX_QUEUED` when the attempt is admitted like a create (a
    /// manual retry); `None` for a re-dispatch of an import admitted
    /// already (a timeout, a retryable failure), which is never refused.
    pub max_queued: Option<i64>,
}

/// What [`start_next_attempt`] did with a row at the expected attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NextStarted {
    /// The next attempt, this number, is queued.
    Queued(i32),
    /// Admission refused it: the organization's backlog is full. The import
    /// and its attempts were not written (the organization's backlog row
    /// was locked, and made if it was missing).
    Refused(OrgBacklog),
}

/// Starts attempt `attempt + 1` with a fresh nonce, ends the current
/// attempt's history row and starts the next one's, queued for a capture
/// slot (`queued_seq`, SPEC §12), in one statement, if admission lets it
/// ([`admitting!`], as a create's attempt goes through it); a refused
/// attempt writes no import or attempt. The caller holds the row's lock and has decided the row may move on; the statement
/// still refuses a row that is deleted, or not at `attempt` in the status
/// `next.from`, a guard against a caller that forgot: `None`.
#[tracing::instrument(name = "db.start_next_attempt", skip_all)]
pub async fn start_next_attempt(
    conn: &mut PgConnection,
    id: &str,
    attempt: i32,
    nonce: &Nonce,
    next: &NextAttempt<'_>,
    traceparent: Option<&str>,
) -> sqlx::Result<Option<NextStarted>> {
    let started = admitting!(query_pieces!(
        [r#"
        with current as (
            -- Locked before admission locks the organization's row (the
            -- order of every writer of both), though the caller holds it.
            select id, organization_id from page_import
            where id = $2 and attempt = $3 and status = $8 and deleted_at is null
            for no key update
        ), wanted as (
            select organization_id, 1 as n from current
        ), "#],
        [r#", next as (
            update page_import p
            set attempt = attempt + 1, nonce = $4, status = $10, result_url = null, capture_hash = null,
                screenshot_url = null, error_message = null, updated_at = now(), updated_by = $5
            from current c, admission a
            where p.id = c.id and a.admitted = 1
              and p.attempt = $3 and p.status = $8 and p.deleted_at is null
            returning p.id, p.attempt, p.organization_id
        ), ended as (
            -- Ended with `$6` unless it had ended already (a failed
            -- import's, before a manual retry), and off the queue if it is
            -- still there (an import whose status was set in SQL while it
            -- waited): the next attempt takes its place.
            update page_import_attempt a
            set finished_at = case when $6::text is not null and a.finished_at is null then now()
                                   else a.finished_at end,
                outcome = case when $6::text is not null and a.finished_at is null then $6 else a.outcome end,
                queued_seq = null
            from next n
            where a.page_import_id = n.id and a.attempt = $3
              and (($6::text is not null and a.finished_at is null) or a.queued_seq is not null)
        ), started as (
            -- Queued for a capture slot. An import has one current attempt,
            -- so one place in the queue: its last attempt left it when it
            -- was dispatched, or just now (`ended`).
            insert into page_import_attempt (page_import_id, attempt, reason, started_by, traceparent,
                                             organization_id, queued_seq)
            select n.id, n.attempt, $7, $5, $9, n.organization_id, nextval('page_import_queued_seq') from next n
        )
        select a.admitted = 1 as "admitted!", a.queued as "queued!", a.dispatch_interval_secs
        from admission a
        "#],
        next.max_queued,
        id,
        attempt,
        nonce.expose(),
        next.actor,
        next.ended.map(AttemptOutcome::as_str),
        next.reason.as_str(),
        next.from as JobStatus,
        traceparent,
        JobStatus::Processing as JobStatus,
    ))
    .fetch_optional(conn)
    .await?;
    Ok(started.map(|r| {
        if r.admitted {
            NextStarted::Queued(attempt + 1)
        } else {
            NextStarted::Refused(OrgBacklog {
                queued: r.queued,
                dispatch_interval_secs: r.dispatch_interval_secs,
            })
        }
    }))
}

/// Notes the retryable callback that ended `attempt` (its error, webhook-id
/// and body hash), so an exact replay of it can be recognised.
pub async fn record_retryable_failure(
    conn: &mut PgConnection,
    id: &str,
    attempt: i32,
    error_message: &str,
    webhook_id: &str,
    request_hash: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        update page_import_attempt
        set error_message = $3, retry_webhook_id = $4, retry_request_hash = $5
        where page_import_id = $1 and attempt = $2
        "#,
        id,
        attempt,
        error_message,
        webhook_id,
        request_hash,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether `attempt` was ended by a retryable callback with this webhook-id
/// and body hash: its exact replay.
pub async fn is_retry_replay(
    conn: &mut PgConnection,
    id: &str,
    attempt: i32,
    webhook_id: &str,
    request_hash: &str,
) -> sqlx::Result<bool> {
    let found = sqlx::query_scalar!(
        r#"
        select 1 as "one!" from page_import_attempt
        where page_import_id = $1 and attempt = $2 and retry_webhook_id = $3 and retry_request_hash = $4
        "#,
        id,
        attempt,
        webhook_id,
        request_hash,
    )
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}

/// The lifecycle fence and terminal payload of a row, for the webhook. Not
/// `Debug`: it holds the nonce.
pub struct Fence {
    pub attempt: i32,
    pub nonce: String,
    pub status: JobStatus,
    pub deleted: bool,
    pub result_url: Option<String>,
    pub capture_hash: Option<String>,
    pub screenshot_url: Option<String>,
    pub error_message: Option<String>,
}

/// `sqlx::query_as!` of a [`Fence`] by id, written once; `$tail` ends the
/// statement (a lock clause, or nothing).
macro_rules! query_fence {
    ($tail:literal, $id:expr) => {
        sqlx::query_as!(
            Fence,
            r#"
            select attempt, nonce, status as "status: JobStatus", deleted_at is not null as "deleted!",
                   result_url, capture_hash, screenshot_url, error_message
            from page_import
            where id = $1
            "#
                + $tail,
            $id,
        )
    };
}

/// The row's fence as it is now, without a lock: the early answer to a
/// callback, before any artifact is read.
pub async fn find_fence(conn: &mut PgConnection, id: &str) -> sqlx::Result<Option<Fence>> {
    query_fence!("", id).fetch_optional(conn).await
}

/// The row's fence, locked for the caller's transaction (the lock an
/// `UPDATE` of the row takes): what a transition checks before it writes,
/// so nothing moves the row in between.
#[tracing::instrument(name = "db.lock_fence", skip_all)]
pub async fn lock_fence(conn: &mut PgConnection, id: &str) -> sqlx::Result<Option<Fence>> {
    query_fence!("for no key update", id).fetch_optional(conn).await
}
