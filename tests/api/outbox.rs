//! The outbox: an accepted import is never left without its message.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::proxy::FaultyProxy;
use crate::helpers::*;

fn emulator_addr() -> SocketAddr {
    let url = url::Url::parse(&aws_endpoint()).unwrap();
    format!("{}:{}", url.host_str().unwrap(), url.port().unwrap())
        .parse()
        .unwrap()
}

/// An app whose AWS clients go through a proxy that starts down.
async fn behind_a_down_proxy(pool: PgPool, env: Vec<(&'static str, String)>) -> (FaultyProxy, TestApp) {
    let proxy = FaultyProxy::start(emulator_addr()).await;
    proxy.set_up(false);
    let options = Options {
        aws_endpoint: Some(proxy.url()),
        env,
        ..Default::default()
    };
    let app = TestApp::spawn_with(pool, options).await;
    (proxy, app)
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn posts_succeed_during_an_sqs_outage_and_every_message_is_published_after(pool: PgPool) {
    let (proxy, app) = behind_a_down_proxy(pool, vec![]).await;
    let tenant = app.tenant().await;

    let mut ids = HashSet::new();
    for _ in 0..5 {
        let started = Instant::now();
        let created = app.create_import(&tenant).await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the request does not wait on SQS"
        );
        ids.insert(created["id"].as_str().unwrap().to_owned());
    }
    // The immediate publishes fail; once their leases run out the relay
    // tries too, fails, and records why.
    let relay_failed = eventually(Duration::from_secs(15), || async {
        let failed: i64 = sqlx::query_scalar("select count(*) from outbox_message where last_error is not null")
            .fetch_one(&app.pool)
            .await
            .unwrap();
        failed == 5
    })
    .await;
    assert!(relay_failed, "the relay really attempted and failed");
    assert_eq!(app.outbox_len().await, 5, "nothing was lost and nothing was published");
    assert!(app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_secs(1))
        .await
        .is_empty());

    proxy.set_up(true);
    let messages = app.receive(&app.page_import_queue_url, 5).await;
    let published: HashSet<String> = messages
        .iter()
        .map(|m| m["pageImportId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(published, ids);
    assert!(eventually(Duration::from_secs(10), || async { app.outbox_len().await == 0 }).await);
}

/// During an SQS outage the after-commit publisher stops calling SQS after a
/// few failed calls in a row (the circuit breaker) instead of once per
/// create, loses nothing, and resumes by itself once SQS answers again.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn after_commit_publishing_pauses_during_an_sqs_outage_and_resumes(pool: PgPool) {
    // A lease longer than the test: the relay leaves these messages alone,
    // so every connection the proxy sees and every message that arrives is
    // the after-commit publisher's.
    let (proxy, app) = behind_a_down_proxy(pool, vec![("OUTBOX_LEASE_MS", "600000".to_owned())]).await;
    let tenant = app.tenant().await;

    // A few creates: their publishes fail (each call with the SDK's retries)
    // and the breaker opens.
    for _ in 0..3 {
        app.create_import(&tenant).await;
    }
    let paused = eventually(Duration::from_secs(20), || async { app.state.publisher.paused() }).await;
    assert!(paused, "three failed calls in a row pause after-commit publishing");
    let before = settled_connections(&proxy).await;
    assert!(before >= 3, "the publisher really tried: {before} connections");

    // While paused, a burst of creates makes at most one probe call per
    // second (each up to the SDK's 3 attempts). Without the breaker the same
    // burst starts 4 calls at once, then more as they fail: ≥ 12 connections.
    const BURST: usize = 20;
    let started = Instant::now();
    for _ in 0..BURST {
        app.create_import(&tenant).await;
    }
    let secs = started.elapsed().as_secs_f64().ceil() as usize;
    let during = settled_connections(&proxy).await - before;
    let bound = 3 * (1 + secs);
    assert!(
        during <= bound,
        "{during} connections to SQS for {BURST} creates in {secs} s while paused (at most {bound})"
    );
    assert_eq!(app.outbox_len().await, 3 + BURST as i64, "nothing was lost");
    assert!(app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_millis(500))
        .await
        .is_empty());

    // SQS is back: within a probe period a create's message goes out again,
    // and the ones after it go straight out (the breaker has closed).
    proxy.set_up(true);
    let mut after = HashSet::new();
    let mut first = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    while first.is_none() && Instant::now() < deadline {
        after.insert(app.create_import(&tenant).await["id"].as_str().unwrap().to_owned());
        first = app
            .receive_within(&app.page_import_queue_url, 1, Duration::from_millis(300))
            .await
            .pop();
    }
    let first = first.expect("publishing resumed within 10 s (the lease is 10 min)");
    assert!(after.contains(first["pageImportId"].as_str().unwrap()));
    let mut later = HashSet::new();
    for _ in 0..3 {
        later.insert(app.create_import(&tenant).await["id"].as_str().unwrap().to_owned());
    }
    let mut received = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !later.is_subset(&received) && Instant::now() < deadline {
        for m in app
            .receive_within(&app.page_import_queue_url, 3, Duration::from_secs(1))
            .await
        {
            received.insert(m["pageImportId"].as_str().unwrap().to_owned());
        }
    }
    assert!(
        later.is_subset(&received),
        "creates after recovery are published at once"
    );
    assert!(
        received.iter().all(|id| later.contains(id) || after.contains(id)),
        "nothing created during the outage went out before its lease"
    );
}

