//! SPEC §13: a deleted import leaves nothing behind in S3, and nothing live
//! is ever removed. Real PostgreSQL, real S3 API (the emulator), the real
//! erasure pass (`Eraser::pass_once`, as the background task runs it).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_s3::config::{ConfigBag, Intercept, RuntimeComponents};
use futures::StreamExt;
use page_import::service::erasure::{Eraser, PassReport};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::proxy::FaultyProxy;
use crate::helpers::worker::Job;
use crate::helpers::{eventually, Tenant, TestApp};

/// Soft deletes erased at the next pass, a one-second late writers' window,
/// no background pass: each test runs its passes itself.
fn erase_now() -> Vec<(&'static str, String)> {
    vec![
        ("ERASE_AFTER_DELETE_SECS", "0".into()),
        ("CAPTURE_TIMEOUT_SECS", "1".into()),
    ]
}

/// Time passing for the erasure, without waiting for it: every time a pass
/// compares with `now()` (each attempt's dispatch, and the ledger's deletes,
/// recordings, leases and retries) moves `secs` into the past. The tests'
/// windows are whole seconds (`ERASE_AFTER_DELETE_SECS`,
/// `CAPTURE_TIMEOUT_SECS`, the leases), so a test that must see one end
/// moves its clock rather than sleep through it.
async fn pass_time(pool: &PgPool, secs: f64) {
    sqlx::query(
        "update page_import_attempt set dispatched_at = dispatched_at - make_interval(secs => $1)
         where dispatched_at is not null",
    )
    .bind(secs)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "update page_import_deletion set
             deleted_at = deleted_at - make_interval(secs => $1),
             recorded_at = recorded_at - make_interval(secs => $1),
             last_dispatched_at = last_dispatched_at - make_interval(secs => $1),
             leased_until = leased_until - make_interval(secs => $1),
             picked_at = picked_at - make_interval(secs => $1),
             retry_at = retry_at - make_interval(secs => $1)",
    )
    .bind(secs)
    .execute(pool)
    .await
    .unwrap();
}

/// The late writers' window of [`erase_now`] is over for anything dispatched before this.
async fn past_the_window(pool: &PgPool) {
    pass_time(pool, 1.1).await;
}

async fn pass(app: &TestApp) -> PassReport {
    app.state.eraser().pass_once().await.unwrap()
}

/// Writes `n` objects under the attempt's prefix; returns their keys.
async fn seed(app: &TestApp, id: &str, attempt: i32, n: usize) -> Vec<String> {
    let keys: Vec<String> = (0..n)
        .map(|i| format!("page-imports/{id}/{attempt}/assets/{i:05}.bin"))
        .collect();
    put_all(app, &keys).await;
    keys
}

async fn put_all(app: &TestApp, keys: &[String]) {
    futures::stream::iter(keys)
        .for_each_concurrent(16, |key| app.put_object(key, b"x".to_vec()))
        .await;
}

/// Every key under `prefix`, as the emulator lists it now.
async fn keys_under(app: &TestApp, prefix: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut pages = app
        .s3
        .list_objects_v2()
        .bucket(&app.bucket)
        .prefix(prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        keys.extend(
            page.unwrap()
                .contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_owned)),
        );
    }
    keys
}

/// The newest `LastModified` under `prefix`, as the emulator lists it
/// (whole seconds, as S3 lists them).
async fn newest_modified(app: &TestApp, prefix: &str) -> std::time::SystemTime {
    let page = app
        .s3
        .list_objects_v2()
        .bucket(&app.bucket)
        .prefix(prefix)
        .send()
        .await
        .unwrap();
    page.contents()
        .iter()
        .filter_map(|o| o.last_modified())
        .map(|t| std::time::SystemTime::try_from(*t).unwrap())
        .max()
        .expect("objects under the prefix")
}

