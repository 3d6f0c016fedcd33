//! The `code2des` table: jobs that reference a completed page import and
//! never modify it.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::domain::JobStatus;

#[derive(Debug, Clone, PartialEq)]
pub struct Code2Des {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub page_import_id: String,
    pub capture_hash: String,
    pub status: JobStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub created_by: String,
}

/// What Code2Des needs of its source import.
pub struct Source {
    pub status: JobStatus,
    pub result_url: Option<String>,
    pub capture_hash: Option<String>,
}

/// Reads the source import for the actor and takes a `FOR SHARE` lock on it,
/// so a soft delete (an UPDATE) cannot commit until this transaction ends.
/// A delete already in progress is waited for and then seen. Locking does not
/// change any column of the row.
pub async fn lock_source(
    conn: &mut PgConnection,
    page_import_id: &str,
    organization_id: i64,
    project_id: i64,
    actor: &str,
) -> sqlx::Result<Option<Source>> {
    sqlx::query_as!(
        Source,
        r#"
        select pi.status as "status: JobStatus", pi.result_url, pi.capture_hash
        from page_import pi
        where pi.id = $1
          and pi.organization_id = $2
          and pi.project_id = $3
          and pi.deleted_at is null
          and exists (select 1 from member_organizations($4) o where o.organization_id = pi.organization_id)
        for share of pi
        "#,
        page_import_id,
        organization_id,
        project_id,
        actor,
    )
    .fetch_optional(conn)
    .await
}

pub struct NewCode2Des<'a> {
    pub id: &'a str,
    pub organization_id: i64,
    pub project_id: i64,
    pub page_import_id: &'a str,
    pub capture_hash: &'a str,
    pub actor: &'a str,
}

/// Inserts the job and its outbox message in one statement; returns the row
/// and the outbox id.
pub async fn insert_with_message(
    conn: &mut PgConnection,
    new: &NewCode2Des<'_>,
    message_body: &str,
    lease_ms: i64,
    traceparent: Option<&str>,
) -> sqlx::Result<(Code2Des, i64)> {
    let row = sqlx::query!(
        r#"
        with inserted as (
            insert into code2des (id, organization_id, project_id, page_import_id, capture_hash, created_by, updated_by)
            values ($1, $2, $3, $4, $5, $6, $6)
            returning *
        ), queued as (
            insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at, traceparent)
            select 'code2des', $7, i.project_id::text, i.id, now() + make_interval(secs => $8::bigint / 1000.0), $9
            from inserted i
            returning id
        )
        select i.id, i.organization_id, i.project_id, i.page_import_id, i.capture_hash,
               i.status as "status: JobStatus", i.created_at, i.updated_at, i.created_by,
               q.id as outbox_id
        from inserted i, queued q
        "#,
        new.id,
        new.organization_id,
        new.project_id,
        new.page_import_id,
        new.capture_hash,
        new.actor,
        message_body,
        lease_ms,
        traceparent,
    )
    .fetch_one(conn)
    .await?;
    Ok((
        Code2Des {
            id: row.id,
            organization_id: row.organization_id,
            project_id: row.project_id,
            page_import_id: row.page_import_id,
            capture_hash: row.capture_hash,
            status: row.status,
            created_at: row.created_at,
            updated_at: row.updated_at,
            created_by: row.created_by,
        },
        row.outbox_id,
    ))
}

pub async fn find_visible(conn: &mut PgConnection, id: &str, actor: &str) -> sqlx::Result<Option<Code2Des>> {
    sqlx::query_as!(
        Code2Des,
        r#"
        select c.id, c.organization_id, c.project_id, c.page_import_id, c.capture_hash,
               c.status as "status: JobStatus", c.created_at, c.updated_at, c.created_by
        from code2des c
        where c.id = $1
          and c.deleted_at is null
          and exists (select 1 from member_organizations($2) o where o.organization_id = c.organization_id)
        "#,
        id,
        actor,
    )
    .fetch_optional(conn)
    .await
}
