//! `page_import_attempt`: one row per attempt, the history support staff
//! read. Written by the transition statements of `db::page_import`, with
//! the reason and outcome their callers pass (`domain::lifecycle`).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

#[derive(Debug)]
pub struct AttemptRow {
    pub attempt: i32,
    pub reason: String,
    pub started_by: String,
    pub started_at: DateTime<Utc>,
    pub dispatched_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub outcome: Option<String>,
    pub error_message: Option<String>,
}

/// The attempts of an import the actor may see, first to last; empty when
/// the import is unknown, deleted or another tenant's (every import has at
/// least its first attempt).
pub async fn list_visible(conn: &mut PgConnection, id: &str, actor: &str) -> sqlx::Result<Vec<AttemptRow>> {
    sqlx::query_as!(
        AttemptRow,
        r#"
        select a.attempt, a.reason, a.started_by, a.started_at, a.dispatched_at, a.finished_at,
               a.outcome, a.error_message
        from page_import pi
        join page_import_attempt a on a.page_import_id = pi.id
        where pi.id = $1
          and pi.deleted_at is null
          and exists (select 1 from member_organizations($2) o where o.organization_id = pi.organization_id)
        order by a.attempt
        "#,
        id,
        actor,
    )
    .fetch_all(conn)
    .await
}
