//! Sharing the capture fleet (SPEC §12): in-flight limits, round robin
//! across organizations, oldest first within one, admission (429), and
//! `dispatchedAt`. The worker is played by the test: it reads the capture
//! queue and ends an attempt with the signed `failed` callback, which frees
//! its slot.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;
use sqlx::PgPool;

use page_import::db::capture;
use page_import::queue::messages::CaptureDestination;
use page_import::service::dispatch::{grant, CaptureLimits, GrantRules};

use crate::helpers::worker::Job;
use crate::helpers::*;

/// An app with these capture limits (the rest as configured by default).
async fn app_with(pool: PgPool, limits: &[(&'static str, &str)]) -> TestApp {
    TestApp::spawn_with_env(pool, limits.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()).await
}

/// An app with one capture slot whose dispatcher passes only when woken
/// (no timer during a test): what a pass does next is what the test did.
async fn one_slot_without_timer(pool: PgPool) -> TestApp {
    app_with(
        pool,
        &[
            ("CAPTURE_MAX_IN_FLIGHT", "1"),
            ("CAPTURE_DISPATCH_INTERVAL_MS", "3600000"),
        ],
    )
    .await
}

/// The sweeper's clock past these tests' `CAPTURE_TIMEOUT_SECS` (1 s) for
/// every attempt dispatched so far, without waiting: their dispatch moves
/// 1.1 s into the past.
async fn past_the_capture_timeout(pool: &PgPool) {
    sqlx::query(
        "update page_import_attempt set dispatched_at = dispatched_at - interval '1.1 seconds'
         where dispatched_at is not null",
    )
    .execute(pool)
    .await
    .unwrap();
}

fn job_of(message: &Value) -> Job {
    Job {
        id: message["pageImportId"].as_str().unwrap().to_owned(),
        attempt: message["attempt"].as_i64().unwrap(),
        nonce: message["nonce"].as_str().unwrap().to_owned(),
    }
}

impl TestApp {
    /// The capture jobs that arrive on this app's queue within `timeout`
    /// (at most `n`).
    async fn jobs_within(&self, n: usize, timeout: Duration) -> Vec<Job> {
        self.receive_within(&self.page_import_queue_url, n, timeout)
            .await
            .iter()
            .map(job_of)
            .collect()
    }

    /// Exactly `n` jobs: `n` arrive, and no other within a second after.
    async fn exactly_jobs(&self, n: usize) -> Vec<Job> {
        let jobs = self.jobs_within(n, Duration::from_secs(10)).await;
        assert_eq!(jobs.len(), n, "{n} jobs dispatched");
        let more = self.jobs_within(1, Duration::from_secs(1)).await;
        assert!(more.is_empty(), "no job beyond the limit: {more:?}");
        jobs
    }

    /// Ends the attempt as a worker that failed it (not retryable): its
    /// slot frees.
    async fn end(&self, job: &Job) {
        let response = self.callback(&self.failed_body(job, "played worker")).await;
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    }

    async fn create_id(&self, tenant: &Tenant) -> String {
        self.create_import(tenant).await["id"].as_str().unwrap().to_owned()
    }

    async fn dispatched_at(&self, tenant: &Tenant, id: &str) -> (Value, String) {
        let response = self.get(&format!("/page-imports/{id}"), &tenant.token).await;
        assert_eq!(response.status(), 200);
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        let body: Value = response.json().await.unwrap();
        (body["dispatchedAt"].clone(), etag)
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_per_organization_limit_holds_and_a_freed_slot_is_reused(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT_PER_ORG", "2")]).await;
    let (busy, other) = (app.tenant().await, app.tenant().await);
    let ids: Vec<String> = futures::future::join_all((0..3).map(|_| app.create_id(&busy))).await;
    let first = app.exactly_jobs(2).await;
    let waiting: Vec<&String> = ids.iter().filter(|id| first.iter().all(|j| &j.id != *id)).collect();
    assert_eq!(waiting.len(), 1);
    assert_eq!(app.dispatched_at(&busy, waiting[0]).await.0, Value::Null);

    // Another organization is not held by this one's limit.
    let elsewhere = app.create_id(&other).await;
    assert_eq!(app.exactly_jobs(1).await[0].id, elsewhere);

    app.end(&first[0]).await;
    let next = app.exactly_jobs(1).await;
    assert_eq!(&next[0].id, waiting[0], "the freed slot went to the waiting attempt");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_deployment_limit_holds_and_a_freed_slot_is_reused(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "2")]).await;
    let tenants = [app.tenant().await, app.tenant().await, app.tenant().await];
    let mut ids = Vec::new();
    for tenant in &tenants {
        ids.push(app.create_id(tenant).await);
    }
    let first = app.exactly_jobs(2).await;
    app.end(&first[1]).await;
    let next = app.exactly_jobs(1).await;
    let seen: HashSet<String> = first.iter().chain(&next).map(|j| j.id.clone()).collect();
    assert_eq!(
        seen,
        ids.iter().cloned().collect(),
        "every import got a slot, one at a time"
    );
}

/// Two replicas, each with its own dispatcher and its own pool, over one
/// database: together they never dispatch more than the limits.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_limits_hold_across_two_replicas(pool: PgPool) {
    let limits = [("CAPTURE_MAX_IN_FLIGHT", "3"), ("CAPTURE_MAX_IN_FLIGHT_PER_ORG", "2")];
    let a = app_with(pool.clone(), &limits).await;
    let second_pool = PgPool::connect_with(pool.connect_options().as_ref().clone())
        .await
        .unwrap();
    let b = app_with(second_pool, &limits).await;
    let (one, two) = (a.tenant().await, a.tenant().await);
    // The replicas take turns; the first organization's three come first,
    // so only its own limit keeps its third waiting.
    let mut ids = HashSet::new();
    for i in 0..6 {
        let (app, tenant) = (if i % 2 == 0 { &a } else { &b }, if i < 3 { &one } else { &two });
        ids.insert(app.create_id(tenant).await);
    }
    let mut jobs = a.jobs_within(3, Duration::from_secs(5)).await;
    jobs.extend(b.jobs_within(3 - jobs.len(), Duration::from_secs(5)).await);
    let more = [
        a.jobs_within(1, Duration::from_secs(1)).await,
        b.jobs_within(1, Duration::from_secs(1)).await,
    ];
    assert_eq!(jobs.len(), 3, "the deployment limit, across both replicas");
    assert!(more.iter().all(Vec::is_empty), "nothing beyond it: {more:?}");
    let per_org = futures::future::join_all(jobs.iter().map(|j| org_of(&pool, &j.id))).await;
    let mut counts: HashMap<i64, usize> = HashMap::new();
    per_org.into_iter().for_each(|org| *counts.entry(org).or_default() += 1);
    assert!(
        counts.values().all(|&n| n <= 2),
        "the per-organization limit: {counts:?}"
    );

    // Freed slots are reused by either replica until every import ran once.
    let mut seen: HashSet<String> = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.len() < ids.len() && Instant::now() < deadline {
        for job in std::mem::take(&mut jobs) {
            assert!(seen.insert(job.id.clone()), "dispatched once: {}", job.id);
            a.end(&job).await;
        }
        jobs.extend(a.jobs_within(3, Duration::from_millis(500)).await);
        jobs.extend(b.jobs_within(3, Duration::from_millis(500)).await);
    }
    assert_eq!(seen, ids);
    b.stop().await;
}

async fn org_of(pool: &PgPool, id: &str) -> i64 {
    sqlx::query_scalar("select organization_id from page_import where id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// SPEC §12's example: one organization queues many, another one import
/// after them; at 2 slots, the single import goes in the next freed slot.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_single_import_is_not_stuck_behind_another_organizations_backlog(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "2")]).await;
    let (burst, single) = (app.tenant().await, app.tenant().await);
    for _ in 0..24 {
        app.create_id(&burst).await;
    }
    let lone = app.create_id(&single).await;
    let mut running = app.exactly_jobs(2).await;
    let mut dispatched_after = None;
    for freed in 1..=2 {
        let job = running.remove(0);
        app.end(&job).await;
        let next = app.exactly_jobs(1).await.remove(0);
        if next.id == lone {
            dispatched_after = Some(freed);
            break;
        }
        running.push(next);
    }
    assert_eq!(
        dispatched_after,
        Some(1),
        "the other organization's import takes the first freed slot, not the 25th"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn within_an_organization_the_oldest_attempt_goes_first(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "1")]).await;
    let tenant = app.tenant().await;
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(app.create_id(&tenant).await);
    }
    let mut order = Vec::new();
    for _ in 0..4 {
        let job = app.exactly_jobs(1).await.remove(0);
        order.push(job.id.clone());
        app.end(&job).await;
    }
    assert_eq!(order, ids);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn dispatched_at_is_null_while_waiting_then_set_with_a_new_etag_and_an_event(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "1")]).await;
    let tenant = app.tenant().await;
    let running = app.create_id(&tenant).await;
    let waiting = app.create_id(&tenant).await;
    let job = app.exactly_jobs(1).await.remove(0);
    assert_eq!(job.id, running);
    let (at, _) = app.dispatched_at(&tenant, &running).await;
    assert!(at.as_str().is_some_and(|t| t.ends_with('Z')), "{at}");
    let (at, etag) = app.dispatched_at(&tenant, &waiting).await;
    assert_eq!(at, Value::Null);

    let mut events = crate::events::follow(
        &app.http,
        app.url(&format!("/page-imports/{waiting}/events")),
        &tenant.token,
    )
    .await;
    let first = events.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.json()["dispatchedAt"], Value::Null);

    app.end(&job).await;
    assert_eq!(app.exactly_jobs(1).await[0].id, waiting);
    let changed = events.next(Duration::from_secs(5)).await.unwrap();
    assert!(
        changed.json()["dispatchedAt"].is_string(),
        "the dispatch is pushed: {:?}",
        changed.json()
    );
    let (at, new_etag) = app.dispatched_at(&tenant, &waiting).await;
    assert!(at.is_string());
    assert_ne!(etag, new_etag, "the ETag moved with dispatchedAt");
    assert_eq!(changed.id.as_deref(), Some(new_etag.as_str()));
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_deleted_queued_import_is_never_dispatched(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "1")]).await;
    let tenant = app.tenant().await;
    app.create_id(&tenant).await;
    let deleted = app.create_id(&tenant).await;
    let after = app.create_id(&tenant).await;
    let job = app.exactly_jobs(1).await.remove(0);
    assert_eq!(
        app.delete(&format!("/page-imports/{deleted}"), &tenant.token)
            .await
            .status(),
        204
    );
    app.end(&job).await;
    // The slot went past the deleted import to the next one.
    assert_eq!(app.exactly_jobs(1).await[0].id, after);
    assert_eq!(
        count(
            &app.pool,
            "select count(*) from page_import_attempt where queued_seq is not null"
        )
        .await,
        0
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn deleting_an_import_in_flight_frees_its_slot(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "1")]).await;
    let tenant = app.tenant().await;
    let running = app.create_id(&tenant).await;
    let waiting = app.create_id(&tenant).await;
    assert_eq!(app.exactly_jobs(1).await[0].id, running);
    assert_eq!(
        app.delete(&format!("/page-imports/{running}"), &tenant.token)
            .await
            .status(),
        204
    );
    assert_eq!(
        app.exactly_jobs(1).await[0].id,
        waiting,
        "the deleted import's slot went to the next"
    );
}

