//! `/page-imports`: create, read, list, soft delete.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::domain::cursor::ListPage;
use crate::domain::new_import::{NewImport, NewImportFields};
use crate::resource::{PageImportView, Tagged};

use crate::auth::Actor;
use crate::db::page_import::PageImport;
use crate::domain::reader::{ColorScheme, Consent};
use crate::domain::JobStatus;
use crate::error::ApiError;
use crate::http::{idempotent, ApiJson, ApiQuery, Deadline, IdPath};
use crate::state::AppState;

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
    /// `prefers-color-scheme` of the capture. Default `light`.
    #[serde(default)]
    #[schema(value_type = Option<ColorScheme>)]
    pub color_scheme: Option<String>,
    /// The reader's language: a BCP 47 tag, stored in its canonical case
    /// (`Accept-Language`, `navigator.language`, `Intl`). Default `en-US`.
    #[serde(default)]
    #[schema(example = "ja-JP", min_length = 2, max_length = 35)]
    pub locale: Option<String>,
    /// The reader's clock: a zone of the IANA time-zone database. Default `UTC`.
    #[serde(default)]
    #[schema(example = "Asia/Tokyo")]
    pub time_zone: Option<String>,
    /// `decline` a consent banner as a reader would, or `keep` it in the capture. Default `decline`.
    #[serde(default)]
    #[schema(value_type = Option<Consent>)]
    pub consent: Option<String>,
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
    /// A phone or tablet of this size and scale (mobile user agent, touch,
    /// `<meta name="viewport">` honoured). Default `false`.
    #[serde(default)]
    pub mobile: Option<bool>,
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
        (status = 400, description = "Malformed JSON, missing, unknown or mistyped field"),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 404, description = "Project not visible to the caller"),
        (status = 409, description = "The same Idempotency-Key is still in flight"),
        (status = 413, description = "Body over 16 KiB"),
        (status = 415, description = "Content-Type is not application/json"),
        (status = 422, description = "Invalid values, or the Idempotency-Key was used with another body"),
        (status = 429, description = "too_many_queued: the organization holds ORG_MAX_QUEUED queued captures; nothing was written",
         headers(("Retry-After" = u64, description = "Whole seconds: the organization's recent time between dispatches"))),
        (status = 503, description = "A dependency is unavailable"),
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
        let b = body.value;
        let fields = NewImportFields {
            organization_id: b.organization_id,
            project_id: b.project_id,
            source_url: &b.source_url,
            width: b.viewport.width,
            height: b.viewport.height,
            device_scale_factor: b.viewport.device_scale_factor,
            mobile: b.viewport.mobile,
            ready_selector: b.ready_selector.as_deref(),
            color_scheme: b.color_scheme.as_deref(),
            locale: b.locale.as_deref(),
            time_zone: b.time_zone.as_deref(),
            consent: b.consent.as_deref(),
        };
        let request = NewImport::parse(fields, state.source_url_policy()).map_err(ApiError::Validation)?;
        let view = state.creator().create(&actor, request, key, deadline.0).await?;
        idempotent::accepted(&view.links.self_, &view)
    })
    .await
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
        (status = 401),
        (status = 404, description = "Unknown, deleted, or another tenant's"),
        (status = 503),
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
    let row = state.imports().visible(&actor, &id, deadline.0).await?;
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
    #[param(value_type = Option<JobStatus>)]
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
        (status = 400, description = "Missing or mistyped query parameter"),
        (status = 401),
        (status = 404, description = "Project not visible to the caller"),
        (status = 422, description = "limit, status or cursor out of range"),
        (status = 503),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<PageImportList>, ApiError> {
    let page =
        ListPage::parse(query.limit, query.status.as_deref(), query.cursor.as_deref()).map_err(ApiError::Validation)?;
    let (rows, next_cursor) = state
        .imports()
        .list(&actor, query.organization_id, query.project_id, page)
        .await?;
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
        (status = 401),
        (status = 404, description = "No such import, or no artifact yet"),
        (status = 503),
    ),
    security(("bearer" = []))
)]
pub async fn capture(
    state: State<AppState>,
    actor: Actor,
    deadline: Deadline,
    id: IdPath,
) -> Result<Response, ApiError> {
    artifact_redirect(state, actor, deadline, id, |row| row.result_url).await
}

/// Redirect to a presigned S3 URL (≤ 5 min) of the screenshot.
#[utoipa::path(
    get, path = "/page-imports/{id}/screenshot", operation_id = "getScreenshotArtifact", tag = "page-imports",
    params(("id" = String, Path)),
    responses(
        (status = 302, description = "Redirect to the artifact", headers(("Location" = String))),
        (status = 401),
        (status = 404, description = "No such import, or no artifact yet"),
        (status = 503),
    ),
    security(("bearer" = []))
)]
pub async fn screenshot(
    state: State<AppState>,
    actor: Actor,
    deadline: Deadline,
    id: IdPath,
) -> Result<Response, ApiError> {
    artifact_redirect(state, actor, deadline, id, |row| row.screenshot_url).await
}

async fn artifact_redirect(
    State(state): State<AppState>,
    actor: Actor,
    deadline: Deadline,
    IdPath(id): IdPath,
    pick: impl FnOnce(PageImport) -> Option<String>,
) -> Result<Response, ApiError> {
    let url = state.imports().artifact_url(&actor, &id, deadline.0, pick).await?;
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
        (status = 401),
        (status = 404),
        (status = 503),
    ),
    security(("bearer" = []))
)]
pub async fn delete(State(state): State<AppState>, actor: Actor, IdPath(id): IdPath) -> Result<StatusCode, ApiError> {
    state.imports().delete(&actor, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
