//! Creating a page import (SPEC §6): the `processing` row, its first
//! attempt and its outbox message, committed together, then handed to the
//! after-commit publisher.

use std::time::Instant;

use page_import_contract::job::deduplication_id;
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::Actor;
use crate::db::coalesce::Creates;
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::outbox::OutboxMessage;
use crate::db::page_import::{self as db, PendingCreate};
use crate::dns::{DnsCheckError, DnsChecker};
use crate::domain::new_import::NewImport;
use crate::domain::{Nonce, ReadySelector, SourceUrl};
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::queue::messages::{capture_job_body, CaptureDestination, ViewportMessage};
use crate::queue::{Publisher, QueueName};
use crate::resource::PageImportView;

/// What creating an import uses.
pub struct CreateDeps<'a> {
    /// For a create with an `Idempotency-Key`, which runs in its own transaction.
    pub pool: &'a PgPool,
    /// Creates without a key, coalesced into shared statements.
    pub creates: &'a Creates,
    pub publisher: &'a Publisher,
    /// `SOURCE_URL_DNS_CHECK`: `None` when off.
    pub dns: Option<&'a DnsChecker>,
    pub destination: &'a CaptureDestination,
    pub metrics: &'a Metrics,
}

/// Records the `processing` row and its outbox message (SPEC §6), then hands
/// the message to the after-commit publisher. With an `Idempotency-Key` the
/// key's response commits with the row. `answer_by` is the request's deadline.
pub async fn create(
    deps: &CreateDeps<'_>,
    actor: &Actor,
    request: NewImport,
    key: Option<IdempotencyKey>,
    answer_by: Instant,
) -> Result<PageImportView, ApiError> {
    check_dns(deps.dns, &request.source_url).await?;
    let id = Uuid::now_v7().to_string();
    let nonce = Nonce::generate();
    let message_body = capture_job_body(
        deps.destination,
        &id,
        1,
        nonce.expose(),
        request.source_url.as_str(),
        ViewportMessage {
            width: request.viewport.width,
            height: request.viewport.height,
            device_scale_factor: request.viewport.device_scale_factor,
        },
        request.ready_selector.as_ref().map(ReadySelector::as_str),
    );
    let lease_ms = deps.publisher.lease().as_millis() as i64;

    let pending = PendingCreate {
        id: id.clone(),
        organization_id: request.organization_id,
        project_id: request.project_id,
        actor: actor.subject.clone(),
        source_url: request.source_url,
        viewport: request.viewport,
        ready_selector: request.ready_selector,
        nonce,
        body: message_body.clone(),
        lease_ms,
    };
    // The row and its message are one statement, so without an idempotency
    // key no explicit transaction is needed, and concurrent creates share one
    // statement and one commit (see `db::coalesce`). With a key, the key's
    // response commits with the row.
    let (view, outbox_id) = match key {
        None => {
            let (row, outbox_id) = deps.creates.call(pending, answer_by).await?.ok_or(ApiError::NotFound)?;
            (PageImportView::from(row), outbox_id)
        }
        Some(key) => {
            let mut tx = deps.pool.begin().await?;
            crate::db::pin_plan(&mut tx).await?;
            let (row, outbox_id) = db::insert_many_with_messages(&mut tx, std::slice::from_ref(&pending))
                .await?
                .pop()
                .flatten()
                .ok_or(ApiError::NotFound)?;
            let view = PageImportView::from(row);
            idempotency::record_accepted(&mut tx, &key, &view.links.self_, &view).await?;
            tx.commit().await?;
            (view, outbox_id)
        }
    };
    let project_id = view.project_id;
    deps.metrics.import_created();
    tracing::info!(page_import_id = %id, project_id, "page import created");

    // The request does not wait for SQS; the relay covers a failed publish.
    deps.publisher.publish_after_commit(OutboxMessage {
        id: outbox_id,
        queue: QueueName::PageImport.as_str().to_owned(),
        body: message_body,
        message_group_id: project_id.to_string(),
        deduplication_id: deduplication_id(&id, 1),
        attempts: 0,
    });

    Ok(view)
}

/// The optional DNS check of the source host (`SOURCE_URL_DNS_CHECK`): a
/// name that does not resolve, or resolves to a non-public address, is 422.
async fn check_dns(dns: Option<&DnsChecker>, source_url: &SourceUrl) -> Result<(), ApiError> {
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
