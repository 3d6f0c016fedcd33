//! The real binary: what it logs, how it shuts down, and how it rides out a
//! database outage.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::process::{database_url_of, PrivateCluster, ServiceProcess};
use crate::helpers::worker::{manifest, Job};
use crate::helpers::*;

/// A full lifecycle through the binary at RUST_LOG=debug; nothing it logged
/// contains a nonce, a webhook secret or a JWT.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn logs_never_contain_nonces_secrets_or_tokens(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let service = ServiceProcess::start(&app, &database_url_of(&pool), &[]);
    let tenant = app.tenant().await;
    let http = &app.http;

    let created: Value = http
        .post(service.url("/page-imports"))
        .bearer_auth(&tenant.token)
        .header("idempotency-key", "log-test")
        .header("x-request-id", "req-log-test")
        .json(&import_body(&tenant))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let job = Job {
        nonce: app.nonce_of(&id).await,
        id: id.clone(),
        attempt: 1,
    };
    let message = app.receive(&app.page_import_queue_url, 1).await;
    assert_eq!(
        message[0]["nonce"], job.nonce,
        "the nonce did travel, so it was there to leak"
    );

    // The worker's side, against the binary.
    let body = app.upload_capture(&job, manifest(&job)).await;
    let raw = serde_json::to_vec(&body).unwrap();
    let now = chrono::Utc::now().timestamp();
    let signature = page_import::webhook::WebhookSecret::parse(WEBHOOK_SECRET)
        .unwrap()
        .sign("msg_log", now, &raw);
    let callback = http
        .post(service.url("/webhooks/page-imports"))
        .header("content-type", "application/json")
        .header("webhook-id", "msg_log")
        .header("webhook-timestamp", now.to_string())
        .header("webhook-signature", &signature)
        .body(raw.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(callback.status(), 200);
    // A wrong nonce and a bad signature exercise the rejection paths' logging.
    let mut wrong = body.clone();
    wrong["nonce"] = json!(format!("{}-guess", job.nonce));
    let wrong_raw = serde_json::to_vec(&wrong).unwrap();
    let wrong_sig = page_import::webhook::WebhookSecret::parse(WEBHOOK_SECRET)
        .unwrap()
        .sign("msg_w", now, &wrong_raw);
    for (raw, sig) in [(wrong_raw, wrong_sig), (raw, "v1,AAAA".to_owned())] {
        http.post(service.url("/webhooks/page-imports"))
            .header("content-type", "application/json")
            .header("webhook-id", "msg_w")
            .header("webhook-timestamp", now.to_string())
            .header("webhook-signature", sig)
            .body(raw)
            .send()
            .await
            .unwrap();
    }
    let get = |path: String| http.get(service.url(&path)).bearer_auth(&tenant.token).send();
    assert_eq!(get(format!("/page-imports/{id}")).await.unwrap().status(), 200);
    assert_eq!(get(format!("/page-imports/{id}/capture")).await.unwrap().status(), 302);
    let trigger = json!({"organizationId": tenant.organization_id, "projectId": tenant.project_id, "pageImportId": id});
    let c2d = http
        .post(service.url("/code2des"))
        .bearer_auth(&tenant.token)
        .json(&trigger)
        .send()
        .await
        .unwrap();
    assert_eq!(c2d.status(), 202);
    let bad_token = http
        .get(service.url(&format!("/page-imports/{id}")))
        .bearer_auth(format!("{}x", tenant.token))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_token.status(), 401);
    assert_eq!(
        http.delete(service.url(&format!("/page-imports/{id}")))
            .bearer_auth(&tenant.token)
            .header("x-request-id", "req-log-last")
            .send()
            .await
            .unwrap()
            .status(),
        204
    );

    // The service logs each request as it answers it: once the last one's
    // line is in, so is everything logged before it.
    let logged_all = eventually(Duration::from_secs(5), || async {
        service.log_text().contains("req-log-last")
    })
    .await;
    assert!(logged_all, "the last request was logged:\n{}", service.log_text());
    let log = service.log_text();
    assert!(log.contains("req-log-test"), "request ids are logged");
    assert!(log.contains(&id), "the import id is logged");
    let secret_b64 = WEBHOOK_SECRET.trim_start_matches("whsec_");
    let token_signature = tenant.token.rsplit('.').next().unwrap();
    for (what, needle) in [
        ("nonce", job.nonce.as_str()),
        ("webhook secret", secret_b64),
        ("JWT", tenant.token.as_str()),
        ("JWT signature", token_signature),
        ("webhook signature", signature.trim_start_matches("v1,")),
    ] {
        assert!(!log.contains(needle), "the log contains the {what}");
    }
}

