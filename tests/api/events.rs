//! `GET /page-imports/{id}` ETags and `GET /page-imports/{id}/events` (SSE)
//! (SPEC §6).

use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::process::{database_url_of, PrivateCluster, ServiceProcess};
use crate::helpers::worker::manifest;
use crate::helpers::*;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sse {
    pub(crate) event: String,
    pub(crate) id: Option<String>,
    data: String,
}

impl Sse {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

/// Reads events off a streaming response.
pub(crate) struct EventReader {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl EventReader {
    pub(crate) fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    /// The next event; `None` when the stream ended. Panics after `within`.
    pub(crate) async fn next(&mut self, within: Duration) -> Option<Sse> {
        tokio::time::timeout(within, async {
            loop {
                while let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let mut event = Sse {
                        event: "message".into(),
                        id: None,
                        data: String::new(),
                    };
                    let mut any = false;
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            event.event = v.trim().into();
                            any = true;
                        } else if let Some(v) = line.strip_prefix("id:") {
                            event.id = Some(v.trim().into());
                        } else if let Some(v) = line.strip_prefix("data:") {
                            event.data.push_str(v.trim_start());
                            any = true;
                        }
                    }
                    if any {
                        return Some(event);
                    }
                }
                match self.stream.next().await {
                    Some(Ok(chunk)) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                    Some(Err(_)) | None => return None,
                }
            }
        })
        .await
        .expect("no event in time")
    }
}

pub(crate) async fn follow(app_http: &reqwest::Client, url: String, token: &str) -> EventReader {
    EventReader::new(app_http.get(url).bearer_auth(token).send().await.unwrap())
}