/// An import queued behind a full fleet whose status an operator set in
/// SQL is no longer one whose attempt may run: the next pass that picks it
/// takes it off the queue without a message, its organization's count drops
/// with it, and the slot goes to the attempt behind it.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_queued_import_failed_in_sql_leaves_the_queue_undispatched_and_uncounted(pool: PgPool) {
    // No timer: the pass that drops it goes on to the attempt behind it.
    let app = one_slot_without_timer(pool.clone()).await;
    let tenant = app.tenant().await;
    let running = app.create_id(&tenant).await;
    let failed = app.create_id(&tenant).await;
    let behind = app.create_id(&tenant).await;
    let job = app.exactly_jobs(1).await.remove(0);
    assert_eq!(job.id, running);
    let queued = format!(
        "select queued::int8 from capture_org where organization_id = {}",
        tenant.organization_id
    );
    assert_eq!(count(&pool, &queued).await, 2);
    sqlx::query("update page_import set status = '2' where id = $1")
        .bind(&failed)
        .execute(&pool)
        .await
        .unwrap();
    app.end(&job).await;
    assert_eq!(app.exactly_jobs(1).await[0].id, behind, "the slot went past it");
    assert_eq!(
        count(
            &pool,
            &format!(
                "select count(*) from page_import_attempt where page_import_id = '{failed}' and queued_seq is not null"
            )
        )
        .await,
        0,
        "it left the queue"
    );
    assert_eq!(count(&pool, &queued).await, 0, "and its organization's count");
    assert_eq!(
        count(
            &pool,
            &format!("select count(*) from page_import_attempt where page_import_id = '{failed}' and dispatched_at is not null")
        )
        .await,
        0,
        "and was never sent"
    );
}

