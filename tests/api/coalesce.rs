//! Coalesced statements (`coalesce`): a batch mixes actors and tenants,
//! so every answer must be the one its own request would have had alone.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use page_import::coalesce::CoalesceError;
use page_import::db::page_import::coalesced::{run_creates, run_reads};
use page_import::db::page_import::PendingCreate;
use page_import::db::pool::{BatchConnections, APPLICATION_NAME};
use page_import::domain::reader::ReaderSettings;
use page_import::domain::{Nonce, SourceUrl, SourceUrlPolicy, Viewport};
use page_import::service::dispatch::{grant, CaptureLimits, GrantRules};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::*;

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn batched_reads_answer_each_pair_by_its_own_actor(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (alice, bob) = (app.tenant().await, app.tenant().await);
    let a1 = app.create_import(&alice).await["id"].as_str().unwrap().to_owned();
    let a2 = app.create_import(&alice).await["id"].as_str().unwrap().to_owned();
    let b1 = app.create_import(&bob).await["id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.delete(&format!("/page-imports/{a2}"), &alice.token).await.status(),
        204
    );

    let pairs = [
        (&a1, &alice),                                                // own row
        (&a1, &bob),                                                  // another tenant's
        (&b1, &bob),                                                  // own row
        (&a2, &alice),                                                // deleted
        (&"0193ffff-0000-7000-8000-000000000000".to_owned(), &alice), // unknown
        (&a1, &alice),                                                // the same pair twice
        (&b1, &alice),                                                // another tenant's
    ];
    let batch = pairs.iter().map(|(id, t)| ((*id).clone(), t.subject.clone())).collect();
    let answers: Vec<Option<String>> = run_reads(&batch_connections(&pool), batch)
        .await
        .into_iter()
        .map(|r| r.expect("no error").map(|row| row.id))
        .collect();
    assert_eq!(
        answers,
        vec![
            Some(a1.clone()),
            None,
            Some(b1.clone()),
            None,
            None,
            Some(a1.clone()),
            None
        ]
    );
}

/// Connections for batches run straight through `run_reads`/`run_creates`.
fn batch_connections(pool: &PgPool) -> BatchConnections {
    BatchConnections::new(pool, Duration::from_secs(5))
}

fn pending(organization_id: i64, project_id: i64, actor: &str) -> PendingCreate {
    let id = Uuid::now_v7().to_string();
    PendingCreate {
        id,
        organization_id,
        project_id,
        actor: actor.to_owned(),
        source_url: SourceUrl::parse("https://example.com/", SourceUrlPolicy { allow_private: false }).unwrap(),
        viewport: Viewport::parse(1440, 900, Some(2.0), false).unwrap(),
        ready_selector: None,
        reader: ReaderSettings::default(),
        nonce: Nonce::generate(),
        traceparent: None,
    }
}

/// An app whose dispatcher runs only when a request wakes it: the creates
/// these tests make straight through `run_creates` stay queued.
async fn app_without_dispatch_timer(pool: PgPool) -> TestApp {
    TestApp::spawn_with_env(pool, vec![("CAPTURE_DISPATCH_INTERVAL_MS", "3600000".into())]).await
}

/// The imports stored, and the imports queued for a capture slot.
async fn stored_ids(pool: &PgPool) -> (HashSet<String>, HashSet<String>) {
    let rows: Vec<String> = sqlx::query_scalar("select id from page_import")
        .fetch_all(pool)
        .await
        .unwrap();
    let queued: Vec<String> =
        sqlx::query_scalar("select page_import_id from page_import_attempt where queued_seq is not null")
            .fetch_all(pool)
            .await
            .unwrap();
    (rows.into_iter().collect(), queued.into_iter().collect())
}

