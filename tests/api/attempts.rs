//! Attempts (SPEC §7): the sweeper times out dispatched attempts and starts
//! the next one, retryable failures start the next one, older attempts are
//! fenced off, and the history table follows every transition.

use std::time::Duration;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::worker::{manifest, Job};
use crate::helpers::*;

/// (attempt, reason, started_by, dispatched, outcome, error_message)
type History = Vec<(i32, String, String, bool, Option<String>, Option<String>)>;

async fn history(app: &TestApp, id: &str) -> History {
    sqlx::query_as(
        "select attempt, reason, started_by, dispatched_at is not null, outcome, error_message
         from page_import_attempt where page_import_id = $1 order by attempt",
    )
    .bind(id)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// Waits until the import's current attempt was accepted by SQS, then makes
/// it look dispatched an hour ago (the timeout is what the test is about,
/// not the wait).
async fn dispatched_long_ago(app: &TestApp, id: &str) {
    assert!(
        eventually(Duration::from_secs(10), || async {
            sqlx::query_scalar::<_, bool>(
                "select dispatched_at is not null from page_import_attempt a join page_import p
                   on p.id = a.page_import_id and p.attempt = a.attempt where p.id = $1",
            )
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap()
        })
        .await,
        "the attempt was never dispatched"
    );
    sqlx::query(
        "update page_import_attempt set dispatched_at = now() - interval '1 hour'
         where page_import_id = $1 and finished_at is null",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
}

async fn current_job(app: &TestApp, id: &str) -> Job {
    let attempt: i32 = sqlx::query_scalar("select attempt from page_import where id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    Job {
        id: id.to_owned(),
        attempt: attempt.into(),
        nonce: app.nonce_of(id).await,
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_timed_out_attempt_with_attempts_left_starts_the_next_one(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let first = app.job(&tenant).await;
    let messages = app.receive(&app.page_import_queue_url, 1).await;
    assert_eq!(messages[0]["attempt"], 1);
    dispatched_long_ago(&app, &first.id).await;

    app.sweep().await;
    let second = current_job(&app, &first.id).await;
    assert_eq!(second.attempt, 2);
    assert_ne!(second.nonce, first.nonce, "a fresh nonce");
    let row = app.lifecycle(&first.id).await;
    assert_eq!(
        (row["status"].as_str(), row["updatedBy"].as_str()),
        (Some("0"), Some("system:sweeper"))
    );

    // The new attempt's message names it and its own prefix.
    let messages = app.receive(&app.page_import_queue_url, 1).await;
    assert_eq!(messages[0]["attempt"], 2);
    assert_eq!(messages[0]["nonce"], second.nonce.as_str());
    assert_eq!(
        messages[0]["artifacts"]["prefix"],
        format!("page-imports/{}/2/", first.id)
    );

    // The old attempt is fenced off: its callback changes nothing.
    let before = app.lifecycle(&first.id).await;
    let late = app.upload_capture(&first, manifest(&first)).await;
    expect_problem(app.callback(&late).await, 409, "fence_mismatch").await;
    assert_eq!(app.lifecycle(&first.id).await, before);

    // The new one completes.
    let body = app.upload_capture(&second, manifest(&second)).await;
    assert_eq!(app.callback(&body).await.status(), 200);
    assert_eq!(
        history(&app, &first.id).await,
        vec![
            (
                1,
                "create".into(),
                tenant.subject.clone(),
                true,
                Some("timed_out".into()),
                None
            ),
            (
                2,
                "sweeper".into(),
                "system:sweeper".into(),
                true,
                Some("completed".into()),
                None
            ),
        ]
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_timed_out_last_attempt_fails_the_import(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool, vec![("CAPTURE_MAX_ATTEMPTS", "1".into())]).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    dispatched_long_ago(&app, &job.id).await;
    app.sweep().await;
    let row = app.lifecycle(&job.id).await;
    assert_eq!(row["status"], "2");
    assert_eq!(row["errorMessage"], "Capture timed out");
    assert_eq!(row["attempt"], 1);
    assert_eq!(
        history(&app, &job.id).await,
        vec![(
            1,
            "create".into(),
            tenant.subject.clone(),
            true,
            Some("timed_out".into()),
            Some("Capture timed out".into())
        )]
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_attempt_whose_message_was_never_accepted_by_sqs_never_times_out(pool: PgPool) {
    // SQS is unreachable: the message stays in the outbox, undispatched.
    let app = TestApp::spawn_with(
        pool,
        Options {
            aws_endpoint: Some("http://127.0.0.1:9".into()),
            env: vec![("CAPTURE_TIMEOUT_SECS", "1".into())],
            ..Default::default()
        },
    )
    .await;
    let tenant = app.tenant().await;
    let id = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    // A control created after it and made to look accepted by SQS at once:
    // the sweep that times the control out comes after the capture timeout
    // for both (waiting past that timeout is the point of the test).
    let control = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    sqlx::query("update page_import_attempt set dispatched_at = started_at where page_import_id = $1")
        .bind(&control)
        .execute(&app.pool)
        .await
        .unwrap();
    let swept = eventually(Duration::from_secs(5), || async { app.sweep().await > 0 }).await;
    assert!(swept, "the dispatched control timed out");
    assert_eq!(app.lifecycle(&control).await["attempt"], 2);
    let row = app.lifecycle(&id).await;
    assert_eq!((row["status"].as_str(), row["attempt"].as_i64()), (Some("0"), Some(1)));
    assert!(!history(&app, &id).await[0].3, "not dispatched");
    assert!(app.outbox_len().await >= 1);
}

fn retryable(app: &TestApp, job: &Job, message: &str) -> Value {
    let mut body = app.failed_body(job, message);
    body["retryable"] = json!(true);
    body
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_retryable_failure_with_attempts_left_starts_the_next_attempt_and_its_replay_is_answered(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let first = app.job(&tenant).await;
    app.receive(&app.page_import_queue_url, 1).await;

    let raw = serde_json::to_vec(&retryable(&app, &first, "Navigation timed out after 30 s")).unwrap();
    let now = chrono::Utc::now().timestamp();
    let send = |msg_id: &'static str| {
        let raw = raw.clone();
        let app = &app;
        async move { app.callback_with_id(raw, msg_id, now).await }
    };
    let answer = send("msg_retry_1").await;
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.json::<Value>().await.unwrap(),
        json!({"status": "processing", "attempt": 2, "replayed": false})
    );
    let row = app.lifecycle(&first.id).await;
    assert_eq!((row["status"].as_str(), row["attempt"].as_i64()), (Some("0"), Some(2)));
    assert!(row["errorMessage"].is_null() && row["resultUrl"].is_null());
    assert_eq!(row["updatedBy"], "system:capture-worker");
    let messages = app.receive(&app.page_import_queue_url, 1).await;
    assert_eq!(messages[0]["attempt"], 2);

    // The exact replay (same webhook-id, same body) is answered, and starts nothing.
    let replay = send("msg_retry_1").await;
    assert_eq!(replay.status(), 200);
    assert_eq!(
        replay.json::<Value>().await.unwrap(),
        json!({"status": "processing", "attempt": 2, "replayed": true})
    );
    // The same body under another webhook-id is an old attempt's callback.
    expect_problem(send("msg_retry_other").await, 409, "fence_mismatch").await;
    assert_eq!(app.lifecycle(&first.id).await["attempt"], 2);
    assert_eq!(
        history(&app, &first.id).await[0].4.as_deref(),
        Some("retryable_failure")
    );
    assert_eq!(
        history(&app, &first.id).await[0].5.as_deref(),
        Some("Navigation timed out after 30 s")
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_retryable_failure_without_attempts_left_fails_the_import(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool, vec![("CAPTURE_MAX_ATTEMPTS", "1".into())]).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let answer = app.callback(&retryable(&app, &job, "Connection refused")).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.json::<Value>().await.unwrap(),
        json!({"status": "failed", "replayed": false})
    );
    assert_eq!(app.lifecycle(&job.id).await["status"], "2");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn concurrent_replays_of_a_retryable_callback_start_one_attempt(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    for _ in 0..5 {
        let job = app.job(&tenant).await;
        let raw = serde_json::to_vec(&retryable(&app, &job, "reset")).unwrap();
        let now = chrono::Utc::now().timestamp();
        let answers =
            futures::future::join_all((0..8).map(|_| app.callback_with_id(raw.clone(), "msg_same_callback", now)))
                .await;
        let mut fresh = 0;
        for answer in answers {
            assert_eq!(answer.status(), 200);
            let body: Value = answer.json().await.unwrap();
            assert_eq!(body["attempt"], 2);
            fresh += usize::from(body["replayed"] == false);
        }
        assert_eq!(fresh, 1, "exactly one started the next attempt");
        assert_eq!(app.lifecycle(&job.id).await["attempt"], 2);
        assert_eq!(history(&app, &job.id).await.len(), 2);
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_late_callback_racing_the_sweeper_either_wins_or_changes_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    for _ in 0..6 {
        let job = app.job(&tenant).await;
        dispatched_long_ago(&app, &job.id).await;
        let body = app.upload_capture(&job, manifest(&job)).await;
        let (callback, _) = tokio::join!(app.callback(&body), app.sweep());
        let row = app.lifecycle(&job.id).await;
        match callback.status().as_u16() {
            // The callback won: completed as attempt 1; the sweeper skipped it.
            200 => assert_eq!((row["status"].as_str(), row["attempt"].as_i64()), (Some("1"), Some(1))),
            // The sweeper won: attempt 2 runs and the callback changed nothing.
            409 => {
                assert_eq!((row["status"].as_str(), row["attempt"].as_i64()), (Some("0"), Some(2)));
                assert!(row["captureHash"].is_null());
            }
            other => panic!("unexpected {other}"),
        }
    }
}

async fn retry_request(app: &TestApp, id: &str, token: &str, key: Option<&str>) -> reqwest::Response {
    let mut request = app
        .http
        .post(app.url(&format!("/page-imports/{id}/retry")))
        .bearer_auth(token);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request.send().await.unwrap()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_failed_import_is_retried_by_its_user_as_the_next_attempt(pool: PgPool) {
    // A manual retry is not limited by CAPTURE_MAX_ATTEMPTS.
    let app = TestApp::spawn_with_env(pool, vec![("CAPTURE_MAX_ATTEMPTS", "1".into())]).await;
    let tenant = app.tenant().await;
    let first = app.job(&tenant).await;
    app.receive(&app.page_import_queue_url, 1).await;
    let mut failed = app.failed_body(&first, "The page answered HTTP 503");
    failed["resultUrl"] = json!(app.artifact_url(&first, "failure.json"));
    assert_eq!(app.callback(&failed).await.status(), 200);

    let answer = retry_request(&app, &first.id, &tenant.token, Some("retry-1")).await;
    assert_eq!(answer.status(), 202);
    assert_eq!(
        answer.headers()["location"],
        format!("/page-imports/{}", first.id).as_str()
    );
    let resource: Value = answer.json().await.unwrap();
    assert_eq!(
        (resource["status"].as_str(), resource["attempt"].as_i64()),
        (Some("processing"), Some(2))
    );
    for cleared in ["resultUrl", "captureHash", "screenshotUrl", "errorMessage"] {
        assert!(resource[cleared].is_null(), "{cleared}: {resource}");
    }
    assert!(resource.get("nonce").is_none());
    let row = app.lifecycle(&first.id).await;
    assert_eq!(row["updatedBy"], tenant.subject.as_str());
    let second = current_job(&app, &first.id).await;
    assert_ne!(second.nonce, first.nonce);
    let messages = app.receive(&app.page_import_queue_url, 1).await;
    assert_eq!(
        (messages[0]["attempt"].as_i64(), messages[0]["nonce"].as_str()),
        (Some(2), Some(second.nonce.as_str()))
    );

    // The same key replays the first answer and starts nothing more.
    let replay = retry_request(&app, &first.id, &tenant.token, Some("retry-1")).await;
    assert_eq!(replay.status(), 202);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.json::<Value>().await.unwrap()["attempt"], 2);
    assert_eq!(app.lifecycle(&first.id).await["attempt"], 2);

    let h = history(&app, &first.id).await;
    assert_eq!(h.len(), 2);
    assert_eq!((h[1].1.as_str(), h[1].2.as_str()), ("manual", tenant.subject.as_str()));
    assert_eq!(h[0].4.as_deref(), Some("failed"));
    assert_eq!(h[0].5.as_deref(), Some("The page answered HTTP 503"));
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn only_a_failed_import_can_be_retried_and_only_by_who_sees_it(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let stranger = app.tenant().await;
    let processing = app.job(&tenant).await;
    let problem = expect_problem(
        retry_request(&app, &processing.id, &tenant.token, None).await,
        409,
        "not_retryable",
    )
    .await;
    assert!(problem["detail"].as_str().unwrap().contains("processing"), "{problem}");

    let completed = app.job(&tenant).await;
    let body = app.upload_capture(&completed, manifest(&completed)).await;
    assert_eq!(app.callback(&body).await.status(), 200);
    let problem = expect_problem(
        retry_request(&app, &completed.id, &tenant.token, None).await,
        409,
        "not_retryable",
    )
    .await;
    assert!(problem["detail"].as_str().unwrap().contains("completed"), "{problem}");
    assert_eq!(app.lifecycle(&completed.id).await["attempt"], 1);

    let failed = app.job(&tenant).await;
    assert_eq!(app.callback(&app.failed_body(&failed, "boom")).await.status(), 200);
    expect_problem(
        retry_request(&app, &failed.id, &stranger.token, None).await,
        404,
        "not_found",
    )
    .await;
    expect_problem(
        retry_request(&app, "0193ffff-0000-7000-8000-000000000000", &tenant.token, None).await,
        404,
        "not_found",
    )
    .await;
    let anonymous = app
        .http
        .post(app.url(&format!("/page-imports/{}/retry", failed.id)))
        .send()
        .await
        .unwrap();
    expect_problem(anonymous, 401, "unauthorized").await;
    assert_eq!(app.lifecycle(&failed.id).await["status"], "2", "nothing changed");
}

/// `GET /page-imports/{id}/attempts`: the history through the API, to its
/// owner only.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_attempt_history_is_served_to_the_owner_only(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let stranger = app.tenant().await;
    let first = app.job(&tenant).await;
    app.receive(&app.page_import_queue_url, 1).await;
    dispatched_long_ago(&app, &first.id).await;
    app.sweep().await;

    let path = format!("/page-imports/{}/attempts", first.id);
    let response = app.get(&path, &tenant.token).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{body}");
    assert_eq!(
        (&items[0]["attempt"], &items[0]["reason"], &items[0]["outcome"]),
        (&json!(1), &json!("create"), &json!("timed_out"))
    );
    assert_eq!(items[0]["startedBy"], tenant.subject.as_str());
    assert!(items[0]["dispatchedAt"].is_string() && items[0]["finishedAt"].is_string());
    assert_eq!(
        (&items[1]["attempt"], &items[1]["reason"], &items[1]["startedBy"]),
        (&json!(2), &json!("sweeper"), &json!("system:sweeper"))
    );
    assert!(items[1]["outcome"].is_null() && items[1]["finishedAt"].is_null());
    assert!(!body.to_string().contains(&first.nonce), "no nonce");

    expect_problem(app.get(&path, &stranger.token).await, 404, "not_found").await;
    let unknown = "/page-imports/0193ffff-0000-7000-8000-000000000000/attempts";
    expect_problem(app.get(unknown, &tenant.token).await, 404, "not_found").await;
    expect_problem(app.http.get(app.url(&path)).send().await.unwrap(), 401, "unauthorized").await;
    assert_eq!(
        app.delete(&format!("/page-imports/{}", first.id), &tenant.token)
            .await
            .status(),
        204
    );
    expect_problem(app.get(&path, &tenant.token).await, 404, "not_found").await;
}
