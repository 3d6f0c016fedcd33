//! Operational routes and the shared middleware: problem+json for unknown
//! routes and methods, request ids, metrics.

use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::*;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn healthz_and_readyz_answer_200_without_auth(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for (path, status) in [("/healthz", "ok"), ("/readyz", "ready")] {
        let response = app.http.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], status);
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn readyz_is_503_when_the_database_is_gone(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    app.pool.close().await;
    let response = app.http.get(app.url("/readyz")).send().await.unwrap();
    assert!(response.headers().contains_key("retry-after"));
    expect_problem(response, 503, "dependency_unavailable").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn unknown_routes_and_methods_are_problem_json(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    expect_problem(app.http.get(app.url("/nope")).send().await.unwrap(), 404, "not_found").await;
    let response = app.http.put(app.url("/page-imports")).send().await.unwrap();
    expect_problem(response, 405, "method_not_allowed").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn request_ids_are_generated_or_honored(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response = app.http.get(app.url("/healthz")).send().await.unwrap();
    let generated = response.headers()["x-request-id"].to_str().unwrap();
    assert!(uuid::Uuid::parse_str(generated).is_ok(), "{generated}");
    let response = app
        .http
        .get(app.url("/healthz"))
        .header("x-request-id", "trace-abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "trace-abc-123");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn metrics_count_requests_by_route_and_status(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    app.create_import(&tenant).await;
    let response = app.http.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("http_requests_total{")
            && l.contains("route=\"/page-imports\"")
            && l.contains("status=\"202\"")),
        "{text}"
    );
    assert!(text.contains("http_request_duration_seconds_bucket"), "{text}");
    assert!(text.contains("page_imports_created_total"), "{text}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn openapi_json_is_served_and_equals_the_committed_copy(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response = app.http.get(app.url("/openapi.json")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let served = response.text().await.unwrap();
    assert_eq!(served, std::fs::read_to_string(repo_path("openapi.json")).unwrap());
    let doc: Value = serde_json::from_str(&served).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/page-imports",
        "/page-imports/{id}",
        "/code2des",
        "/webhooks/page-imports",
        "/metrics",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} is documented");
    }
}