/// Rows deleted in SQL (as a cascade from a project or an organization
/// does) while dispatch passes move their queued attempts: neither side
/// waits for the other in the reverse order, so no delete fails with a
/// deadlock. Each create wakes a pass; its delete follows at once.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn deletes_in_sql_racing_dispatch_passes_never_deadlock(pool: PgPool) {
    let app = app_with(pool.clone(), &[]).await;
    let tenant = app.tenant().await;
    let races = (0..96).map(|_| async {
        let id = app.create_id(&tenant).await;
        sqlx::query("delete from page_import where id = $1")
            .bind(&id)
            .execute(&pool)
            .await
            .map(|_| ())
    });
    let failed: Vec<sqlx::Error> = futures::stream::iter(races)
        .buffer_unordered(8)
        .filter_map(|result| async move { result.err() })
        .collect()
        .await;
    assert!(
        failed.is_empty(),
        "{} deletes failed: {:?}",
        failed.len(),
        failed.first()
    );
    assert_eq!(
        count(
            &pool,
            "select count(*) from page_import_attempt where queued_seq is not null"
        )
        .await,
        0
    );
    assert_eq!(count_drift(&pool).await, 0, "each delete uncounted what it took off");
    assert_eq!(
        count(&pool, "select coalesce(sum(queued), 0)::int8 from capture_org").await,
        0
    );
}

/// A project deleted in SQL takes its queued imports with it (the seed's
/// cascade), and the organization's count drops by as many, in one
/// statement; the other project's queued import stays counted.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_project_deleted_in_sql_uncounts_its_queued_imports(pool: PgPool) {
    let app = one_slot_without_timer(pool.clone()).await;
    let tenant = app.tenant().await;
    let kept: i64 = sqlx::query_scalar("insert into project (organization_id, name) values ($1, 'kept') returning id")
        .bind(tenant.organization_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    for _ in 0..4 {
        app.create_id(&tenant).await;
    }
    let mut body = import_body(&tenant);
    body["projectId"] = kept.into();
    assert_eq!(app.post_json("/page-imports", &tenant.token, &body).await.status(), 202);
    app.exactly_jobs(1).await;
    let queued = format!(
        "select queued::int8 from capture_org where organization_id = {}",
        tenant.organization_id
    );
    assert_eq!(count(&pool, &queued).await, 4);
    sqlx::query("delete from project where id = $1")
        .bind(tenant.project_id)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(count(&pool, &queued).await, 1);
    assert_eq!(count_drift(&pool).await, 0);
}

/// An import still queued whose status was set to failed in SQL, then
/// retried by hand before a pass took it off: its next attempt takes its
/// place in the queue (leaving it and joining it again), so it is counted
/// once, not twice.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_retry_of_an_import_still_queued_counts_it_once(pool: PgPool) {
    let app = one_slot_without_timer(pool.clone()).await;
    let tenant = app.tenant().await;
    app.create_id(&tenant).await;
    let queued_id = app.create_id(&tenant).await;
    app.exactly_jobs(1).await;
    sqlx::query("update page_import set status = '2' where id = $1")
        .bind(&queued_id)
        .execute(&pool)
        .await
        .unwrap();
    let retry = app
        .http
        .post(app.url(&format!("/page-imports/{queued_id}/retry")))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status(), 202, "{}", retry.text().await.unwrap());
    let queued = format!(
        "select queued::int8 from capture_org where organization_id = {}",
        tenant.organization_id
    );
    assert_eq!(count(&pool, &queued).await, 1);
    assert_eq!(count_drift(&pool).await, 0);
}

/// The sweeper's timeout of a dead worker's attempt frees its slot for the
/// next import; the timed-out import's next attempt queues behind it.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_timed_out_attempt_frees_its_slot(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "1"), ("CAPTURE_TIMEOUT_SECS", "1")]).await;
    let tenant = app.tenant().await;
    let dead = app.create_id(&tenant).await;
    let waiting = app.create_id(&tenant).await;
    assert_eq!(app.exactly_jobs(1).await[0].id, dead);
    past_the_capture_timeout(&app.pool).await;
    assert_eq!(app.sweep().await, 1);
    let next = app.exactly_jobs(1).await.remove(0);
    assert_eq!(next.id, waiting, "the freed slot goes to the oldest queued attempt");
    // The re-dispatched attempt is queued, and counted (`capture::admitting!`).
    assert_eq!(count(&app.pool, "select queued::int8 from capture_org").await, 1);
    assert_eq!(count_drift(&app.pool).await, 0);
    app.end(&next).await;
    let retried = app.exactly_jobs(1).await.remove(0);
    assert_eq!((retried.id.as_str(), retried.attempt), (dead.as_str(), 2));
}

