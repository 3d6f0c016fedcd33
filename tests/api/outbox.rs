//! The outbox: an accepted import is never left without its message.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::proxy::FaultyProxy;
use crate::helpers::*;
use page_import::queue::QueueName;

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
    // Slots for every create here: all of them are dispatched at once.
    let env = vec![
        ("OUTBOX_LEASE_MS", "600000".to_owned()),
        ("CAPTURE_MAX_IN_FLIGHT_PER_ORG", "64".to_owned()),
    ];
    let (proxy, app) = behind_a_down_proxy(pool, env).await;
    let tenant = app.tenant().await;

    // A few creates: their publishes fail (each call with the SDK's retries)
    // and the breaker opens. Each is dispatched before the next is made, so
    // each is a call of its own.
    for n in 1..=3 {
        app.create_import(&tenant).await;
        assert!(eventually(Duration::from_secs(5), || async { app.outbox_len().await == n }).await);
    }
    let paused = eventually(Duration::from_secs(20), || async {
        app.state.publisher.paused(QueueName::PageImport)
    })
    .await;
    assert!(paused, "three failed calls in a row pause after-commit publishing");
    // The breaker opened when the third call came back failed, after all its
    // retries (the relay leaves these messages alone): no call is in flight
    // now. While it is open a probe goes once per second (the relay's or a
    // create's), the first one a second from now.
    let before = proxy.connections();
    assert!(before >= 3, "the publisher really tried: {before} connections");

    // While paused, a burst of creates makes at most one probe call per
    // second (each up to the SDK's 3 attempts). Without the breaker the same
    // burst starts 4 calls at once, then more as they fail: ≥ 12 connections.
    const BURST: usize = 20;
    let started = Instant::now();
    for _ in 0..BURST {
        app.create_import(&tenant).await;
    }
    // The window the connections are counted over, the point of the test:
    // long enough for calls the burst started to make their retries (the SDK
    // backs off up to ≈ 2 s), which tells ≤ 3 a second from ≥ 12 at once.
    // The bound holds at every tick of it, not only at its end.
    while started.elapsed() < Duration::from_millis(2500) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let secs = started.elapsed().as_secs_f64().ceil() as usize;
        let during = proxy.connections() - before;
        // One probe per second, plus one that straddles the start.
        let bound = 3 * (2 + secs);
        assert!(
            during <= bound,
            "{during} connections to SQS for {BURST} creates in {secs} s while paused (at most {bound})"
        );
    }
    assert!(
        eventually(Duration::from_secs(5), || async {
            app.outbox_len().await == 3 + BURST as i64
        })
        .await,
        "nothing was lost"
    );
    assert!(app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_millis(500))
        .await
        .is_empty());

    // SQS is back: within a probe period a create's message goes out again,
    // the breaker closes, and the messages left waiting during the outage are
    // made due at once: all of them arrive within seconds, though their lease
    // (the relay's only other way to them) is 10 minutes.
    let mut outage_ids: HashSet<String> = sqlx::query_scalar(
        "select split_part(deduplication_id, ':', 1) from outbox_message where queue = 'page_import'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    assert_eq!(outage_ids.len(), 3 + BURST);
    proxy.set_up(true);
    let mut created = HashSet::new();
    let mut received: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if received.is_empty() {
            created.insert(app.create_import(&tenant).await["id"].as_str().unwrap().to_owned());
        }
        for m in app
            .receive_within(&app.page_import_queue_url, 10, Duration::from_millis(300))
            .await
        {
            received.push(m["pageImportId"].as_str().unwrap().to_owned());
        }
        let got: HashSet<&String> = received.iter().collect();
        if outage_ids.iter().chain(&created).all(|id| got.contains(id)) {
            break;
        }
    }
    let got: HashSet<String> = received.iter().cloned().collect();
    assert_eq!(got.len(), received.len(), "nothing was published twice");
    assert!(
        outage_ids.is_subset(&got),
        "{} of {} messages left waiting during the outage went out once SQS was back (lease: 10 min)",
        outage_ids.intersection(&got).count(),
        outage_ids.len()
    );
    assert!(created.is_subset(&got), "creates after recovery are published");
    outage_ids.extend(created);
    assert_eq!(got, outage_ids, "nothing else was published");
    assert!(eventually(Duration::from_secs(10), || async { app.outbox_len().await == 0 }).await);
}

