//! Races that really race (SPEC §15): concurrent sets and single imports
//! against admission (never over `ORG_MAX_QUEUED`, a set all or none), and
//! a member's callback against its set's delete (no member left half
//! deleted, no artifact left, no 5xx).

use std::time::Duration;

use serde_json::Value;
use sqlx::PgPool;

use super::*;

async fn scalar(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn concurrent_sets_and_singles_never_pass_the_backlog_limit_and_a_set_is_all_or_none(pool: PgPool) {
    const MAX_QUEUED: i64 = 10;
    let app = TestApp::spawn_with_env(
        pool,
        vec![
            ("ORG_MAX_QUEUED", MAX_QUEUED.to_string()),
            ("CAPTURE_MAX_IN_FLIGHT", "1".to_owned()),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    // The one slot is taken: what is admitted now stays queued.
    let busy = app.create_import(&tenant).await;
    app.wait_dispatched(busy["id"].as_str().unwrap()).await;

    let sets = (0..8).map(|_| async {
        let response = app
            .post_json("/page-import-sets", &tenant.token, &set_body(&tenant, three_variants()))
            .await;
        (
            true,
            response.status().as_u16(),
            response.json::<Value>().await.unwrap(),
        )
    });
    let singles = (0..12).map(|_| async {
        let response = app
            .post_json("/page-imports", &tenant.token, &import_body(&tenant))
            .await;
        (
            false,
            response.status().as_u16(),
            response.json::<Value>().await.unwrap(),
        )
    });
    let mut all: Vec<futures::future::BoxFuture<'_, (bool, u16, Value)>> = Vec::new();
    for (set, single) in sets.zip(singles.clone()) {
        all.push(Box::pin(set));
        all.push(Box::pin(single));
    }
    all.extend(
        singles
            .skip(8)
            .map(|f| Box::pin(f) as futures::future::BoxFuture<'_, _>),
    );
    let answers = futures::future::join_all(all).await;

    let mut admitted = 0;
    let (mut sets_refused, mut singles_refused) = (0, 0);
    for (is_set, status, body) in &answers {
        match (is_set, status) {
            (true, 202) => {
                admitted += 3;
                let ids = member_ids(body);
                let rows =
                    sqlx::query_scalar::<_, i64>("select count(*) from page_import_set_member where set_id = $1")
                        .bind(body["id"].as_str().unwrap())
                        .fetch_one(&app.pool)
                        .await
                        .unwrap();
                assert_eq!((ids.len(), rows), (3, 3), "an admitted set has all its members");
            }
            (false, 202) => admitted += 1,
            (true, 429) => sets_refused += 1,
            (false, 429) => singles_refused += 1,
            _ => panic!("unexpected answer {status}: {body}"),
        }
    }
    let queued = scalar(
        &app.pool,
        "select count(*) from page_import_attempt where queued_seq is not null",
    )
    .await;
    assert_eq!(queued, admitted, "every admitted import waits, nothing else");
    assert!(queued <= MAX_QUEUED, "never over the limit: {queued}");
    assert_eq!(
        scalar(&app.pool, "select count(*) from page_import").await,
        admitted + 1,
        "a refused set wrote nothing"
    );
    assert_eq!(
        scalar(&app.pool, "select count(*) from page_import_set").await * 3,
        scalar(&app.pool, "select count(*) from page_import_set_member").await
    );
    assert_eq!(
        scalar(&app.pool, "select queued::int8 from capture_org").await,
        queued,
        "the backlog's count is exact"
    );
    // Room never grows here (nothing is dispatched): a refused set means
    // fewer than three places were left, a refused single none.
    if sets_refused > 0 {
        assert!(queued > MAX_QUEUED - 3, "{queued}");
    }
    if singles_refused > 0 {
        assert_eq!(queued, MAX_QUEUED);
    }
    assert!(sets_refused > 0, "the race filled the backlog");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_members_callback_racing_the_sets_delete_leaves_nothing_behind(pool: PgPool) {
    let app = TestApp::spawn_with_env(
        pool,
        vec![
            ("ERASE_AFTER_DELETE_SECS", "0".to_owned()),
            ("CAPTURE_TIMEOUT_SECS", "1".to_owned()),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    let mut members = Vec::new();
    for round in 0..6 {
        let set = app.create_set(&tenant, three_variants()).await;
        let message = loop {
            let messages = app.messages_within(1, Duration::from_secs(10)).await;
            if messages.first().is_some_and(|m| m["setId"] == set["id"]) {
                break messages[0].clone();
            }
        };
        let jobs = jobs_of_set(&message);
        for job in &jobs {
            app.wait_dispatched(&job.id).await;
        }
        let mut bodies = Vec::new();
        for job in &jobs {
            bodies.push(app.upload_capture(job, worker::manifest(job)).await);
        }
        let path = format!("/page-import-sets/{}", set["id"].as_str().unwrap());
        let delete = async { app.delete(&path, &tenant.token).await.status().as_u16() };
        let callbacks =
            futures::future::join_all(bodies.iter().map(|b| async { app.callback(b).await.status().as_u16() }));
        // The delete goes first in even rounds, the callbacks in odd ones.
        let (deleted, called) = if round % 2 == 0 {
            futures::join!(delete, callbacks)
        } else {
            let (called, deleted) = futures::join!(callbacks, delete);
            (deleted, called)
        };
        assert_eq!(deleted, 204);
        for status in &called {
            assert!(*status == 200 || *status == 410, "a callback answered {status}");
        }
        let live: i64 = sqlx::query_scalar(
            "select count(*) from page_import p join page_import_set_member m on m.page_import_id = p.id
             where m.set_id = $1 and p.deleted_at is null",
        )
        .bind(set["id"].as_str().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(live, 0, "no member left undeleted");
        members.extend(jobs.into_iter().map(|j| j.id));
    }

    // Past the late writers' window, one erasure pass leaves nothing.
    sqlx::query("update page_import_attempt set dispatched_at = dispatched_at - interval '2 seconds'")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("update page_import_deletion set deleted_at = deleted_at - interval '2 seconds', last_dispatched_at = last_dispatched_at - interval '2 seconds'")
        .execute(&app.pool)
        .await
        .unwrap();
    let report = app.state.eraser().pass_once().await.unwrap();
    assert_eq!(report.erased, members.len(), "{report:?}");
    for id in &members {
        let objects = app
            .s3
            .list_objects_v2()
            .bucket(&app.bucket)
            .prefix(format!("page-imports/{id}/"))
            .send()
            .await
            .unwrap();
        assert!(objects.contents().is_empty(), "no artifact of {id} left");
    }
    assert_eq!(scalar(&app.pool, "select count(*) from page_import").await, 0);
    assert_eq!(
        scalar(&app.pool, "select count(*) from page_import_set").await,
        0,
        "an erased set goes with its members"
    );
}
