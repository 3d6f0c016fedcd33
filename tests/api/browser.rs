//! The frontend path in a real browser (SPEC §6 CORS and `/events`): headless
//! Chromium loads the README's example page (`dev/frontend/follow-import.html`)
//! from one loopback origin; the page creates an import on the service (another
//! origin) with `fetch` and follows `/events`, writing each status into its
//! DOM, which the test reads over the DevTools protocol.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::capture::{Page, Site, BROWSER};
use crate::helpers::worker::{manifest, Job};
use crate::helpers::*;

/// A headless Chromium showing one page, killed with its process group on drop.
struct Browser {
    child: Child,
    page: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    next_id: u64,
    _profile: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browser {
    async fn open(url: &str) -> Self {
        use std::os::unix::process::CommandExt;
        let profile = TempDir(std::env::temp_dir().join(format!("browser-test-{}", uuid::Uuid::new_v4().simple())));
        let chromium = std::env::var("CHROMIUM_PATH").unwrap_or_else(|_| "/usr/lib/chromium/chromium".into());
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.0.display()))
            .arg(url)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start chromium");
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(ws) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(ws.trim().to_owned());
                }
            }
        });
        let browser_ws = rx.recv_timeout(Duration::from_secs(20)).expect("DevTools address");
        let port = browser_ws
            .split(':')
            .nth(2)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        // The page target Chromium opened for the URL.
        let page_ws = loop {
            let targets: Value = reqwest::get(format!("http://127.0.0.1:{port}/json/list"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if let Some(ws) = targets
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["type"] == "page")
                .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            {
                break ws.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let (page, _) = tokio_tungstenite::connect_async(page_ws).await.unwrap();
        Self {
            child,
            page,
            next_id: 1,
            _profile: profile,
        }
    }

    /// Evaluates `expression` in the page and returns its value.
    async fn eval(&mut self, expression: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let command = json!({"id": id, "method": "Runtime.evaluate", "params": {"expression": expression, "returnByValue": true}});
        self.page.send(Message::text(command.to_string())).await.unwrap();
        while let Some(Ok(message)) = self.page.next().await {
            if let Message::Text(text) = message {
                let answer: Value = serde_json::from_str(&text).unwrap();
                if answer["id"] == id {
                    return answer["result"]["result"]["value"].clone();
                }
            }
        }
        panic!("the browser went away");
    }

    /// Polls the page until `expression` is truthy; returns its last value.
    async fn until(&mut self, expression: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let value = self.eval(expression).await;
            if !(value.is_null() || value == false || value == "") {
                return value;
            }
            assert!(Instant::now() < deadline, "never true: {expression}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn statuses(&mut self) -> Vec<String> {
        let value = self
            .eval("Array.from(document.querySelectorAll('#statuses li')).map(li => li.textContent)")
            .await;
        serde_json::from_value(value).unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // SAFETY: signals the process group Chromium leads (procps-ng 4.0.2's
        // `kill -KILL -PGID` on these machines signals far more than the group).
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

fn page_url(site: &Site, app: &TestApp, tenant: &Tenant) -> String {
    let api = format!("http://{}", app.addr);
    format!(
        "{}#api={api}&token={}&org={}&project={}&url=https://example.com/pricing",
        site.url("/"),
        tenant.token,
        tenant.organization_id,
        tenant.project_id
    )
}

async fn example_site() -> Site {
    let html = std::fs::read_to_string(repo_path("dev/frontend/follow-import.html")).unwrap();
    Site::start(vec![("/", Page::html(&html))]).await
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_browser_on_an_allowed_origin_creates_an_import_and_follows_it_to_completed(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = example_site().await;
    let origin = format!("http://{}", site.addr.ip());
    // One capture slot, taken: the page's import waits for it first.
    let env = vec![
        ("CORS_ALLOWED_ORIGINS", origin),
        ("CAPTURE_MAX_IN_FLIGHT", "1".to_owned()),
    ];
    let app = TestApp::spawn_with_env(pool, env).await;
    let tenant = app.tenant().await;
    let holder = app.job(&tenant).await;
    let mut browser = Browser::open(&page_url(&site, &app, &tenant)).await;

    let id = browser
        .until(
            "document.body.dataset.importId || document.body.dataset.state",
            Duration::from_secs(20),
        )
        .await;
    assert!(
        id.as_str().is_some_and(|s| s.len() == 36),
        "the page created nothing: {id}, {}",
        browser.eval("document.getElementById('error').textContent").await
    );
    let id = id.as_str().unwrap().to_owned();
    browser
        .until(
            "document.querySelectorAll('#statuses li').length >= 1",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(browser.statuses().await, ["waiting for a capture slot"]);

    // The slot frees; the page hears that its import was dispatched.
    assert_eq!(app.callback(&app.failed_body(&holder, "done")).await.status(), 200);
    browser
        .until(
            "document.querySelectorAll('#statuses li').length >= 2",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(browser.statuses().await, ["waiting for a capture slot", "processing"]);

    // The worker's signed callback completes it; the page hears of it.
    let job = Job {
        nonce: app.nonce_of(&id).await,
        id: id.clone(),
        attempt: 1,
    };
    let body = app.upload_capture(&job, manifest(&job)).await;
    assert_eq!(app.callback(&body).await.status(), 200);
    browser
        .until("document.body.dataset.state === 'ended'", Duration::from_secs(10))
        .await;
    assert_eq!(
        browser.statuses().await,
        ["waiting for a capture slot", "processing", "completed"]
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_browser_on_another_origin_is_refused_and_creates_nothing(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let allowed = example_site().await;
    let other = example_site().await;
    let app = TestApp::spawn_with_env(
        pool,
        vec![("CORS_ALLOWED_ORIGINS", format!("http://{}", allowed.addr.ip()))],
    )
    .await;
    let tenant = app.tenant().await;
    let mut browser = Browser::open(&page_url(&other, &app, &tenant)).await;
    browser
        .until("document.body.dataset.state === 'error'", Duration::from_secs(20))
        .await;
    let error = browser.eval("document.getElementById('error').textContent").await;
    assert!(error.as_str().unwrap().contains("Failed to fetch"), "{error}");
    let rows: i64 = sqlx::query_scalar("select count(*) from page_import where project_id = $1")
        .bind(tenant.project_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0, "the preflight was refused, so the POST was never sent");
}
