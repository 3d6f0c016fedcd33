//! The tables of import sets (SPEC §15, migration `…_import_sets.sql`):
//! `page_import_set`, a set's shared settings, and `page_import_set_member`,
//! its imports in order. Every user-facing query is limited to the caller's
//! organizations through `member_organizations`, as `db::page_import`'s.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::db::label::Label;
use crate::db::page_import::{page_import_from, query_page_import, PageImport};
use crate::domain::cursor::KeysetPosition;
use crate::domain::reader::{ColorScheme, Consent, ReaderSettings};
use crate::domain::{JobStatus, ReadySelector, SourceUrl};

/// A set's row as users may see it.
#[derive(Debug, Clone, PartialEq)]
pub struct PageImportSet {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub source_url: String,
    pub ready_selector: Option<String>,
    pub locale: String,
    pub time_zone: String,
    pub consent: Consent,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub created_by: String,
}

/// `sqlx::query!` over the select list of a [`PageImportSet`] from a row
/// aliased `s`: `$head` (a `with`, or nothing), the list, `$tail`.
macro_rules! query_set {
    ($head:literal, $tail:literal, $($args:tt)*) => {
        sqlx::query!(
            $head + r#"select s.id, s.organization_id, s.project_id, s.source_url, s.ready_selector, s.locale,
                      s.time_zone, s.consent as "consent: Label<Consent>", s.created_at, s.updated_at,
                      s.created_by"# + $tail,
            $($args)*
        )
    };
}

macro_rules! set_from {
    ($r:ident) => {
        PageImportSet {
            id: $r.id,
            organization_id: $r.organization_id,
            project_id: $r.project_id,
            source_url: $r.source_url,
            ready_selector: $r.ready_selector,
            locale: $r.locale,
            time_zone: $r.time_zone,
            consent: $r.consent.0,
            created_at: $r.created_at,
            updated_at: $r.updated_at,
            created_by: $r.created_by,
        }
    };
}

/// A set to write, once its members are.
pub struct PendingSet<'a> {
    pub id: &'a str,
    pub organization_id: i64,
    pub project_id: i64,
    pub actor: &'a str,
    pub source_url: &'a SourceUrl,
    pub ready_selector: Option<&'a ReadySelector>,
    pub reader: &'a ReaderSettings,
}

/// Writes the set's row and its members, in order, in the caller's
/// transaction, which wrote the members' imports (visibility checked there).
pub async fn insert(conn: &mut PgConnection, set: &PendingSet<'_>, members: &[&str]) -> sqlx::Result<PageImportSet> {
    let row = query_set!(
        r#"
        with s as (
            insert into page_import_set (id, organization_id, project_id, source_url, ready_selector, locale,
                                         time_zone, consent, created_by, updated_by)
            values ($1, $2, $3, $4, $5, $6, $7, $8::text::consent_mode, $9, $9)
            returning *
        )
        "#,
        " from s",
        set.id,
        set.organization_id,
        set.project_id,
        set.source_url.as_str(),
        set.ready_selector.map(ReadySelector::as_str),
        set.reader.locale.as_str(),
        set.reader.time_zone.as_str(),
        set.reader.consent.as_str(),
        set.actor,
    )
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query!(
        r#"
        insert into page_import_set_member (set_id, page_import_id, ord)
        select $1, m.id, m.ord - 1 from unnest($2::text[]) with ordinality as m(id, ord)
        "#,
        set.id,
        members as &[&str],
    )
    .execute(conn)
    .await?;
    Ok(set_from!(row))
}

/// A live set the actor may see.
pub async fn find_visible(conn: &mut PgConnection, id: &str, actor: &str) -> sqlx::Result<Option<PageImportSet>> {
    let row = query_set!(
        "",
        r#"
        from page_import_set s
        where s.id = $1 and s.deleted_at is null
          and exists (select 1 from member_organizations($2) o where o.organization_id = s.organization_id)
        "#,
        id,
        actor,
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| set_from!(r)))
}

/// The live members of the sets `set_ids`, each set's in order, with the
/// set each belongs to.
pub async fn members(conn: &mut PgConnection, set_ids: &[String]) -> sqlx::Result<Vec<PageImport>> {
    let rows = query_page_import!(
        "",
        r#"
        from page_import_set_member m
        join page_import pi on pi.id = m.page_import_id
        where m.set_id = any($1) and pi.deleted_at is null
        order by m.set_id, m.ord
        "#,
        set_ids,
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| page_import_from!(r)).collect())
}

/// One page of a project's live sets, newest first, strictly after `after`:
/// one index range scan, whatever the page depth.
pub async fn list_page(
    conn: &mut PgConnection,
    project_id: i64,
    after: Option<&KeysetPosition>,
    limit: i64,
) -> sqlx::Result<Vec<PageImportSet>> {
    let (after_at, after_id) = match after {
        Some(p) => (Some(p.created_at), p.id.as_str()),
        None => (None, ""),
    };
    let rows = query_set!(
        "",
        r#"
        from page_import_set s
        where s.project_id = $1
          and s.deleted_at is null
          and (s.created_at, s.id) < (coalesce($2, 'infinity'::timestamptz), $3)
        order by s.created_at desc, s.id desc
        limit $4
        "#,
        project_id,
        after_at,
        after_id,
        limit,
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| set_from!(r)).collect())
}

