//! The real capture worker as a child process, and the loopback web sites it
//! captures (SPEC §10). Pages are served on port 80 of a loopback address of
//! their own, because source URLs may only use ports 80 and 443.

use futures::StreamExt as _;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Response, StatusCode};
use rand::Rng;
use serde_json::Value;

use super::{Tenant, TestApp};

/// Browser tests run one at a time: each starts a Chromium of its own, and
/// the machine has two cores.
pub static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One response of a test site.
#[derive(Clone)]
pub struct Page {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub delay: Duration,
    pub location: Option<String>,
    /// How long the connection stays open after the whole body was sent
    /// (a stream the browser cannot tell has ended).
    pub open_after: Duration,
    pub headers: Vec<(&'static str, &'static str)>,
    /// Served instead of `body` to a user agent that says `Mobile` (a
    /// server that picks its page by user agent).
    pub mobile_body: Option<Vec<u8>>,
    /// Answered only once this many requests for the page arrived (or
    /// after 20 s): requests that wait for each other.
    pub barrier: Option<usize>,
}

impl Page {
    pub fn html(body: &str) -> Self {
        Self::of("text/html; charset=utf-8", body.as_bytes().to_vec())
    }

    pub fn of(content_type: &'static str, body: Vec<u8>) -> Self {
        Self {
            status: 200,
            content_type,
            body,
            delay: Duration::ZERO,
            location: None,
            open_after: Duration::ZERO,
            headers: Vec::new(),
            mobile_body: None,
            barrier: None,
        }
    }

    /// `body` for a user agent that says `Mobile`.
    pub fn for_mobile(mut self, body: &str) -> Self {
        self.mobile_body = Some(body.as_bytes().to_vec());
        self
    }

    /// Answered once `n` requests for it arrived.
    pub fn barrier(mut self, n: usize) -> Self {
        self.barrier = Some(n);
        self
    }

    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// One more response header.
    pub fn header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Sent at once and chunked, then the connection held open for `open_after`.
    pub fn held_open(mut self, open_after: Duration) -> Self {
        self.open_after = open_after;
        self
    }

    /// A file from disk, its content type told by its extension.
    pub fn file(path: &std::path::Path) -> Self {
        let body = std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let content_type = match path.extension().and_then(|e| e.to_str()) {
            Some("html") => return Self::html(std::str::from_utf8(&body).unwrap()),
            Some("css") => "text/css",
            Some("js" | "mjs") => "application/javascript",
            Some("json") => "application/json",
            Some("png") => "image/png",
            Some("jpg") => "image/jpeg",
            Some("svg") => "image/svg+xml",
            _ => "application/octet-stream",
        };
        Self::of(content_type, body)
    }

    pub fn redirect(to: &str) -> Self {
        Self {
            status: 302,
            content_type: "text/plain",
            body: Vec::new(),
            delay: Duration::ZERO,
            location: Some(to.to_owned()),
            open_after: Duration::ZERO,
            headers: Vec::new(),
            mobile_body: None,
            barrier: None,
        }
    }
}

/// The files under `dir` (an npm fixture's, installed by scripts/lib.sh
/// `ensure_npm_fixtures`) that `wanted` keeps, each at its path below `dir`
/// prefixed with `at`.
pub fn files_under(dir: &str, at: &str, wanted: impl Fn(&std::path::Path) -> bool) -> Vec<(String, Page)> {
    fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{dir:?}: {e} (scripts/lib.sh ensure_npm_fixtures)"));
        entries
            .flat_map(|entry| {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path)
                } else {
                    vec![path]
                }
            })
            .collect()
    }
    walk(std::path::Path::new(dir))
        .into_iter()
        .filter(|file| wanted(file))
        .map(|file| {
            let path = format!("{at}/{}", file.strip_prefix(dir).unwrap().to_str().unwrap());
            (path, Page::file(&file))
        })
        .collect()
}

/// A web site on `http://{addr}/` (port 80 of a fresh loopback address).
pub struct Site {
    pub addr: SocketAddr,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    requests: Arc<Mutex<Vec<Request>>>,
    barrier_timeouts: Arc<std::sync::atomic::AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

/// A request a site received: its path, its query and some of its headers.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub query: String,
    pub user_agent: Option<String>,
    pub accept_language: Option<String>,
    pub ch_ua_mobile: Option<String>,
    pub ch_ua_platform: Option<String>,
}

/// A loopback address no other test uses.
pub fn fresh_loopback() -> Ipv4Addr {
    let mut rng = rand::rng();
    Ipv4Addr::new(
        127,
        rng.random_range(10..250),
        rng.random_range(0..255),
        rng.random_range(2..255),
    )
}

