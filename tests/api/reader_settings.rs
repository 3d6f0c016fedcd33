//! The reader's settings on the API (SPEC §6, §14): `viewport.mobile`,
//! `colorScheme`, `locale`, `timeZone` and `consent` are validated, stored
//! in their canonical form, shown with defaults filled in, carried by every
//! attempt's message (retries too) and compared by `Idempotency-Key`.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::worker::Job;
use crate::helpers::*;

/// The import body with the reader's settings of a phone in Tokyo.
fn tokyo_phone(tenant: &Tenant) -> Value {
    let mut body = import_body(tenant);
    body["viewport"] = json!({"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": true});
    body["colorScheme"] = json!("dark");
    body["locale"] = json!("ja-jp");
    body["timeZone"] = json!("asia/tokyo");
    body["consent"] = json!("keep");
    body
}

/// What the resource and every message say of a Tokyo phone.
fn assert_tokyo_phone(value: &Value) {
    assert_eq!(value["viewport"]["mobile"], true, "{value}");
    assert_eq!(value["colorScheme"], "dark", "{value}");
    assert_eq!(value["locale"], "ja-JP", "{value}");
    assert_eq!(value["timeZone"], "Asia/Tokyo", "{value}");
    assert_eq!(value["consent"], "keep", "{value}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_readers_settings_are_stored_canonical_and_shown_everywhere(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let response = app
        .post_json("/page-imports", &tenant.token, &tokyo_phone(&tenant))
        .await;
    assert_eq!(response.status(), 202);
    let created: Value = response.json().await.unwrap();
    assert_tokyo_phone(&created);
    let id = created["id"].as_str().unwrap();

    let read: Value = app
        .get(&format!("/page-imports/{id}"), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    assert_tokyo_phone(&read);
    let listed: Value = app
        .get(
            &format!(
                "/page-imports?organizationId={}&projectId={}",
                tenant.organization_id, tenant.project_id
            ),
            &tenant.token,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_tokyo_phone(&listed["items"][0]);

    let message = &app.receive(&app.page_import_queue_url, 1).await[0];
    assert_tokyo_phone(message);
    assert_eq!(message["viewport"]["deviceScaleFactor"], 3.0);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn absent_settings_are_the_defaults_on_the_resource_and_the_message(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let created = app.create_import(&tenant).await;
    let defaults = |v: &Value| {
        (
            v["viewport"]["mobile"].clone(),
            v["colorScheme"].clone(),
            v["locale"].clone(),
            v["timeZone"].clone(),
            v["consent"].clone(),
        )
    };
    let want = (
        json!(false),
        json!("light"),
        json!("en-US"),
        json!("UTC"),
        json!("decline"),
    );
    assert_eq!(defaults(&created), want);
    assert_eq!(defaults(&app.receive(&app.page_import_queue_url, 1).await[0]), want);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn every_invalid_setting_is_a_422_naming_its_field(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let cases: Vec<(&str, Value, &str)> = vec![
        ("locale", json!("en_US"), "invalid_locale"),
        ("locale", json!("ja JP"), "invalid_locale"),
        ("locale", json!("en-"), "invalid_locale"),
        ("locale", json!(""), "invalid_length"),
        ("locale", json!(format!("en-{}", "a".repeat(40))), "invalid_length"),
        ("locale", json!("x-private"), "unsupported_locale"),
        ("locale", json!("i-klingon"), "unsupported_locale"),
        ("locale", json!("en\u{FFFF}"), "unsupported_character"),
        ("timeZone", json!("Asia/Tokio"), "invalid_time_zone"),
        ("timeZone", json!("+09:00"), "invalid_time_zone"),
        ("timeZone", json!(""), "invalid_time_zone"),
        ("colorScheme", json!("Dark"), "invalid_value"),
        ("colorScheme", json!("auto"), "invalid_value"),
        ("consent", json!("accept"), "invalid_value"),
        ("consent", json!(""), "invalid_value"),
    ];
    for (field, value, code) in cases {
        let mut body = import_body(&tenant);
        body[field] = value.clone();
        let response = app.post_json("/page-imports", &tenant.token, &body).await;
        let problem = expect_problem(response, 422, "validation_failed").await;
        assert_eq!(
            problem["errors"],
            json!([{"field": field, "code": code, "message": problem["errors"][0]["message"]}]),
            "{field} = {value}"
        );
    }
    // Every broken setting at once: each is named.
    let mut body = import_body(&tenant);
    for (field, value) in [
        ("locale", "??"),
        ("timeZone", "Nowhere"),
        ("colorScheme", "sepia"),
        ("consent", "accept"),
    ] {
        body[field] = json!(value);
    }
    let problem = expect_problem(
        app.post_json("/page-imports", &tenant.token, &body).await,
        422,
        "validation_failed",
    )
    .await;
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["locale", "timeZone", "colorScheme", "consent"]);
    // A mistyped value is a malformed body, like any other field's.
    let mut mistyped = import_body(&tenant);
    mistyped["viewport"]["mobile"] = json!("yes");
    expect_problem(
        app.post_json("/page-imports", &tenant.token, &mistyped).await,
        400,
        "invalid_body",
    )
    .await;
    let rows: i64 = sqlx::query_scalar("select count(*) from page_import")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0, "nothing is stored for a refused request");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_retry_and_a_redispatch_capture_with_the_same_settings(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let created: Value = app
        .post_json("/page-imports", &tenant.token, &tokyo_phone(&tenant))
        .await
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    app.wait_dispatched(&id).await;
    assert_tokyo_phone(&app.receive(&app.page_import_queue_url, 1).await[0]);

    // A retryable failure: attempt 2, started by the service itself.
    let first = Job {
        nonce: app.nonce_of(&id).await,
        id: id.clone(),
        attempt: 1,
    };
    let mut retryable = app.failed_body(&first, "Navigation timed out after 30 s");
    retryable["retryable"] = json!(true);
    assert_eq!(app.callback(&retryable).await.status(), 200);
    let second = &app.receive(&app.page_import_queue_url, 1).await[0];
    assert_eq!(second["attempt"], 2);
    assert_tokyo_phone(second);

    // A final failure, then the user's retry: attempt 3.
    let second = Job {
        nonce: app.nonce_of(&id).await,
        id: id.clone(),
        attempt: 2,
    };
    assert_eq!(
        app.callback(&app.failed_body(&second, "The page answered HTTP 404"))
            .await
            .status(),
        200
    );
    let retried = app
        .http
        .post(app.url(&format!("/page-imports/{id}/retry")))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .unwrap();
    assert_eq!(retried.status(), 202);
    assert_tokyo_phone(&retried.json().await.unwrap());
    let third = &app.receive(&app.page_import_queue_url, 1).await[0];
    assert_eq!(third["attempt"], 3);
    assert_tokyo_phone(third);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_idempotency_key_compares_the_readers_settings(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let post = |body: Value| {
        let app = &app;
        let token = tenant.token.clone();
        async move {
            app.http
                .post(app.url("/page-imports"))
                .bearer_auth(token)
                .header("idempotency-key", "reader-1")
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    let first = post(tokyo_phone(&tenant)).await;
    assert_eq!(first.status(), 202);
    let replay = post(tokyo_phone(&tenant)).await;
    assert_eq!(replay.status(), 202);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    for (field, other) in [
        ("locale", json!("ja-JP-u-ca-japanese")),
        ("timeZone", json!("Asia/Seoul")),
        ("colorScheme", json!("light")),
        ("consent", json!("decline")),
    ] {
        let mut body = tokyo_phone(&tenant);
        body[field] = other;
        expect_problem(post(body).await, 422, "idempotency_key_reused").await;
    }
    let mut desktop = tokyo_phone(&tenant);
    desktop["viewport"]["mobile"] = json!(false);
    expect_problem(post(desktop).await, 422, "idempotency_key_reused").await;
    let rows: i64 = sqlx::query_scalar("select count(*) from page_import")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 1);
}