/// When the first claim of `id`'s ledger entry ends, as it was claimed.
async fn lease_end(pool: &PgPool, id: &str) -> chrono::DateTime<chrono::Utc> {
    loop {
        let until: Option<chrono::DateTime<chrono::Utc>> =
            sqlx::query_scalar("select leased_until from page_import_deletion where page_import_id = $1")
                .bind(id)
                .fetch_one(pool)
                .await
                .unwrap();
        if let Some(until) = until {
            return until;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the wall clock has passed `at`.
async fn clock_past(at: std::time::SystemTime) {
    while std::time::SystemTime::now() <= at {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn objects_of(app: &TestApp, id: &str) -> BTreeSet<String> {
    keys_under(app, &format!("page-imports/{id}/")).await
}

/// The API's `DELETE`, as the import's owner.
async fn soft_delete(app: &TestApp, tenant: &Tenant, id: &str) {
    let path = format!("/page-imports/{id}");
    assert_eq!(app.delete(&path, &tenant.token).await.status(), 204);
}

/// Deletes the row in SQL, as an operator or the wider platform would.
async fn delete_row(pool: &PgPool, id: &str) {
    sqlx::query("delete from page_import where id = $1")
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
}

async fn row_exists(pool: &PgPool, id: &str) -> bool {
    sqlx::query_scalar("select exists (select 1 from page_import where id = $1)")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn audit_row(pool: &PgPool, id: &str) -> Option<Value> {
    sqlx::query_scalar("select to_jsonb(e) - 'erased_at' - 'deleted_at' from page_import_erasure e where id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
        .unwrap()
}

/// What a pass claims as `lease` for `lease_for`, every window at zero.
async fn claim_due_now(
    conn: &mut sqlx::PgConnection,
    lease: &str,
    lease_for: Duration,
) -> Vec<page_import::db::erasure::Claimed> {
    page_import::db::erasure::claim(conn, lease, lease_for, Duration::ZERO, Duration::ZERO, 10)
        .await
        .unwrap()
}

async fn create(app: &TestApp, tenant: &Tenant) -> String {
    app.create_import(tenant).await["id"].as_str().unwrap().to_owned()
}

/// A second project in the tenant's organization, with the same member.
async fn second_project(app: &TestApp, tenant: &Tenant) -> Tenant {
    let project_id: i64 =
        sqlx::query_scalar("insert into project (organization_id, name) values ($1, 'second') returning id")
            .bind(tenant.organization_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    Tenant {
        project_id,
        ..tenant.clone()
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_organization_then_a_project_deleted_leave_no_object_and_the_others_keep_theirs(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let (gone_org, kept_org) = (app.tenant().await, app.tenant().await);
    let gone_project = second_project(&app, &kept_org).await;
    let in_gone_org = [create(&app, &gone_org).await, create(&app, &gone_org).await];
    let in_gone_project = create(&app, &gone_project).await;
    let kept = create(&app, &kept_org).await;
    let mut expected = BTreeMap::new();
    for id in in_gone_org.iter().chain([&in_gone_project, &kept]) {
        let mut keys = seed(&app, id, 1, 3).await;
        keys.extend(seed(&app, id, 2, 2).await);
        expected.insert(id.clone(), keys.into_iter().collect::<BTreeSet<_>>());
    }

    sqlx::query("delete from organization where id = $1")
        .bind(gone_org.organization_id)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("delete from project where id = $1")
        .bind(gone_project.project_id)
        .execute(&pool)
        .await
        .unwrap();
    past_the_window(&pool).await;
    let report = pass(&app).await;
    assert_eq!((report.erased, report.objects, report.failed), (3, 15, 0), "{report:?}");

    for id in in_gone_org.iter().chain([&in_gone_project]) {
        assert_eq!(objects_of(&app, id).await, BTreeSet::new(), "{id}");
        assert!(!row_exists(&pool, id).await);
        let audit = audit_row(&pool, id).await.expect("an audit row");
        assert_eq!(audit["objects_deleted"], 5);
        assert_eq!(audit["deleted_by"], "db:postgres", "a cascade names the database user");
    }
    assert_eq!(
        objects_of(&app, &kept).await,
        expected[&kept],
        "another organization's objects"
    );
    assert!(row_exists(&pool, &kept).await);
    assert_eq!(audit_row(&pool, &kept).await, None);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_row_deleted_in_sql_is_erased_and_the_audit_holds_no_user_content(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    seed(&app, &id, 1, 4).await;
    delete_row(&pool, &id).await;
    past_the_window(&pool).await;
    assert_eq!(pass(&app).await.erased, 1);
    assert!(objects_of(&app, &id).await.is_empty());
    let columns: Vec<String> = sqlx::query_scalar(
        "select column_name::text from information_schema.columns where table_name = 'page_import_erasure' order by ordinal_position",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        columns,
        [
            "id",
            "organization_id",
            "project_id",
            "deleted_at",
            "deleted_by",
            "erased_at",
            "objects_deleted"
        ]
    );
    assert_eq!(
        audit_row(&pool, &id).await.unwrap(),
        json!({"id": id, "organization_id": tenant.organization_id, "project_id": tenant.project_id,
               "deleted_by": "db:postgres", "objects_deleted": 4})
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_soft_delete_keeps_its_objects_for_the_delay_then_is_erased(pool: PgPool) {
    let mut env = erase_now();
    env.push(("ERASE_AFTER_DELETE_SECS", "5".into()));
    let app = TestApp::spawn_with_env(pool.clone(), env).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    let keys: BTreeSet<String> = seed(&app, &id, 1, 3).await.into_iter().collect();
    soft_delete(&app, &tenant, &id).await;

    past_the_window(&pool).await;
    assert_eq!(pass(&app).await, PassReport::default(), "not due before the delay");
    assert_eq!(objects_of(&app, &id).await, keys, "kept during the delay");
    assert!(
        row_exists(&pool, &id).await,
        "the soft-deleted row stays, so a delete can be undone by hand"
    );
    assert_eq!(
        app.get(&format!("/page-imports/{id}"), &tenant.token).await.status(),
        404
    );

    pass_time(&pool, 4.0).await;
    let report = pass(&app).await;
    assert_eq!((report.erased, report.objects), (1, 3), "{report:?}");
    assert!(objects_of(&app, &id).await.is_empty());
    assert!(!row_exists(&pool, &id).await);
    let audit = audit_row(&pool, &id).await.unwrap();
    assert_eq!(audit["deleted_by"], tenant.subject.as_str());
    assert_eq!(audit["objects_deleted"], 3);
    let attempts: i64 = sqlx::query_scalar("select count(*) from page_import_attempt where page_import_id = $1")
        .bind(&id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(attempts, 0, "the attempt history follows the row");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_undone_soft_delete_cancels_the_erasure_until_a_pass_picked_it_up(pool: PgPool) {
    let mut env = erase_now();
    env.push(("ERASE_AFTER_DELETE_SECS", "3600".into()));
    let app = TestApp::spawn_with_env(pool.clone(), env).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    let keys: BTreeSet<String> = seed(&app, &id, 1, 2).await.into_iter().collect();
    let undelete = "update page_import set deleted_at = null, deleted_by = null where id = $1";

    soft_delete(&app, &tenant, &id).await;
    sqlx::query(undelete).bind(&id).execute(&pool).await.unwrap();
    let pending: i64 = sqlx::query_scalar("select count(*) from page_import_deletion")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(pending, 0, "undone by hand: nothing to erase");
    assert_eq!(
        app.get(&format!("/page-imports/{id}"), &tenant.token).await.status(),
        200
    );

    soft_delete(&app, &tenant, &id).await;
    sqlx::query("update page_import_deletion set picked_at = now() where page_import_id = $1")
        .bind(&id)
        .execute(&pool)
        .await
        .unwrap();
    let refused = sqlx::query(undelete).bind(&id).execute(&pool).await.unwrap_err();
    assert_eq!(refused.as_database_error().unwrap().code().as_deref(), Some("55006"));
    assert_eq!(objects_of(&app, &id).await, keys);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn more_than_1000_objects_over_several_attempts_are_all_erased(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    seed(&app, &id, 1, 700).await;
    seed(&app, &id, 2, 400).await;
    seed(&app, &id, 3, 150).await;
    delete_row(&pool, &id).await;
    past_the_window(&pool).await;
    let report = pass(&app).await;
    assert_eq!(
        (report.erased, report.objects, report.failed),
        (1, 1250, 0),
        "{report:?}"
    );
    assert!(objects_of(&app, &id).await.is_empty());
    assert_eq!(audit_row(&pool, &id).await.unwrap()["objects_deleted"], 1250);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_worker_uploading_after_the_delete_gets_410_and_its_objects_are_erased(pool: PgPool) {
    let mut env = erase_now();
    env.push(("CAPTURE_TIMEOUT_SECS", "6".into()));
    let app = TestApp::spawn_with_env(pool.clone(), env).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    soft_delete(&app, &tenant, &job.id).await;

    // The attempt was dispatched a moment ago: its worker may still write.
    let report = pass(&app).await;
    assert_eq!((report.erased, report.waiting), (0, 1), "{report:?}");
    let body = app.upload_capture(&job, crate::helpers::worker::manifest(&job)).await;
    let answer = app.callback(&body).await;
    assert_eq!(answer.status(), 410);
    assert_eq!(objects_of(&app, &job.id).await.len(), 2, "written after the delete");

    pass_time(&pool, 6.0).await;
    let report = pass(&app).await;
    assert_eq!((report.erased, report.objects), (1, 2), "{report:?}");
    assert!(objects_of(&app, &job.id).await.is_empty());
    assert!(!row_exists(&pool, &job.id).await);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_callback_after_the_erasure_is_410_brings_no_row_back_and_its_objects_go(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    seed(&app, &job.id, 1, 2).await;
    soft_delete(&app, &tenant, &job.id).await;
    past_the_window(&pool).await;
    assert_eq!(pass(&app).await.erased, 1);
    assert!(!row_exists(&pool, &job.id).await);

    // A worker that was slower than the capture timeout.
    let body = app.upload_capture(&job, crate::helpers::worker::manifest(&job)).await;
    expect_gone(app.callback(&body).await).await;
    assert_eq!(objects_of(&app, &job.id).await.len(), 2);
    let report = pass(&app).await;
    assert_eq!((report.erased, report.objects), (1, 2), "{report:?}");
    assert!(objects_of(&app, &job.id).await.is_empty());
    assert!(!row_exists(&pool, &job.id).await, "no row brought back");
    assert_eq!(
        audit_row(&pool, &job.id).await.unwrap()["objects_deleted"],
        4,
        "both erasures counted"
    );

    // An id never known is still 404.
    let stranger = Job {
        id: uuid::Uuid::now_v7().to_string(),
        ..job
    };
    assert_eq!(app.callback(&app.failed_body(&stranger, "x")).await.status(), 404);
}

async fn expect_gone(response: reqwest::Response) {
    crate::helpers::expect_problem(response, 410, "gone").await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn keys_of_another_shape_are_left_alone(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    let attempt_keys = seed(&app, &id, 1, 2).await;
    let others = vec![
        format!("page-imports/{id}/capture.json"),
        format!("page-imports/{id}/0/capture.json"),
        format!("page-imports/{id}/01/capture.json"),
        format!("page-imports/{id}/x/capture.json"),
        format!("page-imports/{}/1/capture.json", id.to_uppercase()),
        format!("backups/page-imports/{id}/1/capture.json"),
    ];
    put_all(&app, &others).await;
    delete_row(&pool, &id).await;
    past_the_window(&pool).await;
    let report = pass(&app).await;
    assert_eq!((report.erased, report.objects), (1, 2), "{report:?}");
    let left: BTreeSet<String> = keys_under(&app, "").await;
    for key in &attempt_keys {
        assert!(!left.contains(key), "{key} was not erased");
    }
    for key in &others {
        assert!(left.contains(key), "{key} was deleted");
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn stray_keys_that_sort_just_before_an_import_never_hide_its_objects(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    let mut own = seed(&app, &id, 1, 3).await;
    own.extend(seed(&app, &id, 2, 1).await);
    // `-` and `.` sort before `/`: both come before the import's own keys.
    let strays = vec![
        format!("page-imports/{id}-copy/1/capture.json"),
        format!("page-imports/{id}.json"),
    ];
    put_all(&app, &strays).await;
    delete_row(&pool, &id).await;
    past_the_window(&pool).await;
    let report = pass(&app).await;
    let left = keys_under(&app, "page-imports/").await;
    let kept: Vec<&String> = own.iter().filter(|key| left.contains(*key)).collect();
    assert!(kept.is_empty(), "still in S3 after the pass: {kept:?} ({report:?})");
    for key in &strays {
        assert!(left.contains(key), "{key} was deleted");
    }
    assert_eq!((report.erased, report.objects), (1, 4), "{report:?}");
    // The audit row says erased only once every object is gone.
    assert_eq!(audit_row(&pool, &id).await.unwrap()["objects_deleted"], 4);
}

/// Cuts the proxy in front of S3 just before the second `DeleteObjects`
/// call goes out: the outage starts in the middle of an erasure.
struct CutBeforeSecondDelete {
    proxy: Arc<FaultyProxy>,
    deletes: AtomicUsize,
}

impl std::fmt::Debug for CutBeforeSecondDelete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CutBeforeSecondDelete")
    }
}

impl Intercept for CutBeforeSecondDelete {
    fn name(&self) -> &'static str {
        "CutBeforeSecondDelete"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        let request = context.request();
        let delete = request.method() == "POST" && request.uri().contains("delete");
        if delete && self.deletes.fetch_add(1, Ordering::SeqCst) == 1 {
            self.proxy.set_up(false);
        }
        Ok(())
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_s3_outage_in_the_middle_of_an_erasure_loses_nothing_and_it_finishes_afterwards(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    // Two imports of 600 objects: two DeleteObjects calls, the second cut.
    let ids = [create(&app, &tenant).await, create(&app, &tenant).await];
    for id in &ids {
        seed(&app, id, 1, 600).await;
    }
    sqlx::query("delete from page_import where project_id = $1")
        .bind(tenant.project_id)
        .execute(&pool)
        .await
        .unwrap();
    past_the_window(&pool).await;

    let upstream: std::net::SocketAddr = crate::helpers::aws_endpoint()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let proxy = Arc::new(FaultyProxy::start(upstream).await);
    let through_proxy = page_import::aws::clients(true, Some(&proxy.url())).await.s3;
    let s3 = aws_sdk_s3::Client::from_conf(
        through_proxy
            .config()
            .to_builder()
            .interceptor(CutBeforeSecondDelete {
                proxy: proxy.clone(),
                deletes: AtomicUsize::new(0),
            })
            .build(),
    );
    let eraser = Eraser {
        s3,
        interval: Duration::from_secs(1),
        ..app.state.eraser()
    };
    let failures_before = metric(&app, "page_import_erasure_failures_total").await;

    let report = eraser.pass_once().await.unwrap();
    assert_eq!(report.erased, 0, "{report:?}");
    assert!(report.failed >= 1, "{report:?}");
    let left: usize = futures::future::join_all(ids.iter().map(|id| objects_of(&app, id)))
        .await
        .iter()
        .map(BTreeSet::len)
        .sum();
    assert_eq!(left, 200, "the first batch of 1 000 was deleted, the rest kept");
    assert_eq!(
        audit_rows(&pool).await,
        0,
        "no audit row says erased while objects remain"
    );
    let entries: Vec<(i32, i64)> =
        sqlx::query_as("select failures, objects_deleted from page_import_deletion order by page_import_id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(entries.len(), 2, "no entry lost: {entries:?}");
    assert!(entries.iter().any(|(failures, _)| *failures == 1), "{entries:?}");
    assert!(metric(&app, "page_import_erasure_failures_total").await > failures_before);
    let pending = {
        let mut conn = pool.acquire().await.unwrap();
        page_import::db::erasure::pending(&mut conn, Duration::ZERO)
            .await
            .unwrap()
    };
    let failed = entries.iter().filter(|(failures, _)| *failures > 0).count() as i64;
    assert_eq!(
        (pending.pending, pending.failing),
        (2, failed),
        "the entries whose last try failed are counted as failing"
    );

    proxy.set_up(true);
    let finished = eventually(Duration::from_secs(10), || async {
        eraser.pass_once().await.unwrap();
        audit_rows(&pool).await == 2
    })
    .await;
    assert!(finished, "the erasure finished once S3 was back");
    for id in &ids {
        assert!(objects_of(&app, id).await.is_empty());
    }
    let total: i64 = sqlx::query_scalar("select sum(objects_deleted)::int8 from page_import_erasure")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(total, 1200, "every deletion counted once");
}

async fn audit_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from page_import_erasure")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A metric's value on `/metrics` (0 when absent). The registry is the
/// process's: other tests add to the same counters, so only growth is asserted.
async fn metric(app: &TestApp, name: &str) -> f64 {
    let text = app.metrics_text().await;
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn erasure_metrics_count_pending_and_deleted(pool: PgPool) {
    let mut env = erase_now();
    env.push(("CAPTURE_TIMEOUT_SECS", "600".into()));
    let app = TestApp::spawn_with_env(pool.clone(), env).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    seed(&app, &job.id, 1, 3).await;
    let deleted_before = metric(&app, "page_import_erasure_objects_deleted_total").await;
    soft_delete(&app, &tenant, &job.id).await;

    // Due, objects deleted, but its late writers' window is open: pending.
    let report = pass(&app).await;
    assert_eq!((report.waiting, report.objects), (1, 3), "{report:?}");
    let text = app.metrics_text().await;
    for name in [
        "page_import_erasure_pending",
        "page_import_erasure_oldest_pending_seconds",
        "page_import_erasure_objects_deleted_total",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(metric(&app, "page_import_erasure_objects_deleted_total").await >= deleted_before + 3.0);
    let pending = {
        let mut conn = pool.acquire().await.unwrap();
        page_import::db::erasure::pending(&mut conn, Duration::ZERO)
            .await
            .unwrap()
    };
    assert_eq!((pending.pending, pending.failing), (1, 0));
    assert!(pending.oldest_seconds >= 0.0);
}

/// `page-import erase-orphans`, as an operator runs it.
fn erase_orphans(app: &TestApp, database_url: &str, args: &[&str]) -> (bool, Vec<String>) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_page-import"))
        .arg("erase-orphans")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", database_url)
        .env("ARTIFACT_BUCKET", &app.bucket)
        .env("S3_FORCE_PATH_STYLE", "true")
        .env("AWS_ENDPOINT_URL", crate::helpers::aws_endpoint())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .unwrap();
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    (out.status.success(), lines)
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn erase_orphans_dry_run_then_a_real_run_spare_fresh_orphans_and_everything_known(pool: PgPool) {
    let database_url = crate::helpers::process::database_url_of(&pool);
    let mut env = erase_now();
    env.push(("ERASE_AFTER_DELETE_SECS", "3600".into()));
    let app = TestApp::spawn_with_env(pool.clone(), env).await;
    let tenant = app.tenant().await;
    let old_orphan = uuid::Uuid::now_v7().to_string();
    let old_keys = seed(&app, &old_orphan, 1, 3).await;
    let live = create(&app, &tenant).await;
    let live_keys = seed(&app, &live, 1, 2).await;
    let soft_deleted = create(&app, &tenant).await;
    let pending_keys = seed(&app, &soft_deleted, 1, 2).await;
    soft_delete(&app, &tenant, &soft_deleted).await;
    let not_an_id = vec!["page-imports/not-an-id/1/capture.json".to_owned()];
    put_all(&app, &not_an_id).await;
    // S3 lists `LastModified` in whole seconds: the fresh orphan goes in a
    // later second than everything before it, and the run (older than 2 s)
    // starts once those are more than 2 s old, before the fresh one is.
    let old_until = newest_modified(&app, "").await;
    clock_past(old_until + Duration::from_secs(1)).await;
    let fresh_orphan = uuid::Uuid::now_v7().to_string();
    let fresh_keys = seed(&app, &fresh_orphan, 1, 1).await;
    let everything: BTreeSet<String> = keys_under(&app, "").await;
    clock_past(old_until + Duration::from_secs(2)).await;

    let (ok, lines) = erase_orphans(&app, &database_url, &["--dry-run", "--older-than-secs", "2"]);
    assert!(ok, "{lines:?}");
    assert_eq!(
        lines[0],
        format!("would erase page-imports/{old_orphan}/ (3 objects)"),
        "{lines:?}"
    );
    assert_eq!(lines.len(), 2, "one line per orphan, then the summary: {lines:?}");
    assert!(
        lines[1].starts_with("dry run: 5 prefixes listed, 1 orphaned with 3 objects to erase, 1 spared"),
        "{lines:?}"
    );
    assert_eq!(keys_under(&app, "").await, everything, "a dry run deletes nothing");

    let (ok, lines) = erase_orphans(&app, &database_url, &["--older-than-secs", "2"]);
    assert!(ok, "{lines:?}");
    assert_eq!(lines[0], format!("erased page-imports/{old_orphan}/ (3 objects)"));
    assert!(
        lines[1].starts_with("done: 5 prefixes listed, 1 orphaned with 3 objects erased"),
        "{lines:?}"
    );
    let left = keys_under(&app, "").await;
    for key in &old_keys {
        assert!(!left.contains(key), "{key} left");
    }
    for key in live_keys
        .iter()
        .chain(&pending_keys)
        .chain(&fresh_keys)
        .chain(&not_an_id)
    {
        assert!(left.contains(key), "{key} was deleted");
    }
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Op {
    Create,
    /// The worker, still capturing, writes one more object of the live attempt.
    Upload(usize),
    /// The worker completes the import's live attempt (by index among the case's imports).
    Complete(usize),
    /// The worker fails it, leaving `failure.json`.
    Fail(usize),
    /// A user retries a failed import: the next attempt, which the worker writes.
    Retry(usize),
    SoftDelete(usize),
    ProjectDelete,
    /// A worker that writes and calls back after its import was deleted.
    LateCallback(usize),
    /// An erasure pass on two replicas at once.
    Pass,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Create),
        3 => (0..6usize).prop_map(Op::Upload),
        2 => (0..6usize).prop_map(Op::Complete),
        1 => (0..6usize).prop_map(Op::Fail),
        1 => (0..6usize).prop_map(Op::Retry),
        2 => (0..6usize).prop_map(Op::SoftDelete),
        1 => Just(Op::ProjectDelete),
        2 => (0..6usize).prop_map(Op::LateCallback),
        3 => Just(Op::Pass),
    ]
}

/// The model of one import: the objects it must still have while live.
struct Modelled {
    job: Job,
    objects: BTreeSet<String>,
    deleted: bool,
    /// Written (or deleted) since the last pass: erased by the next one.
    dirty: bool,
    status: &'static str,
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn random_lifecycles_with_two_replicas_never_lose_a_live_object_nor_keep_an_erased_one(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    // The second replica: its own pool, the same rules. Windows of zero: a
    // pass after a delete is enough (the window has tests of its own).
    let other_pool = PgPool::connect(&crate::helpers::process::database_url_of(&pool))
        .await
        .unwrap();
    let replicas = [
        Eraser {
            capture_timeout: Duration::ZERO,
            ..app.state.eraser()
        },
        Eraser {
            pool: other_pool,
            capture_timeout: Duration::ZERO,
            ..app.state.eraser()
        },
    ];
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 10,
        ..ProptestConfig::default()
    });
    let cases: Vec<Vec<Op>> = (0..10)
        .map(|_| {
            proptest::collection::vec(op(), 16..32)
                .new_tree(&mut runner)
                .unwrap()
                .current()
        })
        .collect();
    for ops in cases {
        run_case(&app, &replicas, &ops).await;
    }
}

async fn run_case(app: &TestApp, replicas: &[Eraser; 2], ops: &[Op]) {
    let tenant = app.tenant().await;
    let mut imports: Vec<Modelled> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        let live = |imports: &Vec<Modelled>, i: usize| {
            let live: Vec<usize> = (0..imports.len()).filter(|&j| !imports[j].deleted).collect();
            (!live.is_empty()).then(|| live[i % live.len()])
        };
        match op {
            Op::Create => {
                let job = app.job(&tenant).await;
                imports.push(Modelled {
                    job,
                    objects: BTreeSet::new(),
                    deleted: false,
                    dirty: false,
                    status: "processing",
                });
            }
            Op::Upload(i) => {
                let Some(i) = live(&imports, *i) else { continue };
                let m = &mut imports[i];
                let key = format!("page-imports/{}/{}/assets/{step}.bin", m.job.id, m.job.attempt);
                app.put_object(&key, b"x".to_vec()).await;
                m.objects.insert(key);
            }
            Op::Complete(i) | Op::Fail(i) => {
                let Some(i) = live(&imports, *i) else { continue };
                let m = &mut imports[i];
                if m.status != "processing" {
                    continue;
                }
                let prefix = format!("page-imports/{}/{}/", m.job.id, m.job.attempt);
                let body = if matches!(op, Op::Complete(_)) {
                    m.status = "completed";
                    app.upload_capture(&m.job, crate::helpers::worker::manifest(&m.job))
                        .await
                } else {
                    m.status = "failed";
                    app.put_object(&format!("{prefix}failure.json"), b"{}".to_vec()).await;
                    app.failed_body(&m.job, "boom")
                };
                m.objects.extend(keys_under(app, &prefix).await);
                assert_eq!(app.callback(&body).await.status(), 200, "step {step}: {op:?}");
            }
            Op::Retry(i) => {
                let Some(i) = live(&imports, *i) else { continue };
                let m = &mut imports[i];
                if m.status != "failed" {
                    continue;
                }
                let path = format!("/page-imports/{}/retry", m.job.id);
                assert_eq!(app.post_json(&path, &tenant.token, &json!({})).await.status(), 202);
                app.wait_dispatched(&m.job.id).await;
                m.job = Job {
                    attempt: m.job.attempt + 1,
                    nonce: app.nonce_of(&m.job.id).await,
                    id: m.job.id.clone(),
                };
                m.status = "processing";
            }
            Op::SoftDelete(i) => {
                let Some(i) = live(&imports, *i) else { continue };
                let m = &mut imports[i];
                soft_delete(app, &tenant, &m.job.id).await;
                (m.deleted, m.dirty) = (true, true);
            }
            Op::ProjectDelete => {
                sqlx::query("delete from page_import where project_id = $1")
                    .bind(tenant.project_id)
                    .execute(&app.pool)
                    .await
                    .unwrap();
                for m in imports.iter_mut().filter(|m| !m.deleted) {
                    (m.deleted, m.dirty) = (true, true);
                }
            }
            Op::LateCallback(i) => {
                let deleted: Vec<usize> = (0..imports.len()).filter(|&j| imports[j].deleted).collect();
                let Some(&i) = deleted.get(i % deleted.len().max(1)) else {
                    continue;
                };
                let m = &mut imports[i];
                let body = app
                    .upload_capture(&m.job, crate::helpers::worker::manifest(&m.job))
                    .await;
                assert_eq!(app.callback(&body).await.status(), 410, "step {step}: {op:?}");
                m.dirty = true;
            }
            Op::Pass => {
                let (a, b) = tokio::join!(replicas[0].pass_once(), replicas[1].pass_once());
                a.unwrap();
                b.unwrap();
                imports.iter_mut().for_each(|m| m.dirty = false);
            }
        }
        // At every step: a live import has every object it had; a deleted
        // one that a pass has seen since its delete or last write has none.
        for m in &imports {
            let now = objects_of(app, &m.job.id).await;
            if !m.deleted {
                assert_eq!(
                    now, m.objects,
                    "step {step} ({op:?}): live {} lost objects; ops {ops:?}",
                    m.job.id
                );
            } else if !m.dirty {
                assert!(
                    now.is_empty(),
                    "step {step} ({op:?}): erased {} still has {now:?}; ops {ops:?}",
                    m.job.id
                );
            }
        }
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_pass_that_dies_holding_its_lease_loses_no_entry(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    seed(&app, &id, 1, 3).await;
    delete_row(&pool, &id).await;
    past_the_window(&pool).await;
    // A replica claims the entry for a second, then dies: no release, no finish.
    let mut conn = pool.acquire().await.unwrap();
    let claimed = page_import::db::erasure::claim(
        &mut conn,
        "a-replica-that-died",
        Duration::from_secs(1),
        Duration::ZERO,
        Duration::from_secs(1),
        10,
    )
    .await
    .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(pass(&app).await, PassReport::default(), "held by its lease");
    assert_eq!(objects_of(&app, &id).await.len(), 3);

    // Its lease (1 s) runs out.
    pass_time(&pool, 1.1).await;
    let report = pass(&app).await;
    assert_eq!((report.erased, report.objects), (1, 3), "{report:?}");
    assert!(objects_of(&app, &id).await.is_empty());
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_late_write_noted_after_the_claim_keeps_the_entry_for_the_next_pass(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    delete_row(&pool, &id).await;
    past_the_window(&pool).await;
    let mut conn = pool.acquire().await.unwrap();
    let claimed = claim_due_now(&mut conn, "pass-1", Duration::from_secs(60)).await;
    // The pass listed the prefix empty; then a worker wrote and called back.
    assert!(page_import::db::erasure::note_late_writer(&mut conn, &id)
        .await
        .unwrap());
    let finish = page_import::db::erasure::Finish {
        page_import_id: id.clone(),
        late_writes: claimed[0].late_writes,
        objects_deleted: 0,
    };
    let finished = page_import::db::erasure::finish(&mut conn, "pass-1", std::slice::from_ref(&finish))
        .await
        .unwrap();
    assert!(finished.is_empty(), "finished over a late write");
    assert_eq!(audit_row(&pool, &id).await, None);
    // With the count it now holds, the same pass could finish it.
    let finish = page_import::db::erasure::Finish {
        late_writes: claimed[0].late_writes + 1,
        ..finish
    };
    let finished = page_import::db::erasure::finish(&mut conn, "pass-1", &[finish])
        .await
        .unwrap();
    assert_eq!(finished, std::slice::from_ref(&id));
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_batch_of_deleted_imports_spares_the_live_ones_whose_keys_lie_between_them(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    // Created in this order, so their ids (uuid v7) and keys sort so too:
    // one walk of the deleted imports' key range passes the live ones' keys.
    let mut ids = Vec::new();
    for _ in 0..5 {
        let id = create(&app, &tenant).await;
        seed(&app, &id, 1, 3).await;
        ids.push(id);
    }
    let live: Vec<&String> = ids.iter().skip(1).step_by(2).collect();
    let kept: Vec<BTreeSet<String>> = futures::future::join_all(live.iter().map(|id| objects_of(&app, id))).await;
    for id in ids.iter().step_by(2) {
        soft_delete(&app, &tenant, id).await;
    }
    past_the_window(&pool).await;
    let report = pass(&app).await;
    assert_eq!((report.erased, report.objects), (3, 9), "{report:?}");
    for (id, keys) in live.iter().zip(kept) {
        assert_eq!(objects_of(&app, id).await, keys, "live {id}");
    }
    for id in ids.iter().step_by(2) {
        assert!(objects_of(&app, id).await.is_empty());
    }
}

/// A ledger entry written by hand: `soft` with its soft delete's time, or a
/// row delete recorded at `recorded_secs_ago`.
async fn ledger_entry(pool: &PgPool, id: &str, soft: bool, deleted_secs_ago: f64, recorded_secs_ago: f64) {
    sqlx::query(
        "insert into page_import_deletion (page_import_id, organization_id, project_id, deleted_at, deleted_by, soft, recorded_at)
         values ($1, 1, 1, now() - make_interval(secs => $3), 'test', $2, now() - make_interval(secs => $4))",
    )
    .bind(id)
    .bind(soft)
    .bind(deleted_secs_ago)
    .bind(recorded_secs_ago)
    .execute(pool)
    .await
    .unwrap();
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn entries_are_claimed_in_the_order_they_fell_due_not_the_order_they_were_recorded(pool: PgPool) {
    let day = 86_400.0;
    let erase_after = Duration::from_secs(30 * 86_400);
    // Soft deletes of the last month, recorded long before anything else:
    // due one after another over the last day, or not due yet.
    for i in 0..20 {
        let deleted = 30.0 * day + f64::from(i) * 60.0;
        ledger_entry(&pool, &format!("soft-due-{i:02}"), true, deleted, deleted).await;
        ledger_entry(&pool, &format!("soft-not-due-{i:02}"), true, day, day).await;
    }
    // Rows deleted in SQL (due at once) 630 s and 90 s ago, the first after
    // its import had been soft-deleted 31 days ago.
    ledger_entry(&pool, "row-deleted-630s-ago", false, 31.0 * day, 630.0).await;
    ledger_entry(&pool, "row-deleted-90s-ago", false, 90.0, 90.0).await;

    let mut conn = pool.acquire().await.unwrap();
    // One at a time: a claim's batch is a set.
    let mut order = Vec::new();
    for lease in 0..30 {
        let claimed = page_import::db::erasure::claim(
            &mut conn,
            &lease.to_string(),
            Duration::from_secs(60),
            erase_after,
            Duration::ZERO,
            1,
        )
        .await
        .unwrap();
        order.extend(claimed.into_iter().map(|c| c.page_import_id));
    }
    // Seconds since each fell due, the longest first.
    let mut due: Vec<(String, i64)> = (0..20).map(|i| (format!("soft-due-{i:02}"), i * 60)).collect();
    due.extend([
        ("row-deleted-630s-ago".to_owned(), 630),
        ("row-deleted-90s-ago".to_owned(), 90),
    ]);
    due.sort_by_key(|(_, ago)| -ago);
    let expected: Vec<String> = due.into_iter().map(|(id, _)| id).collect();
    assert_eq!(order, expected);
    let pending = page_import::db::erasure::pending(&mut conn, erase_after).await.unwrap();
    assert_eq!(pending.pending, 22, "the soft deletes not yet due are not pending");
    let oldest = pending.oldest_seconds;
    assert!((oldest - 19.0 * 60.0).abs() < 30.0, "oldest due {oldest} s ago");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_pass_slower_than_its_lease_renews_it_and_no_second_replica_takes_its_imports(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    seed(&app, &id, 1, 3).await;
    delete_row(&pool, &id).await;
    past_the_window(&pool).await;
    // The first replica's S3 answers only after 3 s; its lease is 1 s.
    let upstream: std::net::SocketAddr = crate::helpers::aws_endpoint()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let proxy = FaultyProxy::start(upstream).await;
    proxy.set_delay(Duration::from_secs(3));
    let slow = Eraser {
        s3: page_import::aws::clients(true, Some(&proxy.url())).await.s3,
        lease: Duration::from_secs(1),
        ..app.state.eraser()
    };
    let other_pool = PgPool::connect(&crate::helpers::process::database_url_of(&pool))
        .await
        .unwrap();
    let second = Eraser {
        pool: other_pool,
        lease: Duration::from_secs(1),
        ..app.state.eraser()
    };
    let first = tokio::spawn(async move { slow.pass_once().await.unwrap() });
    // Past the end of the lease the first pass claimed, while it still
    // works: only its renewals keep the entry.
    let claimed_until = lease_end(&pool, &id).await;
    while !sqlx::query_scalar::<_, bool>("select now() > $1")
        .bind(claimed_until)
        .fetch_one(&pool)
        .await
        .unwrap()
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!first.is_finished());
    let report = second.pass_once().await.unwrap();
    assert_eq!(
        report,
        PassReport::default(),
        "the second replica took an import the first still works"
    );
    let report = first.await.unwrap();
    assert_eq!((report.erased, report.objects), (1, 3), "{report:?}");
    assert!(objects_of(&app, &id).await.is_empty());
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_undo_by_hand_that_races_a_claim_is_refused_and_the_import_stays_deleted(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let id = create(&app, &tenant).await;
    seed(&app, &id, 1, 2).await;
    soft_delete(&app, &tenant, &id).await;
    // A pass's claim, not yet committed, holds the ledger entry.
    let mut claiming = pool.begin().await.unwrap();
    let claimed = claim_due_now(&mut claiming, "a-racing-pass", Duration::from_secs(300)).await;
    assert_eq!(claimed.len(), 1);
    // An operator undoes the soft delete meanwhile.
    let undo = {
        let pool = pool.clone();
        let id = id.clone();
        tokio::spawn(async move {
            sqlx::query("update page_import set deleted_at = null, deleted_by = null where id = $1")
                .bind(&id)
                .execute(&pool)
                .await
        })
    };
    assert!(
        app.waits_for_lock("set deleted_at = null").await,
        "the undo waits for the claim"
    );
    claiming.commit().await.unwrap();
    let refused = undo
        .await
        .unwrap()
        .expect_err("an undo after the claim committed must be refused");
    let code = refused
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned());
    assert_eq!(code.as_deref(), Some("55006"), "{refused}");
    let deleted: bool = sqlx::query_scalar("select deleted_at is not null from page_import where id = $1")
        .bind(&id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(deleted, "the import stayed deleted");
    assert!(
        page_import::db::erasure::is_known(&mut pool.acquire().await.unwrap(), &id)
            .await
            .unwrap(),
        "its ledger entry is kept"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn erase_orphans_takes_any_older_than_and_spares_what_is_younger(pool: PgPool) {
    let database_url = crate::helpers::process::database_url_of(&pool);
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let orphan = uuid::Uuid::now_v7().to_string();
    let keys = seed(&app, &orphan, 1, 2).await;
    for older_than in [u64::MAX.to_string(), (u64::MAX / 2).to_string(), "4102444800".into()] {
        let (ok, lines) = erase_orphans(&app, &database_url, &["--older-than-secs", &older_than]);
        assert!(ok, "--older-than-secs {older_than}: {lines:?}");
        assert!(
            lines
                .last()
                .is_some_and(|l| l.contains("0 orphaned") && l.contains("1 spared")),
            "--older-than-secs {older_than}: {lines:?}"
        );
    }
    assert_eq!(objects_of(&app, &orphan).await, keys.into_iter().collect());
}

/// Before it deletes anything a pass reads again which of its claimed
/// entries it still holds and whose row is not live: not one whose lease
/// another pass took, nor one made live again behind its back (the state a
/// racing undo used to leave: no ledger entry, a live row).
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_pass_erases_only_what_it_still_holds_and_what_is_not_live(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), erase_now()).await;
    let tenant = app.tenant().await;
    let ids = [
        create(&app, &tenant).await,
        create(&app, &tenant).await,
        create(&app, &tenant).await,
    ];
    for id in &ids {
        soft_delete(&app, &tenant, id).await;
    }
    let mut conn = pool.acquire().await.unwrap();
    assert_eq!(
        claim_due_now(&mut conn, "this-pass", Duration::from_secs(300))
            .await
            .len(),
        3
    );
    let [taken, undone, held] = &ids;
    sqlx::query("update page_import_deletion set lease = 'another-pass' where page_import_id = $1")
        .bind(taken)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("delete from page_import_deletion where page_import_id = $1")
        .bind(undone)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("update page_import set deleted_at = null, deleted_by = null where id = $1")
        .bind(undone)
        .execute(&pool)
        .await
        .unwrap();
    let erasable = page_import::db::erasure::still_erasable(&mut conn, "this-pass", &ids)
        .await
        .unwrap();
    assert_eq!(erasable, std::iter::once(held.clone()).collect());
}
