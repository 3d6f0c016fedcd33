//! `POST /page-imports` (SPEC §6): 202, the row, the queue message, and every
//! way a request can be refused.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::*;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn create_answers_202_with_location_and_the_normalized_resource(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let response = app
        .post_json("/page-imports", &tenant.token, &import_body(&tenant))
        .await;
    assert_eq!(response.status(), 202);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let body: Value = response.json().await.unwrap();
    let id = body["id"].as_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(id).unwrap().get_version_num(), 7);
    assert_eq!(location, format!("/page-imports/{id}"));
    assert_eq!(body["organizationId"], tenant.organization_id);
    assert_eq!(body["projectId"], tenant.project_id);
    assert_eq!(body["sourceKind"], "public_url");
    assert_eq!(body["sourceUrl"], "https://example.com/pricing");
    assert_eq!(
        body["viewport"],
        json!({"width": 1440, "height": 900, "deviceScaleFactor": 2.0, "mobile": false})
    );
    assert_eq!(body["readySelector"], "#app");
    // SPEC §14's fields, defaults filled in.
    assert_eq!(body["colorScheme"], "light");
    assert_eq!(body["locale"], "en-US");
    assert_eq!(body["timeZone"], "UTC");
    assert_eq!(body["consent"], "decline");
    assert_eq!(body["status"], "processing");
    assert_eq!(body["attempt"], 1);
    for field in ["resultUrl", "captureHash", "screenshotUrl", "errorMessage"] {
        assert!(body[field].is_null(), "{field}");
    }
    assert_eq!(body["createdBy"], tenant.subject);
    assert_eq!(
        body["links"],
        json!({"self": location, "capture": null, "screenshot": null})
    );
    assert!(body.get("nonce").is_none());
    let created_at = body["createdAt"].as_str().unwrap();
    assert!(created_at.ends_with('Z') && created_at.len() == 24, "{created_at}");

    let (status, created_by, updated_by, nonce): (String, String, String, String) =
        sqlx::query_as("select status::text, created_by, updated_by, nonce from page_import where id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(status, "0");
    assert_eq!(
        (created_by.as_str(), updated_by.as_str()),
        (tenant.subject.as_str(), tenant.subject.as_str())
    );
    assert_eq!(nonce.len(), 43, "32 bytes, base64url without padding");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn create_publishes_the_capture_message_matching_the_row(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let created = app.create_import(&tenant).await;
    let id = created["id"].as_str().unwrap();
    let messages = app.receive(&app.page_import_queue_url, 1).await;
    assert_eq!(messages.len(), 1);
    let message = &messages[0];
    let nonce = app.nonce_of(id).await;
    assert_eq!(
        *message,
        json!({
            "schemaVersion": 1,
            "pageImportId": id,
            "attempt": 1,
            "nonce": nonce,
            "source": {"kind": "public_url", "url": "https://example.com/pricing"},
            "viewport": {"width": 1440, "height": 900, "deviceScaleFactor": 2.0, "mobile": false},
            "readySelector": "#app",
            "colorScheme": "light", "locale": "en-US", "timeZone": "UTC", "consent": "decline",
            "artifacts": {"bucket": app.bucket, "prefix": format!("page-imports/{id}/1/")},
            "callbackUrl": app.url("/webhooks/page-imports"),
        })
    );
    assert!(
        eventually(std::time::Duration::from_secs(5), || async {
            app.outbox_len().await == 0
        })
        .await
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn fifo_queue_messages_carry_group_and_deduplication_ids(pool: PgPool) {
    let app = TestApp::spawn_with(
        pool,
        Options {
            fifo: true,
            ..Default::default()
        },
    )
    .await;
    let tenant = app.tenant().await;
    let created = app.create_import(&tenant).await;
    let id = created["id"].as_str().unwrap();
    let out = app
        .sqs
        .receive_message()
        .queue_url(&app.page_import_queue_url)
        .wait_time_seconds(5)
        .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let message = &out.messages()[0];
    let attrs = message.attributes().unwrap();
    use aws_sdk_sqs::types::MessageSystemAttributeName as A;
    assert_eq!(attrs[&A::MessageGroupId], tenant.project_id.to_string());
    assert_eq!(attrs[&A::MessageDeduplicationId], format!("{id}:1"));
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn malformed_bodies_are_400(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let mut unknown = import_body(&tenant);
    unknown["nonce"] = json!("mine");
    let mut missing = import_body(&tenant);
    missing.as_object_mut().unwrap().remove("viewport");
    let mut wrong_type = import_body(&tenant);
    wrong_type["projectId"] = json!("seven");
    let mut fractional = import_body(&tenant);
    fractional["viewport"]["width"] = json!(1440.5);
    let mut unknown_nested = import_body(&tenant);
    unknown_nested["viewport"]["depth"] = json!(3);
    for (case, body, code) in [
        ("unknown field", unknown.to_string(), "invalid_body"),
        ("unknown nested field", unknown_nested.to_string(), "invalid_body"),
        ("missing field", missing.to_string(), "invalid_body"),
        ("wrong type", wrong_type.to_string(), "invalid_body"),
        ("non-integer width", fractional.to_string(), "invalid_body"),
        ("not JSON", "{\"organizationId\": ".to_owned(), "malformed_json"),
        ("JSON array", "[]".to_owned(), "invalid_body"),
        ("empty body", String::new(), "malformed_json"),
    ] {
        let response = app
            .http
            .post(app.url("/page-imports"))
            .bearer_auth(&tenant.token)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{case}");
        expect_problem(response, 400, code).await;
    }
    assert_eq!(app.outbox_len().await, 0);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn non_json_content_type_is_415(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let body = import_body(&tenant).to_string();
    for content_type in [Some("text/plain"), Some("application/x-www-form-urlencoded"), None] {
        let mut request = app
            .http
            .post(app.url("/page-imports"))
            .bearer_auth(&tenant.token)
            .body(body.clone());
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        expect_problem(request.send().await.unwrap(), 415, "unsupported_media_type").await;
    }
    let response = app
        .http
        .post(app.url("/page-imports"))
        .bearer_auth(&tenant.token)
        .header("content-type", "application/json; charset=utf-8")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn body_over_16_kib_is_413(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let mut body = import_body(&tenant);
    body["readySelector"] = json!("a".repeat(17 * 1024));
    let response = app.post_json("/page-imports", &tenant.token, &body).await;
    expect_problem(response, 413, "payload_too_large").await;
    // Also without a Content-Length (chunked), the limit holds.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = vec![Ok(body.to_string().into_bytes())];
    let response = app
        .http
        .post(app.url("/page-imports"))
        .bearer_auth(&tenant.token)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    expect_problem(response, 413, "payload_too_large").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn invalid_values_are_422_with_field_errors(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let cases: Vec<(Value, Vec<(&str, &str)>)> = vec![
        (
            json!({"sourceUrl": "http://127.0.0.1/"}),
            vec![("sourceUrl", "non_public_address")],
        ),
        (
            json!({"sourceUrl": "http://0x7f.1/admin"}),
            vec![("sourceUrl", "non_public_address")],
        ),
        (
            json!({"sourceUrl": "http://[::ffff:169.254.169.254]/"}),
            vec![("sourceUrl", "non_public_address")],
        ),
        (
            json!({"sourceUrl": "http://localhost/"}),
            vec![("sourceUrl", "non_public_host")],
        ),
        (
            json!({"sourceUrl": "ftp://example.com/"}),
            vec![("sourceUrl", "unsupported_scheme")],
        ),
        (
            json!({"sourceUrl": "https://a:b@example.com/"}),
            vec![("sourceUrl", "userinfo_not_allowed")],
        ),
        (
            json!({"sourceUrl": "https://example.com:8443/"}),
            vec![("sourceUrl", "port_not_allowed")],
        ),
        (
            json!({"sourceUrl": "https://exa\tmple.com/"}),
            vec![("sourceUrl", "whitespace_or_control")],
        ),
        (
            json!({"sourceUrl": format!("https://example.com/{}", "a".repeat(2100))}),
            vec![("sourceUrl", "too_long")],
        ),
        (
            json!({"viewport": {"width": 100, "height": 5000}}),
            vec![("viewport.width", "out_of_range"), ("viewport.height", "out_of_range")],
        ),
        (
            json!({"viewport": {"width": 1440, "height": 900, "deviceScaleFactor": 8}}),
            vec![("viewport.deviceScaleFactor", "out_of_range")],
        ),
        (
            json!({"viewport": {"width": 99999999999i64, "height": 900}}),
            vec![("viewport.width", "out_of_range")],
        ),
        (
            json!({"readySelector": "div["}),
            vec![("readySelector", "invalid_selector")],
        ),
        (json!({"readySelector": ""}), vec![("readySelector", "invalid_length")]),
        // Characters no SQS message may carry: the message SQS would refuse
        // is never written.
        (
            json!({"readySelector": "#a\u{FFFF}"}),
            vec![("readySelector", "unsupported_character")],
        ),
        (
            json!({"readySelector": "[title=\"\u{FFFE}\"]"}),
            vec![("readySelector", "unsupported_character")],
        ),
        (
            json!({"sourceUrl": "https://example.com/\u{FFFF}"}),
            vec![("sourceUrl", "unsupported_character")],
        ),
        (
            json!({"readySelector": "#a\u{7}"}),
            vec![("readySelector", "control_character")],
        ),
        // SPEC §14's fields (more in tests/api/reader_settings.rs).
        (json!({"locale": "en_US"}), vec![("locale", "invalid_locale")]),
        (
            json!({"timeZone": "Mars/Olympus"}),
            vec![("timeZone", "invalid_time_zone")],
        ),
        (json!({"colorScheme": "sepia"}), vec![("colorScheme", "invalid_value")]),
        (json!({"consent": "accept"}), vec![("consent", "invalid_value")]),
        (
            json!({"sourceUrl": "http://10.0.0.1/", "readySelector": ">>"}),
            vec![
                ("sourceUrl", "non_public_address"),
                ("readySelector", "invalid_selector"),
            ],
        ),
    ];
    for (patch, expected) in cases {
        let mut body = import_body(&tenant);
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        let response = app.post_json("/page-imports", &tenant.token, &body).await;
        let problem = expect_problem(response, 422, "validation_failed").await;
        let got: Vec<(String, String)> = problem["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["field"].as_str().unwrap().to_owned(),
                    e["code"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = expected.iter().map(|(f, c)| (f.to_string(), c.to_string())).collect();
        assert_eq!(got, want, "{patch}");
    }
    let rows: i64 = sqlx::query_scalar("select count(*) from page_import")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0, "nothing is stored for a refused request");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn non_members_and_foreign_projects_get_404(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let alice = app.tenant().await;
    let bob = app.tenant().await;
    // Bob is not a member of Alice's organization.
    let mut body = import_body(&alice);
    expect_problem(
        app.post_json("/page-imports", &bob.token, &body).await,
        404,
        "not_found",
    )
    .await;
    // Alice names her organization with Bob's project.
    body["projectId"] = json!(bob.project_id);
    expect_problem(
        app.post_json("/page-imports", &alice.token, &body).await,
        404,
        "not_found",
    )
    .await;
    // A project that does not exist at all answers the same.
    body["projectId"] = json!(i64::MAX);
    expect_problem(
        app.post_json("/page-imports", &alice.token, &body).await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(app.outbox_len().await, 0);
}

/// A keyed create pins its plan for its own transaction only
/// (`db::pin_plan`): the settings hold inside it and are gone after it.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn pin_plan_sets_the_pinned_settings_for_its_transaction_only(pool: PgPool) {
    let show = |name: &'static str| format!("select current_setting('{name}')");
    let mut conn = pool.acquire().await.unwrap();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    page_import::db::pin_plan(&mut tx).await.unwrap();
    for (name, value) in page_import::db::PINNED_PLAN {
        let now: String = sqlx::query_scalar(&show(name)).fetch_one(&mut *tx).await.unwrap();
        assert_eq!(now, *value, "{name} inside the transaction");
    }
    tx.commit().await.unwrap();
    let after: String = sqlx::query_scalar(&show("enable_seqscan"))
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(after, "on");
    let after: String = sqlx::query_scalar(&show("plan_cache_mode"))
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(after, "auto");
}
