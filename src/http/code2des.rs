//! `/code2des`: start Code2Des jobs from completed captures (SPEC §8).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::app::AppState;
use crate::auth::Actor;
use crate::db::code2des::{self as db, Code2Des, NewCode2Des};
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::outbox::OutboxMessage;
use crate::domain::{Code2DesStatus, ImportStatus};
use crate::error::{ApiError, Problem};
use crate::http::{idempotent, ApiJson, IdPath};
use crate::queue::messages::Code2DesJob;
use crate::queue::QueueName;

const CREATE_ROUTE: &str = "POST /code2des";

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateCode2Des {
    #[schema(example = 1)]
    pub organization_id: i64,
    #[schema(example = 1)]
    pub project_id: i64,
    /// A completed page import of that project.
    pub page_import_id: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Code2DesView {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub page_import_id: String,
    pub capture_hash: String,
    pub status: Code2DesStatus,
    pub created_at: String,
    pub updated_at: String,
    pub created_by: String,
    pub links: Code2DesLinks,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Code2DesLinks {
    #[serde(rename = "self")]
    pub self_: String,
    pub page_import: String,
}

impl From<Code2Des> for Code2DesView {
    fn from(row: Code2Des) -> Self {
        Self {
            links: Code2DesLinks {
                self_: format!("/code2des/{}", row.id),
                page_import: format!("/page-imports/{}", row.page_import_id),
            },
            id: row.id,
            organization_id: row.organization_id,
            project_id: row.project_id,
            page_import_id: row.page_import_id,
            capture_hash: row.capture_hash,
            status: row.status,
            created_at: crate::domain::timestamp(row.created_at),
            updated_at: crate::domain::timestamp(row.updated_at),
            created_by: row.created_by,
        }
    }
}

/// Start a Code2Des job from a completed page import; the import is not modified.
#[utoipa::path(
    post, path = "/code2des", operation_id = "createCode2Des", tag = "code2des",
    request_body = CreateCode2Des,
    params(("Idempotency-Key" = Option<String>, Header, description = "As for page imports",
        min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    responses(
        (status = 202, body = Code2DesView, headers(("Location" = String, description = "/code2des/{id}"))),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Import not visible, deleted, or not in that project", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "page_import_not_ready, or Idempotency-Key in flight", body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 415, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    body: ApiJson<CreateCode2Des>,
) -> Result<Response, ApiError> {
    let request = body.value;
    if !crate::domain::is_resource_id(&request.page_import_id) {
        return Err(ApiError::NotFound);
    }
    idempotent::run(&state, &actor, &headers, &body.raw, CREATE_ROUTE, |key| {
        create_inner(&state, &actor, request, key)
    })
    .await
}

async fn create_inner(
    state: &AppState,
    actor: &Actor,
    request: CreateCode2Des,
    key: Option<IdempotencyKey>,
) -> Result<Response, ApiError> {
    let mut tx = state.pool.begin().await?;
    // Eligibility and insert in one transaction, under a share lock on the source.
    let source = db::lock_source(
        &mut tx,
        &request.page_import_id,
        request.organization_id,
        request.project_id,
        &actor.subject,
    )
    .await?
    .ok_or(ApiError::NotFound)?;
    let (ImportStatus::Completed, Some(result_url), Some(capture_hash)) =
        (source.status, source.result_url, source.capture_hash)
    else {
        return Err(ApiError::conflict(
            "page_import_not_ready",
            format!(
                "The page import is {}; Code2Des needs a completed capture.",
                source.status.as_str()
            ),
        ));
    };

    let id = Uuid::now_v7().to_string();
    let message_body = serde_json::to_string(&Code2DesJob {
        schema_version: 1,
        code2des_id: &id,
        page_import_id: &request.page_import_id,
        result_url: &result_url,
        capture_hash: &capture_hash,
    })
    .map_err(anyhow::Error::from)?;
    let new = NewCode2Des {
        id: &id,
        organization_id: request.organization_id,
        project_id: request.project_id,
        page_import_id: &request.page_import_id,
        capture_hash: &capture_hash,
        actor: &actor.subject,
    };
    let (row, outbox_id) =
        db::insert_with_message(&mut tx, &new, &message_body, state.publisher.lease().as_millis() as i64).await?;
    let project_id = row.project_id;
    let view = Code2DesView::from(row);
    let location = view.links.self_.clone();
    let body = serde_json::to_value(&view).map_err(anyhow::Error::from)?;
    if let Some(key) = key {
        idempotency::complete(&mut tx, &key, 202, &location, &body).await?;
    }
    tx.commit().await?;
    state.metrics.code2des_created();
    tracing::info!(code2des_id = %id, page_import_id = %request.page_import_id, "code2des job created");

    state.publisher.publish_after_commit(OutboxMessage {
        id: outbox_id,
        queue: QueueName::Code2Des.as_str().to_owned(),
        body: message_body,
        message_group_id: project_id.to_string(),
        deduplication_id: id,
        attempts: 0,
    });
    idempotent::accepted(&location, &body)
}

/// Read one Code2Des job.
#[utoipa::path(
    get, path = "/code2des/{id}", operation_id = "getCode2Des", tag = "code2des",
    params(("id" = String, Path)),
    responses(
        (status = 200, body = Code2DesView),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    actor: Actor,
    IdPath(id): IdPath,
) -> Result<Json<Code2DesView>, ApiError> {
    let mut conn = state.pool.acquire().await?;
    let row = db::find_visible(&mut conn, &id, &actor.subject)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(row.into()))
}
