//! `/code2des`: start Code2Des jobs from completed captures (SPEC §8).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;
use serde::Deserialize;

use crate::resource::Code2DesView;
use crate::service::code2des::NewCode2DesJob;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::http::{idempotent, ApiJson, IdPath};
use crate::state::AppState;

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

/// Start a Code2Des job from a completed page import; the import is not modified.
#[utoipa::path(
    post, path = "/code2des", operation_id = "createCode2Des", tag = "code2des",
    request_body = CreateCode2Des,
    params(("Idempotency-Key" = Option<String>, Header, description = "As for page imports",
        min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    responses(
        (status = 202, body = Code2DesView, headers(("Location" = String, description = "/code2des/{id}"))),
        (status = 400),
        (status = 401),
        (status = 404, description = "Import not visible, deleted, or not in that project"),
        (status = 409, description = "page_import_not_ready, or Idempotency-Key in flight"),
        (status = 413),
        (status = 415),
        (status = 422),
        (status = 503),
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
    let request = NewCode2DesJob {
        organization_id: request.organization_id,
        project_id: request.project_id,
        page_import_id: request.page_import_id,
    };
    idempotent::run(&state, &actor, &headers, &body.raw, CREATE_ROUTE, |key| async {
        let view = state.code2des_jobs().create(&actor, request, key).await?;
        idempotent::accepted(&view.links.self_, &view)
    })
    .await
}

/// Read one Code2Des job.
#[utoipa::path(
    get, path = "/code2des/{id}", operation_id = "getCode2Des", tag = "code2des",
    params(("id" = String, Path)),
    responses(
        (status = 200, body = Code2DesView),
        (status = 401),
        (status = 404),
        (status = 503),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    actor: Actor,
    IdPath(id): IdPath,
) -> Result<Json<Code2DesView>, ApiError> {
    Ok(Json(state.code2des_jobs().get(&actor, &id).await?))
}