/// After an outage that opened the breaker, SQS comes back while no create
/// arrives to probe it: the relay probes the open breaker itself, and the
/// messages left waiting go out within seconds, not at the end of their
/// 10-minute lease.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn waiting_messages_go_out_when_sqs_is_back_even_with_no_new_create(pool: PgPool) {
    let (proxy, app) = behind_a_down_proxy(pool, vec![("OUTBOX_LEASE_MS", "600000".to_owned())]).await;
    let tenant = app.tenant().await;
    let mut ids = HashSet::new();
    // Each is dispatched before the next is made, so each publish is a call
    // of its own (three failed calls open the breaker).
    for n in 1..=5 {
        ids.insert(app.create_import(&tenant).await["id"].as_str().unwrap().to_owned());
        assert!(eventually(Duration::from_secs(5), || async { app.outbox_len().await == n }).await);
    }
    let paused = eventually(Duration::from_secs(20), || async {
        app.state.publisher.paused(QueueName::PageImport)
    })
    .await;
    assert!(paused, "the failed after-commit publishes opened the breaker");
    proxy.set_up(true);
    let received: HashSet<String> = app
        .receive_within(&app.page_import_queue_url, 5, Duration::from_secs(10))
        .await
        .iter()
        .map(|m| m["pageImportId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(received, ids, "all five published within 10 s of SQS coming back");
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

/// Two replicas relaying the same outbox, with more rows than one claim:
/// both relays really publish, and each message is published once.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn two_relays_publish_each_message_once(pool: PgPool) {
    const ROWS: i64 = 250; // one claim takes at most 100
    sqlx::query(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
         select 'page_import', json_build_object('n', g)::text, '1', g::text, now() from generate_series(1, $1) g",
    )
    .bind(ROWS)
    .execute(&pool)
    .await
    .unwrap();
    // The replicas' own relays sleep; the test drives both passes at once.
    let idle = ("OUTBOX_RELAY_INTERVAL_MS", "3600000".to_owned());
    let first = TestApp::spawn_with_env(pool.clone(), vec![idle.clone()]).await;
    // The second replica shares the first one's queues and database.
    let env = vec![
        ("PAGE_IMPORT_QUEUE_URL", first.page_import_queue_url.clone()),
        ("CODE2DES_QUEUE_URL", first.code2des_queue_url.clone()),
        idle,
    ];
    let second = TestApp::spawn_with_env(pool, env).await;

    let (mut by_first, mut by_second) = (0, 0);
    while first.outbox_len().await > 0 {
        let (a, b) = tokio::join!(first.state.publisher.relay_once(), second.state.publisher.relay_once());
        by_first += a.unwrap();
        by_second += b.unwrap();
    }
    assert!(
        by_first > 0 && by_second > 0,
        "both relays did work: {by_first} and {by_second}"
    );
    assert_eq!(by_first + by_second, ROWS as usize);

    let messages = first.receive(&first.page_import_queue_url, ROWS as usize).await;
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
    assert_eq!(distinct.len(), ROWS as usize);
    assert_eq!(numbers.len(), ROWS as usize, "no message was published twice");
    second.stop().await;
}

/// A send slower than the lease keeps its messages: the lease is extended
/// while the send runs, so a second relay does not take and publish them too.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_send_slower_than_the_lease_is_not_published_twice(pool: PgPool) {
    let proxy = FaultyProxy::start(emulator_addr()).await;
    let env = vec![("OUTBOX_LEASE_MS", "900".to_owned())];
    let first = TestApp::spawn_with(
        pool.clone(),
        Options {
            aws_endpoint: Some(proxy.url()),
            env: env.clone(),
            ..Default::default()
        },
    )
    .await;
    let mut env = env;
    env.extend([
        ("PAGE_IMPORT_QUEUE_URL", first.page_import_queue_url.clone()),
        ("CODE2DES_QUEUE_URL", first.code2des_queue_url.clone()),
    ]);
    let second = TestApp::spawn_with(
        pool.clone(),
        Options {
            aws_endpoint: Some(proxy.url()),
            env,
            ..Default::default()
        },
    )
    .await;
    // Every call to SQS now takes 3 s: more than three leases. (The SDK's
    // attempt timeout is 5 s, so the sends still succeed.)
    proxy.set_delay(Duration::from_secs(3));
    sqlx::query(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
         select 'page_import', json_build_object('n', g)::text, '1', g::text, now() from generate_series(1, 5) g",
    )
    .execute(&pool)
    .await
    .unwrap();
    assert!(eventually(Duration::from_secs(20), || async { first.outbox_len().await == 0 }).await);
    proxy.set_delay(Duration::ZERO);
    let mut numbers: Vec<i64> = first
        .receive(&first.page_import_queue_url, 5)
        .await
        .iter()
        .map(|m| m["n"].as_i64().unwrap())
        .collect();
    numbers.extend(
        first
            .receive_within(&first.page_import_queue_url, 1, Duration::from_secs(3))
            .await
            .iter()
            .map(|m| m["n"].as_i64().unwrap()),
    );
    numbers.sort_unstable();
    assert_eq!(numbers, [1, 2, 3, 4, 5], "each message published once");
    second.stop().await;
}