async fn post_keyed(app: &TestApp, tenant: &Tenant, key: &str) -> reqwest::Response {
    app.http
        .post(app.url("/page-imports"))
        .bearer_auth(&tenant.token)
        .header("idempotency-key", key)
        .json(&import_body(tenant))
        .send()
        .await
        .unwrap()
}

async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

/// Organizations whose queued count is not the number of their rows in
/// the queue.
async fn count_drift(pool: &PgPool) -> i64 {
    count(
        pool,
        "select count(*) from capture_org c
         where c.queued <> (select count(*) from page_import_attempt a where a.organization_id = c.organization_id and a.queued_seq is not null)",
    )
    .await
}

/// The value of one sample line of `/metrics` (`name` with its labels).
async fn metric(app: &TestApp, name: &str) -> Option<f64> {
    app.metrics_text()
        .await
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// A 429 answers the refused create and writes nothing, and only that
/// organization is refused; a key refused may be used again later, a 202
/// already given is replayed, and a manual retry counts like a create.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_full_backlog_answers_429_with_retry_after_and_writes_nothing(pool: PgPool) {
    let app = app_with(pool.clone(), &[("CAPTURE_MAX_IN_FLIGHT", "1"), ("ORG_MAX_QUEUED", "2")]).await;
    let (full, other) = (app.tenant().await, app.tenant().await);
    let first = app.create_id(&full).await;
    let first_job = app.exactly_jobs(1).await.remove(0);
    assert_eq!(first_job.id, first);
    app.create_id(&full).await;
    let replayable = post_keyed(&app, &full, "second-queued").await;
    assert_eq!(replayable.status(), 202);
    let replayable: Value = replayable.json().await.unwrap();
    let rejected_before = metric(
        &app,
        r#"page_import_admission_rejected_total{reason="too_many_queued"}"#,
    )
    .await
    .unwrap_or(0.0);

    let written = "select (select count(*) from page_import) + (select count(*) from idempotency_key)
                   + (select count(*) from page_import_attempt) + (select sum(attempt) from page_import)
                   + (select count(*) from page_import_attempt where queued_seq is not null) + (select count(*) from outbox_message)";
    let before = count(&pool, written).await;
    let refused = post_keyed(&app, &full, "refused-then-later").await;
    assert_eq!(refused.status(), 429);
    let retry_after: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry_after >= 1);
    let body: Value = refused.json().await.unwrap();
    assert_problem_body(&body, 429, "too_many_queued");
    let unkeyed = app.post_json("/page-imports", &full.token, &import_body(&full)).await;
    assert_eq!(unkeyed.status(), 429, "the coalesced path is admitted too");
    assert_eq!(
        count(&pool, written).await,
        before,
        "no row, no queued message, no idempotency record"
    );
    let rejected = metric(
        &app,
        r#"page_import_admission_rejected_total{reason="too_many_queued"}"#,
    )
    .await;
    assert!(rejected.unwrap() >= rejected_before + 2.0);

    // A replay of the 202 is still a 202, full or not.
    let again = post_keyed(&app, &full, "second-queued").await;
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.json::<Value>().await.unwrap()["id"], replayable["id"]);

    // Another organization is not affected.
    let elsewhere = app.post_json("/page-imports", &other.token, &import_body(&other)).await;
    assert_eq!(elsewhere.status(), 202);

    // The first import fails; its manual retry would be a third queued attempt.
    app.end(&first_job).await;
    // The freed slot goes to the other organization (never dispatched to).
    let other_job = app.exactly_jobs(1).await.remove(0);
    let retry = app
        .http
        .post(app.url(&format!("/page-imports/{first}/retry")))
        .bearer_auth(&full.token)
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status(), 429, "a manual retry is admitted like a create");
    let (status, attempt): (String, i32) =
        sqlx::query_as("select status::text, attempt from page_import where id = $1")
            .bind(&first)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), attempt),
        ("2", 1),
        "the refused retry changed nothing"
    );

    // Once one of its attempts is dispatched, the refused key is accepted.
    app.end(&other_job).await;
    app.exactly_jobs(1).await;
    assert_eq!(post_keyed(&app, &full, "refused-then-later").await.status(), 202);
}

fn assert_problem_body(body: &Value, status: u16, code: &str) {
    assert_eq!(body["status"], status);
    assert_eq!(body["code"], code);
    assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()));
}

