//! The OpenAPI 3.1 document, generated from the route declarations
//! (`routes.rs`) and the handlers' annotations, and served at
//! `GET /openapi.json` (`http::ops::openapi_json`, handed the document by
//! `router.rs`). `openapi.json` at the repository root is
//! the committed copy; a test fails when it is stale.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::error::{Problem, PROBLEM_JSON};
use crate::routes;

/// What the document says besides its paths.
#[derive(OpenApi)]
#[openapi(
    info(title = "Page Import service", license(name = "Proprietary"), description = "Capture jobs for public web pages, their worker callbacks, and Code2Des jobs."),
    components(schemas(Problem)),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut scheme = Http::new(HttpAuthScheme::Bearer);
        scheme.bearer_format = Some("JWT".into());
        components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}

/// Every error answer is RFC 9457 problem+json (`error.rs`). That is
/// declared here, once, for every 4xx and 5xx response of every operation;
/// a handler's annotation gives only the status and what it means.
fn problem_responses(doc: &mut utoipa::openapi::OpenApi) {
    let content = Content::new(Some(Ref::from_schema_name(Problem::name())));
    for item in doc.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            for (status, response) in &mut operation.responses.responses {
                if let (Some('4' | '5'), RefOr::T(response)) = (status.chars().next(), response) {
                    response.content.insert(PROBLEM_JSON.to_owned(), content.clone());
                }
            }
        }
    }
}

/// The document as pretty JSON, exactly as committed: every declared route,
/// `/metrics` included wherever it is served.
pub fn document() -> String {
    static DOCUMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOCUMENT
        .get_or_init(|| {
            let mut doc = ApiDoc::openapi();
            for group in [routes::user(), routes::callbacks(), routes::ops(), routes::metrics()] {
                doc.merge(group.into_openapi());
            }
            // `merge` keeps the first document's components; the security
            // scheme the modifier added is among them.
            problem_responses(&mut doc);
            doc.to_pretty_json().expect("the OpenAPI document serializes") + "\n"
        })
        .clone()
}

#[cfg(test)]
mod tests {
    /// Regenerate with `UPDATE_OPENAPI=1 cargo test --lib openapi`.
    #[test]
    fn committed_openapi_json_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.json");
        let generated = super::document();
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "openapi.json is stale: run UPDATE_OPENAPI=1 cargo test --lib openapi"
        );
    }
}
