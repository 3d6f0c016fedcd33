//! Operational routes and the shared middleware: problem+json for unknown
//! routes and methods, request ids, metrics.

use std::time::Duration;

use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::process::{database_url_of, ServiceProcess};
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

/// A supervised background task that panics is restarted, and `/readyz`
/// answers 503 naming it while it is down.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn readyz_is_503_while_a_background_task_is_down(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    // The service's own tasks run supervised.
    let metrics = app.metrics_text().await;
    for task in ["relay", "dispatcher", "sweeper", "events_listener"] {
        assert!(
            metrics.contains(&format!("background_task_up{{task=\"{task}\"}} 1")),
            "{task} is supervised and up"
        );
    }
    // One more task under the same supervisor, which panics on its first run
    // and is restarted 1.5 s later.
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counter = runs.clone();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let _task = page_import::supervisor::supervise(
        app.state.tasks.clone(),
        app.state.metrics.clone(),
        "test_task",
        shutdown.clone(),
        (Duration::from_millis(1500), Duration::from_millis(1500)),
        move || {
            let first = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
            async move {
                assert!(!first, "the first run panics");
                std::future::pending::<()>().await;
            }
        },
    );
    let down = eventually(Duration::from_secs(1), || async {
        app.http.get(app.url("/readyz")).send().await.unwrap().status() == 503
    })
    .await;
    assert!(down, "not ready while the task is down");
    let response = app.http.get(app.url("/readyz")).send().await.unwrap();
    assert!(response.headers().contains_key("retry-after"));
    let body = expect_problem(response, 503, "background_task_down").await;
    assert!(body["detail"].as_str().unwrap().contains("test_task"), "{body}");
    let up = eventually(Duration::from_secs(5), || async {
        app.http.get(app.url("/readyz")).send().await.unwrap().status() == 200
    })
    .await;
    assert!(up, "ready again once it was restarted");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    shutdown.cancel();
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
    // A service process of its own: the metrics registry is process-wide,
    // and in this test binary every other test's app feeds it too, so only
    // a fresh process gives counts this test alone made.
    let app = TestApp::spawn(pool.clone()).await;
    let tenant = app.tenant().await;
    let service = ServiceProcess::start(&app, &database_url_of(&pool), &[]);
    let http = reqwest::Client::new();
    for _ in 0..3 {
        let response = http
            .post(service.url("/page-imports"))
            .bearer_auth(&tenant.token)
            .json(&import_body(&tenant))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
    }
    let unknown = service.url("/page-imports/0193ffff-0000-7000-8000-000000000000");
    let response = http.get(&unknown).bearer_auth(&tenant.token).send().await.unwrap();
    assert_eq!(response.status(), 404);

    let response = http.get(service.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let value = |name: &str, labels: &[&str]| -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(&format!("{name}{{")) && labels.iter().all(|p| l.contains(p)))
            .or_else(|| {
                labels
                    .is_empty()
                    .then(|| text.lines().find(|l| l.starts_with(&format!("{name} "))))
                    .flatten()
            })
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    let created = [r#"method="POST""#, r#"route="/page-imports""#, r#"status="202""#];
    assert_eq!(value("http_requests_total", &created), Some(3.0), "{text}");
    let missing = [r#"method="GET""#, r#"route="/page-imports/{id}""#, r#"status="404""#];
    assert_eq!(value("http_requests_total", &missing), Some(1.0), "{text}");
    assert_eq!(
        value("http_request_duration_seconds_count", &created),
        Some(3.0),
        "{text}"
    );
    assert_eq!(value("page_imports_created_total", &[]), Some(3.0), "{text}");
    drop(service);
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

/// SPEC §2 through the real binaries and the real process environment: a
/// missing or malformed variable stops start-up with exit code 2 and exactly
/// one line naming it, and a malformed secret is not echoed.
#[test]
fn bad_configuration_stops_start_up_with_one_line_naming_the_variable() {
    let service_env = [
        ("DATABASE_URL", "postgres://127.0.0.1:1/never-reached"),
        ("PAGE_IMPORT_QUEUE_URL", "http://127.0.0.1:1/000000000000/q"),
        ("CODE2DES_QUEUE_URL", "http://127.0.0.1:1/000000000000/c"),
        ("ARTIFACT_BUCKET", "b"),
        ("WEBHOOK_SECRET", WEBHOOK_SECRET),
        ("AUTH_JWKS_URL", "file:///nonexistent/jwks.json"),
        ("AUTH_ISSUER", ISSUER),
        ("AUTH_AUDIENCE", AUDIENCE),
    ];
    let run = |binary: &std::path::Path, args: &[&str], env: &[(&str, &str)]| {
        let out = std::process::Command::new(binary)
            .args(args)
            .env_clear()
            .envs(env.iter().copied())
            .output()
            .expect("run the binary");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let service = std::path::PathBuf::from(env!("CARGO_BIN_EXE_page-import"));
    let worker = crate::helpers::capture::worker_binary();
    type Case<'a> = (&'a std::path::Path, &'a [&'a str], Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (
            &service,
            &["serve"],
            without(&service_env, "AUTH_ISSUER"),
            "AUTH_ISSUER is required but not set",
        ),
        (
            &service,
            &[],
            with(&service_env, "CAPTURE_MAX_ATTEMPTS", "0"),
            "CAPTURE_MAX_ATTEMPTS is malformed",
        ),
        (
            &service,
            &["serve"],
            with(&service_env, "LISTEN_ADDR", "nope"),
            "LISTEN_ADDR is malformed",
        ),
        (
            &service,
            &["serve"],
            with(&service_env, "WEBHOOK_SECRET", "whsec_!!"),
            "WEBHOOK_SECRET is malformed",
        ),
        (&service, &["migrate"], vec![], "DATABASE_URL is required but not set"),
        (
            &worker,
            &[],
            without(&service_env, "WEBHOOK_SECRET"),
            "WEBHOOK_SECRET is required but not set",
        ),
        (
            &worker,
            &[],
            with(&service_env, "WORKER_CONCURRENCY", "65"),
            "WORKER_CONCURRENCY is malformed",
        ),
        (
            &worker,
            &[],
            with(&service_env, "CHROMIUM_USER", "no-such-user-here"),
            "CHROMIUM_USER is malformed: no such user on this system",
        ),
    ];
    for (binary, args, env, expected) in cases {
        let (code, stderr) = run(binary, args, &env);
        assert_eq!(code, Some(2), "{binary:?} {args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{binary:?} {args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("configuration error: {expected}")),
            "{stderr}"
        );
        assert!(!stderr.contains("whsec_!!"), "secret echoed: {stderr}");
    }
}

fn with<'a>(env: &[(&'a str, &'a str)], key: &'a str, value: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut env = without(env, key);
    env.push((key, value));
    env
}

