//! `POST /webhooks/page-imports` (SPEC §7): every status code, with the row
//! checked afterwards.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::worker::{manifest, sha256_hash, Job, SCREENSHOT};
use crate::helpers::*;

async fn ack(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_verified_completed_callback_completes_the_import(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let body = app.upload_capture(&job, manifest(&job)).await;

    assert_eq!(
        ack(app.callback(&body).await).await,
        json!({"status": "completed", "replayed": false})
    );
    let row = app.lifecycle(&job.id).await;
    assert_eq!(row["status"], "1");
    assert_eq!(row["resultUrl"], body["resultUrl"]);
    assert_eq!(row["captureHash"], body["captureHash"]);
    assert_eq!(row["screenshotUrl"], body["screenshotUrl"]);
    assert_eq!(row["updatedBy"], "system:capture-worker");

    let resource: Value = app
        .get(&format!("/page-imports/{}", job.id), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(resource["status"], "completed");
    assert_eq!(
        resource["links"]["capture"],
        format!("/page-imports/{}/capture", job.id)
    );
    assert_eq!(
        resource["links"]["screenshot"],
        format!("/page-imports/{}/screenshot", job.id)
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_failed_callback_stores_a_client_safe_message(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let raw_message = format!("Navigation\u{0} timed out\u{1b}[0m after 30 s\r\n{}", "x".repeat(3000));
    let mut body = app.failed_body(&job, &raw_message);
    body["resultUrl"] = json!(app.artifact_url(&job, "failure.json"));
    assert_eq!(
        ack(app.callback(&body).await).await,
        json!({"status": "failed", "replayed": false})
    );
    let row = app.lifecycle(&job.id).await;
    assert_eq!(row["status"], "2");
    let stored = row["errorMessage"].as_str().unwrap();
    assert!(stored.starts_with("Navigation timed out[0m after 30 s"), "{stored}");
    assert_eq!(stored.chars().count(), 2000);
    assert!(!stored.chars().any(char::is_control));
    assert_eq!(row["resultUrl"], body["resultUrl"]);
    assert!(row["captureHash"].is_null());
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn retryable_is_refused_on_completed(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;

    let job = app.job(&tenant).await;
    let mut completed = app.upload_capture(&job, manifest(&job)).await;
    completed["retryable"] = json!(false);
    let problem = expect_problem(app.callback(&completed).await, 422, "validation_failed").await;
    assert_eq!(problem["errors"][0]["field"], "retryable", "{problem}");
    assert_eq!(app.lifecycle(&job.id).await["status"], "0");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn bad_missing_or_stale_signatures_are_401_and_change_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let before = app.lifecycle(&job.id).await;
    let raw = serde_json::to_vec(&app.failed_body(&job, "boom")).unwrap();
    // The clock is read for each request, and the stale ones are 10 s past
    // the ±300 s window: the service reads its own clock a moment later,
    // and under load a second may pass in between (the exact edge is the
    // unit tests' in crates/contract).
    let now = || chrono::Utc::now().timestamp();

    let other_secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    for (case, response) in [
        (
            "another secret",
            app.callback_raw(raw.clone(), other_secret, now()).await,
        ),
        (
            "310 s old",
            app.callback_raw(raw.clone(), WEBHOOK_SECRET, now() - 310).await,
        ),
        (
            "310 s ahead",
            app.callback_raw(raw.clone(), WEBHOOK_SECRET, now() + 310).await,
        ),
    ] {
        assert_eq!(response.status(), 401, "{case}");
        expect_problem(response, 401, "unauthorized").await;
    }
    let unsigned = app
        .http
        .post(app.url("/webhooks/page-imports"))
        .header("content-type", "application/json")
        .body(raw.clone())
        .send()
        .await
        .unwrap();
    expect_problem(unsigned, 401, "unauthorized").await;
    // A valid signature over other bytes does not carry over.
    let msg_id = "msg_1";
    let now = now();
    let signature = page_import::webhook::WebhookSecret::parse(WEBHOOK_SECRET)
        .unwrap()
        .sign(msg_id, now, b"{}");
    let forged = app
        .http
        .post(app.url("/webhooks/page-imports"))
        .header("content-type", "application/json")
        .header("webhook-id", msg_id)
        .header("webhook-timestamp", now.to_string())
        .header("webhook-signature", signature)
        .body(raw)
        .send()
        .await
        .unwrap();
    expect_problem(forged, 401, "unauthorized").await;
    assert_eq!(app.lifecycle(&job.id).await, before);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn every_configured_secret_is_accepted_during_rotation(pool: PgPool) {
    let new_secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    let env = vec![("WEBHOOK_SECRET", format!("{new_secret},{WEBHOOK_SECRET}"))];
    let app = TestApp::spawn_with_env(pool, env).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let raw = serde_json::to_vec(&app.failed_body(&job, "boom")).unwrap();
    let response = app.callback_raw(raw, new_secret, chrono::Utc::now().timestamp()).await;
    assert_eq!(ack(response).await["status"], "failed");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_body_over_64_kib_is_413_before_any_signature_work(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response = app
        .http
        .post(app.url("/webhooks/page-imports"))
        .header("content-type", "application/json")
        .body(vec![b' '; 64 * 1024 + 1])
        .send()
        .await
        .unwrap();
    expect_problem(response, 413, "payload_too_large").await;
    // Exactly 64 KiB is within the limit: it reaches the signature check.
    let response = app
        .http
        .post(app.url("/webhooks/page-imports"))
        .header("content-type", "application/json")
        .body(vec![b' '; 64 * 1024])
        .send()
        .await
        .unwrap();
    expect_problem(response, 401, "unauthorized").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn malformed_bodies_are_400_and_invalid_shapes_422(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let now = chrono::Utc::now().timestamp();
    let response = app.callback_raw(b"{not json".to_vec(), WEBHOOK_SECRET, now).await;
    expect_problem(response, 400, "malformed_json").await;
    let mut unknown = app.failed_body(&job, "x");
    unknown["extra"] = json!(1);
    expect_problem(app.callback(&unknown).await, 400, "invalid_body").await;
    let mut bad_outcome = app.failed_body(&job, "x");
    bad_outcome["outcome"] = json!("exploded");
    expect_problem(app.callback(&bad_outcome).await, 400, "invalid_body").await;

    let hash = sha256_hash(b"x");
    let mut no_hash = app.completed_body(&job, &hash);
    no_hash.as_object_mut().unwrap().remove("captureHash");
    let mut bad_hash = app.completed_body(&job, "sha256:XYZ");
    bad_hash["errorMessage"] = json!("not for success");
    let mut failed_with_hash = app.failed_body(&job, "x");
    failed_with_hash["captureHash"] = json!(hash);
    let no_message = json!({"pageImportId": job.id, "attempt": 1, "nonce": job.nonce, "outcome": "failed"});
    let mut zero_attempt = app.failed_body(&job, "x");
    zero_attempt["attempt"] = json!(0);
    // A NUL byte is valid JSON but not storable text: PostgreSQL would refuse
    // the query (500) rather than find no row.
    let mut nul_id = app.failed_body(&job, "x");
    nul_id["pageImportId"] = json!(format!("{}\u{0}", job.id));
    let mut nul_nonce = app.failed_body(&job, "x");
    nul_nonce["nonce"] = json!(format!("{}\u{0}", job.nonce));
    for (body, fields) in [
        (no_hash, vec!["captureHash"]),
        (bad_hash, vec!["errorMessage", "captureHash"]),
        (failed_with_hash, vec!["captureHash"]),
        (no_message, vec!["errorMessage"]),
        (zero_attempt, vec!["attempt"]),
        (app.failed_body(&job, "\u{1}\u{2}"), vec!["errorMessage"]),
        (nul_id, vec!["pageImportId"]),
        (nul_nonce, vec!["nonce"]),
    ] {
        let problem = expect_problem(app.callback(&body).await, 422, "validation_failed").await;
        let got: Vec<&str> = problem["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["field"].as_str().unwrap())
            .collect();
        assert_eq!(got, fields, "{body}");
    }
    assert_eq!(app.lifecycle(&job.id).await["status"], "0");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_unknown_import_is_404(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let job = Job {
        id: "0193ffff-0000-7000-8000-000000000000".into(),
        attempt: 1,
        nonce: "n".into(),
    };
    expect_problem(app.callback(&app.failed_body(&job, "boom")).await, 404, "not_found").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_deleted_import_is_410_and_stays_as_it_was(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let body = app.upload_capture(&job, manifest(&job)).await;
    assert_eq!(
        app.delete(&format!("/page-imports/{}", job.id), &tenant.token)
            .await
            .status(),
        204
    );
    let before = app.lifecycle(&job.id).await;
    expect_problem(app.callback(&body).await, 410, "gone").await;
    expect_problem(app.callback(&app.failed_body(&job, "boom")).await, 410, "gone").await;
    assert_eq!(app.lifecycle(&job.id).await, before);
    assert_eq!(before["status"], "0");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_stale_attempt_or_wrong_nonce_is_409_and_changes_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let before = app.lifecycle(&job.id).await;
    let stale = Job {
        attempt: 2,
        ..job.clone()
    };
    let wrong_nonce = Job {
        nonce: format!("{}x", &job.nonce[1..]),
        ..job.clone()
    };
    let short_nonce = Job {
        nonce: "a".into(),
        ..job.clone()
    };
    for job in [stale, wrong_nonce, short_nonce] {
        let body = app.upload_capture(&job, manifest(&job)).await;
        expect_problem(app.callback(&body).await, 409, "fence_mismatch").await;
        expect_problem(
            app.callback(&app.failed_body(&job, "boom")).await,
            409,
            "fence_mismatch",
        )
        .await;
    }
    assert_eq!(app.lifecycle(&job.id).await, before);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn artifacts_outside_the_jobs_prefix_are_422(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let other = app.job(&tenant).await;
    let good = app.upload_capture(&job, manifest(&job)).await;
    let other_body = app.upload_capture(&other, manifest(&other)).await;
    let cases = [
        (
            "resultUrl",
            format!("s3://another-bucket/page-imports/{}/1/capture.json", job.id),
        ),
        ("resultUrl", other_body["resultUrl"].as_str().unwrap().to_owned()),
        (
            "resultUrl",
            format!(
                "s3://{}/page-imports/{}/1/../../{}/1/capture.json",
                app.bucket, job.id, other.id
            ),
        ),
        (
            "resultUrl",
            format!("s3://{}/page-imports/{}/2/capture.json", app.bucket, job.id),
        ),
        (
            "resultUrl",
            format!(
                "https://{}.s3.amazonaws.com/page-imports/{}/1/capture.json",
                app.bucket, job.id
            ),
        ),
        (
            "screenshotUrl",
            other_body["screenshotUrl"].as_str().unwrap().to_owned(),
        ),
    ];
    for (field, url) in cases {
        let mut body = good.clone();
        body[field] = json!(url);
        let problem = expect_problem(app.callback(&body).await, 422, "validation_failed").await;
        assert_eq!(problem["errors"][0]["field"], field, "{url}");
        assert_eq!(problem["errors"][0]["code"], "invalid_artifact_url", "{url}");
    }
    let mut failed = app.failed_body(&job, "boom");
    failed["resultUrl"] = other_body["resultUrl"].clone();
    expect_problem(app.callback(&failed).await, 422, "validation_failed").await;
    assert_eq!(app.lifecycle(&job.id).await["status"], "0");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn manifest_problems_are_422_naming_what_is_wrong(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let prefix = format!("page-imports/{}/1", job.id);

    // No objects at all.
    let body = app.completed_body(&job, &sha256_hash(&manifest(&job)));
    let problem = expect_problem(app.callback(&body).await, 422, "validation_failed").await;
    assert_eq!(problem["errors"][0]["code"], "manifest_missing");

    // The hash of other bytes.
    let body = app.upload_capture(&job, manifest(&job)).await;
    let mut wrong_hash = body.clone();
    wrong_hash["captureHash"] = json!(sha256_hash(b"other bytes"));
    let problem = expect_problem(app.callback(&wrong_hash).await, 422, "validation_failed").await;
    assert_eq!(problem["errors"][0]["code"], "manifest_hash_mismatch");

    // Each identity field wrong in turn (hash correct for the bytes uploaded).
    for (field, value) in [
        ("schemaVersion", json!(2)),
        ("pageImportId", json!("0193ffff-0000-7000-8000-000000000000")),
        ("attempt", json!(2)),
        ("nonce", json!("not-the-nonce")),
    ] {
        let mut m: Value = serde_json::from_slice(&manifest(&job)).unwrap();
        m[field] = value;
        let bytes = serde_json::to_vec(&m).unwrap();
        let body = app.upload_capture(&job, bytes).await;
        let problem = expect_problem(app.callback(&body).await, 422, "validation_failed").await;
        assert_eq!(problem["errors"][0]["code"], "manifest_identity_mismatch", "{field}");
        assert!(problem["errors"][0]["message"].as_str().unwrap().contains(field));
    }

    // Not a JSON object.
    let body = app.upload_capture(&job, b"[1, 2, 3]".to_vec()).await;
    let problem = expect_problem(app.callback(&body).await, 422, "validation_failed").await;
    assert_eq!(problem["errors"][0]["code"], "manifest_invalid");

    // The identity complete, the object cut off (or an identity field
    // repeated): the manifest is read to its end, so both are refused.
    let whole = manifest(&job);
    let cut = whole[..whole.len() - 10].to_vec();
    let mut repeated = whole[..whole.len() - 1].to_vec();
    repeated.extend_from_slice(format!(r#","attempt":{}}}"#, job.attempt + 1).as_bytes());
    for bytes in [cut, repeated] {
        let body = app.upload_capture(&job, bytes).await;
        let problem = expect_problem(app.callback(&body).await, 422, "validation_failed").await;
        assert_eq!(problem["errors"][0]["code"], "manifest_invalid");
    }

    // A good manifest but no screenshot.
    let body = app.upload_capture(&job, manifest(&job)).await;
    app.s3
        .delete_object()
        .bucket(&app.bucket)
        .key(format!("{prefix}/screenshot.png"))
        .send()
        .await
        .unwrap();
    let problem = expect_problem(app.callback(&body).await, 422, "validation_failed").await;
    assert_eq!(problem["errors"][0]["field"], "screenshotUrl");
    assert_eq!(problem["errors"][0]["code"], "manifest_screenshot_missing");

    assert_eq!(
        app.lifecycle(&job.id).await["status"],
        "0",
        "nothing above changed the row"
    );
    app.put_object(&format!("{prefix}/screenshot.png"), SCREENSHOT.to_vec())
        .await;
    assert_eq!(ack(app.callback(&body).await).await["replayed"], false);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_exact_replay_is_200_and_a_different_outcome_409(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let body = app.upload_capture(&job, manifest(&job)).await;
    assert_eq!(ack(app.callback(&body).await).await["replayed"], false);
    let after = app.lifecycle(&job.id).await;

    assert_eq!(
        ack(app.callback(&body).await).await,
        json!({"status": "completed", "replayed": true})
    );
    expect_problem(
        app.callback(&app.failed_body(&job, "late failure")).await,
        409,
        "already_terminal",
    )
    .await;
    let mut other_hash = body.clone();
    other_hash["captureHash"] = json!(sha256_hash(b"different"));
    expect_problem(app.callback(&other_hash).await, 409, "already_terminal").await;
    assert_eq!(app.lifecycle(&job.id).await, after);

    // And the other way round: failed, then a success attempt.
    let job = app.job(&tenant).await;
    assert_eq!(
        ack(app.callback(&app.failed_body(&job, "boom")).await).await["replayed"],
        false
    );
    assert_eq!(
        ack(app.callback(&app.failed_body(&job, "boom")).await).await["replayed"],
        true
    );
    let body = app.upload_capture(&job, manifest(&job)).await;
    expect_problem(app.callback(&body).await, 409, "already_terminal").await;
}

/// 32 concurrent callbacks with mixed outcomes per job, over 20 jobs: exactly
/// one terminal transition each, and it is the one answered `replayed: false`.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn concurrent_callbacks_make_exactly_one_transition(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    // Count real status transitions with a trigger.
    sqlx::raw_sql(
        "create table transition_log (id text, old_status page_import_status, new_status page_import_status);
         create function log_transition() returns trigger language plpgsql as $$
         begin
             if old.status is distinct from new.status then
                 insert into transition_log values (new.id, old.status, new.status);
             end if;
             return new;
         end $$;
         create trigger log_transition after update on page_import for each row execute function log_transition();",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let tenant = app.tenant().await;

    for _ in 0..20 {
        let job = app.job(&tenant).await;
        let completed = app.upload_capture(&job, manifest(&job)).await;
        let mut tasks = Vec::new();
        for i in 0..32 {
            let body = if i % 2 == 0 {
                completed.clone()
            } else {
                app.failed_body(&job, &format!("failure {i}"))
            };
            let (http, url, raw) = (
                app.http.clone(),
                app.url("/webhooks/page-imports"),
                serde_json::to_vec(&body).unwrap(),
            );
            let now = chrono::Utc::now().timestamp();
            let msg_id = format!("msg_{i}");
            let signature = page_import::webhook::WebhookSecret::parse(WEBHOOK_SECRET)
                .unwrap()
                .sign(&msg_id, now, &raw);
            tasks.push(tokio::spawn(async move {
                let response = http
                    .post(url)
                    .header("content-type", "application/json")
                    .header("webhook-id", msg_id)
                    .header("webhook-timestamp", now.to_string())
                    .header("webhook-signature", signature)
                    .body(raw)
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                let body: Value = response.json().await.unwrap();
                (i, status, body)
            }));
        }
        let mut winners = Vec::new();
        let (mut replays, mut conflicts) = (0, 0);
        for task in tasks {
            let (i, status, body) = task.await.unwrap();
            match (status, body["replayed"].as_bool()) {
                (200, Some(false)) => winners.push(i),
                (200, Some(true)) => replays += 1,
                (409, _) => conflicts += 1,
                other => panic!("unexpected answer {other:?}: {body}"),
            }
        }
        assert_eq!(winners.len(), 1, "exactly one callback made the transition");
        let winner = winners[0];
        let transitions: Vec<(String, String)> =
            sqlx::query_as("select old_status::text, new_status::text from transition_log where id = $1")
                .bind(&job.id)
                .fetch_all(&app.pool)
                .await
                .unwrap();
        let row = app.lifecycle(&job.id).await;
        if winner % 2 == 0 {
            assert_eq!(transitions, [("0".to_owned(), "1".to_owned())]);
            assert_eq!(row["captureHash"], completed["captureHash"]);
            assert_eq!(
                (replays, conflicts),
                (15, 16),
                "same success replays, every failure conflicts"
            );
        } else {
            assert_eq!(transitions, [("0".to_owned(), "2".to_owned())]);
            assert_eq!(row["errorMessage"], format!("failure {winner}"));
            assert_eq!((replays, conflicts), (0, 31));
        }
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_sweeper_fails_old_dispatched_attempts_only(pool: PgPool) {
    let app = TestApp::spawn_with_env(
        pool,
        vec![
            ("CAPTURE_TIMEOUT_SECS", "600".into()),
            ("CAPTURE_MAX_ATTEMPTS", "1".into()),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    let old = app.job(&tenant).await;
    let fresh = app.job(&tenant).await;
    let done = app.job(&tenant).await;
    app.callback(&app.failed_body(&done, "boom")).await;
    assert!(
        eventually(std::time::Duration::from_secs(10), || async {
            app.outbox_len().await == 0
        })
        .await,
        "all three messages were accepted by SQS"
    );
    sqlx::query(
        "update page_import_attempt set dispatched_at = now() - interval '601 seconds' where page_import_id = any($1)",
    )
    .bind(vec![old.id.clone(), done.id.clone()])
    .execute(&app.pool)
    .await
    .unwrap();

    let swept = app.sweep().await;
    assert_eq!(swept, 1);
    let row = app.lifecycle(&old.id).await;
    assert_eq!(
        (row["status"].as_str(), row["errorMessage"].as_str()),
        (Some("2"), Some("Capture timed out"))
    );
    assert_eq!(row["updatedBy"], "system:sweeper");
    assert_eq!(app.lifecycle(&fresh.id).await["status"], "0");
    assert_eq!(app.lifecycle(&done.id).await["errorMessage"], "boom");
    // A late worker callback for the swept job is a conflict.
    let body = app.upload_capture(&old, manifest(&old)).await;
    expect_problem(app.callback(&body).await, 409, "already_terminal").await;
    assert_eq!(app.sweep().await, 0);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn artifact_links_redirect_to_presigned_urls_with_the_exact_bytes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let stranger = app.tenant().await;
    let job = app.job(&tenant).await;
    let capture_path = format!("/page-imports/{}/capture", job.id);
    let screenshot_path = format!("/page-imports/{}/screenshot", job.id);
    expect_problem(app.get(&capture_path, &tenant.token).await, 404, "not_found").await;
    expect_problem(app.get(&screenshot_path, &tenant.token).await, 404, "not_found").await;

    let manifest_bytes = manifest(&job);
    let body = app.upload_capture(&job, manifest_bytes.clone()).await;
    ack(app.callback(&body).await).await;
    for (path, expected) in [
        (&capture_path, manifest_bytes.as_slice()),
        (&screenshot_path, SCREENSHOT),
    ] {
        let response = app.get(path, &tenant.token).await;
        assert_eq!(response.status(), 302);
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        let url = url::Url::parse(&location).unwrap();
        let expires: u64 = url
            .query_pairs()
            .find(|(k, _)| k == "X-Amz-Expires")
            .unwrap()
            .1
            .parse()
            .unwrap();
        assert!(expires <= 300, "{location}");
        let downloaded = reqwest::get(&location).await.unwrap().bytes().await.unwrap();
        assert_eq!(downloaded.as_ref(), expected);
        expect_problem(app.get(path, &stranger.token).await, 404, "not_found").await;
    }
}

/// SPEC §7: the terminal transition is one conditional `UPDATE … WHERE id
/// AND attempt AND nonce AND status='0' AND deleted_at IS NULL`. The
/// service also locks and checks the row first; the statement refuses on
/// its own all the same.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_terminal_update_itself_refuses_a_row_off_its_fence(pool: PgPool) {
    use page_import::db::page_import::{finish, Finish};
    use page_import::domain::lifecycle::{AttemptOutcome, CAPTURE_WORKER};
    use page_import::domain::JobStatus;

    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let attempt = job.attempt as i32;
    let failed = |nonce| Finish {
        nonce,
        status: JobStatus::Failed,
        outcome: AttemptOutcome::Failed,
        result_url: None,
        capture_hash: None,
        screenshot_url: None,
        error_message: Some("boom"),
        actor: CAPTURE_WORKER,
    };
    let mut conn = app.pool.acquire().await.unwrap();
    assert!(!finish(&mut conn, &job.id, attempt, &failed(Some("another-nonce")))
        .await
        .unwrap());
    assert!(!finish(&mut conn, &job.id, attempt + 1, &failed(Some(&job.nonce)))
        .await
        .unwrap());
    assert_eq!(app.lifecycle(&job.id).await["status"], "0", "nothing written");
    assert!(finish(&mut conn, &job.id, attempt, &failed(Some(&job.nonce)))
        .await
        .unwrap());
    assert_eq!(app.lifecycle(&job.id).await["status"], "2");
    assert!(
        !finish(&mut conn, &job.id, attempt, &failed(Some(&job.nonce)))
            .await
            .unwrap(),
        "a terminal row is not finished twice"
    );

    let deleted = app.job(&tenant).await;
    let response = app
        .delete(&format!("/page-imports/{}", deleted.id), &tenant.token)
        .await;
    assert_eq!(response.status(), 204);
    assert!(!finish(&mut conn, &deleted.id, attempt, &failed(Some(&deleted.nonce)))
        .await
        .unwrap());
    assert_eq!(app.lifecycle(&deleted.id).await["status"], "0");
}

/// CPU time the process has run, over all its threads, in nanoseconds
/// (`/proc/PID/task/*/schedstat`: clock ticks are too coarse for 20 requests).
fn cpu_ns(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// An unauthenticated caller cannot make the service hash a body more often
/// than an honest one does (SPEC §7): 20 callbacks of 60 KiB listing 1 000
/// empty signatures cost the service's process at most 3× the CPU of 20
/// honest ones. They cost 37× when each listed signature was one more HMAC
/// over the whole body.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_header_of_a_thousand_signatures_costs_what_one_does(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let database_url = crate::helpers::process::database_url_of(&pool);
    let service = crate::helpers::process::ServiceProcess::start(&app, &database_url, &[]);
    let pid = service.child.id();
    let body = |n: usize| {
        serde_json::to_vec(&json!({
            "pageImportId": uuid::Uuid::now_v7().to_string(), "attempt": 1, "nonce": format!("n{n}"),
            "outcome": "failed", "errorMessage": "x".repeat(60 * 1024),
        }))
        .unwrap()
    };
    let empty_signatures = "v1, ".repeat(1_000);
    // The timestamp sent is the one signed: read twice, a second's
    // boundary between the two reads made an honest callback a 401.
    let send = |raw: Vec<u8>, signature: String, msg_id: String, timestamp: i64| {
        let request = app
            .http
            .post(service.url("/webhooks/page-imports"))
            .header("content-type", "application/json")
            .header("webhook-id", msg_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(raw);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    // Warmed up: the first requests pay for connections and lazy set-up.
    for n in 0..5 {
        let raw = body(n);
        let timestamp = chrono::Utc::now().timestamp();
        let signature = page_import_contract::webhook::WebhookSecret::parse(WEBHOOK_SECRET)
            .unwrap()
            .sign("warm", timestamp, &raw);
        send(raw, signature, "warm".into(), timestamp).await;
    }
    let measure = |hostile: bool| {
        let send = &send;
        let body = &body;
        let empty_signatures = &empty_signatures;
        async move {
            let before = cpu_ns(pid);
            for n in 0..20 {
                let raw = body(n);
                let msg_id = format!("msg_{n}");
                let timestamp = chrono::Utc::now().timestamp();
                let (signature, expected) = if hostile {
                    (empty_signatures.clone(), 401)
                } else {
                    let secret = page_import_contract::webhook::WebhookSecret::parse(WEBHOOK_SECRET).unwrap();
                    (secret.sign(&msg_id, timestamp, &raw), 404)
                };
                assert_eq!(send(raw, signature, msg_id, timestamp).await, expected);
            }
            cpu_ns(pid) - before
        }
    };
    let honest = measure(false).await;
    let hostile = measure(true).await;
    assert!(
        hostile <= 3 * honest,
        "20 callbacks with 1 000 empty signatures took {:.1} ms of the service's CPU, 20 honest ones {:.1} ms",
        hostile as f64 / 1e6,
        honest as f64 / 1e6
    );
}