/// The proxy's connection count once it has not moved for 2.5 s: calls in
/// flight have finished their retries (the SDK backs off up to ≈ 2 s).
async fn settled_connections(proxy: &FaultyProxy) -> usize {
    let mut last = proxy.connections();
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = proxy.connections();
        if now != last {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() >= Duration::from_millis(2500) {
            return now;
        }
    }
}

/// A message whose publisher died after commit (its lease ran out) is relayed.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_message_left_behind_by_a_crash_is_relayed(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    sqlx::query(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
         values ('page_import', '{\"orphan\":true}', '1', 'orphan:1', now() - interval '1 second')",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let messages = app.receive(&app.page_import_queue_url, 1).await;
    assert_eq!(messages, vec![serde_json::json!({"orphan": true})]);
    assert!(eventually(Duration::from_secs(5), || async { app.outbox_len().await == 0 }).await);
}

/// Publishing stamps the capture attempt named by `{id}:{attempt}`; a row
/// whose deduplication id names none is still published and deleted.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_message_naming_no_attempt_is_still_deleted_once_published(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    // An attempt row exists, so the stamping join has something to compare.
    let tenant = app.tenant().await;
    app.create_import(&tenant).await;
    app.receive(&app.page_import_queue_url, 1).await;
    sqlx::query(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
         values ('page_import', '{\"legacy\":1}', '1', 'legacy', now() - interval '1 second'),
                ('page_import', '{\"legacy\":2}', '1', 'x:not-a-number', now() - interval '1 second')",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(app.receive(&app.page_import_queue_url, 2).await.len(), 2);
    assert!(
        eventually(Duration::from_secs(5), || async { app.outbox_len().await == 0 }).await,
        "published messages must leave the outbox"
    );
}

/// Two replicas relaying the same outbox publish each message once.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn two_relays_publish_each_message_once(pool: PgPool) {
    // Fill the outbox before either replica runs.
    sqlx::query(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
         select 'page_import', json_build_object('n', g)::text, '1', g::text, now() from generate_series(1, 60) g",
    )
    .execute(&pool)
    .await
    .unwrap();
    let first = TestApp::spawn(pool.clone()).await;
    // The second replica shares the first one's queues and database.
    let env = vec![
        ("PAGE_IMPORT_QUEUE_URL", first.page_import_queue_url.clone()),
        ("CODE2DES_QUEUE_URL", first.code2des_queue_url.clone()),
    ];
    let second = TestApp::spawn_with_env(pool, env).await;

    let messages = first.receive(&first.page_import_queue_url, 60).await;
    assert!(eventually(Duration::from_secs(10), || async { first.outbox_len().await == 0 }).await);
    // Anything published twice would show up now.
    let late = first
        .receive_within(&first.page_import_queue_url, 1, Duration::from_secs(3))
        .await;
    let numbers: Vec<i64> = messages
        .iter()
        .chain(&late)
        .map(|m: &Value| m["n"].as_i64().unwrap())
        .collect();
    let distinct: HashSet<i64> = numbers.iter().copied().collect();
    assert_eq!(distinct.len(), 60);
    assert_eq!(numbers.len(), 60, "no message was published twice");
    second.stop().await;
}

/// A failed batch is rescheduled in one statement, each message with its own
/// delay (the backoff's jitter spreads the retries) and its own error.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn reschedule_gives_each_message_its_own_delay_and_error(pool: PgPool) {
    let ids: Vec<i64> = sqlx::query_scalar(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
         select 'page_import', 'body', '1', g::text, now() from generate_series(1, 3) g returning id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut conn = pool.acquire().await.unwrap();
    page_import::db::outbox::reschedule(
        &mut conn,
        &[
            (ids[0], Duration::from_secs(2), "Throttled"),
            (ids[1], Duration::from_secs(600), "dispatch failure"),
        ],
    )
    .await
    .unwrap();
    let rows: Vec<(i64, f64, Option<String>)> = sqlx::query_as(
        "select id, extract(epoch from available_at - now())::float8, last_error from outbox_message order by id",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    assert_eq!(rows[0].0, ids[0]);
    assert!((1.0..=2.0).contains(&rows[0].1), "{rows:?}");
    assert_eq!(rows[0].2.as_deref(), Some("Throttled"));
    assert!((599.0..=600.0).contains(&rows[1].1), "{rows:?}");
    assert_eq!(rows[1].2.as_deref(), Some("dispatch failure"));
    assert!(rows[2].1 <= 0.0, "an unlisted message is untouched: {rows:?}");
    assert_eq!(rows[2].2, None);
}

/// `outbox_oldest_message_age_seconds` reads the oldest message's age (one
/// primary-key probe), 0 for an empty outbox; `outbox_backlog` counts them.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn oldest_age_and_backlog_describe_the_outbox(pool: PgPool) {
    let mut conn = pool.acquire().await.unwrap();
    assert_eq!(page_import::db::outbox::oldest_age(&mut conn).await.unwrap(), 0.0);
    assert_eq!(page_import::db::outbox::backlog(&mut conn).await.unwrap(), 0);
    sqlx::query(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at, created_at)
         values ('page_import', 'b', '1', 'a', now(), now() - interval '120 seconds'),
                ('page_import', 'b', '1', 'b', now(), now() - interval '5 seconds')",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
    let age = page_import::db::outbox::oldest_age(&mut conn).await.unwrap();
    assert!((120.0..121.0).contains(&age), "{age}");
    assert_eq!(page_import::db::outbox::backlog(&mut conn).await.unwrap(), 2);
}
