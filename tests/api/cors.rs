//! CORS (SPEC §6): which origins get answers they can read, on which routes.

use sqlx::PgPool;

use crate::helpers::*;

const ORIGIN: &str = "https://app.example.com";

async fn cors_app(pool: PgPool) -> TestApp {
    TestApp::spawn_with_env(
        pool,
        vec![("CORS_ALLOWED_ORIGINS", format!("{ORIGIN},http://127.0.0.1:5173"))],
    )
    .await
}

/// `POST /page-imports` as a browser on [`ORIGIN`] sends it.
async fn create_from_origin(app: &TestApp, tenant: &Tenant) -> reqwest::Response {
    app.http
        .post(app.url("/page-imports"))
        .bearer_auth(&tenant.token)
        .header("origin", ORIGIN)
        .json(&import_body(tenant))
        .send()
        .await
        .unwrap()
}

fn access_control_headers(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .keys()
        .map(|k| k.as_str().to_owned())
        .filter(|k| k.starts_with("access-control-"))
        .collect()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_allowed_origin_gets_its_preflight_answered(pool: PgPool) {
    let app = cors_app(pool).await;
    let response = app
        .http
        .request(reqwest::Method::OPTIONS, app.url("/page-imports"))
        .header("origin", ORIGIN)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type, idempotency-key",
        )
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let h = response.headers();
    assert_eq!(h["access-control-allow-origin"], ORIGIN);
    let methods = h["access-control-allow-methods"].to_str().unwrap().to_ascii_uppercase();
    for m in ["GET", "POST", "DELETE"] {
        assert!(methods.contains(m), "{methods}");
    }
    let allowed = h["access-control-allow-headers"].to_str().unwrap().to_ascii_lowercase();
    for name in [
        "authorization",
        "content-type",
        "idempotency-key",
        "if-none-match",
        "x-request-id",
        // A browser's own tracing continues into ours (SPEC §9).
        "traceparent",
    ] {
        assert!(allowed.contains(name), "{allowed}");
    }
    assert!(!h.contains_key("access-control-allow-credentials"));
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn every_answer_to_an_allowed_origin_carries_cors_headers_errors_included(pool: PgPool) {
    let app = cors_app(pool).await;
    let tenant = app.tenant().await;
    let created = create_from_origin(&app, &tenant).await;
    assert_eq!(created.status(), 202);
    let h = created.headers();
    assert_eq!(h["access-control-allow-origin"], ORIGIN);
    assert!(h["vary"].to_str().unwrap().to_ascii_lowercase().contains("origin"));
    let exposed = h["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    for name in ["location", "etag", "idempotent-replayed", "retry-after", "x-request-id"] {
        assert!(exposed.contains(name), "{exposed}");
    }
    for (path, token) in [
        (
            "/page-imports/0193ffff-0000-7000-8000-000000000000".to_owned(),
            tenant.token.as_str(),
        ),
        (
            "/code2des/0193ffff-0000-7000-8000-000000000000".to_owned(),
            "not-a-token",
        ),
    ] {
        let error = app
            .http
            .get(app.url(&path))
            .bearer_auth(token)
            .header("origin", ORIGIN)
            .send()
            .await
            .unwrap();
        assert!(error.status().is_client_error());
        assert_eq!(error.headers()["access-control-allow-origin"], ORIGIN, "{path}");
        assert!(error.headers()["vary"]
            .to_str()
            .unwrap()
            .to_ascii_lowercase()
            .contains("origin"));
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn other_origins_and_other_routes_get_no_cors_headers(pool: PgPool) {
    let app = cors_app(pool).await;
    let tenant = app.tenant().await;
    let preflight = app
        .http
        .request(reqwest::Method::OPTIONS, app.url("/page-imports"))
        .header("origin", "https://evil.example.net")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization")
        .send()
        .await
        .unwrap();
    assert_eq!(access_control_headers(&preflight), Vec::<String>::new());
    let get = app
        .http
        .get(app.url(&format!(
            "/page-imports?organizationId={}&projectId={}",
            tenant.organization_id, tenant.project_id
        )))
        .bearer_auth(&tenant.token)
        .header("origin", "https://app.example.com.evil.net")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    assert_eq!(access_control_headers(&get), Vec::<String>::new());
    for path in ["/healthz", "/webhooks/page-imports", "/openapi.json"] {
        let response = app
            .http
            .request(reqwest::Method::OPTIONS, app.url(path))
            .header("origin", ORIGIN)
            .header("access-control-request-method", "POST")
            .send()
            .await
            .unwrap();
        assert_eq!(access_control_headers(&response), Vec::<String>::new(), "{path}");
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn without_allowed_origins_there_is_no_cors(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let response = create_from_origin(&app, &tenant).await;
    assert_eq!(response.status(), 202);
    assert_eq!(access_control_headers(&response), Vec::<String>::new());
}