impl Site {
    pub async fn start(pages: Vec<(&str, Page)>) -> Self {
        let pages: Arc<HashMap<String, Page>> =
            Arc::new(pages.into_iter().map(|(path, page)| (path.to_owned(), page)).collect());
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let barrier_timeouts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let listener = loop {
            if let Ok(listener) = tokio::net::TcpListener::bind((fresh_loopback(), 80)).await {
                break listener;
            }
        };
        let addr = listener.local_addr().unwrap();
        let seen = hits.clone();
        let log = requests.clone();
        let timeouts = barrier_timeouts.clone();
        let app = axum::Router::new().fallback(move |request: axum::http::Request<Body>| {
            let pages = pages.clone();
            let seen = seen.clone();
            let log = log.clone();
            let timeouts = timeouts.clone();
            async move {
                let path = request.uri().path().to_owned();
                let hit = {
                    let mut hits = seen.lock().unwrap();
                    let hit = hits.entry(path.clone()).or_insert(0);
                    *hit += 1;
                    *hit
                };
                let user_agent = {
                    let header = |name: &str| {
                        request
                            .headers()
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned)
                    };
                    let user_agent = header("user-agent");
                    log.lock().unwrap().push(Request {
                        path: path.clone(),
                        query: request.uri().query().unwrap_or_default().to_owned(),
                        user_agent: user_agent.clone(),
                        accept_language: header("accept-language"),
                        ch_ua_mobile: header("sec-ch-ua-mobile"),
                        ch_ua_platform: header("sec-ch-ua-platform"),
                    });
                    user_agent
                };
                drop(request);
                let Some(mut page) = pages.get(&path).cloned() else {
                    return Response::builder().status(404).body(Body::from("not found")).unwrap();
                };
                if let Some(n) = page.barrier {
                    let until = Instant::now() + Duration::from_secs(20);
                    while hit < n && seen.lock().unwrap()[&path] < n {
                        if Instant::now() > until {
                            timeouts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                if let Some(mobile) = page.mobile_body.take() {
                    if user_agent.is_some_and(|ua| ua.contains("Mobile")) {
                        page.body = mobile;
                    }
                }
                tokio::time::sleep(page.delay).await;
                let mut response = Response::builder()
                    .status(StatusCode::from_u16(page.status).unwrap())
                    .header(header::CONTENT_TYPE, page.content_type);
                if !page
                    .headers
                    .iter()
                    .any(|(name, _)| name.eq_ignore_ascii_case("cache-control"))
                {
                    response = response.header(header::CACHE_CONTROL, "no-store");
                }
                if let Some(location) = page.location {
                    response = response.header(header::LOCATION, location);
                }
                for (name, value) in page.headers {
                    response = response.header(name, value);
                }
                if page.open_after.is_zero() {
                    return response.body(Body::from(page.body)).unwrap();
                }
                let open_after = page.open_after;
                let body = futures::stream::iter([Ok::<_, std::io::Error>(axum::body::Bytes::from(page.body))]).chain(
                    futures::stream::once(async move {
                        tokio::time::sleep(open_after).await;
                        Ok(axum::body::Bytes::new())
                    }),
                );
                response.body(Body::from_stream(body)).unwrap()
            }
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            hits,
            requests,
            barrier_timeouts,
            server,
        }
    }

    /// How many requests a barrier let through because it waited too long.
    pub fn barrier_timeouts(&self) -> usize {
        self.barrier_timeouts.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr.ip())
    }

    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// The requests for `path` received so far, in order.
    pub fn requests(&self, path: &str) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Raw TCP listeners that only count the connections they accept: a request
/// that reaches one of them got past the egress rules.
pub struct Tripwire {
    pub addrs: Vec<SocketAddr>,
    /// The peer of every connection accepted, [`drain`](Self::drain)'s own included.
    accepted: Arc<Mutex<Vec<SocketAddr>>>,
    /// The local ends of `drain`'s connections, which `hits` leaves out.
    probes: Mutex<Vec<SocketAddr>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Tripwire {
    pub async fn bind(addrs: &[SocketAddr]) -> Self {
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        let mut bound = Vec::new();
        for addr in addrs {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .unwrap_or_else(|e| panic!("bind tripwire {addr}: {e}"));
            bound.push(listener.local_addr().unwrap());
            let accepted = accepted.clone();
            tasks.push(tokio::spawn(async move {
                while let Ok((socket, peer)) = listener.accept().await {
                    accepted.lock().unwrap().push(peer);
                    drop(socket);
                }
            }));
        }
        Self {
            addrs: bound,
            accepted,
            probes: Mutex::new(Vec::new()),
            tasks,
        }
    }

    /// Connections accepted from anyone but the tripwire itself.
    pub fn hits(&self) -> usize {
        let probes = self.probes.lock().unwrap();
        let accepted = self.accepted.lock().unwrap();
        accepted.iter().filter(|peer| !probes.contains(peer)).count()
    }

    /// Connects once to every listener and waits until each of those
    /// connections was accepted. A listener accepts in the order connections
    /// arrived, so every connection that reached it before has been counted
    /// by then.
    pub async fn drain(&self) {
        for addr in &self.addrs {
            let probe = tokio::net::TcpStream::connect(addr).await.unwrap();
            self.probes.lock().unwrap().push(probe.local_addr().unwrap());
        }
        let drained = super::eventually(Duration::from_secs(5), || async {
            let accepted = self.accepted.lock().unwrap();
            self.probes.lock().unwrap().iter().all(|probe| accepted.contains(probe))
        })
        .await;
        assert!(drained, "the tripwire did not accept its own connections");
    }
}

impl Drop for Tripwire {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The `capture-worker` binary, built next to this test binary.
pub fn worker_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = dir.join("capture-worker");
    assert!(
        path.exists(),
        "{} is missing: build it first (cargo build -p capture-worker; scripts/test does)",
        path.display()
    );
    path
}

pub struct WorkerProcess {
    pub child: Child,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl WorkerProcess {
    /// Starts the worker on `app`'s queue and bucket; `allow` becomes
    /// `EGRESS_ALLOW`. Its environment is built from nothing: no
    /// `DATABASE_URL` unless a test passes one.
    pub fn start(app: &TestApp, allow: &[SocketAddr], extra_env: &[(&str, &str)]) -> Self {
        let mut command = Self::command(app, allow, extra_env);
        let (child, log) = super::process::spawn_logged(&mut command, "capture-worker");
        let mut worker = Self { child, log };
        let started = Instant::now();
        while !worker.log_text().contains("capture worker started") {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "worker did not start:\n{}",
                worker.log_text()
            );
            if let Ok(Some(status)) = worker.child.try_wait() {
                panic!("worker exited with {status}:\n{}", worker.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        worker
    }

    /// [`WorkerProcess::start`] with its health and metrics listener on a
    /// free loopback port, returned beside it.
    pub fn start_with_metrics(app: &TestApp, allow: &[SocketAddr]) -> (Self, SocketAddr) {
        let health = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let worker = Self::start(app, allow, &[("WORKER_HEALTH_ADDR", &health.to_string())]);
        (worker, health)
    }

    /// The worker's command line and environment, not yet started.
    pub fn command(app: &TestApp, allow: &[SocketAddr], extra_env: &[(&str, &str)]) -> Command {
        let allow = allow.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        let mut command = Command::new(worker_binary());
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PAGE_IMPORT_QUEUE_URL", &app.page_import_queue_url)
            .env("ARTIFACT_BUCKET", &app.bucket)
            .env("EGRESS_ALLOW", allow)
            .env("CAPTURE_NAVIGATION_TIMEOUT_SECS", "15")
            .env("CAPTURE_READY_TIMEOUT_SECS", "5")
            .env("WORKER_SHUTDOWN_GRACE_SECS", "30")
            // A SIGTERM lets the receive under way run out: short receives
            // keep a test's idle worker quick to stop.
            .env("WORKER_RECEIVE_WAIT_SECS", "2")
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "info,capture_worker=debug")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        super::process::worker_side_env(&mut command);
        if let Ok(chromium) = std::env::var("CHROMIUM_PATH") {
            command.env("CHROMIUM_PATH", chromium);
        }
        for (k, v) in extra_env {
            command.env(k, v);
        }
        command
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn log_count(&self, message: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|line| serde_json::from_str::<Value>(line).is_ok_and(|v| v["message"] == message))
            .count()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Every live process below the worker (Chromium and its helpers).
    pub fn descendants(&self) -> Vec<i32> {
        descendants_of(self.pid())
    }

    pub fn signal(&self, signal: i32, pid: i32) {
        assert!(pid > 0);
        // SAFETY: kill(2) on one positive pid.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }

    /// Waits for the worker to exit without blocking the test's runtime (the
    /// service and the sites the worker talks to run on it).
    pub async fn exited(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        super::process::wait_exit(&mut self.child, timeout)
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.signal(libc::SIGTERM, self.pid());
            if self.wait_exit(Duration::from_secs(15)).is_none() {
                for pid in self.descendants() {
                    // SAFETY: kill(2) on one positive pid.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}

/// `(pid, parent pid, state, command name)` of every process.
pub fn processes() -> Vec<(i32, i32, char, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_owned();
        let mut rest = stat[close + 1..].split_whitespace();
        let state = rest.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = rest.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        out.push((pid, ppid, state, name));
    }
    out
}

pub fn descendants_of(root: i32) -> Vec<i32> {
    let all = processes();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(all.iter().filter(|p| p.1 == parent).map(|p| p.0));
        i += 1;
    }
    found.retain(|pid| *pid != root);
    found
}

/// Whether `pid` is a live (not zombie) process.
pub fn alive(pid: i32) -> bool {
    processes().iter().any(|p| p.0 == pid && p.2 != 'Z')
}

impl TestApp {
    /// A service that accepts loopback source URLs (the test sites).
    pub async fn private(pool: sqlx::PgPool) -> Self {
        Self::spawn_with_env(pool, vec![("ALLOW_PRIVATE_SOURCE_URLS", "true".into())]).await
    }

    /// Creates an import of `url` and returns its id.
    pub async fn import_url(&self, tenant: &Tenant, url: &str, ready_selector: Option<&str>) -> String {
        let settings = match ready_selector {
            Some(selector) => serde_json::json!({"readySelector": selector}),
            None => serde_json::json!({}),
        };
        self.import_with(tenant, url, settings).await
    }

    /// Puts `body` on the capture queue as the service would, for the
    /// worker to read.
    pub async fn send_to_worker(&self, body: &Value) {
        self.sqs
            .send_message()
            .queue_url(&self.page_import_queue_url)
            .message_body(body.to_string())
            .send()
            .await
            .unwrap();
    }

    /// Creates an import of `url` at 800×600 @2 with `settings`' fields
    /// (a `viewport`, SPEC §14's …) and returns its id.
    pub async fn import_with(&self, tenant: &Tenant, url: &str, settings: Value) -> String {
        let mut body = serde_json::json!({
            "organizationId": tenant.organization_id,
            "projectId": tenant.project_id,
            "sourceUrl": url,
            "viewport": {"width": 800, "height": 600, "deviceScaleFactor": 2.0},
        });
        for (field, value) in settings.as_object().expect("settings are an object") {
            body[field] = value.clone();
        }
        let response = self.post_json("/page-imports", &tenant.token, &body).await;
        assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
        let created: Value = response.json().await.unwrap();
        created["id"].as_str().unwrap().to_owned()
    }

    /// Waits until the import leaves `processing` and returns the resource.
    pub async fn finished(&self, tenant: &Tenant, id: &str, worker: &WorkerProcess) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        let (done, last) = loop {
            let last: Value = self
                .get(&format!("/page-imports/{id}"), &tenant.token)
                .await
                .json()
                .await
                .unwrap();
            if last["status"] != "processing" {
                break (true, last);
            }
            if Instant::now() > deadline {
                break (false, last);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(
            done,
            "import still processing: {last}\nworker log:\n{}",
            worker.log_text()
        );
        last
    }

    pub async fn object(&self, key: &str) -> Vec<u8> {
        self.s3
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .unwrap_or_else(|e| panic!("get {key}: {e:?}"))
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes()
            .to_vec()
    }

    pub async fn object_json(&self, key: &str) -> Value {
        serde_json::from_slice(&self.object(key).await).unwrap()
    }

    /// The `failure.json` a worker wrote for an attempt (SPEC §10).
    pub async fn failure(&self, id: &str, attempt: u64) -> FailureObject {
        FailureObject(
            self.object_json(&format!("page-imports/{id}/{attempt}/failure.json"))
                .await,
        )
    }
}

/// An attempt's `failure.json`.
pub struct FailureObject(pub Value);

impl FailureObject {
    /// Its `reason` and whether it is `retryable`.
    pub fn cause(&self) -> (&str, bool) {
        let reason = self.0["reason"].as_str();
        let retryable = self.0["retryable"].as_bool();
        (
            reason.unwrap_or_else(|| panic!("no reason: {}", self.0)),
            retryable.unwrap_or_else(|| panic!("no retryable: {}", self.0)),
        )
    }
}

/// A loopback address (for tripwires) that is not `addr`.
pub fn other_loopback(addr: IpAddr) -> Ipv4Addr {
    loop {
        let candidate = fresh_loopback();
        if IpAddr::V4(candidate) != addr {
            return candidate;
        }
    }
}

/// The Prometheus text of the worker's `/metrics` on `health`.
pub async fn worker_metrics(health: SocketAddr) -> String {
    reqwest::get(format!("http://{health}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}