/// The bodies of the messages a dispatch pass writes for every queued
/// attempt (the app's own dispatcher is not woken by these tests).
async fn dispatched_bodies(app: &TestApp) -> Vec<Value> {
    let limits = CaptureLimits {
        max_in_flight: 100,
        max_in_flight_per_org: 100,
        max_queued: 10_000,
    };
    let rules = GrantRules {
        limits: &limits,
        destination: &app.state.destination,
        lease: Duration::from_secs(60),
    };
    let mut tx = app.pool.begin().await.unwrap();
    let granted = grant(&mut tx, rules, 100).await.unwrap();
    tx.commit().await.unwrap();
    granted
        .messages
        .iter()
        .map(|m| serde_json::from_str(&m.body).unwrap())
        .collect()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn batched_creates_insert_only_the_visible_ones_each_with_its_own_message(pool: PgPool) {
    let app = app_without_dispatch_timer(pool.clone()).await;
    let (alice, bob) = (app.tenant().await, app.tenant().await);
    let batch = vec![
        pending(alice.organization_id, alice.project_id, &alice.subject), // visible
        pending(alice.organization_id, alice.project_id, &bob.subject),   // bob is not a member
        pending(bob.organization_id, bob.project_id, &bob.subject),       // visible
        pending(alice.organization_id, bob.project_id, &alice.subject),   // project of another org
    ];
    let expected: Vec<(String, String)> = batch.iter().map(|c| (c.id.clone(), c.actor.clone())).collect();
    let nonces: Vec<String> = batch.iter().map(|c| c.nonce.expose().to_owned()).collect();
    let answers = run_creates(&batch_connections(&pool), batch, 10_000).await;
    let created: Vec<bool> = answers
        .iter()
        .map(|r| r.as_ref().expect("no error").is_some())
        .collect();
    assert_eq!(created, vec![true, false, true, false]);
    for (answer, (id, actor)) in answers.iter().zip(&expected) {
        if let Ok(Some(row)) = answer {
            assert_eq!(&row.id, id, "each create gets its own row back");
            assert_eq!(&row.created_by, actor);
        }
    }
    for (i, nonce) in nonces.iter().enumerate() {
        if created[i] {
            assert_eq!(&app.nonce_of(&expected[i].0).await, nonce);
        }
    }
    let (rows, queued) = stored_ids(&pool).await;
    let visible: HashSet<String> = [expected[0].0.clone(), expected[2].0.clone()].into();
    assert_eq!(rows, visible, "nothing written for the invisible creates");
    assert_eq!(queued, visible);
    // Each one's message, written when it is dispatched, is its own.
    let messages: HashMap<String, String> = dispatched_bodies(&app)
        .await
        .into_iter()
        .map(|b| {
            (
                b["pageImportId"].as_str().unwrap().to_owned(),
                b["nonce"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected_messages: HashMap<String, String> = [0, 2]
        .into_iter()
        .map(|i| (expected[i].0.clone(), nonces[i].clone()))
        .collect();
    assert_eq!(messages, expected_messages);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn one_failing_create_does_not_fail_the_others_in_its_batch(pool: PgPool) {
    let app = app_without_dispatch_timer(pool.clone()).await;
    let alice = app.tenant().await;
    let existing = app.create_import(&alice).await["id"].as_str().unwrap().to_owned();
    // Its create woke the dispatcher: once it is dispatched, nothing moves
    // the batch's queued messages below.
    app.wait_dispatched(&existing).await;
    let mut clash = pending(alice.organization_id, alice.project_id, &alice.subject);
    clash.id = existing.clone(); // a primary-key violation fails the whole statement
    let batch = vec![
        pending(alice.organization_id, alice.project_id, &alice.subject),
        clash,
        pending(alice.organization_id, alice.project_id, &alice.subject),
    ];
    let ids: Vec<String> = batch.iter().map(|c| c.id.clone()).collect();
    let answers = run_creates(&batch_connections(&pool), batch, 10_000).await;
    assert!(matches!(answers[0], Ok(Some(_))), "{:?}", answers[0].as_ref().err());
    assert!(
        matches!(answers[1], Err(CoalesceError::Failed(_))),
        "{:?}",
        answers[1].as_ref().err()
    );
    assert!(matches!(answers[2], Ok(Some(_))), "{:?}", answers[2].as_ref().err());
    let (rows, queued) = stored_ids(&pool).await;
    assert_eq!(rows, [existing.clone(), ids[0].clone(), ids[2].clone()].into());
    assert_eq!(
        queued,
        [ids[0].clone(), ids[2].clone()].into(),
        "the failed create queued nothing (the import it clashed with was dispatched already)"
    );
}

/// Many GETs at once from two tenants, each for either tenant's imports: the
/// coalescer mixes them into shared statements, and each must still see
/// exactly its own tenant's rows.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn concurrent_gets_across_tenants_each_see_only_their_own(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (alice, bob) = (app.tenant().await, app.tenant().await);
    let mut imports = Vec::new();
    for t in [&alice, &bob] {
        for _ in 0..4 {
            imports.push((
                app.create_import(t).await["id"].as_str().unwrap().to_owned(),
                t.subject.clone(),
            ));
        }
    }
    let mut requests = Vec::new();
    for round in 0..8 {
        for (id, owner) in &imports {
            let reader = if round % 2 == 0 { &alice } else { &bob };
            let visible = *owner == reader.subject;
            let app = &app;
            requests.push(async move {
                let response = app.get(&format!("/page-imports/{id}"), &reader.token).await;
                (response, id.clone(), visible)
            });
        }
    }
    for (response, id, visible) in futures::future::join_all(requests).await {
        if visible {
            assert_eq!(response.status(), 200);
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["id"], id.as_str());
        } else {
            expect_problem(response, 404, "not_found").await;
        }
    }
}

/// Of 20 creates with the one batch slot stuck and a queue of 2, at least
/// these are refused: all but the stuck batch's first, the 2 queued, and up
/// to 2 that arrived with the first and joined its batch.
const REFUSED_AT_LEAST: usize = 20 - 1 - 2 - 2;

/// The queue in front of the coalesced creates is bounded: with the one
/// batch slot stuck, requests beyond the queue are refused at once (503
/// `overloaded` with `Retry-After`), and afterwards every 202 has its row
/// and no refused request left one.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_full_coalescing_queue_answers_503_and_refused_creates_leave_no_row(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), vec![("DATABASE_COALESCE_QUEUE", "2".to_owned())]).await;
    let tenant = app.tenant().await;
    // Inserts wait behind this lock until it is released.
    let lock = app.lock_table("page_import").await;
    let body = import_body(&tenant);
    let refusals = AtomicUsize::new(0);
    let posts: Vec<_> = (0..20)
        .map(|_| {
            let (app, body, token, refusals) = (&app, &body, tenant.token.clone(), &refusals);
            async move {
                let response = app.post_json("/page-imports", &token, body).await;
                let status = response.status().as_u16();
                if status == 503 {
                    refusals.fetch_add(1, Ordering::SeqCst);
                }
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_owned());
                let body: Value = response.json().await.unwrap();
                (status, retry_after, body)
            }
        })
        .collect();
    // Released once the batch is stuck on the lock and the requests beyond
    // the slot and the queue were refused (or after a deadline, for the
    // assertions below to report what happened instead).
    let release = async {
        assert!(
            app.waits_for_lock("insert_many_queued").await,
            "the batch waits for the lock"
        );
        eventually(Duration::from_secs(10), || async {
            refusals.load(Ordering::SeqCst) >= REFUSED_AT_LEAST
        })
        .await;
        lock.release().await;
    };
    let (answers, ()) = tokio::join!(futures::future::join_all(posts), release);

    let accepted: HashSet<String> = answers
        .iter()
        .filter(|(status, ..)| *status == 202)
        .map(|(_, _, body)| body["id"].as_str().unwrap().to_owned())
        .collect();
    let refused: Vec<_> = answers.iter().filter(|(status, ..)| *status == 503).collect();
    assert_eq!(accepted.len() + refused.len(), 20, "{answers:?}");
    assert!(
        !accepted.is_empty(),
        "the stuck batch and the queued ones were answered 202"
    );
    assert!(
        refused.len() >= REFUSED_AT_LEAST,
        "beyond the slot and the queue: refused ({})",
        refused.len()
    );
    for (_, retry_after, body) in &refused {
        assert_eq!(body["code"], "overloaded", "{body}");
        assert_eq!(retry_after.as_deref(), Some("1"));
    }
    let (stored, _) = stored_ids(&pool).await;
    assert_eq!(stored, accepted, "every 202 has its row, and nothing else was stored");
}

/// A coalesced statement's connection killed between batches (a database
/// restart, a failover) is not used again: the one batch that meets it
/// fails as unavailable (503, nothing written), and the next connects anew.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_batch_connection_killed_between_batches_fails_one_batch_and_the_next_reconnects(pool: PgPool) {
    let app = app_without_dispatch_timer(pool.clone()).await;
    let tenant = app.tenant().await;
    let warm = app
        .post_json("/page-imports", &tenant.token, &import_body(&tenant))
        .await;
    assert_eq!(warm.status(), 202);
    let killed: Vec<bool> = sqlx::query_scalar(
        "select pg_terminate_backend(pid) from pg_stat_activity
             where datname = current_database() and application_name = $1",
    )
    .bind(APPLICATION_NAME)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(!killed.is_empty() && killed.iter().all(|k| *k), "{killed:?}");
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let response = app
            .post_json("/page-imports", &tenant.token, &import_body(&tenant))
            .await;
        statuses.push(response.status().as_u16());
    }
    assert!(
        statuses == [503, 202, 202] || statuses == [202, 202, 202],
        "{statuses:?}"
    );
    let accepted = 1 + statuses.iter().filter(|&&s| s == 202).count() as i64;
    let rows: i64 = sqlx::query_scalar("select count(*) from page_import")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, accepted, "a refused create wrote nothing");
}
