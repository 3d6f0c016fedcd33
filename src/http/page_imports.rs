//! `/page-imports`: create, read, list, soft delete.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::app::AppState;
use crate::artifacts::{self, ArtifactUrl};
use crate::auth::Actor;
use crate::db::idempotency::{self, IdempotencyKey};
use crate::db::outbox::OutboxMessage;
use crate::db::page_import::{self as db, PageImport, PendingCreate};
use crate::dns::DnsCheckError;
use crate::domain::{cursor, timestamp, ImportStatus, Nonce, ReadySelector, SourceUrl, Viewport};
use crate::error::{ApiError, FieldError, Problem};
use crate::http::events::Tagged;
use crate::http::{idempotent, ApiJson, ApiQuery, Deadline, IdPath};
use crate::queue::messages::{capture_job_body, ViewportMessage};
use crate::queue::QueueName;

const CREATE_ROUTE: &str = "POST /page-imports";

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePageImport {
    #[schema(example = 1)]
    pub organization_id: i64,
    #[schema(example = 1)]
    pub project_id: i64,
    /// A public http(s) URL on port 80 or 443; stored normalized, without its fragment.
    #[schema(example = "https://example.com/pricing", max_length = 2048)]
    pub source_url: String,
    pub viewport: ViewportBody,
    /// A CSS selector the page must match before capture.
    #[serde(default)]
    #[schema(example = "#app", min_length = 1, max_length = 512)]
    pub ready_selector: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ViewportBody {
    #[schema(minimum = 200, maximum = 3840, example = 1440)]
    pub width: i64,
    #[schema(minimum = 200, maximum = 2160, example = 900)]
    pub height: i64,
    /// Default 1.
    #[serde(default)]
    #[schema(minimum = 0.5, maximum = 4.0, example = 2.0)]
    pub device_scale_factor: Option<f64>,
}

/// The resource as users see it (SPEC §6). It has no nonce field at all.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageImportView {
    pub id: String,
    pub organization_id: i64,
    pub project_id: i64,
    pub source_kind: String,
    pub source_url: String,
    pub viewport: ViewportView,
    pub ready_selector: Option<String>,
    pub status: ImportStatus,
    pub attempt: i32,
    pub result_url: Option<String>,
    pub capture_hash: Option<String>,
    pub screenshot_url: Option<String>,
    pub error_message: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub created_by: String,
    pub links: Links,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ViewportView {
    pub width: i32,
    pub height: i32,
    pub device_scale_factor: f32,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Links {
    #[serde(rename = "self")]
    pub self_: String,
    pub capture: Option<String>,
    pub screenshot: Option<String>,
}

impl From<PageImport> for PageImportView {
    fn from(row: PageImport) -> Self {
        let self_ = format!("/page-imports/{}", row.id);
        let links = Links {
            capture: row.result_url.as_ref().map(|_| format!("{self_}/capture")),
            screenshot: row.screenshot_url.as_ref().map(|_| format!("{self_}/screenshot")),
            self_,
        };
        Self {
            id: row.id,
            organization_id: row.organization_id,
            project_id: row.project_id,
            source_kind: row.source_kind,
            source_url: row.source_url,
            viewport: ViewportView {
                width: row.viewport_width,
                height: row.viewport_height,
                device_scale_factor: row.device_scale_factor,
            },
            ready_selector: row.ready_selector,
            status: row.status,
            attempt: row.attempt,
            result_url: row.result_url,
            capture_hash: row.capture_hash,
            screenshot_url: row.screenshot_url,
            error_message: row.error_message,
            created_at: timestamp(row.created_at),
            updated_at: timestamp(row.updated_at),
            created_by: row.created_by,
            links,
        }
    }
}

/// A create request whose every field passed its rules.
struct ValidCreate {
    organization_id: i64,
    project_id: i64,
    source_url: SourceUrl,
    viewport: Viewport,
    ready_selector: Option<ReadySelector>,
}

async fn validate(state: &AppState, body: CreatePageImport) -> Result<ValidCreate, ApiError> {
    let mut errors = Vec::new();
    let source_url = SourceUrl::parse(&body.source_url, state.source_url_policy())
        .map_err(|e| errors.push(FieldError::new("sourceUrl", e.code(), e.to_string())))
        .ok();
    let viewport = Viewport::parse(
        body.viewport.width,
        body.viewport.height,
        body.viewport.device_scale_factor,
    )
    .map_err(|e| errors.extend(e))
    .ok();
    let ready_selector = match body.ready_selector.as_deref().map(ReadySelector::parse) {
        Some(Err(e)) => {
            errors.push(e);
            None
        }
        Some(Ok(s)) => Some(s),
        None => None,
    };
    let (Some(source_url), Some(viewport), true) = (source_url, viewport, errors.is_empty()) else {
        return Err(ApiError::Validation(errors));
    };
    if let (Some(dns), Some(host)) = (&state.dns, source_url.domain()) {
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
    Ok(ValidCreate {
        organization_id: body.organization_id,
        project_id: body.project_id,
        source_url,
        viewport,
        ready_selector,
    })
}

/// Create a page import: records the `processing` row and queues the capture job.
#[utoipa::path(
    post, path = "/page-imports", operation_id = "createPageImport", tag = "page-imports",
    request_body = CreatePageImport,
    params(("Idempotency-Key" = Option<String>, Header,
        description = "Up to 255 visible ASCII characters; a repeat with the same body replays the first response for 24 h",
        min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    responses(
        (status = 202, description = "Accepted; the capture job is queued", body = PageImportView,
         headers(("Location" = String, description = "/page-imports/{id}"))),
        (status = 400, description = "Malformed JSON, missing, unknown or mistyped field", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Project not visible to the caller", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The same Idempotency-Key is still in flight", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 16 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Content-Type is not application/json", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid values, or the Idempotency-Key was used with another body", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "A dependency is unavailable", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    actor: Actor,
    deadline: Deadline,
    headers: HeaderMap,
    body: ApiJson<CreatePageImport>,
) -> Result<Response, ApiError> {
    // The key first: a repeat of an accepted request replays its answer even
    // where validation (a DNS answer, say) would now refuse it.
    idempotent::run(&state, &actor, &headers, &body.raw, CREATE_ROUTE, |key| async {
        let request = validate(&state, body.value).await?;
        create_inner(&state, &actor, request, key, deadline).await
    })
    .await
}

async fn create_inner(
    state: &AppState,
    actor: &Actor,
    request: ValidCreate,
    key: Option<IdempotencyKey>,
    deadline: Deadline,
) -> Result<Response, ApiError> {
    let id = Uuid::now_v7().to_string();
    let nonce = Nonce::generate();
    let message_body = capture_job_body(
        &state.config,
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
    let lease_ms = state.publisher.lease().as_millis() as i64;

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
            let (row, outbox_id) = state
                .creates
                .call(pending, deadline.0)
                .await?
                .ok_or(ApiError::NotFound)?;
            (PageImportView::from(row), outbox_id)
        }
        Some(key) => {
            let mut tx = state.pool.begin().await?;
            let (row, outbox_id) = db::insert_many_with_messages(&mut tx, std::slice::from_ref(&pending))
                .await?
                .pop()
                .flatten()
                .ok_or(ApiError::NotFound)?;
            let view = PageImportView::from(row);
            let body = serde_json::to_value(&view).map_err(anyhow::Error::from)?;
            idempotency::complete(
                &mut tx,
                &key,
                StatusCode::ACCEPTED.as_u16() as i16,
                &view.links.self_,
                &body,
            )
            .await?;
            tx.commit().await?;
            (view, outbox_id)
        }
    };
    let project_id = view.project_id;
    state.metrics.import_created();
    tracing::info!(page_import_id = %id, project_id, "page import created");

    // The request does not wait for SQS; the relay covers a failed publish.
    state.publisher.publish_after_commit(OutboxMessage {
        id: outbox_id,
        queue: QueueName::PageImport.as_str().to_owned(),
        body: message_body,
        message_group_id: project_id.to_string(),
        deduplication_id: page_import_contract::job::deduplication_id(&id, 1),
        attempts: 0,
    });

    idempotent::accepted(&view.links.self_, &view)
}

/// Read one page import.
#[utoipa::path(
    get, path = "/page-imports/{id}", operation_id = "getPageImport", tag = "page-imports",
    params(
        ("id" = String, Path, description = "The import's UUIDv7"),
        ("If-None-Match" = Option<String>, Header, description = "An ETag from an earlier answer: 304 while it is current"),
    ),
    responses(
        (status = 200, body = PageImportView, headers(("ETag" = String, description = "Strong tag of this representation"))),
        (status = 304, description = "Not modified since the ETag given in If-None-Match", headers(("ETag" = String))),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown, deleted, or another tenant's", body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    actor: Actor,
    deadline: Deadline,
    headers: HeaderMap,
    IdPath(id): IdPath,
) -> Result<Response, ApiError> {
    let row = state
        .reads
        .call((id, actor.subject), deadline.0)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Tagged::of(&PageImportView::from(row)).respond(&headers))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    #[param(example = 1)]
    pub organization_id: i64,
    #[param(example = 1)]
    pub project_id: i64,
    /// processing | completed | failed
    #[param(value_type = Option<ImportStatus>)]
    pub status: Option<String>,
    /// 1–100, default 20
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// Opaque; `nextCursor` of the previous page
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageImportList {
    pub items: Vec<PageImportView>,
    pub next_cursor: Option<String>,
}

/// List a project's page imports, newest first (keyset pagination). Code2Des
/// picks its sources with `status=completed`.
#[utoipa::path(
    get, path = "/page-imports", operation_id = "listPageImports", tag = "page-imports",
    params(ListQuery),
    responses(
        (status = 200, body = PageImportList),
        (status = 400, description = "Missing or mistyped query parameter", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Project not visible to the caller", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "limit, status or cursor out of range", body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<PageImportList>, ApiError> {
    let mut errors = Vec::new();
    let limit = query.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        errors.push(FieldError::new("limit", "out_of_range", "limit must be from 1 to 100"));
    }
    let status = match query.status.as_deref() {
        None => None,
        Some(s) => {
            let parsed = ImportStatus::parse(s);
            if parsed.is_none() {
                errors.push(FieldError::new(
                    "status",
                    "invalid_status",
                    "status must be processing, completed or failed",
                ));
            }
            parsed
        }
    };
    let after = match query.cursor.as_deref() {
        None => None,
        Some(c) => {
            let parsed = cursor::decode(c);
            if parsed.is_none() {
                errors.push(FieldError::new(
                    "cursor",
                    "invalid_cursor",
                    "cursor is not one this service issued",
                ));
            }
            parsed
        }
    };
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }

    let mut conn = state.pool.acquire().await?;
    if !db::project_visible(&mut conn, query.organization_id, query.project_id, &actor.subject).await? {
        return Err(ApiError::NotFound);
    }
    let mut rows = db::list_page(&mut conn, query.project_id, status, after.as_ref(), limit + 1).await?;
    let next_cursor = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last().map(|last| {
            cursor::encode(&cursor::KeysetPosition {
                created_at: last.created_at,
                id: last.id.clone(),
            })
        })
    } else {
        None
    };
    Ok(Json(PageImportList {
        items: rows.into_iter().map(PageImportView::from).collect(),
        next_cursor,
    }))
}

/// Redirect to a presigned S3 URL (≤ 5 min) of the capture manifest.
#[utoipa::path(
    get, path = "/page-imports/{id}/capture", operation_id = "getCaptureArtifact", tag = "page-imports",
    params(("id" = String, Path)),
    responses(
        (status = 302, description = "Redirect to the artifact", headers(("Location" = String))),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such import, or no artifact yet", body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn capture(state: State<AppState>, actor: Actor, id: IdPath) -> Result<Response, ApiError> {
    artifact_redirect(state, actor, id, |row| row.result_url).await
}

/// Redirect to a presigned S3 URL (≤ 5 min) of the screenshot.
#[utoipa::path(
    get, path = "/page-imports/{id}/screenshot", operation_id = "getScreenshotArtifact", tag = "page-imports",
    params(("id" = String, Path)),
    responses(
        (status = 302, description = "Redirect to the artifact", headers(("Location" = String))),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such import, or no artifact yet", body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn screenshot(state: State<AppState>, actor: Actor, id: IdPath) -> Result<Response, ApiError> {
    artifact_redirect(state, actor, id, |row| row.screenshot_url).await
}

async fn artifact_redirect(
    State(state): State<AppState>,
    actor: Actor,
    IdPath(id): IdPath,
    pick: impl FnOnce(PageImport) -> Option<String>,
) -> Result<Response, ApiError> {
    let mut conn = state.pool.acquire().await?;
    let row = db::find_visible(&mut conn, &id, &actor.subject)
        .await?
        .ok_or(ApiError::NotFound)?;
    drop(conn);
    let artifact = pick(row)
        .as_deref()
        .and_then(ArtifactUrl::parse_stored)
        .ok_or(ApiError::NotFound)?;
    let url = artifacts::presigned_get(&state.s3, &artifact).await?;
    let mut response = StatusCode::FOUND.into_response();
    response.headers_mut().insert(
        header::LOCATION,
        HeaderValue::try_from(url).map_err(anyhow::Error::from)?,
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Soft-delete a page import; later callbacks for it answer 410.
#[utoipa::path(
    delete, path = "/page-imports/{id}", operation_id = "deletePageImport", tag = "page-imports",
    params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn delete(State(state): State<AppState>, actor: Actor, IdPath(id): IdPath) -> Result<StatusCode, ApiError> {
    let mut conn = state.pool.acquire().await?;
    if db::soft_delete(&mut conn, &id, &actor.subject).await? {
        tracing::info!(page_import_id = %id, "page import deleted");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound)
    }
}
