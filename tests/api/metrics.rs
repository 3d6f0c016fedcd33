//! `METRICS_ADDR`: `/metrics` on a second listener of its own (SPEC §2).

use std::time::Duration;

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

/// Every series SPEC §9, §12 and §13 name is on `/metrics` from the
/// process's start, before any traffic: counters and histograms at 0 at
/// once, the gauges once the first pass of their task has run. An alert on
/// a series absent until its first event never sees one (the alert rules'
/// own series are checked against a running service and worker by
/// `alerts.rs`). Read from a process of its own, since this test binary's
/// recorder is shared by every test.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn every_series_spec_names_is_exported_before_any_traffic(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let database_url = crate::helpers::process::database_url_of(&pool);
    let service = crate::helpers::process::ServiceProcess::start(&app, &database_url, &[]);
    let url = service.url("/metrics");
    let scrape = || text_of(&app.http, &url);
    let at_once = scrape().await;
    for series in [
        "page_imports_created_total 0",
        "page_imports_finished_total{status=\"completed\"} 0",
        "page_imports_finished_total{status=\"failed\"} 0",
        "outbox_publish_failures_total{queue=\"page_import\"} 0",
        "outbox_publish_failures_total{queue=\"code2des\"} 0",
        "sqs_publish_circuit_open{queue=\"page_import\"} 0",
        "webhook_rejections_total{reason=\"unauthorized\"} 0",
        "page_import_capture_queue_wait_seconds_count 0",
        "page_import_capture_in_flight_limit 64",
        "page_import_events_streams_limit 1000",
        "page_import_events_streams_open 0",
        "page_import_erasure_failures_total 0",
        "page_import_erasure_objects_deleted_total 0",
        "page_import_dispatch_rejected_total 0",
        "page_import_admission_rejected_total{reason=\"too_many_queued\"} 0",
        "page_import_attempts_started_total{reason=\"sweeper\"} 0",
    ] {
        assert!(
            at_once.lines().any(|line| line == series),
            "{series} not on /metrics at start:\n{at_once}"
        );
    }
    let gauges = [
        "outbox_backlog",
        "outbox_oldest_message_age_seconds",
        "page_import_capture_queued",
        "page_import_capture_in_flight",
        "page_import_erasure_pending",
        "page_import_erasure_failing",
        "page_import_erasure_oldest_pending_seconds",
    ];
    let text = std::sync::Mutex::new(at_once);
    let all_there = eventually(Duration::from_secs(10), || async {
        let fetched = scrape().await;
        let there = gauges
            .iter()
            .all(|gauge| fetched.lines().any(|line| line == format!("{gauge} 0")));
        *text.lock().unwrap() = fetched;
        there
    })
    .await;
    let text = text.into_inner().unwrap();
    assert!(all_there, "a gauge of {gauges:?} is not on /metrics at 0:\n{text}");
}
