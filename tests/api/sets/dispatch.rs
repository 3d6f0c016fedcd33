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