const SOON: Duration = Duration::from_secs(5);
/// Streams re-read their rows only when notified (and on a reconnect): the
/// periodic re-read waits an hour.
fn no_reread() -> (&'static str, String) {
    ("EVENTS_REREAD_INTERVAL_MS", "3600000".to_owned())
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn get_answers_a_strong_etag_and_304_while_it_is_current(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let path = format!("/page-imports/{}", job.id);

    let first = app.get(&path, &tenant.token).await;
    assert_eq!(first.status(), 200);
    let tag = first.headers()["etag"].to_str().unwrap().to_owned();
    assert!(
        tag.starts_with('"') && tag.ends_with('"') && !tag.starts_with("W/"),
        "{tag}"
    );

    let again = app
        .http
        .get(app.url(&path))
        .bearer_auth(&tenant.token)
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], tag.as_str());
    assert!(again.bytes().await.unwrap().is_empty(), "304 has no body");

    // The worker's callback changes the resource, and so its tag.
    let body = app.upload_capture(&job, manifest(&job)).await;
    assert_eq!(app.callback(&body).await.status(), 200);
    let after = app
        .http
        .get(app.url(&path))
        .bearer_auth(&tenant.token)
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 200);
    let new_tag = after.headers()["etag"].to_str().unwrap().to_owned();
    assert_ne!(new_tag, tag);
    assert_eq!(after.json::<Value>().await.unwrap()["status"], "completed");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn an_invisible_import_is_404_whatever_if_none_match_says(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let owner = app.tenant().await;
    let stranger = app.tenant().await;
    let id = app.create_import(&owner).await["id"].as_str().unwrap().to_owned();
    for tag in ["*", "\"anything\""] {
        let response = app
            .http
            .get(app.url(&format!("/page-imports/{id}")))
            .bearer_auth(&stranger.token)
            .header("if-none-match", tag)
            .send()
            .await
            .unwrap();
        expect_problem(response, 404, "not_found").await;
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn events_start_with_the_resource_deliver_a_change_and_end_after_a_terminal_status(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let path = format!("/page-imports/{}", job.id);
    let mut events = follow(&app.http, app.url(&format!("{path}/events")), &tenant.token).await;

    let first = events.next(SOON).await.unwrap();
    assert_eq!(first.event, "page_import");
    let current = app.get(&path, &tenant.token).await;
    assert_eq!(
        first.id.as_deref(),
        Some(current.headers()["etag"].to_str().unwrap()),
        "id is the ETag, quotes included"
    );
    assert_eq!(first.json(), current.json::<Value>().await.unwrap());
    assert_eq!(first.json()["status"], "processing");

    let body = app.upload_capture(&job, manifest(&job)).await;
    assert_eq!(app.callback(&body).await.status(), 200);
    let changed = events.next(SOON).await.unwrap();
    assert_eq!(changed.event, "page_import");
    assert_eq!(changed.json()["status"], "completed");
    assert_ne!(changed.id, first.id);
    assert_eq!(events.next(SOON).await, None, "the stream ends after a terminal status");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn events_of_a_terminal_import_are_one_event_and_the_end(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    assert_eq!(app.callback(&app.failed_body(&job, "boom")).await.status(), 200);
    let mut events = follow(
        &app.http,
        app.url(&format!("/page-imports/{}/events", job.id)),
        &tenant.token,
    )
    .await;
    assert_eq!(events.next(SOON).await.unwrap().json()["status"], "failed");
    assert_eq!(events.next(SOON).await, None);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_delete_ends_the_stream_with_a_deleted_event(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let id = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    app.wait_dispatched(&id).await;
    let mut events = follow(&app.http, app.url(&format!("/page-imports/{id}/events")), &tenant.token).await;
    events.next(SOON).await.unwrap();
    assert_eq!(
        app.delete(&format!("/page-imports/{id}"), &tenant.token).await.status(),
        204
    );
    let deleted = events.next(SOON).await.unwrap();
    assert_eq!(deleted.event, "deleted");
    assert_eq!(deleted.json(), json!({"id": id}));
    assert_eq!(events.next(SOON).await, None);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn events_need_a_token_and_a_visible_import(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let owner = app.tenant().await;
    let stranger = app.tenant().await;
    let id = app.create_import(&owner).await["id"].as_str().unwrap().to_owned();
    let url = app.url(&format!("/page-imports/{id}/events"));
    expect_problem(app.http.get(&url).send().await.unwrap(), 401, "unauthorized").await;
    expect_problem(
        app.get(&format!("/page-imports/{id}/events"), &stranger.token).await,
        404,
        "not_found",
    )
    .await;
    expect_problem(
        app.get(
            "/page-imports/0193ffff-0000-7000-8000-000000000000/events",
            &owner.token,
        )
        .await,
        404,
        "not_found",
    )
    .await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn beyond_events_max_streams_is_503_and_an_ended_stream_frees_its_slot(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool, vec![("EVENTS_MAX_STREAMS", "1".into())]).await;
    let tenant = app.tenant().await;
    let job = app.job(&tenant).await;
    let url = format!("/page-imports/{}/events", job.id);
    let mut events = follow(&app.http, app.url(&url), &tenant.token).await;
    events.next(SOON).await.unwrap();

    let refused = app.get(&url, &tenant.token).await;
    assert!(refused.headers().contains_key("retry-after"));
    expect_problem(refused, 503, "too_many_streams").await;

    assert_eq!(app.callback(&app.failed_body(&job, "boom")).await.status(), 200);
    events.next(SOON).await.unwrap();
    assert_eq!(events.next(SOON).await, None);
    assert!(
        eventually(SOON, || async { app.state.changes.open_streams() == 0 }).await,
        "the ended stream gave its slot back"
    );
    let mut again = follow(&app.http, app.url(&url), &tenant.token).await;
    assert_eq!(again.next(SOON).await.unwrap().json()["status"], "failed");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_change_committed_by_another_replica_reaches_the_stream(pool: PgPool) {
    let database_url = database_url_of(&pool);
    // No periodic re-read during the test: only the other replica's
    // notification can deliver the change.
    let app = TestApp::spawn_with_env(pool, vec![no_reread()]).await;
    let tenant = app.tenant().await;
    let id = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    app.wait_dispatched(&id).await;
    let mut events = follow(&app.http, app.url(&format!("/page-imports/{id}/events")), &tenant.token).await;
    events.next(SOON).await.unwrap();

    let other = ServiceProcess::start(&app, &database_url, &[]);
    let deleted = app
        .http
        .delete(other.url(&format!("/page-imports/{id}")))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(events.next(SOON).await.unwrap().event, "deleted");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_stream_open_across_a_database_restart_still_sees_the_next_change(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let cluster = PrivateCluster::start();
    let subject = "restart-user";
    let (org, project) = cluster.migrate_and_seed(subject).await;
    let service = ServiceProcess::start(&app, &cluster.url(), &[]);
    let token = token_for(subject);
    let tenant = Tenant {
        organization_id: org,
        project_id: project,
        subject: subject.into(),
        token: token.clone(),
    };
    let created: Value = app
        .http
        .post(service.url("/page-imports"))
        .bearer_auth(&token)
        .json(&import_body(&tenant))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    crate::helpers::wait_dispatched_in(&PgPool::connect(&cluster.url()).await.unwrap(), &id).await;
    let mut events = follow(&app.http, service.url(&format!("/page-imports/{id}/events")), &token).await;
    assert_eq!(events.next(SOON).await.unwrap().json()["status"], "processing");

    cluster.stop();
    cluster.resume();
    // The change is committed by another client, after the restart.
    let writer = PgPool::connect(&cluster.url()).await.unwrap();
    sqlx::query(
        "update page_import set status = '2', error_message = 'changed after the restart',
                updated_at = now(), updated_by = 'test' where id = $1",
    )
    .bind(&id)
    .execute(&writer)
    .await
    .unwrap();
    let changed = tokio::time::timeout(Duration::from_secs(20), events.next(Duration::from_secs(21))).await;
    let changed = changed.unwrap_or_else(|_| panic!("no event after the restart:\n{}", service.log_text()));
    assert_eq!(changed.unwrap().json()["errorMessage"], "changed after the restart");
    assert_eq!(events.next(SOON).await, None);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn sigterm_ends_open_streams_and_the_process_exits(pool: PgPool) {
    let database_url = database_url_of(&pool);
    let app = TestApp::spawn(pool).await;
    let tenant = app.tenant().await;
    let id = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    app.wait_dispatched(&id).await;
    let mut service = ServiceProcess::start(&app, &database_url, &[]);
    let mut events = follow(
        &app.http,
        service.url(&format!("/page-imports/{id}/events")),
        &tenant.token,
    )
    .await;
    events.next(SOON).await.unwrap();
    service.sigterm();
    assert_eq!(events.next(SOON).await, None, "the stream ended");
    assert_eq!(service.wait_exit(Duration::from_secs(10)), Some(0));
}

/// Fails import `id` by hand, the way an operator would, in SQL: no
/// notification is sent for it, as when a replica dies between its commit
/// and its notification.
async fn fail_without_notification(pool: &PgPool, id: &str, message: &str) {
    sqlx::query(
        "update page_import set status = '2', error_message = $2, updated_at = now(), updated_by = 'test'
         where id = $1",
    )
    .bind(id)
    .bind(message)
    .execute(pool)
    .await
    .unwrap();
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_change_whose_notification_was_lost_reaches_the_stream_on_the_reread_timer(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), vec![("EVENTS_REREAD_INTERVAL_MS", "300".to_owned())]).await;
    let tenant = app.tenant().await;
    let id = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
    app.wait_dispatched(&id).await;
    let mut events = follow(&app.http, app.url(&format!("/page-imports/{id}/events")), &tenant.token).await;
    assert_eq!(events.next(SOON).await.unwrap().json()["status"], "processing");

    fail_without_notification(&pool, &id, "never announced").await;
    let event = events.next(SOON).await.unwrap();
    assert_eq!(event.json()["errorMessage"], "never announced");
    // Re-reads that find the row unchanged send nothing: the stream ended
    // after its terminal event, with no repeat of it.
    assert_eq!(events.next(SOON).await, None);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_listener_reconnect_rereads_every_open_stream(pool: PgPool) {
    let app = TestApp::spawn_with_env(pool.clone(), vec![no_reread()]).await;
    let tenant = app.tenant().await;
    let mut streams = Vec::new();
    for _ in 0..2 {
        let id = app.create_import(&tenant).await["id"].as_str().unwrap().to_owned();
        app.wait_dispatched(&id).await;
        let mut events = follow(&app.http, app.url(&format!("/page-imports/{id}/events")), &tenant.token).await;
        assert_eq!(events.next(SOON).await.unwrap().json()["status"], "processing");
        streams.push((id, events));
    }
    for (id, _) in &streams {
        fail_without_notification(&pool, id, "changed while nobody was told").await;
    }
    // Nothing tells the streams yet: no notification, no periodic re-read.
    for (_, events) in &mut streams {
        assert!(
            tokio::time::timeout(Duration::from_secs(1), events.next(SOON))
                .await
                .is_err(),
            "a stream saw an unannounced change without a reconnect"
        );
    }

    // The listener's connection is cut; it reconnects and every stream re-reads.
    let cut: Vec<i32> = sqlx::query_scalar(
        "select pg_terminate_backend(pid)::int from pg_stat_activity
         where query ilike 'listen %' and datname = current_database() and pid <> pg_backend_pid()",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(cut, vec![1], "one listening connection, cut");
    for (_, events) in &mut streams {
        assert_eq!(
            events.next(SOON).await.unwrap().json()["errorMessage"],
            "changed while nobody was told"
        );
    }
}
