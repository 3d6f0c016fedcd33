//! One trace per attempt across the pipeline (SPEC §9): W3C `traceparent`
//! continued or started on creates and retries, carried as the capture
//! message's SQS attribute, continued by the worker and back on its
//! callback, and exported over OTLP/HTTP without ever holding anything up.
//!
//! The service runs as its own process (`ServiceProcess`): spans, their ids
//! and their export are process-wide. The in-process `TestApp` only lends
//! its queues and bucket, and is halted so that every message is the
//! process's.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::process::{database_url_of, ServiceProcess};
use crate::helpers::worker::Job;
use crate::helpers::{eventually, import_body, Tenant, TestApp};

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn traceparent(trace_id: &str) -> String {
    format!("00-{trace_id}-00f067aa0ba902b7-01")
}

fn random_trace_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A capture message as a worker receives it: its body and its
/// `traceparent` attribute.
struct Message {
    body: Value,
    traceparent: Option<String>,
}

impl Message {
    fn trace_id(&self) -> &str {
        let tp = self.traceparent.as_deref().expect("the message carries a traceparent");
        assert!(
            page_import_platform::telemetry::trace_context::parse(tp).is_some(),
            "a valid traceparent: {tp}"
        );
        &tp[3..35]
    }

    fn job(&self) -> Job {
        Job {
            id: self.body["pageImportId"].as_str().unwrap().to_owned(),
            attempt: self.body["attempt"].as_i64().unwrap(),
            nonce: self.body["nonce"].as_str().unwrap().to_owned(),
        }
    }
}

/// The next capture message of import `id` at `attempt` (others are left to
/// their tests: there are none on this test's own queue).
async fn message_of(app: &TestApp, id: &str, attempt: i64) -> Message {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let out = app
            .sqs
            .receive_message()
            .queue_url(&app.page_import_queue_url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        for m in out.messages() {
            app.sqs
                .delete_message()
                .queue_url(&app.page_import_queue_url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
            let body: Value = serde_json::from_str(m.body().unwrap()).unwrap();
            if body["pageImportId"] == id && body["attempt"] == attempt {
                let traceparent = m
                    .message_attributes()
                    .and_then(|a| a.get("traceparent"))
                    .and_then(|v| v.string_value().map(str::to_owned));
                return Message { body, traceparent };
            }
        }
    }
    panic!("no message for {id} attempt {attempt}");
}

async fn create(service: &ServiceProcess, tenant: &Tenant, traceparent: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(service.url("/page-imports"))
        .bearer_auth(&tenant.token)
        .json(&import_body(tenant));
    if let Some(tp) = traceparent {
        request = request.header("traceparent", tp);
    }
    request.send().await.unwrap()
}

async fn created_id(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    body["id"].as_str().unwrap().to_owned()
}

/// The JSON log lines of `log` whose `trace_id` is `trace_id`.
fn lines_of_trace(log: &str, trace_id: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["trace_id"] == trace_id)
        .collect()
}