/// Soft-deletes the set and every live member, in the caller's transaction:
/// the members are locked first, in id order, so a callback ending one of
/// them commits before or after the whole delete, never between its
/// parts. `None` when the actor sees no such set; else the members deleted.
/// Their queued attempts leave the queue (never dispatched); the slots of
/// those in flight are released by the next dispatch pass.
pub async fn soft_delete(conn: &mut PgConnection, id: &str, actor: &str) -> sqlx::Result<Option<Vec<String>>> {
    let found = sqlx::query_scalar!(
        r#"
        update page_import_set s
        set deleted_at = now(), deleted_by = $2, updated_at = now(), updated_by = $2
        where s.id = $1 and s.deleted_at is null
          and exists (select 1 from member_organizations($2) o where o.organization_id = s.organization_id)
        returning s.id
        "#,
        id,
        actor,
    )
    .fetch_optional(&mut *conn)
    .await?;
    if found.is_none() {
        return Ok(None);
    }
    let deleted = sqlx::query_scalar!(
        r#"
        with locked as (
            select pi.id from page_import pi
            where pi.id in (select page_import_id from page_import_set_member where set_id = $1)
              and pi.deleted_at is null
            order by pi.id
            for no key update
        ), deleted as (
            update page_import pi
            set deleted_at = now(), deleted_by = $2, updated_at = now(), updated_by = $2
            from locked l
            where pi.id = l.id and pi.deleted_at is null
            returning pi.id
        ), unqueued as (
            update page_import_attempt a set queued_seq = null
            from deleted d
            where a.page_import_id = d.id and a.queued_seq is not null
        )
        select id as "id!" from deleted
        "#,
        id,
        actor,
    )
    .fetch_all(conn)
    .await?;
    Ok(Some(deleted))
}

/// After the delete of the import `page_import_id`: soft-deletes its set
/// when no live member is left (a set is never shown empty).
pub async fn delete_if_emptied(conn: &mut PgConnection, page_import_id: &str, actor: &str) -> sqlx::Result<()> {
    sqlx::query!(
        r#"
        update page_import_set s
        set deleted_at = now(), deleted_by = $2, updated_at = now(), updated_by = $2
        from page_import_set_member m
        where m.page_import_id = $1 and s.id = m.set_id and s.deleted_at is null
          and not exists (
              select 1 from page_import_set_member o join page_import pi on pi.id = o.page_import_id
              where o.set_id = s.id and pi.deleted_at is null
          )
        "#,
        page_import_id,
        actor,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A queued first attempt that leads its set's message: the set, and the
/// members after it whose first attempts are still queued, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leading {
    pub leader: String,
    pub set_id: String,
    pub followers: Vec<String>,
}

/// Of the imports `ids` (first attempts a dispatch pass picked), those
/// that are set members, each with the set's other members still queued
/// at their first attempt after it (`db::capture::pick` picks only a set's
/// first queued member).
pub async fn leading(conn: &mut PgConnection, ids: &[&str]) -> sqlx::Result<Vec<Leading>> {
    sqlx::query_as!(
        Leading,
        r#"
        select m.page_import_id as "leader!", m.set_id as "set_id!",
               coalesce(array_agg(f.page_import_id order by f.ord) filter (where f.page_import_id is not null),
                        '{}') as "followers!"
        from unnest($1::text[]) as p(id)
        join page_import_set_member m on m.page_import_id = p.id
        left join page_import_set_member f
            on f.set_id = m.set_id and f.ord > m.ord
           and exists (select 1 from page_import_attempt a
                       where a.page_import_id = f.page_import_id and a.attempt = 1 and a.queued_seq is not null)
        group by m.page_import_id, m.set_id
        "#,
        ids as &[&str],
    )
    .fetch_all(conn)
    .await
}

/// Marks the slots the members' first attempts took as their set's one
/// slot (`capture_slot.set_id`): `(page_import_id, set_id)` pairs.
pub async fn share_slots(conn: &mut PgConnection, members: &[(&str, &str)]) -> sqlx::Result<()> {
    let (ids, sets): (Vec<&str>, Vec<&str>) = members.iter().copied().unzip();
    sqlx::query!(
        r#"
        update capture_slot s set set_id = u.set_id
        from unnest($1::text[], $2::text[]) as u(id, set_id)
        where s.page_import_id = u.id and s.attempt = 1
        "#,
        &ids as &[&str],
        &sets as &[&str],
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A set's status from its live members' (SPEC §15): `processing` while
/// any is, then `completed` when every one completed, `failed` when every
/// one failed, `partial` otherwise (a set with no live member included).
pub fn set_status(members: impl IntoIterator<Item = JobStatus>) -> SetStatus {
    let (mut any, mut completed, mut failed) = (0, 0, 0);
    for status in members {
        any += 1;
        match status {
            JobStatus::Processing => return SetStatus::Processing,
            JobStatus::Completed => completed += 1,
            JobStatus::Failed => failed += 1,
        }
    }
    match (any, completed, failed) {
        (n, c, _) if n > 0 && c == n => SetStatus::Completed,
        (n, _, f) if n > 0 && f == n => SetStatus::Failed,
        _ => SetStatus::Partial,
    }
}

/// A set's status (SPEC §15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SetStatus {
    Processing,
    Completed,
    Failed,
    Partial,
}

impl SetStatus {
    /// Whether it can change no more (the set's `/events` ends after it).
    pub fn is_terminal(self) -> bool {
        self != Self::Processing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use JobStatus::{Completed as C, Failed as F, Processing as P};

    #[test]
    fn a_sets_status_follows_its_members() {
        assert_eq!(set_status([C, P, F]), SetStatus::Processing);
        assert_eq!(set_status([C, C]), SetStatus::Completed);
        assert_eq!(set_status([F, F, F]), SetStatus::Failed);
        assert_eq!(set_status([C, F]), SetStatus::Partial);
        assert_eq!(set_status([]), SetStatus::Partial);
    }
}
