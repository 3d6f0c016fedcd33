//! Test harness: the real service on a loopback port, over a per-test
//! database (`#[sqlx::test]`) and per-test queues and bucket on the emulator
//! named by `AWS_ENDPOINT_URL` (started by `scripts/test`).

pub mod capture;
pub mod chromium;
pub mod dns;
pub mod locks;
pub mod manifest;
pub mod pixels;
pub mod press;
pub mod process;
pub mod proxy;
pub mod worker;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use page_import::auth::mint_token;
use page_import::config::Config;
use page_import::server;
use page_import::state::AppState;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

pub const ISSUER: &str = "https://cognito-idp.test.example.com/pool";
pub const AUDIENCE: &str = "page-import-tests";
pub const WEBHOOK_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub const DEV_KID: &str = "page-import-dev";

pub fn repo_path(rel: &str) -> String {
    format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// A loopback port nothing listens on now (for a process the test starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The body of a GET of `url`, as text.
pub async fn text_of(http: &reqwest::Client, url: &str) -> String {
    http.get(url).send().await.unwrap().text().await.unwrap()
}

pub fn aws_endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL must point at the emulator (run scripts/test)")
}

/// Knobs a test may turn before the app starts.
#[derive(Default)]
pub struct Options {
    /// Extra or overriding environment variables.
    pub env: Vec<(&'static str, String)>,
    /// Point the AWS clients here instead of the emulator.
    pub aws_endpoint: Option<String>,
    /// Use a FIFO capture queue.
    pub fifo: bool,
}

pub struct TestApp {
    pub addr: SocketAddr,
    pub http: reqwest::Client,
    pub pool: PgPool,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub page_import_queue_url: String,
    pub code2des_queue_url: String,
    pub bucket: String,
    pub state: AppState,
    shutdown: CancellationToken,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// One organization with one project and one member.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub organization_id: i64,
    pub project_id: i64,
    pub subject: String,
    pub token: String,
}

impl TestApp {
    pub async fn spawn(pool: PgPool) -> Self {
        Self::spawn_with(pool, Options::default()).await
    }