/// Each queue has its own breaker: a queue that keeps failing does not pause
/// the other one's after-commit publishing.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_failing_queue_does_not_pause_the_other(pool: PgPool) {
    let missing = format!("{}/123456789012/no-such-queue", aws_endpoint());
    let app = TestApp::spawn_with_env(
        pool,
        vec![
            ("CODE2DES_QUEUE_URL", missing),
            // Only the after-commit publisher can deliver within the test.
            ("OUTBOX_LEASE_MS", "600000".to_owned()),
        ],
    )
    .await;
    sqlx::query(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
         select 'code2des', '{}', '1', g::text, now() from generate_series(1, 30) g",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    // The relay's three failed batches open the code2des breaker.
    let paused = eventually(Duration::from_secs(15), || async {
        app.state.publisher.paused(QueueName::Code2Des)
    })
    .await;
    assert!(paused, "the failing queue's breaker opened");
    assert!(!app.state.publisher.paused(QueueName::PageImport));
    let tenant = app.tenant().await;
    let id = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    let got = app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_secs(5))
        .await;
    assert_eq!(got.len(), 1, "the capture queue still publishes at once");
    assert_eq!(got[0]["pageImportId"], id.as_str());
}

/// An SQS outage longer than the capture timeout uses up no attempt: an
/// attempt's clock starts when SQS accepts its message. Once SQS is back
/// every import is dispatched as attempt 1.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_sqs_outage_longer_than_the_capture_timeout_times_out_nothing(pool: PgPool) {
    let (proxy, app) = behind_a_down_proxy(
        pool,
        vec![
            ("CAPTURE_TIMEOUT_SECS", "1".to_owned()),
            ("CAPTURE_MAX_ATTEMPTS", "2".to_owned()),
            ("SWEEPER_INTERVAL_MS", "200".to_owned()),
            ("OUTBOX_LEASE_MS", "1000".to_owned()),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    let mut ids = HashSet::new();
    for _ in 0..5 {
        ids.insert(app.create_import(&tenant).await["id"].as_str().unwrap().to_owned());
    }
    // The outage outlasts the capture timeout (the point of the test), with
    // the relay trying all along and the sweeper running five times a second.
    let id_list: Vec<String> = ids.iter().cloned().collect();
    let outlasted = eventually(Duration::from_secs(5), || async {
        sqlx::query_scalar::<_, bool>(
            "select bool_and(created_at < now() - interval '1 second') from page_import where id = any($1)",
        )
        .bind(&id_list)
        .fetch_one(&app.pool)
        .await
        .unwrap()
    })
    .await;
    assert!(outlasted);
    // A sweeper pass of the test's own, now that every import is older than
    // the capture timeout, times out none of them; nor had the background
    // sweeper's.
    assert_eq!(app.sweep().await, 0, "an undispatched attempt was timed out");
    let rows: Vec<(String, i32, String)> =
        sqlx::query_as("select id, attempt, status::text from page_import where id = any($1)")
            .bind(&id_list)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(rows.len(), 5);
    for (id, attempt, status) in &rows {
        assert_eq!(
            (*attempt, status.as_str()),
            (1, "0"),
            "{id} was not timed out while undispatched"
        );
    }
    proxy.set_up(true);
    // Once SQS took an attempt its clock runs: a second later, with nobody
    // working on it, the sweeper may start attempt 2. What the outage must
    // not have done is start one before attempt 1 went out.
    let expected: HashSet<(String, i64)> = ids.iter().map(|id| (id.clone(), 1)).collect();
    let mut dispatched: HashSet<(String, i64)> = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !dispatched.is_superset(&expected) && Instant::now() < deadline {
        let messages = app
            .receive_within(&app.page_import_queue_url, 5, Duration::from_secs(1))
            .await;
        dispatched.extend(messages.iter().map(|m| {
            (
                m["pageImportId"].as_str().unwrap().to_owned(),
                m["attempt"].as_i64().unwrap(),
            )
        }));
    }
    assert!(
        dispatched.is_superset(&expected),
        "every import dispatched once SQS is back, as attempt 1: {dispatched:?}"
    );
    for (id, attempt) in &dispatched {
        assert!(
            ids.contains(id) && (*attempt == 1 || dispatched.contains(&(id.clone(), attempt - 1))),
            "{id}: attempt {attempt} went out, but not the one before it"
        );
    }
    // Stamped by the statement that deletes the published rows, a moment
    // after SQS accepted them.
    let ids: Vec<String> = ids.into_iter().collect();
    let stamped = eventually(Duration::from_secs(5), || async {
        let n: i64 = sqlx::query_scalar(
            "select count(*) from page_import_attempt
             where page_import_id = any($1) and attempt = 1 and dispatched_at is not null",
        )
        .bind(&ids)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        n == 5
    })
    .await;
    assert!(stamped, "their clocks start once SQS accepted them");
}

/// Holding leases extends only the rows still this publisher's: not a row
/// another publisher has claimed since (a different `attempts`), and not a
/// row already rescheduled with backoff (its wait stands).
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn extending_leases_spares_rows_claimed_elsewhere_or_backing_off(pool: PgPool) {
    use page_import::db::outbox;
    sqlx::query(
        "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
         select 'page_import', 'body', '1', g::text, now() from generate_series(1, 3) g",
    )
    .execute(&pool)
    .await
    .unwrap();
    let mut conn = pool.acquire().await.unwrap();
    let claimed = outbox::claim_due(&mut conn, 10, Duration::from_secs(1)).await.unwrap();
    let held: Vec<(i64, i32)> = claimed.iter().map(|m| (m.id, m.attempts)).collect();
    assert_eq!(held.len(), 3);
    // The second was claimed again elsewhere; the third failed and backs off 2 s.
    sqlx::query("update outbox_message set attempts = attempts + 1 where id = $1")
        .bind(held[1].0)
        .execute(&mut *conn)
        .await
        .unwrap();
    outbox::reschedule(&mut conn, &[(held[2].0, Duration::from_secs(2), "Throttled")])
        .await
        .unwrap();
    let extended = outbox::extend_leases(&mut conn, &held, Duration::from_secs(600))
        .await
        .unwrap();
    assert_eq!(extended, 1, "only the first is still this publisher's");
    let waits: Vec<f64> =
        sqlx::query_scalar("select extract(epoch from available_at - now())::float8 from outbox_message order by id")
            .fetch_all(&mut *conn)
            .await
            .unwrap();
    assert!(waits[0] > 590.0, "{waits:?}");
    assert!(waits[1] <= 1.0 && waits[2] <= 2.0, "{waits:?}");
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

/// An import deleted while its granted message waits out an SQS outage is
/// not captured afterwards: the relay drops the message. It was published
/// once SQS was back.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_import_deleted_during_an_sqs_outage_is_not_published_afterwards(pool: PgPool) {
    let (proxy, app) = behind_a_down_proxy(pool, vec![]).await;
    let tenant = app.tenant().await;
    let deleted = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    let kept = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    // Both granted; the after-commit publish and the relay have both given
    // up on them for now.
    let waiting = eventually(Duration::from_secs(15), || async {
        let failed: i64 = sqlx::query_scalar("select count(*) from outbox_message where last_error is not null")
            .fetch_one(&app.pool)
            .await
            .unwrap();
        failed == 2
    })
    .await;
    assert!(waiting, "both messages wait in the outbox");
    let response = app.delete(&format!("/page-imports/{deleted}"), &tenant.token).await;
    assert_eq!(response.status(), 204);

    proxy.set_up(true);
    let messages = app.receive(&app.page_import_queue_url, 1).await;
    assert_eq!(messages[0]["pageImportId"], kept.as_str());
    assert!(eventually(Duration::from_secs(10), || async { app.outbox_len().await == 0 }).await);
    let more = app
        .receive_within(&app.page_import_queue_url, 1, Duration::from_secs(2))
        .await;
    assert!(more.is_empty(), "the deleted import's message was published: {more:?}");
}

/// The attempt a message names (`{id}:{attempt}`) is parsed by one SQL
/// function (`capture_message_attempt`) for every statement that reads it:
/// dropping the messages of ended attempts, taking refused messages out,
/// deleting published ones. A capture message whose id names no attempt
/// (not a number, beyond `int`), and a message of another queue whatever
/// its id, name none in each: never dropped as ended, no attempt to end,
/// deleted without a failed cast.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn every_statement_reads_the_attempt_a_message_names_alike(pool: PgPool) {
    use page_import::db::outbox;
    let app = TestApp::spawn(pool.clone()).await;
    let tenant = app.tenant().await;
    let id = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    app.receive(&app.page_import_queue_url, 1).await;
    sqlx::query("update page_import set status = '2' where id = $1")
        .bind(&id)
        .execute(&pool)
        .await
        .unwrap();
    // Not due for an hour: the app's relay leaves them to the test.
    let insert = |queue: &'static str, dedup: String| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "insert into outbox_message (queue, body, message_group_id, deduplication_id, available_at)
                 values ($1, '{}', '1', $2, now() + interval '1 hour') returning id",
            )
            .bind(queue)
            .bind(dedup)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let ended = insert("page_import", format!("{id}:1")).await;
    let other_queue = insert("code2des", format!("{id}:1")).await;
    let not_a_number = insert("page_import", format!("{id}:1x")).await;
    let beyond_int = insert("page_import", format!("{id}:99999999999")).await;
    let mut conn = pool.acquire().await.unwrap();

    let all = [ended, other_queue, not_a_number, beyond_int];
    let dropped = outbox::drop_ended_captures(&mut conn, &all).await.unwrap();
    assert_eq!(dropped, [ended], "only the capture message of the ended attempt");
    let refused = outbox::delete_refused(&mut conn, &[other_queue, not_a_number])
        .await
        .unwrap();
    assert!(refused.is_empty(), "neither names an attempt to end: {refused:?}");
    let published = outbox::delete_published(&mut conn, &[beyond_int]).await.unwrap();
    assert_eq!((published.deleted, published.dispatched.len()), (1, 0));
    assert_eq!(app.outbox_len().await, 0, "each statement took its rows out");
}
