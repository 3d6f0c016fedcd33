//! Reading and deleting page imports (SPEC §6), always as the caller sees
//! them: another tenant's import, or a deleted one, reads exactly like a
//! missing one (404).

use std::time::Instant;

use sqlx::PgPool;

use crate::artifacts::{self, ArtifactUrl};
use crate::auth::Actor;
use crate::db::attempt_history::{self, AttemptRow};
use crate::db::page_import::coalesced::Reads;
use crate::db::page_import::{self as db, PageImport};
use crate::domain::cursor::{self, KeysetPosition, ListPage};
use crate::error::ApiError;
use crate::queue::Committed;

/// Reading and deleting imports: what they use.
pub struct Imports<'a> {
    /// Reads by id, coalesced.
    pub reads: &'a Reads,
    pub pool: &'a PgPool,
    /// Told once an import is deleted.
    pub committed: &'a Committed,
    /// For the artifacts' presigned URLs.
    pub s3: &'a aws_sdk_s3::Client,
}

impl Imports<'_> {
    /// The import `id` as the actor may see it, or 404: the one read behind
    /// `GET /page-imports/{id}`, its `/events`, `/retry` and artifact redirects.
    /// Coalesced with concurrent reads (`coalesce`); `answer_by` is the
    /// request's deadline.
    #[tracing::instrument(name = "read_import", level = "debug", skip_all, fields(page_import_id = %id))]
    pub async fn visible(&self, actor: &Actor, id: &str, answer_by: Instant) -> Result<PageImport, ApiError> {
        self.reads
            .call((id.to_owned(), actor.subject.clone()), answer_by)
            .await?
            .ok_or(ApiError::NotFound)
    }

    /// One page of a project's imports, newest first, and the cursor of the
    /// next page (SPEC §6). A project the actor cannot see is 404.
    #[tracing::instrument(name = "list_imports", level = "debug", skip_all, fields(organization_id = organization_id, project_id = project_id))]
    pub async fn list(
        &self,
        actor: &Actor,
        organization_id: i64,
        project_id: i64,
        page: ListPage,
    ) -> Result<(Vec<PageImport>, Option<String>), ApiError> {
        let mut conn = self.pool.acquire().await?;
        if !db::project_visible(&mut conn, organization_id, project_id, &actor.subject).await? {
            return Err(ApiError::NotFound);
        }
        let mut rows = db::list_page(&mut conn, project_id, page.status, page.after.as_ref(), page.limit + 1).await?;
        let next_cursor = if rows.len() as i64 > page.limit {
            rows.truncate(page.limit as usize);
            rows.last().map(|last| {
                cursor::encode(&KeysetPosition {
                    created_at: last.created_at,
                    id: last.id.clone(),
                })
            })
        } else {
            None
        };
        Ok((rows, next_cursor))
    }

    /// Soft-deletes the import; 404 when the actor sees no such import. Later
    /// callbacks for it answer 410. A queued attempt is never dispatched, and
    /// the dispatcher is woken to release the slot of one in flight.
    #[tracing::instrument(name = "delete_import", skip_all, fields(page_import_id = %id))]
    pub async fn delete(&self, actor: &Actor, id: &str) -> Result<(), ApiError> {
        let mut conn = self.pool.acquire().await?;
        if !db::soft_delete(&mut conn, id, &actor.subject).await? {
            return Err(ApiError::NotFound);
        }
        // A set member's delete leaves the set with its others (SPEC §15);
        // with none left, the set goes too.
        crate::db::sets::delete_if_emptied(&mut conn, id, &actor.subject).await?;
        self.committed.attempt_ended(id);
        tracing::info!(page_import_id = %id, "page import deleted");
        Ok(())
    }

    /// A presigned GET (≤ 5 min) of the artifact `pick` names on the import
    /// `id` as the actor may see it; 404 when there is no such import or no
    /// such artifact yet.
    #[tracing::instrument(name = "artifact_url", level = "debug", skip_all, fields(page_import_id = %id))]
    pub async fn artifact_url(
        &self,
        actor: &Actor,
        id: &str,
        answer_by: Instant,
        pick: impl FnOnce(PageImport) -> Option<String>,
    ) -> Result<String, ApiError> {
        let row = self.visible(actor, id, answer_by).await?;
        let artifact = pick(row)
            .as_deref()
            .and_then(ArtifactUrl::parse_stored)
            .ok_or(ApiError::NotFound)?;
        Ok(artifacts::presigned_get(self.s3, &artifact).await?)
    }

    /// The attempts of the import `id` as the actor may see it, first to
    /// last; 404 when there is no such import (every import has its first).
    #[tracing::instrument(name = "list_attempts", level = "debug", skip_all, fields(page_import_id = %id))]
    pub async fn attempts(&self, actor: &Actor, id: &str) -> Result<Vec<AttemptRow>, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let rows = attempt_history::list_visible(&mut conn, id, &actor.subject).await?;
        if rows.is_empty() {
            return Err(ApiError::NotFound);
        }
        Ok(rows)
    }
}
