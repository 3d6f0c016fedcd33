//! Import sets (SPEC §15): creating one (its row and one ordinary import
//! per variant, admitted all or none), reading and listing them as the
//! caller sees them, and deleting one with every member.

use page_import_platform::telemetry::trace_context;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::auth::Actor;
use crate::db::capture;
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::page_import::{self as imports_db, PageImport, PendingCreate};
use crate::db::sets::{self as db, PageImportSet, PendingSet};
use crate::dns::DnsChecker;
use crate::domain::cursor::{self, KeysetPosition};
use crate::domain::new_set::NewSet;
use crate::domain::Nonce;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::queue::{Committed, DispatchSignal};
use crate::service::create::check_dns;
use crate::service::dispatch::{self, CaptureLimits};
use crate::set_resource::PageImportSetView;

/// What import sets use.
pub struct ImportSets<'a> {
    pub pool: &'a PgPool,
    /// `SOURCE_URL_DNS_CHECK`: `None` when off.
    pub dns: Option<&'a DnsChecker>,
    /// `ORG_MAX_QUEUED` (admission).
    pub limits: &'a CaptureLimits,
    /// Woken once the members are queued.
    pub dispatch: &'a DispatchSignal,
    /// Told once members are deleted.
    pub committed: &'a Committed,
    pub metrics: &'a Metrics,
}

