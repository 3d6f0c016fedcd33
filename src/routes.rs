//! Every route, declared once. A route's method and path come from its
//! handler's `#[utoipa::path]`; these declarations build both the axum
//! router (`router::router`, which adds each group's layers) and the OpenAPI
//! document (`openapi::document`), so the two cannot drift apart.

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::{attempts, code2des, events, ops, page_imports, retry, set_events, sets, webhooks};
use crate::state::AppState;

/// The user routes: bearer token, 16 KiB bodies, CORS when configured.
pub fn user() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(page_imports::create, page_imports::list))
        .routes(routes!(page_imports::get, page_imports::delete))
        .routes(routes!(events::follow))
        .routes(routes!(retry::retry))
        .routes(routes!(attempts::list))
        .routes(routes!(page_imports::capture))
        .routes(routes!(page_imports::screenshot))
        .routes(routes!(sets::create, sets::list))
        .routes(routes!(sets::get, sets::delete))
        .routes(routes!(set_events::follow))
        .routes(routes!(code2des::create))
        .routes(routes!(code2des::get))
}

/// The capture worker's signed callback: 64 KiB bodies, never CORS.
pub fn callbacks() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(webhooks::receive))
}

/// Operations: no authentication.
pub fn ops() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::openapi_json))
}

/// `/metrics`: on the main listener, or alone on `METRICS_ADDR`'s.
pub fn metrics() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(ops::metrics))
}