/// Concurrent creates of one organization, coalesced into shared statements
/// or not, never queue more than `ORG_MAX_QUEUED` between them.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn concurrent_creates_never_pass_the_queued_limit(pool: PgPool) {
    let app = app_with(
        pool.clone(),
        &[
            ("CAPTURE_MAX_IN_FLIGHT", "1"),
            ("ORG_MAX_QUEUED", "5"),
            ("DATABASE_COALESCE_SLOTS", "2"),
        ],
    )
    .await;
    let (holder, tenant) = (app.tenant().await, app.tenant().await);
    app.create_id(&holder).await;
    app.exactly_jobs(1).await;
    let posts = (0..20).map(|i| {
        let (app, tenant) = (&app, &tenant);
        async move {
            if i % 2 == 0 {
                post_keyed(app, tenant, &format!("key-{i}")).await.status().as_u16()
            } else {
                app.post_json("/page-imports", &tenant.token, &import_body(tenant))
                    .await
                    .status()
                    .as_u16()
            }
        }
    });
    let statuses = futures::future::join_all(posts).await;
    let accepted = statuses.iter().filter(|&&s| s == 202).count();
    let refused = statuses.iter().filter(|&&s| s == 429).count();
    assert_eq!((accepted, refused), (5, 15), "{statuses:?}");
    let queued = count(
        &pool,
        &format!(
            "select count(*) from page_import_attempt where organization_id = {} and queued_seq is not null",
            tenant.organization_id
        ),
    )
    .await;
    assert_eq!(queued, 5);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_backlog_metrics_are_exported(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "1")]).await;
    let tenant = app.tenant().await;
    for _ in 0..3 {
        app.create_id(&tenant).await;
    }
    let job = app.exactly_jobs(1).await.remove(0);
    let waits_before = metric(&app, "page_import_capture_queue_wait_seconds_count")
        .await
        .unwrap();
    app.end(&job).await;
    app.exactly_jobs(1).await;
    // The gauges are the process's, shared with the tests running beside
    // this one: each is there, the histogram counted this dispatch.
    let exported = eventually(Duration::from_secs(5), || async {
        metric(&app, "page_import_capture_queue_wait_seconds_count")
            .await
            .unwrap()
            > waits_before
            && metric(&app, "page_import_capture_in_flight").await.is_some()
            && metric(&app, "page_import_capture_queued").await.is_some()
    })
    .await;
    assert!(exported);
}

/// The race: many creates from many organizations on two replicas, while a
/// played fleet ends attempts at random moments (a third as retryable
/// failures, which queue a next attempt). What the fleet holds never exceeds
/// the limits, nor does what the database records as dispatched and not
/// ended, sampled all along; every attempt is dispatched exactly once; every
/// import ends.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn under_racing_creates_and_ends_the_limits_hold_and_every_attempt_runs_once(pool: PgPool) {
    const MAX: usize = 4;
    const PER_ORG: usize = 2;
    const ORGS: usize = 6;
    const PER_TENANT: usize = 8;
    let limits = [
        ("CAPTURE_MAX_IN_FLIGHT", "4"),
        ("CAPTURE_MAX_IN_FLIGHT_PER_ORG", "2"),
        ("CAPTURE_MAX_ATTEMPTS", "2"),
        ("CAPTURE_DISPATCH_INTERVAL_MS", "200"),
    ];
    let a = app_with(pool.clone(), &limits).await;
    let second_pool = PgPool::connect_with(pool.connect_options().as_ref().clone())
        .await
        .unwrap();
    let b = app_with(second_pool, &limits).await;
    let mut tenants = Vec::new();
    for _ in 0..ORGS {
        tenants.push(a.tenant().await);
    }
    let done = tokio_util::sync::CancellationToken::new();

    // What the database records as in flight: dispatched and not ended;
    // and, in the same moments, any organization whose queued count is not
    // its queue's rows (one statement, one snapshot: never, if exact).
    let sampler = async {
        let mut worst = (0i64, 0i64);
        let mut drifted = 0;
        while !done.is_cancelled() {
            drifted += count_drift(&pool).await;
            let (total, per_org): (i64, i64) = sqlx::query_as(
                "select coalesce(sum(n), 0)::int8, coalesce(max(n), 0)::int8 from (
                     select p.organization_id, count(*) as n
                     from page_import_attempt a join page_import p on p.id = a.page_import_id
                     where a.dispatched_at is not null and a.finished_at is null
                     group by p.organization_id) s",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            worst = (worst.0.max(total), worst.1.max(per_org));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        (worst, drifted)
    };

    // Creates from every organization at once, alternating replicas.
    let creates = async {
        let posts = (0..ORGS * PER_TENANT).map(|i| {
            let (app, tenant) = (if i % 2 == 0 { &a } else { &b }, &tenants[i % ORGS]);
            async move {
                tokio::time::sleep(Duration::from_millis(rand::random_range(0..500))).await;
                app.create_id(tenant).await
            }
        });
        futures::future::join_all(posts).await
    };

    // The played fleet: receives from both replicas' queues, holds each job
    // a random moment, then ends it.
    let holding: Mutex<HashMap<String, i64>> = Mutex::default();
    let (jobs_tx, mut jobs_rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
    let receiver = async {
        let mut received: HashSet<(String, i64)> = HashSet::new();
        let mut worst = (0usize, 0usize);
        while !done.is_cancelled() {
            let mut jobs = a.jobs_within(10, Duration::from_millis(50)).await;
            jobs.extend(b.jobs_within(10, Duration::from_millis(50)).await);
            for job in jobs {
                assert!(
                    received.insert((job.id.clone(), job.attempt)),
                    "dispatched twice: {job:?}"
                );
                let org = org_of(&pool, &job.id).await;
                let mut held = holding.lock().unwrap();
                held.insert(job.id.clone(), org);
                let of_org = held.values().filter(|&&o| o == org).count();
                worst = (worst.0.max(held.len()), worst.1.max(of_org));
                drop(held);
                jobs_tx.send(job).unwrap();
            }
        }
        (received, worst)
    };
    let ender = async {
        let mut ending = futures::stream::FuturesUnordered::new();
        loop {
            tokio::select! {
                job = jobs_rx.recv() => {
                    let Some(job) = job else { break };
                    let (holding, app) = (&holding, if job.attempt % 2 == 0 { &a } else { &b });
                    ending.push(async move {
                        tokio::time::sleep(Duration::from_millis(rand::random_range(0..80))).await;
                        // Let go before the callback: the fleet never counts
                        // an attempt whose slot may already be free.
                        holding.lock().unwrap().remove(&job.id);
                        let mut body = app.failed_body(&job, "ended at random");
                        body["retryable"] = Value::Bool(rand::random_bool(0.33));
                        assert_eq!(app.callback(&body).await.status(), 200);
                    });
                }
                Some(()) = futures::StreamExt::next(&mut ending), if !ending.is_empty() => {}
                () = done.cancelled() => break,
            }
        }
    };
    let watch = async {
        let ids = creates.await;
        let everything_ended = eventually(Duration::from_secs(90), || async {
            count(&pool, "select count(*) from page_import where status = '0'").await == 0
        })
        .await;
        done.cancel();
        (ids, everything_ended)
    };
    let ((ids, everything_ended), (received, fleet_worst), (db_worst, drifted), ()) =
        tokio::join!(watch, receiver, sampler, ender);

    assert!(everything_ended, "every import ended");
    assert_eq!(
        drifted, 0,
        "each organization's queued count was its queue's rows throughout"
    );
    assert_eq!(count_drift(&pool).await, 0, "and is at the end");
    assert!(
        fleet_worst.0 <= MAX && fleet_worst.1 <= PER_ORG,
        "the fleet held {fleet_worst:?}"
    );
    assert!(
        db_worst.0 <= MAX as i64 && db_worst.1 <= PER_ORG as i64,
        "the database saw in flight {db_worst:?}"
    );
    assert!(fleet_worst.0 == MAX, "the race reached the limit: {fleet_worst:?}");
    // Every attempt that ran was dispatched once, and only those.
    let attempts: Vec<(String, i32)> = sqlx::query_as("select id, attempt from page_import")
        .fetch_all(&pool)
        .await
        .unwrap();
    let expected: HashSet<(String, i64)> = attempts
        .iter()
        .flat_map(|(id, last)| (1..=i64::from(*last)).map(move |n| (id.clone(), n)))
        .collect();
    assert_eq!(attempts.len(), ids.len());
    assert_eq!(received, expected);
    assert!(received.len() > ids.len(), "some attempts were re-dispatched");
    b.stop().await;
}

/// When several slots free at once, one pass shares them out one attempt
/// per organization per round: the organization never dispatched to gets
/// every other slot, though the other's attempts are older.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn slots_freed_together_go_round_robin(pool: PgPool) {
    let app = app_with(pool, &[("CAPTURE_MAX_IN_FLIGHT", "4"), ("CAPTURE_TIMEOUT_SECS", "1")]).await;
    let (burst, other) = (app.tenant().await, app.tenant().await);
    for _ in 0..8 {
        app.create_id(&burst).await;
    }
    let first = app.exactly_jobs(4).await;
    let others = [app.create_id(&other).await, app.create_id(&other).await];
    // The four time out together: one sweep frees four slots at once.
    past_the_capture_timeout(&app.pool).await;
    assert_eq!(app.sweep().await, 4);
    let next = app.exactly_jobs(4).await;
    let to_other = next.iter().filter(|j| others.contains(&j.id)).count();
    assert_eq!(
        to_other, 2,
        "two of four slots to the organization with two queued: {next:?}"
    );
    assert!(
        next.iter().all(|j| j.attempt == 1),
        "the retries of the timed-out queue behind: {next:?}"
    );
    assert!(first.iter().all(|j| !others.contains(&j.id)));
}

