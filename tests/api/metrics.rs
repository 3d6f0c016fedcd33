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