fn without<'a>(env: &[(&'a str, &'a str)], key: &str) -> Vec<(&'a str, &'a str)> {
    env.iter().copied().filter(|(k, _)| *k != key).collect()
}

/// The access log of the service as `scripts/dev` runs it: a request
/// someone made is an INFO line; Prometheus's scrape of `/metrics` (every
/// 15 s there) and the health probes are DEBUG lines, out of the console at
/// the default `RUST_LOG=info`. Here the access log's target is let through
/// at DEBUG, so each probe's line is seen, at its level.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn scrapes_and_probes_are_logged_at_debug_and_requests_at_info(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let tenant = app.tenant().await;
    let service = ServiceProcess::start(
        &app,
        &database_url_of(&pool),
        &[("RUST_LOG", "info,page_import::access=debug")],
    );
    let http = reqwest::Client::new();
    for path in ["/metrics", "/healthz", "/readyz"] {
        let response = http.get(service.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let unknown = "/page-imports/0193ffff-0000-7000-8000-000000000000";
    let response = http
        .get(service.url(unknown))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);

    // Each access line: its level, by the path of its request's span.
    let access = || -> Vec<(String, String)> {
        service
            .log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|v| v["message"] == "finished processing request")
            .map(|v| {
                let path = v["span"]["path"].as_str().unwrap_or_default().to_owned();
                (path, v["level"].as_str().unwrap_or_default().to_owned())
            })
            .collect()
    };
    let logged = eventually(Duration::from_secs(5), || async { access().len() >= 4 }).await;
    assert!(logged, "{}", service.log_text());
    let mut lines = access();
    lines.sort();
    assert_eq!(
        lines,
        [
            ("/healthz".to_owned(), "DEBUG".to_owned()),
            ("/metrics".to_owned(), "DEBUG".to_owned()),
            (unknown.to_owned(), "INFO".to_owned()),
            ("/readyz".to_owned(), "DEBUG".to_owned()),
        ],
        "{}",
        service.log_text()
    );
}