    /// With extra or overriding environment variables.
    pub async fn spawn_with_env(pool: PgPool, env: Vec<(&'static str, String)>) -> Self {
        Self::spawn_with(
            pool,
            Options {
                env,
                ..Default::default()
            },
        )
        .await
    }

    pub async fn spawn_with(pool: PgPool, options: Options) -> Self {
        let aws = page_import::aws::clients(true, Some(&aws_endpoint())).await;
        let suffix = Uuid::new_v4().simple().to_string();
        let (capture_name, fifo_attrs) = if options.fifo {
            (format!("capture-{suffix}.fifo"), true)
        } else {
            (format!("capture-{suffix}"), false)
        };
        let mut create = aws.sqs.create_queue().queue_name(&capture_name);
        if fifo_attrs {
            create = create.attributes(QueueAttributeName::FifoQueue, "true");
        }
        let page_import_queue_url = create.send().await.expect("create capture queue").queue_url.unwrap();
        let code2des_queue_url = aws
            .sqs
            .create_queue()
            .queue_name(format!("code2des-{suffix}"))
            .send()
            .await
            .expect("create code2des queue")
            .queue_url
            .unwrap();
        let bucket = format!("artifacts-{suffix}");
        aws.s3
            .create_bucket()
            .bucket(&bucket)
            .send()
            .await
            .expect("create bucket");

        let mut env: HashMap<&str, String> = HashMap::from([
            ("DATABASE_URL", "postgres://unused-the-pool-is-given".to_owned()),
            ("PAGE_IMPORT_QUEUE_URL", page_import_queue_url.clone()),
            ("CODE2DES_QUEUE_URL", code2des_queue_url.clone()),
            ("ARTIFACT_BUCKET", bucket.clone()),
            ("S3_FORCE_PATH_STYLE", "true".to_owned()),
            ("WEBHOOK_SECRET", WEBHOOK_SECRET.to_owned()),
            ("AUTH_JWKS_URL", format!("file://{}", repo_path("dev/jwks.json"))),
            ("AUTH_ISSUER", ISSUER.to_owned()),
            ("AUTH_AUDIENCE", AUDIENCE.to_owned()),
            ("SOURCE_URL_DNS_CHECK", "false".to_owned()),
            ("OUTBOX_RELAY_INTERVAL_MS", "100".to_owned()),
            ("OUTBOX_MAX_BACKOFF_MS", "1000".to_owned()),
            ("OUTBOX_LEASE_MS", "3000".to_owned()),
            ("SWEEPER_INTERVAL_MS", "3600000".to_owned()),
            // Erasure passes are run by the tests that need them.
            ("ERASE_INTERVAL_SECS", "3600".to_owned()),
            ("LOG_FORMAT", "pretty".to_owned()),
        ]);
        // Bound first, so the queue messages' callback URL is this server's.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        env.insert("PUBLIC_BASE_URL", format!("http://{addr}"));
        for (k, v) in options.env {
            env.insert(k, v);
        }
        let config = Config::from_lookup(|k| env.get(k).cloned()).expect("test config");
        let app_aws = match &options.aws_endpoint {
            Some(endpoint) => page_import::aws::clients(true, Some(endpoint)).await,
            None => page_import::aws::clients(true, Some(&aws_endpoint())).await,
        };
        let state = AppState::from_parts(config, pool.clone(), app_aws).expect("app state");

        let shutdown = CancellationToken::new();
        let server = tokio::spawn(server::serve(state.clone(), listener, shutdown.clone()));
        Self {
            addr,
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            pool,
            sqs: aws.sqs,
            s3: aws.s3,
            page_import_queue_url,
            code2des_queue_url,
            bucket,
            state,
            shutdown,
            server: Some(server),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops serving and every background task (dispatcher, relay, …) but
    /// keeps the app's queues, bucket and clients: for tests whose service
    /// is a process of its own, which this one must not race.
    pub async fn halt(&mut self) {
        self.shutdown.cancel();
        if let Some(server) = self.server.take() {
            server.await.unwrap().unwrap();
        }
    }

    /// Stops the server gracefully and waits for it and its background tasks.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(server) = self.server.take() {
            server.await.unwrap().unwrap();
        }
    }

    /// A new organization, project and member with a valid token.
    pub async fn tenant(&self) -> Tenant {
        let subject = format!("user-{}", Uuid::new_v4().simple());
        self.tenant_for(&subject).await
    }

    pub async fn tenant_for(&self, subject: &str) -> Tenant {
        let organization_id: i64 = sqlx::query_scalar("insert into organization (name) values ('org') returning id")
            .fetch_one(&self.pool)
            .await
            .unwrap();
        let project_id: i64 =
            sqlx::query_scalar("insert into project (organization_id, name) values ($1, 'project') returning id")
                .bind(organization_id)
                .fetch_one(&self.pool)
                .await
                .unwrap();
        sqlx::query("insert into organization_member (organization_id, subject) values ($1, $2)")
            .bind(organization_id)
            .bind(subject)
            .execute(&self.pool)
            .await
            .unwrap();
        Tenant {
            organization_id,
            project_id,
            subject: subject.to_owned(),
            token: token_for(subject),
        }
    }

    pub async fn post_json(&self, path: &str, token: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn create_import(&self, tenant: &Tenant) -> Value {
        let response = self
            .post_json("/page-imports", &tenant.token, &import_body(tenant))
            .await;
        assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
        response.json().await.unwrap()
    }

    pub async fn get(&self, path: &str, token: &str) -> reqwest::Response {
        self.http.get(self.url(path)).bearer_auth(token).send().await.unwrap()
    }

    pub async fn delete(&self, path: &str, token: &str) -> reqwest::Response {
        self.http
            .delete(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    /// Receives (and deletes) messages from a queue until `n` arrived or 20 s passed.
    pub async fn receive(&self, queue_url: &str, n: usize) -> Vec<Value> {
        self.receive_within(queue_url, n, Duration::from_secs(20)).await
    }

    /// Like [`receive`](Self::receive), with its own deadline.
    pub async fn receive_within(&self, queue_url: &str, n: usize, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        let mut bodies = Vec::new();
        while bodies.len() < n && Instant::now() < deadline {
            let out = self
                .sqs
                .receive_message()
                .queue_url(queue_url)
                .max_number_of_messages(10)
                .wait_time_seconds(1)
                .send()
                .await
                .unwrap();
            for message in out.messages() {
                bodies.push(serde_json::from_str(message.body().unwrap()).unwrap());
                self.sqs
                    .delete_message()
                    .queue_url(queue_url)
                    .receipt_handle(message.receipt_handle().unwrap())
                    .send()
                    .await
                    .unwrap();
            }
        }
        bodies
    }

    /// Waits until SQS accepted the current attempt's message of import `id`
    /// (its `dispatchedAt`, SPEC §12), so that the change no longer comes
    /// while a test watches for another.
    pub async fn wait_dispatched(&self, id: &str) {
        wait_dispatched_in(&self.pool, id).await;
    }

    /// The text of `/metrics` on the main listener.
    pub async fn metrics_text(&self) -> String {
        text_of(&self.http, &self.url("/metrics")).await
    }

    /// The nonce stored for an import (tests only; the API never shows it).
    pub async fn nonce_of(&self, id: &str) -> String {
        sqlx::query_scalar("select nonce from page_import where id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// One sweeper pass now (SPEC §7 "Sweeper"): returns how many attempts
    /// it timed out.
    pub async fn sweep(&self) -> usize {
        self.state.sweeper().sweep_once().await.unwrap()
    }

    pub async fn outbox_len(&self) -> i64 {
        sqlx::query_scalar("select count(*) from outbox_message")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }
}

pub fn token_for(subject: &str) -> String {
    mint(
        subject,
        ISSUER,
        AUDIENCE,
        &repo_path("dev/dev-jwt-private.pem"),
        DEV_KID,
    )
}

pub fn mint(subject: &str, issuer: &str, audience: &str, key_path: &str, kid: &str) -> String {
    let pem = std::fs::read(key_path).unwrap();
    mint_token(&pem, kid, subject, issuer, audience, Duration::from_secs(600)).unwrap()
}

/// Signs arbitrary claims with the dev key (for expired, not-yet-valid, … tokens).
pub fn mint_claims(claims: &Value, alg: jsonwebtoken::Algorithm) -> String {
    let mut header = jsonwebtoken::Header::new(alg);
    header.kid = Some(DEV_KID.into());
    let key = match alg {
        jsonwebtoken::Algorithm::HS256 => jsonwebtoken::EncodingKey::from_secret(b"guessable"),
        _ => jsonwebtoken::EncodingKey::from_rsa_pem(&std::fs::read(repo_path("dev/dev-jwt-private.pem")).unwrap())
            .unwrap(),
    };
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

pub fn import_body(tenant: &Tenant) -> Value {
    json!({
        "organizationId": tenant.organization_id,
        "projectId": tenant.project_id,
        "sourceUrl": "https://Example.COM:443/a/../pricing#plans",
        "viewport": {"width": 1440, "height": 900, "deviceScaleFactor": 2.0},
        "readySelector": "#app",
    })
}

pub fn assert_problem(headers: &HeaderMap, body: &Value, status: u16, code: &str) {
    assert_eq!(
        headers.get("content-type"),
        Some(&HeaderValue::from_static("application/problem+json")),
        "{body}"
    );
    assert_eq!(body["status"], status, "{body}");
    assert_eq!(body["code"], code, "{body}");
    for field in ["type", "title", "detail"] {
        assert!(body[field].is_string(), "problem lacks {field}: {body}");
    }
}

/// Asserts the response is the given problem and returns its body.
pub async fn expect_problem(response: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(response.status(), status);
    let headers = response.headers().clone();
    let body: Value = response.json().await.unwrap();
    assert_problem(&headers, &body, status, code);
    body
}

/// Polls `check` until it is true or `timeout` passes.
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// [`TestApp::wait_dispatched`] in the database behind `pool`, for a
/// service process that runs on a cluster of its own.
pub async fn wait_dispatched_in(pool: &PgPool, id: &str) {
    let dispatched = eventually(Duration::from_secs(10), || async {
        sqlx::query_scalar::<_, bool>(
            "select a.dispatched_at is not null from page_import p
             join page_import_attempt a on a.page_import_id = p.id and a.attempt = p.attempt
             where p.id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await
        .unwrap()
        .unwrap_or(false)
    })
    .await;
    assert!(dispatched, "import {id} was not dispatched within 10 s");
}
