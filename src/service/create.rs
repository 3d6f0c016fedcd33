//! Creating a page import (SPEC §6): the `processing` row, its first
//! attempt and that attempt's place in the capture queue, committed
//! together if the organization may queue it (SPEC §12), then handed to the
//! dispatcher, which writes the attempt's message when it grants it a slot.

use std::time::Instant;

use page_import_platform::telemetry::trace_context;
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::Actor;
use crate::db::capture;
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::page_import::coalesced::Creates;
use crate::db::page_import::{self as db, PendingCreate};
use crate::dns::{DnsCheckError, DnsChecker};
use crate::domain::new_import::NewImport;
use crate::domain::{Nonce, SourceUrl};
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::queue::DispatchSignal;
use crate::resource::PageImportView;
use crate::service::dispatch::{self, CaptureLimits};

/// What creating an import uses.
pub struct Creator<'a> {
    /// For a create with an `Idempotency-Key`, which runs in its own
    /// transaction, and for telling why a create was refused.
    pub pool: &'a PgPool,
    /// Creates without a key, coalesced into shared statements.
    pub creates: &'a Creates,
    /// `SOURCE_URL_DNS_CHECK`: `None` when off.
    pub dns: Option<&'a DnsChecker>,
    /// `ORG_MAX_QUEUED` (admission).
    pub limits: &'a CaptureLimits,
    /// Woken once the import is queued.
    pub dispatch: &'a DispatchSignal,
    pub metrics: &'a Metrics,
}

impl Creator<'_> {
    /// Records the `processing` row and queues its first attempt (SPEC §6,
    /// §12), then wakes the dispatcher. With an `Idempotency-Key` the key's
    /// response commits with the row. An organization whose backlog is full
    /// gets 429 and nothing is written. `answer_by` is the request's deadline.
    /// The first attempt carries on this span's trace (SPEC §9).
    #[tracing::instrument(name = "create_import", skip_all, fields(page_import_id = tracing::field::Empty))]
    pub async fn create(
        &self,
        actor: &Actor,
        request: NewImport,
        key: Option<IdempotencyKey>,
        answer_by: Instant,
    ) -> Result<PageImportView, ApiError> {
        check_dns(self.dns, &request.source_url).await?;
        let id = Uuid::now_v7().to_string();
        let span = tracing::Span::current();
        span.record("page_import_id", id.as_str());
        let nonce = Nonce::generate();
        let (organization_id, project_id) = (request.organization_id, request.project_id);
        let pending = PendingCreate {
            id: id.clone(),
            organization_id,
            project_id,
            actor: actor.subject.clone(),
            source_url: request.source_url,
            viewport: request.viewport,
            ready_selector: request.ready_selector,
            reader: request.reader,
            nonce,
            traceparent: trace_context::of(&span),
        };
        // The row and its queue entry are one statement, so without an
        // idempotency key no explicit transaction is needed, and concurrent
        // creates share one statement and one commit (see `coalesce`). With
        // a key, the key's response commits with the row.
        let created = match key {
            None => self.creates.call(pending, answer_by).await?.map(PageImportView::from),
            Some(key) => self.insert_keyed(&pending, &key).await?,
        };
        let Some(view) = created else {
            return Err(self.refused(actor, organization_id, project_id).await);
        };
        self.metrics.import_created();
        tracing::info!(page_import_id = %id, project_id, "page import created");
        self.dispatch.queued(organization_id);
        Ok(view)
    }

    /// A create with an `Idempotency-Key`: the statement alone in a
    /// transaction that also records the key's response. `None` (rolled
    /// back: nothing written, the key released) when it was refused.
    async fn insert_keyed(
        &self,
        pending: &PendingCreate,
        key: &IdempotencyKey,
    ) -> Result<Option<PageImportView>, ApiError> {
        let mut tx = self.pool.begin().await?;
        crate::db::pin_plan(&mut tx).await?;
        let row = db::insert_many_queued(&mut tx, std::slice::from_ref(pending), self.limits.max_queued)
            .await?
            .pop()
            .flatten();
        let Some(row) = row else {
            return Ok(None);
        };
        let view = PageImportView::from(row);
        idempotency::record_accepted(&mut tx, key, &view.links.self_, &view).await?;
        tx.commit().await?;
        Ok(Some(view))
    }

    /// Why the create statement wrote nothing for a request: its project is not
    /// visible to the actor (404), or else its organization's backlog was full
    /// (429 with the organization's `Retry-After`).
    async fn refused(&self, actor: &Actor, organization_id: i64, project_id: i64) -> ApiError {
        let why = async {
            let mut conn = self.pool.acquire().await?;
            if !db::project_visible(&mut conn, organization_id, project_id, &actor.subject).await? {
                return Ok(ApiError::NotFound);
            }
            let backlog = capture::org_backlog(&mut conn, organization_id).await?;
            Ok::<_, ApiError>(dispatch::too_many_queued(backlog, self.metrics))
        };
        why.await.unwrap_or_else(|err| err)
    }
}

/// The optional DNS check of the source host (`SOURCE_URL_DNS_CHECK`): a
/// name that does not resolve, or resolves to a non-public address, is 422.
pub(crate) async fn check_dns(dns: Option<&DnsChecker>, source_url: &SourceUrl) -> Result<(), ApiError> {
    if let (Some(dns), Some(host)) = (dns, source_url.domain()) {
        if let Err(err) = dns.check(host).await {
            let (code, message) = match err {
                DnsCheckError::Unresolvable => ("unresolvable_host", "the host name does not resolve".to_owned()),
                DnsCheckError::NonPublic(range) => (
                    "non_public_address",
                    format!("the host resolves to an address that is not publicly reachable ({range})"),
                ),
            };
            return Err(ApiError::field("sourceUrl", code, message));
        }
    }
    Ok(())
}