/// SIGTERM: stop accepting, finish the request in flight, stop the
/// background tasks, exit 0.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn sigterm_finishes_in_flight_requests_and_exits_0(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let mut service = ServiceProcess::start(&app, &database_url_of(&pool), &[]);
    let tenant = app.tenant().await;

    // Hold a create inside its transaction.
    let lock = app.lock_table("page_import").await;
    let in_flight = {
        let (http, url, token, body) = (
            app.http.clone(),
            service.url("/page-imports"),
            tenant.token.clone(),
            import_body(&tenant),
        );
        tokio::spawn(async move { http.post(url).bearer_auth(token).json(&body).send().await.unwrap() })
    };
    assert!(app.waits_for_lock("insert_many_queued").await);

    service.sigterm();
    // New connections are refused once the listener is closed.
    let refused = eventually(Duration::from_secs(5), || async {
        reqwest::Client::new()
            .get(service.url("/healthz"))
            .send()
            .await
            .is_err()
    })
    .await;
    assert!(refused, "the listener closes on SIGTERM");
    assert!(
        service.child.try_wait().unwrap().is_none(),
        "it waits for the request in flight"
    );

    lock.release().await;
    let response = in_flight.await.unwrap();
    assert_eq!(response.status(), 202, "the request in flight completes");
    assert_eq!(service.wait_exit(Duration::from_secs(10)), Some(0));
    assert!(service.log_text().contains("stopped cleanly"));
}

/// With PostgreSQL stopped, user routes answer 503 problem+json with
/// Retry-After within the request timeout; after a restart the same process
/// serves again.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_database_outage_is_503_and_the_process_recovers(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let cluster = PrivateCluster::start();
    let subject = "outage-user";
    let (org, project) = cluster.migrate_and_seed(subject).await;
    let service = ServiceProcess::start(&app, &cluster.url(), &[("REQUEST_TIMEOUT_MS", "8000")]);
    let token = token_for(subject);
    let list = service.url(&format!("/page-imports?organizationId={org}&projectId={project}"));
    let tenant = Tenant {
        organization_id: org,
        project_id: project,
        subject: subject.into(),
        token: token.clone(),
    };
    let create = |http: reqwest::Client, url: String| {
        let (token, body) = (token.clone(), import_body(&tenant));
        async move { http.post(url).bearer_auth(token).json(&body).send().await.unwrap() }
    };
    assert_eq!(
        create(app.http.clone(), service.url("/page-imports")).await.status(),
        202
    );
    assert_eq!(
        app.http.get(&list).bearer_auth(&token).send().await.unwrap().status(),
        200
    );

    cluster.stop();
    for _ in 0..2 {
        let started = Instant::now();
        let response = app.http.get(&list).bearer_auth(&token).send().await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(9),
            "answered within the request timeout"
        );
        assert!(response.headers().contains_key("retry-after"));
        expect_problem(response, 503, "dependency_unavailable").await;
        let response = create(app.http.clone(), service.url("/page-imports")).await;
        expect_problem(response, 503, "dependency_unavailable").await;
    }
    expect_problem(
        app.http.get(service.url("/readyz")).send().await.unwrap(),
        503,
        "dependency_unavailable",
    )
    .await;
    assert_eq!(
        app.http.get(service.url("/healthz")).send().await.unwrap().status(),
        200,
        "alive, just not ready"
    );

    cluster.resume();
    let recovered = eventually(Duration::from_secs(15), || async {
        app.http.get(&list).bearer_auth(&token).send().await.unwrap().status() == 200
    })
    .await;
    assert!(recovered, "the same process serves again after the restart");
    assert_eq!(
        create(app.http.clone(), service.url("/page-imports")).await.status(),
        202
    );
    assert_eq!(app.http.get(service.url("/readyz")).send().await.unwrap().status(), 200);
    assert!(!service.log_text().contains("panicked"));
}