/// The sum of a counter's series in a Prometheus text whose labels contain
/// `label`; 0 when there is none.
fn counter(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn metrics_of(service: &ServiceProcess) -> String {
    reqwest::get(service.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A halted in-process app (its queues, bucket and a tenant) and the
/// service as a process of its own on them, with `env`.
async fn service_process(pool: &PgPool, env: &[(&str, &str)]) -> (TestApp, Tenant, ServiceProcess) {
    let mut app = TestApp::spawn(pool.clone()).await;
    let tenant = app.tenant().await;
    app.halt().await;
    let service = ServiceProcess::start(&app, &database_url_of(pool), env);
    (app, tenant, service)
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_create_with_a_traceparent_continues_its_trace_to_the_message_and_the_logs(pool: PgPool) {
    let (app, tenant, service) = service_process(&pool, &[]).await;

    let id = created_id(create(&service, &tenant, Some(&traceparent(CALLER_TRACE))).await).await;
    let message = message_of(&app, &id, 1).await;
    assert_eq!(
        message.trace_id(),
        CALLER_TRACE,
        "the message continues the caller's trace"
    );
    assert_ne!(
        message.traceparent.as_deref(),
        Some(traceparent(CALLER_TRACE).as_str()),
        "as a child span of the service's, not the caller's own span"
    );
    assert_eq!(message.body["schemaVersion"], 1);
    assert!(message.body.get("traceparent").is_none(), "the body is unchanged");

    let lines = lines_of_trace(&service.log_text(), CALLER_TRACE);
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "page import created" && l["page_import_id"] == id.as_str()),
        "the service's log line of the create carries the trace id: {lines:?}\n{}",
        service.log_text()
    );
    assert!(lines
        .iter()
        .all(|l| l["span_id"].as_str().is_some_and(|s| s.len() == 16)));
    let request_id = lines.iter().find_map(|l| l["span"]["request_id"].as_str());
    assert!(request_id.is_some(), "the request id stays: {lines:?}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_missing_or_invalid_traceparent_starts_a_new_trace_and_the_create_is_accepted(pool: PgPool) {
    let (app, tenant, service) = service_process(&pool, &[]).await;
    let cases: [(&str, Option<String>); 4] = [
        ("no header", None),
        ("garbage", Some("garbage".to_owned())),
        (
            "all-zero trace id",
            Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01".to_owned()),
        ),
        ("version ff", Some(format!("ff-{CALLER_TRACE}-00f067aa0ba902b7-01"))),
    ];
    let mut seen = Vec::new();
    for (case, header) in cases {
        let id = created_id(create(&service, &tenant, header.as_deref()).await).await;
        let message = message_of(&app, &id, 1).await;
        let trace = message.trace_id().to_owned();
        assert_ne!(trace, CALLER_TRACE, "{case}: an invalid header is not continued");
        assert_ne!(trace, "0".repeat(32), "{case}");
        assert!(!seen.contains(&trace), "{case}: a trace of its own");
        let logged = eventually(Duration::from_secs(5), || async {
            !lines_of_trace(&service.log_text(), &trace).is_empty()
        })
        .await;
        assert!(logged, "{case}: the service's log lines carry the new trace");
        seen.push(trace);
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_retry_continues_its_requests_trace_and_a_redispatch_starts_one_linked_to_the_create(pool: PgPool) {
    let collector = Collector::start().await;
    let (app, tenant, service) = service_process(&pool, &collector.env()).await;

    let id = created_id(create(&service, &tenant, Some(&traceparent(CALLER_TRACE))).await).await;
    let first = message_of(&app, &id, 1).await;
    let mut failed = app.failed_body(&first.job(), "the page said no");
    failed["retryable"] = json!(false);
    let from_worker = first.traceparent.as_deref();
    assert_eq!(
        app.callback_to(&service.base_url, &failed, from_worker).await.status(),
        200
    );

    let retry_trace = random_trace_id();
    let response = reqwest::Client::new()
        .post(service.url(&format!("/page-imports/{id}/retry")))
        .bearer_auth(&tenant.token)
        .header("traceparent", traceparent(&retry_trace))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let second = message_of(&app, &id, 2).await;
    assert_eq!(
        second.trace_id(),
        retry_trace,
        "a manual retry continues the retry request's trace"
    );

    // A retryable failure, called back in attempt 2's trace as a worker
    // does: the next attempt is re-dispatched in a trace of its own, linked
    // to the one that created the import.
    let mut transient = app.failed_body(&second.job(), "the network blinked");
    transient["retryable"] = json!(true);
    let from_worker = second.traceparent.as_deref();
    assert_eq!(
        app.callback_to(&service.base_url, &transient, from_worker)
            .await
            .status(),
        200
    );
    let third = message_of(&app, &id, 3).await;
    let redispatch_trace = third.trace_id().to_owned();
    assert!(
        ![CALLER_TRACE, retry_trace.as_str()].contains(&redispatch_trace.as_str()),
        "a re-dispatch has a trace of its own, not the create's or the failed attempt's"
    );
    let recorded: Vec<(i32, Option<String>)> = sqlx::query_as(
        "select attempt, traceparent from page_import_attempt where page_import_id = $1 order by attempt",
    )
    .bind(&id)
    .fetch_all(&pool)
    .await
    .unwrap();
    let traces: Vec<String> = recorded
        .iter()
        .map(|(_, tp)| tp.as_deref().unwrap()[3..35].to_owned())
        .collect();
    assert_eq!(traces, [CALLER_TRACE, retry_trace.as_str(), redispatch_trace.as_str()]);

    let linked = eventually(Duration::from_secs(15), || async {
        collector.spans().iter().any(|s| {
            s["name"] == "redispatch"
                && s["traceId"] == redispatch_trace.as_str()
                && s["links"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|l| l["traceId"] == CALLER_TRACE))
        })
    })
    .await;
    assert!(
        linked,
        "the redispatch span links to the create's trace: {:#?}",
        collector.spans()
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn spans_are_exported_to_the_collector_at_v1_traces(pool: PgPool) {
    let collector = Collector::start().await;
    let (app, tenant, service) = service_process(&pool, &collector.env()).await;

    let id = created_id(create(&service, &tenant, Some(&traceparent(CALLER_TRACE))).await).await;
    let message = message_of(&app, &id, 1).await;
    let names = || -> Vec<String> {
        collector
            .spans()
            .iter()
            .filter(|s| s["traceId"] == CALLER_TRACE)
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let exported = eventually(Duration::from_secs(15), || async {
        let names = names();
        ["request", "create_import", "db.create_batch", "publish"]
            .iter()
            .all(|n| names.iter().any(|x| x == n))
    })
    .await;
    assert!(exported, "the create's spans reach the collector: {:?}", names());
    let publish = collector
        .spans()
        .into_iter()
        .find(|s| s["name"] == "publish" && s["traceId"] == CALLER_TRACE)
        .unwrap();
    assert_eq!(
        message.traceparent.as_deref().map(|tp| &tp[36..52]),
        publish["spanId"].as_str(),
        "the worker's capture becomes a child of the publish span"
    );
    assert!(
        collector.paths().iter().all(|p| p == "/v1/traces"),
        "{:?}",
        collector.paths()
    );
    let service_names = collector.service_names();
    assert_eq!(service_names, ["page-import"], "the spans say which service made them");
    assert_eq!(
        counter(&metrics_of(&service).await, "trace_spans_dropped_total", ""),
        0.0
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_collector_that_is_down_or_hangs_holds_up_no_request_and_drops_are_counted(pool: PgPool) {
    let mut app = TestApp::spawn(pool.clone()).await;
    let tenant = app.tenant().await;
    app.halt().await;

    // Down: nothing listens on the port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let down = ServiceProcess::start(
        &app,
        &database_url_of(&pool),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("http://{closed}")),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    for _ in 0..20 {
        assert_eq!(create(&down, &tenant, None).await.status(), 202);
    }
    let failed = eventually(Duration::from_secs(15), || async {
        counter(
            &metrics_of(&down).await,
            "trace_spans_dropped_total",
            "reason=\"export_failed\"",
        ) > 0.0
    })
    .await;
    assert!(failed, "spans the collector never took are counted as dropped");
    let ready = reqwest::get(down.url("/readyz")).await.unwrap();
    assert_eq!(ready.status(), 200, "the service stays healthy");

    // Hangs: a collector that takes the connection and never answers, with
    // an export timeout of a minute. A request that waited for the export
    // would take that minute; none comes near it.
    let hanging = HangingCollector::start().await;
    let mut slow = ServiceProcess::start(
        &app,
        &database_url_of(&pool),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("http://{}", hanging.addr)),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "8"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
        ],
    );
    for _ in 0..20 {
        let started = Instant::now();
        assert_eq!(create(&slow, &tenant, None).await.status(), 202);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "a create waited for the collector"
        );
    }
    let full = eventually(Duration::from_secs(15), || async {
        counter(
            &metrics_of(&slow).await,
            "trace_spans_dropped_total",
            "reason=\"queue_full\"",
        ) > 0.0
    })
    .await;
    assert!(full, "spans that found the queue full are counted as dropped");
    assert!(hanging.connections() > 0, "the exporter did try the collector");

    // SIGTERM flushes with a bound: the hung export does not hold the exit
    // for its minute.
    let stopping = Instant::now();
    slow.sigterm();
    assert_eq!(slow.wait_exit(Duration::from_secs(60)), Some(0), "{}", slow.log_text());
    assert!(
        stopping.elapsed() < Duration::from_secs(15),
        "the flush is bounded (3 s), not the export's minute: {:?}",
        stopping.elapsed()
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn one_import_is_one_trace_from_the_create_through_the_worker_to_its_callback(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let recorder = CallbackRecorder::start().await;
    let site = Site::start(vec![("/", Page::html("<h1 id=\"app\">Traced</h1>"))]).await;
    let callback_base = format!("http://{}", recorder.addr);
    let (app, tenant, service) = service_process(
        &pool,
        &[
            ("ALLOW_PRIVATE_SOURCE_URLS", "true"),
            ("PUBLIC_BASE_URL", &callback_base),
        ],
    )
    .await;
    recorder.forward_to(&service.base_url);
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);

    let trace = random_trace_id();
    let mut body = import_body(&tenant);
    body["sourceUrl"] = json!(site.url("/"));
    let response = reqwest::Client::new()
        .post(service.url("/page-imports"))
        .bearer_auth(&tenant.token)
        .header("traceparent", traceparent(&trace))
        .json(&body)
        .send()
        .await
        .unwrap();
    let id = created_id(response).await;
    let completed = eventually(Duration::from_secs(90), || async {
        let import: Value = reqwest::Client::new()
            .get(service.url(&format!("/page-imports/{id}")))
            .bearer_auth(&tenant.token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        import["status"] == "completed"
    })
    .await;
    assert!(completed, "{}\n{}", worker.log_text(), service.log_text());

    let logged = eventually(Duration::from_secs(10), || async {
        lines_of_trace(&worker.log_text(), &trace)
            .iter()
            .any(|l| l["message"] == "callback answered")
    })
    .await;
    assert!(
        logged,
        "the worker's log lines of the capture carry the create's trace id:\n{}",
        worker.log_text()
    );
    let callbacks = recorder.traceparents();
    assert!(
        callbacks.iter().any(|tp| tp.get(3..35) == Some(trace.as_str())),
        "the worker's callback carries the trace: {callbacks:?}"
    );
    let continued = eventually(Duration::from_secs(10), || async {
        lines_of_trace(&service.log_text(), &trace)
            .iter()
            .any(|l| l["message"] == "page import finished")
    })
    .await;
    assert!(
        continued,
        "the service continues the callback's trace:\n{}",
        service.log_text()
    );
}

/// Each request a collector got: its path and its JSON body.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// A stand-in OTLP/HTTP collector taking JSON (`http/json`), keeping every
/// request it gets.
struct Collector {
    addr: SocketAddr,
    requests: Received,
}

impl Collector {
    async fn start() -> Self {
        let requests: Received = Arc::default();
        let router = axum::Router::new()
            .fallback(
                |State(requests): State<Received>, uri: axum::http::Uri, body: Bytes| async move {
                    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    requests.lock().unwrap().push((uri.path().to_owned(), value));
                    (StatusCode::OK, "{}")
                },
            )
            .with_state(requests.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Self { addr, requests }
    }

    fn env(&self) -> Vec<(&'static str, &'static str)> {
        let endpoint: &'static str = Box::leak(format!("http://{}", self.addr).into_boxed_str());
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ]
    }

    fn paths(&self) -> Vec<String> {
        self.requests.lock().unwrap().iter().map(|(p, _)| p.clone()).collect()
    }

    /// Every span received, flattened out of resource and scope.
    fn spans(&self) -> Vec<Value> {
        let mut spans = Vec::new();
        for (_, body) in self.requests.lock().unwrap().iter() {
            for rs in body["resourceSpans"].as_array().into_iter().flatten() {
                for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                    spans.extend(ss["spans"].as_array().into_iter().flatten().cloned());
                }
            }
        }
        spans
    }

    fn service_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (_, body) in self.requests.lock().unwrap().iter() {
            for rs in body["resourceSpans"].as_array().into_iter().flatten() {
                for attr in rs["resource"]["attributes"].as_array().into_iter().flatten() {
                    if attr["key"] == "service.name" {
                        let name = attr["value"]["stringValue"].as_str().unwrap_or_default().to_owned();
                        if !names.contains(&name) {
                            names.push(name);
                        }
                    }
                }
            }
        }
        names
    }
}

/// A collector that accepts connections and never answers.
struct HangingCollector {
    addr: SocketAddr,
    accepted: Arc<Mutex<Vec<tokio::net::TcpStream>>>,
}

impl HangingCollector {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted: Arc<Mutex<Vec<tokio::net::TcpStream>>> = Arc::default();
        let held = accepted.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                held.lock().unwrap().push(stream);
            }
        });
        Self { addr, accepted }
    }

    fn connections(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }
}

/// Sits between the worker and the service: records each callback's
/// `traceparent` header and forwards the request as it came.
struct CallbackRecorder {
    addr: SocketAddr,
    upstream: Arc<OnceLock<String>>,
    seen: Arc<Mutex<Vec<String>>>,
}

type RecorderState = (Arc<OnceLock<String>>, Arc<Mutex<Vec<String>>>);

impl CallbackRecorder {
    async fn start() -> Self {
        let upstream: Arc<OnceLock<String>> = Arc::default();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let router = axum::Router::new()
            .fallback(
                |State((upstream, seen)): State<RecorderState>,
                 uri: axum::http::Uri,
                 headers: HeaderMap,
                 body: Bytes| async move {
                    if let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
                        seen.lock().unwrap().push(tp.to_owned());
                    }
                    let mut forwarded =
                        reqwest::Client::new().post(format!("{}{}", upstream.get().unwrap(), uri.path()));
                    let passed: HashMap<_, _> = headers
                        .iter()
                        .filter(|(k, _)| k.as_str() != "host" && k.as_str() != "content-length")
                        .collect();
                    for (k, v) in passed {
                        forwarded = forwarded.header(k.as_str(), v.as_bytes());
                    }
                    let answer = forwarded.body(body).send().await.unwrap();
                    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap();
                    (status, answer.bytes().await.unwrap())
                },
            )
            .with_state((upstream.clone(), seen.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Self { addr, upstream, seen }
    }

    fn forward_to(&self, base_url: &str) {
        self.upstream.set(base_url.to_owned()).unwrap();
    }

    fn traceparents(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}