/// A pass that has counted the slots holds off every other pass, of any
/// replica, until it commits: the other waits for the dispatch lock, then
/// counts the slot taken. (Two passes that both count first could each grant
/// a different attempt into the one free slot.)
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_pass_waits_for_the_pass_that_counted_before_it(pool: PgPool) {
    let app = app_with(pool.clone(), &[("CAPTURE_DISPATCH_INTERVAL_MS", "3600000")]).await;
    let tenants = [app.tenant().await, app.tenant().await];
    // Queued straight into the database: no request wakes the app's own
    // dispatcher, and its timer never runs during the test.
    for tenant in &tenants {
        sqlx::query(
            "insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height,
                                      nonce, created_by, updated_by)
             select gen_random_uuid()::text, $1, $2, 'https://example.com/', 1440, 900, 'n', 'test', 'test'
             from generate_series(1, 3)",
        )
        .bind(tenant.organization_id)
        .bind(tenant.project_id)
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::query(
        "insert into page_import_attempt (page_import_id, attempt, reason, started_by, organization_id, queued_seq)
         select id, 1, 'create', 'test', organization_id, nextval('page_import_queued_seq') from page_import",
    )
    .execute(&pool)
    .await
    .unwrap();
    // Counted as queued, as the statements that queue attempts count them.
    sqlx::query(
        "insert into capture_org (organization_id, queued, has_queued) select id, 3, true from organization
         on conflict (organization_id) do update set queued = capture_org.queued + 3, has_queued = true",
    )
    .execute(&pool)
    .await
    .unwrap();
    let limits = CaptureLimits {
        max_in_flight: 1,
        max_in_flight_per_org: 1,
        max_queued: 1000,
    };

    let mut first = pool.begin().await.unwrap();
    capture::lock_dispatch(&mut first).await.unwrap();
    assert_eq!(
        capture::in_flight_by_org(&mut first).await.unwrap(),
        vec![],
        "one free slot"
    );
    let other = tokio::spawn({
        let (pool, destination) = (pool.clone(), app.state.destination.clone());
        async move {
            let mut tx = pool.begin().await.unwrap();
            let granted = grant(&mut tx, rules(&destination, &limits), 10).await.unwrap();
            tx.commit().await.unwrap();
            granted.messages.len()
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !other.is_finished(),
        "the other pass waits while the first holds the count"
    );
    let granted = grant(&mut first, rules(&app.state.destination, &limits), 10)
        .await
        .unwrap();
    first.commit().await.unwrap();
    assert_eq!(granted.messages.len(), 1);
    assert_eq!(other.await.unwrap(), 0, "the other pass found the slot taken");
    assert_eq!(count(&pool, "select count(*) from capture_slot").await, 1);
}

/// A soft delete takes its import's row and its queued attempt's (which
/// leaves the queue), then its organization's backlog row; a pass holds the
/// organizations' rows, then takes queued attempts' rows. A pass that meets
/// the rows of an import being deleted skips them instead of waiting:
/// neither waits for the other, and the delete answers 204 (it was a
/// deadlock, a 500, when the pass waited).
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_pass_and_a_delete_of_the_same_queued_import_do_not_deadlock(pool: PgPool) {
    let app = one_slot_without_timer(pool.clone()).await;
    let tenant = app.tenant().await;
    app.create_id(&tenant).await;
    let queued = app.create_id(&tenant).await;
    app.exactly_jobs(1).await;

    // A pass that has locked the organization's row (as `grant` does
    // before it moves attempts) ...
    let mut pass = pool.begin().await.unwrap();
    capture::lock_orgs(&mut pass, &[tenant.organization_id]).await.unwrap();
    // ... while the import is deleted: the delete takes the import's row
    // out of the queue and then waits for the organization's row.
    let delete = {
        let (app, path, token) = (&app, format!("/page-imports/{queued}"), tenant.token.clone());
        async move { app.delete(&path, &token).await.status() }
    };
    let moved = async {
        assert!(
            app.waits_for_lock("set deleted_at = now(), deleted_by").await,
            "the delete waits for the pass"
        );
        // The pass now reaches that import's row: it skips it.
        let taken = capture::dispatch(
            &mut pass,
            &[capture::Picked {
                page_import_id: queued.clone(),
                attempt: 1,
                organization_id: tenant.organization_id,
            }],
        )
        .await
        .expect("no deadlock");
        pass.commit().await.unwrap();
        taken.taken.len()
    };
    let (status, moved) = tokio::join!(delete, moved);
    assert_eq!(status, 204);
    assert_eq!(moved, 0, "the import being deleted was not dispatched");
    assert_eq!(count_drift(&pool).await, 0, "the delete uncounted it");
    assert_eq!(count(&pool, "select count(*) from capture_slot").await, 1);
}

/// A pass releases the ended slots, then counts and grants. An import's next
/// attempt that commits in between (a retryable failure) is queued while its
/// ended attempt still holds the import's slot: the grant takes that slot
/// over. It was a unique violation that lost the whole pass's grants.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_next_attempt_committed_between_release_and_grant_takes_over_its_slot(pool: PgPool) {
    let app = app_with(
        pool.clone(),
        &[
            ("CAPTURE_MAX_ATTEMPTS", "3"),
            ("CAPTURE_DISPATCH_INTERVAL_MS", "3600000"),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    let id = app.create_id(&tenant).await;
    let first = app.exactly_jobs(1).await.remove(0);
    let limits = CaptureLimits {
        max_in_flight: 10,
        max_in_flight_per_org: 10,
        max_queued: 1000,
    };

    let mut pass = pool.begin().await.unwrap();
    capture::lock_dispatch(&mut pass).await.unwrap();
    assert_eq!(
        capture::release_ended_slots(&mut pass).await.unwrap(),
        0,
        "attempt 1 is live"
    );
    let mut retryable = app.failed_body(&first, "connection reset");
    retryable["retryable"] = true.into();
    let response = app.callback(&retryable).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let granted =
        page_import::service::dispatch::grant_free_slots(&mut pass, rules(&app.state.destination, &limits), 10)
            .await
            .expect("the grant of a pass that met a next attempt");
    pass.commit().await.unwrap();
    assert_eq!(granted.messages.len(), 1);
    assert_eq!(granted.messages[0].deduplication_id, format!("{id}:2"));
    let slots: Vec<(String, i32)> = sqlx::query_as("select page_import_id, attempt from capture_slot")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(slots, vec![(id, 2)]);
}

/// A pass whose release of ended slots started before a next attempt
/// committed takes the ended attempt's slot over for it: the slots in
/// flight stay as many. The pass counts them so (the gauge, `full`): it
/// counted the slot before the grant and once more for the grant, one high,
/// and the deployment full a slot early. Here: two slots, one import ended
/// (its slot released by this pass), the other's retryable failure
/// committed while the pass's release waits on the ended one's slot row.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_pass_that_took_over_a_slot_counts_it_once(pool: PgPool) {
    let app = app_with(
        pool.clone(),
        &[
            ("CAPTURE_MAX_IN_FLIGHT", "2"),
            ("CAPTURE_MAX_ATTEMPTS", "3"),
            ("CAPTURE_DISPATCH_INTERVAL_MS", "3600000"),
        ],
    )
    .await;
    let tenant = app.tenant().await;
    app.create_id(&tenant).await;
    app.create_id(&tenant).await;
    let jobs = app.exactly_jobs(2).await;
    let (ended, retried) = (&jobs[0], &jobs[1]);
    // One attempt ends in SQL: nothing wakes a pass, its slot waits for one.
    sqlx::query("update page_import set status = '2' where id = $1")
        .bind(&ended.id)
        .execute(&pool)
        .await
        .unwrap();
    // Its slot row held: the pass's release of ended slots waits for it.
    let mut holder = pool.begin().await.unwrap();
    sqlx::query("select 1 from capture_slot where page_import_id = $1 for update")
        .bind(&ended.id)
        .execute(&mut *holder)
        .await
        .unwrap();
    let pass = tokio::spawn({
        let dispatcher = app.state.dispatcher();
        async move { dispatcher.dispatch_once(10).await.unwrap() }
    });
    assert!(
        app.waits_for_lock("delete from capture_slot").await,
        "the pass's release waits for the ended slot's row"
    );
    // Meanwhile the other attempt fails, retryable: its next one is queued,
    // while its slot looked live to the release already under way.
    let mut retryable = app.failed_body(retried, "connection reset");
    retryable["retryable"] = true.into();
    let response = app.callback(&retryable).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    holder.rollback().await.unwrap();
    let pass = pass.await.unwrap();

    assert_eq!(pass.dispatched, 1, "{pass:?}");
    let slots: Vec<(String, i32)> = sqlx::query_as("select page_import_id, attempt from capture_slot")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(
        slots,
        vec![(retried.id.clone(), 2)],
        "the next attempt took the slot over"
    );
    assert_eq!(pass.in_flight, 1, "one slot in flight, counted once: {pass:?}");
    assert!(!pass.full, "one of two slots is free: {pass:?}");
}

/// The only queued attempt is held by a delete in progress: the pass picks
/// it, skips it, and ends instead of passing again and again until the
/// delete commits.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_pass_that_granted_nothing_because_its_candidates_were_locked_ends(pool: PgPool) {
    let app = one_slot_without_timer(pool.clone()).await;
    let tenant = app.tenant().await;
    let running = app.create_id(&tenant).await;
    let queued = app.create_id(&tenant).await;
    let job = app.exactly_jobs(1).await.remove(0);
    assert_eq!(job.id, running);
    // A delete in progress holds the queued attempt's row ...
    let mut delete = pool.begin().await.unwrap();
    sqlx::query("select 1 from page_import where id = $1 for update")
        .bind(&queued)
        .execute(&mut *delete)
        .await
        .unwrap();
    // ... when the running one ends and frees the only slot.
    sqlx::query("update page_import set status = '2' where id = $1")
        .bind(&running)
        .execute(&pool)
        .await
        .unwrap();
    let passes = tokio::time::timeout(Duration::from_secs(5), app.state.dispatcher().dispatch_all()).await;
    let pass = passes
        .expect("dispatch_all spun while the candidate was locked")
        .unwrap();
    assert_eq!((pass.picked, pass.dispatched), (1, 0), "{pass:?}");
    delete.rollback().await.unwrap();
    let pass = app.state.dispatcher().dispatch_all().await.unwrap();
    assert_eq!(pass.dispatched, 1, "dispatched once the lock is gone: {pass:?}");
}

/// SQS refuses a message as the sender's fault (here: longer than the
/// queue's `MaximumMessageSize`): its attempt ends failed,
/// `dispatch_rejected`, and its slot goes to the next import at once: the
/// publisher wakes the dispatcher, whose timer (an hour here) would be too
/// late. It was retried with backoff forever, holding the slot; then the
/// slot waited for the dispatcher's next tick.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_message_sqs_refuses_ends_its_attempt_dispatch_rejected_and_frees_its_slot(pool: PgPool) {
    let app = app_with(
        pool.clone(),
        &[
            ("CAPTURE_MAX_IN_FLIGHT_PER_ORG", "1"),
            ("CAPTURE_DISPATCH_INTERVAL_MS", "3600000"),
        ],
    )
    .await;
    app.sqs
        .set_queue_attributes()
        .queue_url(&app.page_import_queue_url)
        .attributes(aws_sdk_sqs::types::QueueAttributeName::MaximumMessageSize, "1024")
        .send()
        .await
        .unwrap();
    let tenant = app.tenant().await;
    let mut body = import_body(&tenant);
    body["sourceUrl"] = format!("https://example.com/{}", "a".repeat(1200)).into();
    let response = app.post_json("/page-imports", &tenant.token, &body).await;
    assert_eq!(response.status(), 202);
    let refused = response.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let next = app.create_id(&tenant).await;

    let ended = eventually(Duration::from_secs(30), || async {
        let import: Value = app
            .get(&format!("/page-imports/{refused}"), &tenant.token)
            .await
            .json()
            .await
            .unwrap();
        import["status"] == "failed"
    })
    .await;
    let outbox: Vec<(Option<String>, i32)> = sqlx::query_as("select last_error, attempts from outbox_message")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert!(ended, "the refused attempt ended; the outbox holds {outbox:?}");
    let import: Value = app
        .get(&format!("/page-imports/{refused}"), &tenant.token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        import["errorMessage"],
        "The capture job could not be queued: SQS refused its message (InvalidParameterValue)"
    );
    let outcome: String =
        sqlx::query_scalar("select outcome from page_import_attempt where page_import_id = $1 and attempt = 1")
            .bind(&refused)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(outcome, "dispatch_rejected");
    // Its slot went to the organization's next import.
    let jobs = app.jobs_within(1, Duration::from_secs(10)).await;
    assert_eq!(jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), [next.as_str()]);
    // Nothing is retried: the refused message left the outbox with its
    // attempt, and the next one's leaves once its publisher has deleted it
    // (which may come just after the message reached the queue).
    let left = eventually(Duration::from_secs(10), || async { app.outbox_len().await == 0 }).await;
    assert!(left, "nothing is retried");
    assert!(metric(&app, "page_import_dispatch_rejected_total").await.unwrap() >= 1.0);
}

/// The seed's `on update cascade` renames an organization everywhere, its
/// capture backlog included: its queued attempt is still dispatched.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_organization_whose_id_changes_keeps_its_backlog(pool: PgPool) {
    let app = app_with(pool.clone(), &[("CAPTURE_MAX_IN_FLIGHT", "1")]).await;
    let tenant = app.tenant().await;
    app.create_id(&tenant).await;
    let queued = app.create_id(&tenant).await;
    let running = app.exactly_jobs(1).await.remove(0);
    sqlx::query("update organization set id = id + 1000000 where id = $1")
        .bind(tenant.organization_id)
        .execute(&pool)
        .await
        .unwrap();
    app.end(&running).await;
    let next = app.jobs_within(1, Duration::from_secs(10)).await;
    assert_eq!(
        next.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        [queued.as_str()]
    );
}

/// How the tests' own passes grant: `limits`, the app's destination, a
/// minute's lease.
fn rules<'a>(destination: &'a CaptureDestination, limits: &'a CaptureLimits) -> GrantRules<'a> {
    GrantRules {
        limits,
        destination,
        lease: Duration::from_secs(60),
    }
}
