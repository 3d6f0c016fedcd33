//! A set's first attempts go out as one message holding one slot (SPEC
//! §15); a retried member goes alone; the sweeper times members out one
//! after another. The worker is played by the test.

use std::time::Duration;

use sqlx::PgPool;

use super::*;

async fn one_slot(pool: PgPool, env: &[(&'static str, &str)]) -> TestApp {
    let mut all = vec![("CAPTURE_MAX_IN_FLIGHT", "1".to_owned())];
    all.extend(env.iter().map(|(k, v)| (*k, (*v).to_owned())));
    TestApp::spawn_with_env(pool, all).await
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_set_is_one_message_holding_one_slot_until_its_last_member_ends(pool: PgPool) {
    let app = one_slot(pool, &[]).await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, three_variants()).await;
    let single = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();

    let messages = app.messages_within(2, Duration::from_secs(10)).await;
    assert_eq!(
        messages.len(),
        1,
        "one message for the set, and the single waits: {messages:?}"
    );
    let message = &messages[0];
    assert_eq!(message["schemaVersion"], 2);
    assert_eq!(message["setId"], set["id"]);
    let jobs = jobs_of_set(message);
    assert_eq!(jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>(), member_ids(&set));
    assert!(jobs.iter().all(|j| j.attempt == 1));
    let widths: Vec<i64> = message["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["viewport"]["width"].as_i64().unwrap())
        .collect();
    assert_eq!(widths, [1440, 820, 390]);
    assert_eq!(message["jobs"][2]["colorScheme"], "dark");
    assert_eq!(message["jobs"][1]["locale"], "ja-JP");
    for id in member_ids(&set) {
        app.wait_dispatched(&id).await;
    }

    // Two members end: the set still holds the one slot.
    app.complete_job(&jobs[0]).await;
    app.fail_job(&jobs[1]).await;
    let none = app.messages_within(1, Duration::from_secs(2)).await;
    assert!(
        none.is_empty(),
        "the slot is the set's until its last member ends: {none:?}"
    );

    app.complete_job(&jobs[2]).await;
    let next = app.messages_within(1, Duration::from_secs(10)).await;
    assert_eq!(next.len(), 1);
    assert_eq!(
        next[0]["pageImportId"],
        single.as_str(),
        "the single took the freed slot"
    );
    assert_eq!(next[0]["schemaVersion"], 1);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_sets_message_is_grouped_by_project_and_deduplicated_by_set(pool: PgPool) {
    use aws_sdk_sqs::types::MessageSystemAttributeName as A;
    let app = TestApp::spawn_with(
        pool,
        Options {
            fifo: true,
            ..Default::default()
        },
    )
    .await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, three_variants()).await;
    let out = app
        .sqs
        .receive_message()
        .queue_url(&app.page_import_queue_url)
        .wait_time_seconds(5)
        .message_system_attribute_names(A::All)
        .send()
        .await
        .unwrap();
    assert_eq!(out.messages().len(), 1);
    let attrs = out.messages()[0].attributes().unwrap();
    assert_eq!(attrs[&A::MessageGroupId], tenant.project_id.to_string());
    assert_eq!(
        attrs[&A::MessageDeduplicationId],
        format!("set:{}", set["id"].as_str().unwrap())
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_sets_message_carries_the_trace_of_its_create(pool: PgPool) {
    use crate::helpers::process::{database_url_of, ServiceProcess};
    let mut app = TestApp::spawn(pool.clone()).await;
    let tenant = app.tenant().await;
    app.halt().await;
    let service = ServiceProcess::start(&app, &database_url_of(&pool), &[]);
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let response = reqwest::Client::new()
        .post(service.url("/page-import-sets"))
        .bearer_auth(&tenant.token)
        .header("traceparent", format!("00-{trace_id}-00f067aa0ba902b7-01"))
        .json(&set_body(&tenant, three_variants()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let mut traceparent = None;
    for _ in 0..20 {
        let out = app
            .sqs
            .receive_message()
            .queue_url(&app.page_import_queue_url)
            .message_attribute_names("All")
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        if let Some(m) = out.messages().first() {
            let body: serde_json::Value = serde_json::from_str(m.body().unwrap()).unwrap();
            assert_eq!(body["schemaVersion"], 2);
            traceparent = m
                .message_attributes()
                .and_then(|a| a.get("traceparent"))
                .and_then(|v| v.string_value().map(str::to_owned));
            break;
        }
    }
    let traceparent = traceparent.expect("the set's message carries a traceparent");
    assert_eq!(&traceparent[3..35], trace_id, "the create's trace: {traceparent}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_retried_member_goes_alone_with_its_own_slot(pool: PgPool) {
    let app = one_slot(pool, &[]).await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, three_variants()).await;
    let jobs = jobs_of_set(&app.messages_within(1, Duration::from_secs(10)).await[0]);
    app.fail_job(&jobs[0]).await;
    app.complete_job(&jobs[1]).await;

    // The set's slot is held by its last member: the retry waits for it.
    let retried = app
        .http
        .post(app.url(&format!("/page-imports/{}/retry", jobs[0].id)))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .unwrap();
    assert_eq!(retried.status(), 202);
    assert!(app.messages_within(1, Duration::from_secs(2)).await.is_empty());

    app.complete_job(&jobs[2]).await;
    let alone = app.messages_within(2, Duration::from_secs(5)).await;
    assert_eq!(alone.len(), 1, "{alone:?}");
    assert_eq!(alone[0]["schemaVersion"], 1, "an ordinary capture message");
    assert_eq!(alone[0]["pageImportId"], jobs[0].id.as_str());
    assert_eq!(alone[0]["attempt"], 2);
    let got = app
        .get(
            &format!("/page-import-sets/{}", set["id"].as_str().unwrap()),
            &tenant.token,
        )
        .await;
    let got: serde_json::Value = got.json().await.unwrap();
    assert_eq!(got["status"], "processing", "the retried member processes again");
    assert_eq!(got["imports"][0]["attempt"], 2);
}

/// Every attempt's clock (its dispatch, and the end of the attempts of the
/// members before it) moves `secs` into the past.
async fn clocks_back(pool: &PgPool, secs: f64) {
    sqlx::query(
        "update page_import_attempt set dispatched_at = dispatched_at - make_interval(secs => $1),
                finished_at = finished_at - make_interval(secs => $1)",
    )
    .bind(secs)
    .execute(pool)
    .await
    .unwrap();
}

async fn status_of(app: &TestApp, tenant: &Tenant, id: &str) -> (String, i64) {
    let body: serde_json::Value = app
        .get(&format!("/page-imports/{id}"), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    (
        body["status"].as_str().unwrap().to_owned(),
        body["attempt"].as_i64().unwrap(),
    )
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_sweeper_times_members_out_one_after_another(pool: PgPool) {
    let app = TestApp::spawn_with_env(
        pool,
        vec![
            ("CAPTURE_MAX_IN_FLIGHT", "2".to_owned()),
            ("CAPTURE_TIMEOUT_SECS", "1".to_owned()),
            ("CAPTURE_MAX_ATTEMPTS", "2".to_owned()),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    let set = app.create_set(&tenant, super::two_variants()).await;
    let ids = member_ids(&set);
    assert_eq!(app.messages_within(1, Duration::from_secs(10)).await.len(), 1);
    for id in &ids {
        app.wait_dispatched(id).await;
    }

    // The set's dispatch is past the timeout: only its first member is
    // overdue; the second's capture has not begun.
    clocks_back(&app.pool, 1.1).await;
    assert_eq!(app.sweep().await, 1);
    assert_eq!(status_of(&app, &tenant, &ids[0]).await, ("processing".to_owned(), 2));
    assert_eq!(status_of(&app, &tenant, &ids[1]).await, ("processing".to_owned(), 1));
    // The first member's next attempt goes alone, on a slot of its own.
    let alone = app.messages_within(1, Duration::from_secs(10)).await;
    assert_eq!(alone[0]["pageImportId"], ids[0].as_str());
    assert_eq!(alone[0]["schemaVersion"], 1);

    // The second member's clock started when the first's attempt ended,
    // just now: however long ago the set went out, it is not overdue.
    sqlx::query(
        "update page_import_attempt set dispatched_at = dispatched_at - interval '1 hour' where page_import_id = $1",
    )
    .bind(&ids[1])
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(app.sweep().await, 0);
    assert_eq!(status_of(&app, &tenant, &ids[1]).await, ("processing".to_owned(), 1));

    // A timeout after the first member's end, it is.
    sqlx::query("update page_import_attempt set finished_at = finished_at - interval '1.1 seconds' where page_import_id = $1 and attempt = 1")
        .bind(&ids[0])
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(app.sweep().await, 1);
    assert_eq!(status_of(&app, &tenant, &ids[1]).await, ("processing".to_owned(), 2));
}
