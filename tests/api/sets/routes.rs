//! The set's routes and what each answers (SPEC §15).

use std::time::Duration;

use serde_json::{json, Value};
use sqlx::PgPool;

use super::*;
use crate::events::EventReader;

fn set_path(set: &Value) -> String {
    format!("/page-import-sets/{}", set["id"].as_str().unwrap())
}

async fn count(pool: &PgPool, table: &str) -> i64 {
    sqlx::query_scalar(&format!("select count(*) from {table}"))
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_create_answers_202_with_the_set_and_its_members_in_order(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let response = app
        .post_json("/page-import-sets", &tenant.token, &set_body(&tenant, three_variants()))
        .await;
    assert_eq!(response.status(), 202);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let set: Value = response.json().await.unwrap();
    assert_eq!(location, set_path(&set));
    assert_eq!(set["links"]["self"], location.as_str());
    assert_eq!(set["links"]["events"], format!("{location}/events"));
    assert_eq!(set["status"], "processing");
    assert_eq!(set["sourceUrl"], "https://example.com/pricing");
    assert_eq!(
        (
            set["locale"].as_str(),
            set["timeZone"].as_str(),
            set["consent"].as_str()
        ),
        (Some("ja-JP"), Some("UTC"), Some("decline"))
    );
    let imports = set["imports"].as_array().unwrap();
    assert_eq!(imports.len(), 3);
    let ids = member_ids(&set);
    assert_eq!(
        ids.iter().collect::<std::collections::HashSet<_>>().len(),
        3,
        "each its own id"
    );
    for (member, (width, scheme)) in imports.iter().zip([(1440, "light"), (820, "light"), (390, "dark")]) {
        assert_eq!(member["setId"], set["id"]);
        assert_eq!(member["viewport"]["width"], width);
        assert_eq!(member["colorScheme"], scheme);
        assert_eq!(member["attempt"], 1);
        assert_eq!(member["status"], "processing");
        assert_eq!(member["locale"], "ja-JP");
        assert_eq!(member["readySelector"], "#app");
        assert!(member.get("nonce").is_none());
    }
    assert_eq!(imports[1]["viewport"]["mobile"], true);
    assert_eq!(imports[0]["viewport"]["deviceScaleFactor"], 1.0);

    // Each member reads on its own with its set, and lists with it.
    let member: Value = app
        .get(&format!("/page-imports/{}", ids[1]), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(member["setId"], set["id"]);
    let list: Value = app
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
    assert!(list["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["setId"] == set["id"]));
    let single = app.create_import(&tenant).await;
    assert_eq!(single["setId"], Value::Null);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn malformed_bodies_are_400_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let mut unknown = set_body(&tenant, three_variants());
    unknown["viewport"] = json!({"width": 1440, "height": 900});
    let mut unknown_in_variant = set_body(&tenant, three_variants());
    unknown_in_variant["variants"][1]["locale"] = json!("de-DE");
    let mut missing = set_body(&tenant, three_variants());
    missing.as_object_mut().unwrap().remove("variants");
    let mut wrong_type = set_body(&tenant, three_variants());
    wrong_type["variants"] = json!({"viewport": {"width": 1440, "height": 900}});
    for body in [unknown, unknown_in_variant, missing, wrong_type] {
        let response = app.post_json("/page-import-sets", &tenant.token, &body).await;
        expect_problem(response, 400, "invalid_body").await;
    }
    let response = app
        .http
        .post(app.url("/page-import-sets"))
        .bearer_auth(&tenant.token)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    assert_eq!(count(&app.pool, "page_import_set").await, 0);
    assert_eq!(count(&app.pool, "page_import").await, 0);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn invalid_values_are_422_with_the_variants_index_in_the_field_path(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let mut body = set_body(&tenant, three_variants());
    body["sourceUrl"] = json!("http://127.0.0.1/");
    body["variants"][2]["viewport"]["width"] = json!(5000);
    body["variants"][1]["colorScheme"] = json!("sepia");
    let response = app.post_json("/page-import-sets", &tenant.token, &body).await;
    let problem = expect_problem(response, 422, "validation_failed").await;
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["sourceUrl", "variants[1].colorScheme", "variants[2].viewport.width"]
    );

    for variants in [
        json!([]),
        json!((0..13)
            .map(|i| json!({"viewport": {"width": 400 + i, "height": 900}}))
            .collect::<Vec<_>>()),
    ] {
        let response = app
            .post_json("/page-import-sets", &tenant.token, &set_body(&tenant, variants))
            .await;
        let problem = expect_problem(response, 422, "validation_failed").await;
        assert_eq!(problem["errors"][0]["field"], "variants");
    }

    let duplicate = json!([
        {"viewport": {"width": 390, "height": 844, "mobile": true}},
        {"viewport": {"width": 1440, "height": 900}},
        {"viewport": {"width": 390, "height": 844, "mobile": true, "deviceScaleFactor": 1}, "colorScheme": "light"},
    ]);
    let response = app
        .post_json("/page-import-sets", &tenant.token, &set_body(&tenant, duplicate))
        .await;
    let problem = expect_problem(response, 422, "duplicate_variant").await;
    assert!(problem["detail"].as_str().unwrap().contains("variants[2]"), "{problem}");
    assert_eq!(count(&app.pool, "page_import").await, 0);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn no_token_is_401_and_another_tenants_project_or_set_is_404(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (tenant, other) = (app.tenant().await, app.tenant().await);
    let response = app
        .http
        .post(app.url("/page-import-sets"))
        .json(&set_body(&tenant, three_variants()))
        .send()
        .await
        .unwrap();
    expect_problem(response, 401, "unauthorized").await;
    let response = app.http.get(app.url("/page-import-sets/x")).send().await.unwrap();
    expect_problem(response, 401, "unauthorized").await;

    let response = app
        .post_json("/page-import-sets", &other.token, &set_body(&tenant, three_variants()))
        .await;
    expect_problem(response, 404, "not_found").await;
    let set = app.create_set(&tenant, three_variants()).await;
    let path = set_path(&set);
    for response in [
        app.get(&path, &other.token).await,
        app.get(&format!("{path}/events"), &other.token).await,
        app.delete(&path, &other.token).await,
        app.get(
            &format!(
                "/page-import-sets?organizationId={}&projectId={}",
                tenant.organization_id, tenant.project_id
            ),
            &other.token,
        )
        .await,
        app.get("/page-import-sets/0193ffff-0000-7000-8000-000000000000", &tenant.token)
            .await,
    ] {
        expect_problem(response, 404, "not_found").await;
    }
    assert_eq!(
        app.get(&path, &tenant.token).await.status(),
        200,
        "the other's delete changed nothing"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_set_that_does_not_fit_the_backlog_is_429_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn_with_env(
        pool,
        vec![
            ("ORG_MAX_QUEUED", "3".to_owned()),
            ("CAPTURE_MAX_IN_FLIGHT", "1".to_owned()),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    let first = app.create_import(&tenant).await;
    app.wait_dispatched(first["id"].as_str().unwrap()).await;
    app.create_import(&tenant).await; // waits: one queued
    let waiting_before: i64 = count(&app.pool, "page_import").await;
    let response = app
        .http
        .post(app.url("/page-import-sets"))
        .bearer_auth(&tenant.token)
        .header("idempotency-key", "set-429")
        .json(&set_body(&tenant, three_variants()))
        .send()
        .await
        .unwrap();
    assert!(
        response.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    expect_problem(response, 429, "too_many_queued").await;
    assert_eq!(count(&app.pool, "page_import").await, waiting_before);
    assert_eq!(count(&app.pool, "page_import_set").await, 0);
    assert_eq!(count(&app.pool, "page_import_set_member").await, 0);
    assert_eq!(
        count(&app.pool, "idempotency_key").await,
        0,
        "the key may be sent again"
    );
    // Two variants fit what is left (3 queued at most, 1 queued now).
    app.create_set(&tenant, super::two_variants()).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_idempotency_key_replays_the_first_answer(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let send = |body: Value| {
        app.http
            .post(app.url("/page-import-sets"))
            .bearer_auth(&tenant.token)
            .header("idempotency-key", "set-once")
            .json(&body)
            .send()
    };
    let first = send(set_body(&tenant, three_variants())).await.unwrap();
    assert_eq!(first.status(), 202);
    let location = first.headers()["location"].clone();
    let first: Value = first.json().await.unwrap();
    let again = send(set_body(&tenant, three_variants())).await.unwrap();
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.headers()["location"], location);
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    assert_eq!(count(&app.pool, "page_import_set").await, 1);
    assert_eq!(count(&app.pool, "page_import").await, 3);
    let other = send(set_body(&tenant, super::two_variants())).await.unwrap();
    expect_problem(other, 422, "idempotency_key_reused").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn get_answers_an_etag_and_304_until_a_member_changes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, super::two_variants()).await;
    let jobs = jobs_of_set(&app.messages_within(1, Duration::from_secs(10)).await[0]);
    for job in &jobs {
        app.wait_dispatched(&job.id).await;
    }
    let path = set_path(&set);
    let first = app.get(&path, &tenant.token).await;
    assert_eq!(first.status(), 200);
    let etag = first.headers()["etag"].clone();
    let not_modified = app
        .http
        .get(app.url(&path))
        .bearer_auth(&tenant.token)
        .header("if-none-match", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(not_modified.status(), 304);
    assert_eq!(not_modified.headers()["etag"], etag);

    app.complete_job(&jobs[0]).await;
    let changed = app
        .http
        .get(app.url(&path))
        .bearer_auth(&tenant.token)
        .header("if-none-match", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
    assert_ne!(changed.headers()["etag"], etag);
    let body: Value = changed.json().await.unwrap();
    assert_eq!(body["status"], "processing");
    assert_eq!(body["imports"][0]["status"], "completed");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_sets_status_is_completed_failed_or_partial_once_no_member_processes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let mut statuses = Vec::new();
    for ends in [["complete", "complete"], ["fail", "fail"], ["complete", "fail"]] {
        let set = app.create_set(&tenant, super::two_variants()).await;
        let message = loop {
            let messages = app.messages_within(1, Duration::from_secs(10)).await;
            if messages[0]["setId"] == set["id"] {
                break messages[0].clone();
            }
        };
        for (job, end) in jobs_of_set(&message).iter().zip(ends) {
            if end == "complete" {
                app.complete_job(job).await;
            } else {
                app.fail_job(job).await;
            }
        }
        let body: Value = app.get(&set_path(&set), &tenant.token).await.json().await.unwrap();
        statuses.push(body["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(statuses, ["completed", "failed", "partial"]);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_list_is_newest_first_by_cursor(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(
            app.create_set(&tenant, super::two_variants()).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    app.create_import(&tenant).await; // a single is no set
    let base = format!(
        "/page-import-sets?organizationId={}&projectId={}",
        tenant.organization_id, tenant.project_id
    );
    let first: Value = app
        .get(&format!("{base}&limit=2"), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    let cursor = first["nextCursor"].as_str().unwrap();
    let second: Value = app
        .get(&format!("{base}&limit=2&cursor={cursor}"), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(second["nextCursor"], Value::Null);
    let listed: Vec<&str> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["items"].as_array().unwrap())
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    ids.reverse();
    assert_eq!(listed, ids);
    assert_eq!(first["items"][0]["imports"].as_array().unwrap().len(), 2);
    let response = app.get(&format!("{base}&limit=0"), &tenant.token).await;
    expect_problem(response, 422, "validation_failed").await;
    let response = app.get(&format!("{base}&cursor=nope"), &tenant.token).await;
    expect_problem(response, 422, "validation_failed").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn delete_removes_the_set_and_every_member(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, three_variants()).await;
    let path = set_path(&set);
    assert_eq!(app.delete(&path, &tenant.token).await.status(), 204);
    expect_problem(app.get(&path, &tenant.token).await, 404, "not_found").await;
    expect_problem(app.delete(&path, &tenant.token).await, 404, "not_found").await;
    for id in member_ids(&set) {
        expect_problem(
            app.get(&format!("/page-imports/{id}"), &tenant.token).await,
            404,
            "not_found",
        )
        .await;
    }
    let ledger: i64 = sqlx::query_scalar("select count(*) from page_import_deletion where soft")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(ledger, 3, "every member's erasure is scheduled (SPEC §13)");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn deleting_a_member_leaves_the_others_in_the_set(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, three_variants()).await;
    let ids = member_ids(&set);
    assert_eq!(
        app.delete(&format!("/page-imports/{}", ids[1]), &tenant.token)
            .await
            .status(),
        204
    );
    let body: Value = app.get(&set_path(&set), &tenant.token).await.json().await.unwrap();
    assert_eq!(member_ids(&body), [ids[0].clone(), ids[2].clone()]);
    for id in [&ids[0], &ids[2]] {
        assert_eq!(
            app.delete(&format!("/page-imports/{id}"), &tenant.token).await.status(),
            204
        );
    }
    expect_problem(app.get(&set_path(&set), &tenant.token).await, 404, "not_found").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn events_follow_the_set_until_its_status_is_terminal(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, super::two_variants()).await;
    let jobs = jobs_of_set(&app.messages_within(1, Duration::from_secs(10)).await[0]);
    for job in &jobs {
        app.wait_dispatched(&job.id).await;
    }
    let mut events = EventReader::new(app.get(&format!("{}/events", set_path(&set)), &tenant.token).await);
    let first = events.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.event, "page_import_set");
    let etag = app.get(&set_path(&set), &tenant.token).await.headers()["etag"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(first.id.as_deref(), Some(etag.as_str()));
    assert_eq!(first.json()["status"], "processing");

    app.complete_job(&jobs[0]).await;
    let second = events.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(second.json()["imports"][0]["status"], "completed");
    assert_eq!(second.json()["status"], "processing");
    app.fail_job(&jobs[1]).await;
    let last = events.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(last.json()["status"], "partial");
    assert!(
        events.next(Duration::from_secs(5)).await.is_none(),
        "the stream ends after a terminal status"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn events_say_deleted_when_the_set_is_deleted(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, super::two_variants()).await;
    for id in member_ids(&set) {
        app.wait_dispatched(&id).await;
    }
    let mut events = EventReader::new(app.get(&format!("{}/events", set_path(&set)), &tenant.token).await);
    events.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(app.delete(&set_path(&set), &tenant.token).await.status(), 204);
    let deleted = events.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(deleted.event, "deleted");
    assert_eq!(deleted.json()["id"], set["id"]);
    assert!(events.next(Duration::from_secs(5)).await.is_none());
}
