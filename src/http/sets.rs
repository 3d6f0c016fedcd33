//! `/page-import-sets` (SPEC §15): create, read, list, delete. The set's
//! `/events` stream is `http::set_events`.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::auth::Actor;
use crate::domain::cursor::ListPage;
use crate::domain::new_set::{NewSet, NewSetError, NewSetFields, VariantFields};
use crate::domain::reader::{ColorScheme, Consent};
use crate::error::ApiError;
use crate::http::page_imports::ViewportBody;
use crate::http::{idempotent, ApiJson, ApiQuery, IdPath};
use crate::set_resource::PageImportSetView;
use crate::state::AppState;

const CREATE_ROUTE: &str = "POST /page-import-sets";

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePageImportSet {
    #[schema(example = 1)]
    pub organization_id: i64,
    #[schema(example = 1)]
    pub project_id: i64,
    /// A public http(s) URL on port 80 or 443, shared by every variant.
    #[schema(example = "https://example.com/pricing", max_length = 2048)]
    pub source_url: String,
    #[serde(default)]
    #[schema(example = "#app", min_length = 1, max_length = 512)]
    pub ready_selector: Option<String>,
    /// Default `en-US`.
    #[serde(default)]
    #[schema(example = "en-US", min_length = 2, max_length = 35)]
    pub locale: Option<String>,
    /// Default `UTC`.
    #[serde(default)]
    #[schema(example = "UTC")]
    pub time_zone: Option<String>,
    /// Default `decline`.
    #[serde(default)]
    #[schema(value_type = Option<Consent>)]
    pub consent: Option<String>,
    /// 1–12 variants, no two equal once defaults are filled in.
    #[schema(min_items = 1, max_items = 12)]
    pub variants: Vec<VariantBody>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VariantBody {
    pub viewport: ViewportBody,
    /// Default `light`.
    #[serde(default)]
    #[schema(value_type = Option<ColorScheme>)]
    pub color_scheme: Option<String>,
}

impl CreatePageImportSet {
    fn fields(&self) -> NewSetFields<'_> {
        NewSetFields {
            organization_id: self.organization_id,
            project_id: self.project_id,
            source_url: &self.source_url,
            ready_selector: self.ready_selector.as_deref(),
            locale: self.locale.as_deref(),
            time_zone: self.time_zone.as_deref(),
            consent: self.consent.as_deref(),
            variants: self
                .variants
                .iter()
                .map(|v| VariantFields {
                    width: v.viewport.width,
                    height: v.viewport.height,
                    device_scale_factor: v.viewport.device_scale_factor,
                    mobile: v.viewport.mobile,
                    color_scheme: v.color_scheme.as_deref(),
                })
                .collect(),
        }
    }
}

/// Create an import set: one page at several viewports and schemes, one
/// import per variant, captured together in one browser context.
#[utoipa::path(
    post, path = "/page-import-sets", operation_id = "createPageImportSet", tag = "page-import-sets",
    request_body = CreatePageImportSet,
    params(("Idempotency-Key" = Option<String>, Header,
        description = "Up to 255 visible ASCII characters; a repeat with the same body replays the first response for 24 h",
        min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    responses(
        (status = 202, description = "Accepted; the members are queued", body = PageImportSetView,
         headers(("Location" = String, description = "/page-import-sets/{id}"))),
        (status = 400, description = "Malformed JSON, missing, unknown or mistyped field"),
        (status = 401, description = "Missing or invalid bearer token"),
        (status = 404, description = "Project not visible to the caller"),
        (status = 409, description = "The same Idempotency-Key is still in flight"),
        (status = 413, description = "Body over 16 KiB"),
        (status = 415, description = "Content-Type is not application/json"),
        (status = 422, description = "Invalid values (`variants[i].…` in the field path), duplicate_variant, or the Idempotency-Key was used with another body"),
        (status = 429, description = "too_many_queued: the organization cannot queue every variant; nothing was written",
         headers(("Retry-After" = u64, description = "Whole seconds: the organization's recent time between dispatches"))),
        (status = 503, description = "A dependency is unavailable"),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    body: ApiJson<CreatePageImportSet>,
) -> Result<Response, ApiError> {
    idempotent::run(&state, &actor, &headers, &body.raw, CREATE_ROUTE, |key| async {
        let request = NewSet::parse(body.value.fields(), state.source_url_policy()).map_err(|e| match e {
            NewSetError::Fields(errors) => ApiError::Validation(errors),
            NewSetError::Duplicate { earlier, later } => ApiError::unprocessable(
                "duplicate_variant",
                format!("variants[{later}] equals variants[{earlier}] once defaults are filled in"),
            ),
        })?;
        let view = state.import_sets().create(&actor, request, key).await?;
        idempotent::accepted(&view.links.self_, &view)
    })
    .await
}

/// Read one import set: its members' resources in order and its status.
#[utoipa::path(
    get, path = "/page-import-sets/{id}", operation_id = "getPageImportSet", tag = "page-import-sets",
    params(
        ("id" = String, Path, description = "The set's UUIDv7"),
        ("If-None-Match" = Option<String>, Header, description = "An ETag from an earlier answer: 304 while it is current"),
    ),
    responses(
        (status = 200, body = PageImportSetView, headers(("ETag" = String, description = "Strong tag of this representation"))),
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
    headers: HeaderMap,
    IdPath(id): IdPath,
) -> Result<Response, ApiError> {
    let view = state.import_sets().visible(&actor, &id).await?;
    Ok(view.tagged().respond(&headers))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SetListQuery {
    #[param(example = 1)]
    pub organization_id: i64,
    #[param(example = 1)]
    pub project_id: i64,
    /// 1–100, default 20
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// Opaque; `nextCursor` of the previous page
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageImportSetList {
    pub items: Vec<PageImportSetView>,
    pub next_cursor: Option<String>,
}

/// List a project's import sets, newest first (keyset pagination).
#[utoipa::path(
    get, path = "/page-import-sets", operation_id = "listPageImportSets", tag = "page-import-sets",
    params(SetListQuery),
    responses(
        (status = 200, body = PageImportSetList),
        (status = 400, description = "Missing or mistyped query parameter"),
        (status = 401),
        (status = 404, description = "Project not visible to the caller"),
        (status = 422, description = "limit or cursor out of range"),
        (status = 503),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(query): ApiQuery<SetListQuery>,
) -> Result<Json<PageImportSetList>, ApiError> {
    let page = ListPage::parse(query.limit, None, query.cursor.as_deref()).map_err(ApiError::Validation)?;
    let (items, next_cursor) = state
        .import_sets()
        .list(&actor, query.organization_id, query.project_id, page.limit, page.after)
        .await?;
    Ok(Json(PageImportSetList { items, next_cursor }))
}

/// Delete an import set and every member (each erased as a deleted import).
#[utoipa::path(
    delete, path = "/page-import-sets/{id}", operation_id = "deletePageImportSet", tag = "page-import-sets",
    params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted, with every member"),
        (status = 401),
        (status = 404),
        (status = 503),
    ),
    security(("bearer" = []))
)]
pub async fn delete(State(state): State<AppState>, actor: Actor, IdPath(id): IdPath) -> Result<StatusCode, ApiError> {
    state.import_sets().delete(&actor, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
