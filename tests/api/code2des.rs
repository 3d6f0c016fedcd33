//! `POST /code2des` and `GET /code2des/{id}` (SPEC §8).

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::worker::{manifest, Job};
use crate::helpers::*;

fn trigger_body(tenant: &Tenant, page_import_id: &str) -> Value {
    json!({"organizationId": tenant.organization_id, "projectId": tenant.project_id, "pageImportId": page_import_id})
}

/// A job taken through the webhook to `completed`.
async fn completed_job(app: &TestApp, tenant: &Tenant) -> (Job, Value) {
    let job = app.job(tenant).await;
    let body = app.upload_capture(&job, manifest(&job)).await;
    assert_eq!(app.callback(&body).await.status(), 200);
    (job, body)
}

/// Every column of the row, as text, to compare byte for byte.
async fn row_snapshot(app: &TestApp, id: &str) -> String {
    sqlx::query_scalar("select row_to_json(pi)::text from page_import pi where id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_completed_import_starts_jobs_and_stays_byte_for_byte_unchanged(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let (job, callback) = completed_job(&app, &tenant).await;
    let before = row_snapshot(&app, &job.id).await;

    let mut ids = Vec::new();
    for _ in 0..2 {
        let response = app
            .post_json("/code2des", &tenant.token, &trigger_body(&tenant, &job.id))
            .await;
        assert_eq!(response.status(), 202);
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        let body: Value = response.json().await.unwrap();
        assert_eq!(location, format!("/code2des/{}", body["id"].as_str().unwrap()));
        assert_eq!(body["pageImportId"], job.id);
        assert_eq!(body["captureHash"], callback["captureHash"]);
        assert_eq!(body["status"], "processing");
        assert_eq!(body["createdBy"], tenant.subject);
        let fetched: Value = app.get(&location, &tenant.token).await.json().await.unwrap();
        assert_eq!(fetched, body);
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    assert_ne!(ids[0], ids[1], "two jobs from one capture");
    assert_eq!(
        row_snapshot(&app, &job.id).await,
        before,
        "the page import row is untouched"
    );

    let messages = app.receive(&app.code2des_queue_url, 2).await;
    assert_eq!(messages.len(), 2);
    for message in &messages {
        assert_eq!(message["schemaVersion"], 1);
        assert_eq!(message["pageImportId"], job.id);
        assert_eq!(message["resultUrl"], callback["resultUrl"]);
        assert_eq!(message["captureHash"], callback["captureHash"]);
        assert!(ids.contains(&message["code2desId"].as_str().unwrap().to_owned()));
    }
    let rows: i64 = sqlx::query_scalar("select count(*) from code2des where page_import_id = $1")
        .bind(&job.id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 2);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn processing_and_failed_imports_are_409_naming_the_status(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let processing = app.job(&tenant).await;
    let failed = app.job(&tenant).await;
    app.callback(&app.failed_body(&failed, "boom")).await;
    for (job, status) in [(&processing, "processing"), (&failed, "failed")] {
        let before = row_snapshot(&app, &job.id).await;
        let response = app
            .post_json("/code2des", &tenant.token, &trigger_body(&tenant, &job.id))
            .await;
        let problem = expect_problem(response, 409, "page_import_not_ready").await;
        assert!(problem["detail"].as_str().unwrap().contains(status), "{problem}");
        assert_eq!(row_snapshot(&app, &job.id).await, before);
    }
    let rows: i64 = sqlx::query_scalar("select count(*) from code2des")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
    // The imports' own messages may still be in flight; no Code2Des message was queued.
    let queued: i64 = sqlx::query_scalar("select count(*) from outbox_message where queue = 'code2des'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(queued, 0);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn other_tenants_deleted_and_mismatched_imports_are_404(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let stranger = app.tenant().await;
    let (job, _) = completed_job(&app, &tenant).await;
    let (deleted, _) = completed_job(&app, &tenant).await;
    app.delete(&format!("/page-imports/{}", deleted.id), &tenant.token)
        .await;

    let mut wrong_project = trigger_body(&tenant, &job.id);
    wrong_project["projectId"] = json!(stranger.project_id);
    for (case, token, body) in [
        (
            "stranger, tenant's ids",
            &stranger.token,
            trigger_body(&tenant, &job.id),
        ),
        ("stranger, own ids", &stranger.token, trigger_body(&stranger, &job.id)),
        ("deleted import", &tenant.token, trigger_body(&tenant, &deleted.id)),
        ("unknown import", &tenant.token, trigger_body(&tenant, "nope")),
        // Not storable text: must be a miss, not a database error (500).
        (
            "NUL in the id",
            &tenant.token,
            trigger_body(&tenant, &format!("{}\u{0}", job.id)),
        ),
        ("import of another project", &tenant.token, wrong_project),
    ] {
        let response = app.post_json("/code2des", token, &body).await;
        assert_eq!(response.status(), 404, "{case}");
        expect_problem(response, 404, "not_found").await;
    }

    // A job the tenant created is invisible to the stranger.
    let created: Value = app
        .post_json("/code2des", &tenant.token, &trigger_body(&tenant, &job.id))
        .await
        .json()
        .await
        .unwrap();
    let path = format!("/code2des/{}", created["id"].as_str().unwrap());
    expect_problem(app.get(&path, &stranger.token).await, 404, "not_found").await;
    expect_problem(app.get("/code2des/unknown", &tenant.token).await, 404, "not_found").await;
    expect_problem(app.get(&format!("{path}%00"), &tenant.token).await, 404, "not_found").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn bad_bodies_are_400_and_keys_replay(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let (job, _) = completed_job(&app, &tenant).await;
    let mut extra = trigger_body(&tenant, &job.id);
    extra["force"] = json!(true);
    expect_problem(
        app.post_json("/code2des", &tenant.token, &extra).await,
        400,
        "invalid_body",
    )
    .await;
    expect_problem(
        app.post_json("/code2des", &tenant.token, &json!({"pageImportId": job.id}))
            .await,
        400,
        "invalid_body",
    )
    .await;

    let send = |body: Value| {
        app.http
            .post(app.url("/code2des"))
            .bearer_auth(&tenant.token)
            .header("idempotency-key", "c2d-1")
            .json(&body)
            .send()
    };
    let first: Value = send(trigger_body(&tenant, &job.id))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let again = send(trigger_body(&tenant, &job.id)).await.unwrap();
    assert_eq!(again.status(), 202);
    assert_eq!(again.json::<Value>().await.unwrap()["id"], first["id"]);
    let mut other = trigger_body(&tenant, &job.id);
    other["projectId"] = json!(tenant.project_id + 1000);
    expect_problem(send(other).await.unwrap(), 422, "idempotency_key_reused").await;
}

/// A soft delete that is in progress when the trigger arrives: the trigger
/// must wait for it and then refuse, never create a job for a deleted import.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_trigger_racing_an_uncommitted_delete_waits_and_then_404s(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let (job, _) = completed_job(&app, &tenant).await;

    let mut delete = app.pool.begin().await.unwrap();
    sqlx::query("update page_import set deleted_at = now(), deleted_by = 'racer', updated_at = now(), updated_by = 'racer' where id = $1")
        .bind(&job.id)
        .execute(&mut *delete)
        .await
        .unwrap();
    let trigger = {
        let (http, url, token, body) = (
            app.http.clone(),
            app.url("/code2des"),
            tenant.token.clone(),
            trigger_body(&tenant, &job.id),
        );
        tokio::spawn(async move { http.post(url).bearer_auth(token).json(&body).send().await.unwrap() })
    };
    // The trigger is now blocked on the row lock held by the delete.
    assert!(
        app.waits_for_lock("for share of pi").await,
        "the trigger waits for the delete"
    );
    delete.commit().await.unwrap();

    expect_problem(trigger.await.unwrap(), 404, "not_found").await;
    let rows: i64 = sqlx::query_scalar("select count(*) from code2des")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

/// And the other order: a trigger in flight holds the import; the delete
/// waits for it, so the job was created before the import was deleted.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_delete_racing_an_uncommitted_trigger_waits_for_it(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let (job, _) = completed_job(&app, &tenant).await;
    // Hold the trigger inside its transaction: the code2des insert waits for this lock.
    let lock = app.lock_table("code2des").await;
    let trigger = {
        let (http, url, token, body) = (
            app.http.clone(),
            app.url("/code2des"),
            tenant.token.clone(),
            trigger_body(&tenant, &job.id),
        );
        tokio::spawn(async move { http.post(url).bearer_auth(token).json(&body).send().await.unwrap() })
    };
    assert!(app.waits_for_lock("insert into code2des").await);
    let delete = {
        let (http, url, token) = (
            app.http.clone(),
            app.url(&format!("/page-imports/{}", job.id)),
            tenant.token.clone(),
        );
        tokio::spawn(async move { http.delete(url).bearer_auth(token).send().await.unwrap() })
    };
    assert!(
        app.waits_for_lock("set deleted_at = now()").await,
        "the delete waits for the trigger's share lock"
    );
    assert!(!delete.is_finished());
    lock.release().await;
    assert_eq!(trigger.await.unwrap().status(), 202);
    assert_eq!(delete.await.unwrap().status(), 204);
    let (created, deleted): (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) = sqlx::query_as(
        "select c.created_at, pi.deleted_at from code2des c join page_import pi on pi.id = c.page_import_id",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(created <= deleted);
}

/// Many concurrent delete/trigger pairs: each trigger's answer matches what
/// it stored (202 and one job, or 404 and none), and nothing errors. This
/// cannot see commit order, so it does not guard `FOR SHARE` (it passes
/// without it: checked by removing the lock); the two deterministic races
/// above, which hold one side's transaction open, are what guard it.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn concurrent_deletes_and_triggers_answer_consistently(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    for _ in 0..15 {
        let (job, _) = completed_job(&app, &tenant).await;
        let (body, path) = (trigger_body(&tenant, &job.id), format!("/page-imports/{}", job.id));
        let trigger = app.post_json("/code2des", &tenant.token, &body);
        let delete = app.delete(&path, &tenant.token);
        let (trigger, delete) = tokio::join!(trigger, delete);
        assert_eq!(delete.status(), 204);
        let jobs: i64 = sqlx::query_scalar("select count(*) from code2des where page_import_id = $1")
            .bind(&job.id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        match trigger.status().as_u16() {
            202 => assert_eq!(jobs, 1),
            404 => assert_eq!(jobs, 0),
            other => panic!("unexpected {other}"),
        }
    }
}
