//! `Idempotency-Key` on `POST /page-imports`: replay, mismatch, in flight.

use std::time::Duration;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::*;

async fn post_with_key(app: &TestApp, tenant: &Tenant, key: &str, body: &Value) -> reqwest::Response {
    app.http
        .post(app.url("/page-imports"))
        .bearer_auth(&tenant.token)
        .header("idempotency-key", key)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn row_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("select count(*) from page_import")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_repeat_with_the_same_key_and_body_replays_the_first_response(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let body = import_body(&tenant);
    let first = post_with_key(&app, &tenant, "key-1", &body).await;
    assert_eq!(first.status(), 202);
    let location = first.headers()["location"].clone();
    let first: Value = first.json().await.unwrap();

    let again = post_with_key(&app, &tenant, "key-1", &body).await;
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["location"], location);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again, first);
    assert_eq!(row_count(&app).await, 1);
    let messages = app.receive(&app.page_import_queue_url, 2).await;
    assert_eq!(messages.len(), 1, "one import, one message");

    // Another caller's identical key is a different key.
    let other = app.tenant_for(&format!("{}-2", tenant.subject)).await;
    let response = post_with_key(&app, &other, "key-1", &import_body(&other)).await;
    assert_eq!(response.status(), 202);
    assert_eq!(row_count(&app).await, 2);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_same_key_with_a_different_body_is_422(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let body = import_body(&tenant);
    assert_eq!(post_with_key(&app, &tenant, "key-2", &body).await.status(), 202);
    let mut changed = body.clone();
    changed["viewport"]["width"] = json!(1280);
    expect_problem(
        post_with_key(&app, &tenant, "key-2", &changed).await,
        422,
        "idempotency_key_reused",
    )
    .await;
    assert_eq!(row_count(&app).await, 1);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_duplicate_while_the_first_is_in_flight_is_409(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let body = import_body(&tenant);

    // Hold the first request inside its transaction: inserts into page_import
    // wait for this lock, after the key has been claimed.
    let lock = app.lock_table("page_import").await;
    let first = {
        let (http, url, token, body) = (
            app.http.clone(),
            app.url("/page-imports"),
            tenant.token.clone(),
            body.clone(),
        );
        tokio::spawn(async move {
            http.post(url)
                .bearer_auth(token)
                .header("idempotency-key", "key-3")
                .json(&body)
                .send()
                .await
                .unwrap()
        })
    };
    let claimed = eventually(Duration::from_secs(5), || async {
        let n: i64 =
            sqlx::query_scalar("select count(*) from idempotency_key where key = 'key-3' and response_status is null")
                .fetch_one(&app.pool)
                .await
                .unwrap();
        n == 1
    })
    .await;
    assert!(claimed, "the first request claimed the key");

    let second = post_with_key(&app, &tenant, "key-3", &body).await;
    assert_eq!(second.headers()["retry-after"], "1");
    expect_problem(second, 409, "idempotency_key_in_flight").await;

    lock.release().await;
    let first = first.await.unwrap();
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    let third: Value = post_with_key(&app, &tenant, "key-3", &body).await.json().await.unwrap();
    assert_eq!(third["id"], first["id"]);
    assert_eq!(row_count(&app).await, 1);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_failed_request_releases_its_key(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let stranger = app.tenant().await;
    // The stranger is not (yet) a member of the tenant's organization.
    let body = import_body(&tenant);
    expect_problem(post_with_key(&app, &stranger, "key-4", &body).await, 404, "not_found").await;
    sqlx::query("insert into organization_member (organization_id, subject) values ($1, $2)")
        .bind(tenant.organization_id)
        .bind(&stranger.subject)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(post_with_key(&app, &stranger, "key-4", &body).await.status(), 202);
}

/// A create cut off by the request timeout does not leave its key "in
/// flight" for a minute: the client's retry with the same key goes through,
/// and exactly one import exists.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_timed_out_create_releases_its_key(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool, vec![("REQUEST_TIMEOUT_MS", "1500".to_owned())]).await;
    let tenant = app.tenant().await;
    let body = import_body(&tenant);
    let lock = app.lock_table("page_import").await;
    expect_problem(
        post_with_key(&app, &tenant, "key-t", &body).await,
        503,
        "request_timeout",
    )
    .await;
    lock.release().await;
    // The retry comes a moment later, well inside the minute after which an
    // abandoned key would be taken over anyway.
    let mut status = 0;
    for _ in 0..20 {
        status = post_with_key(&app, &tenant, "key-t", &body).await.status().as_u16();
        if status != 409 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, 202, "the key was released when the request timed out");
    assert_eq!(row_count(&app).await, 1, "the timed-out attempt stored nothing");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn malformed_keys_are_400(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    for key in ["", &"k".repeat(256), "has space"] {
        let response = post_with_key(&app, &tenant, key, &import_body(&tenant)).await;
        expect_problem(response, 400, "invalid_idempotency_key").await;
    }
    assert_eq!(row_count(&app).await, 0);
}
