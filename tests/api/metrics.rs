//! `METRICS_ADDR`: `/metrics` on a second listener of its own (SPEC §2).

use sqlx::PgPool;

use crate::helpers::*;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn with_metrics_addr_metrics_move_to_their_own_listener(pool: PgPool) {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let app = TestApp::spawn_with_env(pool, vec![("METRICS_ADDR", addr.to_string())]).await;
    expect_problem(
        app.http.get(app.url("/metrics")).send().await.unwrap(),
        404,
        "not_found",
    )
    .await;
    let metrics = app.http.get(format!("http://{addr}/metrics")).send().await.unwrap();
    assert_eq!(metrics.status(), 200);
    assert!(metrics.text().await.unwrap().contains("http_requests_total"));
    let other = app.http.get(format!("http://{addr}/healthz")).send().await.unwrap();
    assert_eq!(other.status(), 404, "the metrics listener serves nothing else");
}

/// The counters SPEC §12 and §13 name are on `/metrics` at 0 from the
/// process's start, before any traffic: an alert on a counter absent until
/// its first increment never sees a series. Read from a process of its own,
/// since this test binary's recorder is shared by every test.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn every_counter_spec_names_is_exported_at_zero_before_any_traffic(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let database_url = crate::helpers::process::database_url_of(&pool);
    let service = crate::helpers::process::ServiceProcess::start(&app, &database_url, &[]);
    let text = app
        .http
        .get(service.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for series in [
        "page_import_erasure_failures_total 0",
        "page_import_erasure_objects_deleted_total 0",
        "page_import_dispatch_rejected_total 0",
        "page_import_admission_rejected_total{reason=\"too_many_queued\"} 0",
    ] {
        assert!(
            text.lines().any(|line| line == series),
            "{series} not on /metrics:\n{text}"
        );
    }
}