impl ImportSets<'_> {
    /// Writes the set and its members in one transaction, every member's
    /// first attempt queued (SPEC §12, §15): all admitted, or 429 and
    /// nothing written. With an `Idempotency-Key` its response commits
    /// with them. The members' first attempts carry this span's trace.
    #[tracing::instrument(name = "create_import_set", skip_all, fields(set_id = tracing::field::Empty))]
    pub async fn create(
        &self,
        actor: &Actor,
        request: NewSet,
        key: Option<IdempotencyKey>,
    ) -> Result<PageImportSetView, ApiError> {
        let first = request
            .members
            .first()
            .ok_or_else(|| ApiError::field("variants", "out_of_range", "a set holds at least one variant"))?;
        check_dns(self.dns, &first.source_url).await?;
        let set_id = Uuid::now_v7().to_string();
        let span = tracing::Span::current();
        span.record("set_id", set_id.as_str());
        let traceparent = trace_context::of(&span);
        let (organization_id, project_id) = (first.organization_id, first.project_id);
        let shared = (
            first.source_url.clone(),
            first.ready_selector.clone(),
            first.reader.clone(),
        );
        let pending: Vec<PendingCreate> = request
            .members
            .into_iter()
            .map(|m| PendingCreate {
                id: Uuid::now_v7().to_string(),
                organization_id,
                project_id,
                actor: actor.subject.clone(),
                source_url: m.source_url,
                viewport: m.viewport,
                ready_selector: m.ready_selector,
                reader: m.reader,
                nonce: Nonce::generate(),
                traceparent: traceparent.clone(),
            })
            .collect();
        let set = PendingSet {
            id: &set_id,
            organization_id,
            project_id,
            actor: &actor.subject,
            source_url: &shared.0,
            ready_selector: shared.1.as_ref(),
            reader: &shared.2,
        };
        let Some(view) = self.insert(&set, &pending, key.as_ref()).await? else {
            return Err(self.refused(actor, organization_id, project_id).await);
        };
        for _ in &pending {
            self.metrics.import_created();
        }
        tracing::info!(set_id = %set_id, project_id, members = pending.len(), "page import set created");
        self.dispatch.queued(organization_id);
        Ok(view)
    }

    /// The transaction of a create; `None` (rolled back: nothing written,
    /// the key released) when a member was refused.
    async fn insert(
        &self,
        set: &PendingSet<'_>,
        members: &[PendingCreate],
        key: Option<&IdempotencyKey>,
    ) -> Result<Option<PageImportSetView>, ApiError> {
        let mut tx = self.pool.begin().await?;
        crate::db::pin_plan(&mut tx).await?;
        let rows = imports_db::insert_many_queued(&mut tx, members, self.limits.max_queued).await?;
        let Some(mut rows) = rows.into_iter().collect::<Option<Vec<PageImport>>>() else {
            return Ok(None);
        };
        let ids: Vec<&str> = members.iter().map(|m| m.id.as_str()).collect();
        let row = db::insert(&mut tx, set, &ids).await?;
        for member in &mut rows {
            member.set_id = Some(row.id.clone());
        }
        let view = PageImportSetView::new(row, rows);
        if let Some(key) = key {
            idempotency::record_accepted(&mut tx, key, &view.links.self_, &view).await?;
        }
        tx.commit().await?;
        Ok(Some(view))
    }

    /// Why a create wrote nothing: its project is not visible to the actor
    /// (404), or else its organization cannot queue every member (429).
    async fn refused(&self, actor: &Actor, organization_id: i64, project_id: i64) -> ApiError {
        let why = async {
            let mut conn = self.pool.acquire().await?;
            if !imports_db::project_visible(&mut conn, organization_id, project_id, &actor.subject).await? {
                return Ok(ApiError::NotFound);
            }
            let backlog = capture::org_backlog(&mut conn, organization_id).await?;
            Ok::<_, ApiError>(dispatch::too_many_queued(backlog, self.metrics))
        };
        why.await.unwrap_or_else(|err| err)
    }

    /// The set `id` as the actor may see it, with its live members; 404
    /// otherwise.
    #[tracing::instrument(name = "read_import_set", level = "debug", skip_all, fields(set_id = %id))]
    pub async fn visible(&self, actor: &Actor, id: &str) -> Result<PageImportSetView, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let set = db::find_visible(&mut conn, id, &actor.subject)
            .await?
            .ok_or(ApiError::NotFound)?;
        let members = db::members(&mut conn, std::slice::from_ref(&set.id)).await?;
        Ok(PageImportSetView::new(set, members))
    }

    /// The live member ids of the set `id` as the actor may see it (what its
    /// `/events` stream watches); 404 otherwise.
    pub async fn member_ids(&self, actor: &Actor, id: &str) -> Result<Vec<String>, ApiError> {
        Ok(self
            .visible(actor, id)
            .await?
            .imports
            .into_iter()
            .map(|m| m.id)
            .collect())
    }

    /// One page of a project's sets, newest first, and the next page's
    /// cursor (SPEC §6's list). A project the actor cannot see is 404.
    #[tracing::instrument(name = "list_import_sets", level = "debug", skip_all)]
    pub async fn list(
        &self,
        actor: &Actor,
        organization_id: i64,
        project_id: i64,
        limit: i64,
        after: Option<KeysetPosition>,
    ) -> Result<(Vec<PageImportSetView>, Option<String>), ApiError> {
        let mut conn = self.pool.acquire().await?;
        if !imports_db::project_visible(&mut conn, organization_id, project_id, &actor.subject).await? {
            return Err(ApiError::NotFound);
        }
        let mut sets = db::list_page(&mut conn, project_id, after.as_ref(), limit + 1).await?;
        let next_cursor = if sets.len() as i64 > limit {
            sets.truncate(limit as usize);
            sets.last().map(|last| {
                cursor::encode(&KeysetPosition {
                    created_at: last.created_at,
                    id: last.id.clone(),
                })
            })
        } else {
            None
        };
        let views = with_members(&mut conn, sets).await?;
        Ok((views, next_cursor))
    }

    /// Soft-deletes the set and every member in one transaction (SPEC §15:
    /// §13 erases each member); 404 when the actor sees no such set.
    #[tracing::instrument(name = "delete_import_set", skip_all, fields(set_id = %id))]
    pub async fn delete(&self, actor: &Actor, id: &str) -> Result<(), ApiError> {
        let mut tx = self.pool.begin().await?;
        let Some(members) = db::soft_delete(&mut tx, id, &actor.subject).await? else {
            return Err(ApiError::NotFound);
        };
        tx.commit().await?;
        self.committed.attempts_ended(members.iter().map(String::as_str));
        tracing::info!(set_id = %id, members = members.len(), "page import set deleted");
        Ok(())
    }
}

/// The sets' views, each with its live members in order.
async fn with_members(conn: &mut PgConnection, sets: Vec<PageImportSet>) -> sqlx::Result<Vec<PageImportSetView>> {
    let ids: Vec<String> = sets.iter().map(|s| s.id.clone()).collect();
    let mut members = db::members(conn, &ids).await?;
    Ok(sets
        .into_iter()
        .map(|set| {
            let (mine, rest): (Vec<PageImport>, Vec<PageImport>) = members
                .drain(..)
                .partition(|m| m.set_id.as_deref() == Some(set.id.as_str()));
            members = rest;
            PageImportSetView::new(set, mine)
        })
        .collect())
}
