//! A plain headless Chromium driven over the DevTools protocol, for tests
//! that look at a page the way a browser shows it (not through the worker).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// A headless Chromium showing one page, killed with its process group on drop.
pub struct Browser {
    child: Child,
    page: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    next_id: u64,
    /// Its DevTools port, where the targets of its frames are listed.
    port: String,
    _profile: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browser {
    pub async fn open(url: &str) -> Self {
        Self::open_with(url, &[]).await
    }

    /// A Chromium launched with `args` too, showing `url`.
    pub async fn open_with(url: &str, args: &[&str]) -> Self {
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
            .args(args)
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
        let page_ws = target_ws(&port, |t| t["type"] == "page", None).await;
        let (page, _) = tokio_tungstenite::connect_async(page_ws).await.unwrap();
        Self {
            child,
            page,
            next_id: 1,
            port,
            _profile: profile,
        }
    }

    /// Sends one command to the page and returns its result.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let command = json!({"id": id, "method": method, "params": params});
        self.page.send(Message::text(command.to_string())).await.unwrap();
        while let Some(Ok(message)) = self.page.next().await {
            if let Message::Text(text) = message {
                let answer: Value = serde_json::from_str(&text).unwrap();
                if answer["id"] == id {
                    assert!(answer.get("error").is_none(), "{method}: {answer}");
                    return answer["result"].clone();
                }
            }
        }
        panic!("the browser went away");
    }

    /// Evaluates `expression` in the page and returns its value.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        result["result"]["value"].clone()
    }

    /// Polls the page until `expression` is truthy; returns its last value.
    pub async fn until(&mut self, expression: &str, within: Duration) -> Value {
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

    /// Evaluates `expression` in the frame of another site (a target of its
    /// own) whose URL starts with `url_prefix`, once that frame is there
    /// (within 10 s), and returns its value.
    pub async fn eval_in_frame(&mut self, url_prefix: &str, expression: &str) -> Value {
        let in_frame =
            |t: &Value| t["type"] == "iframe" && t["url"].as_str().is_some_and(|u| u.starts_with(url_prefix));
        let deadline = Instant::now() + Duration::from_secs(10);
        let frame_ws = target_ws(&self.port, in_frame, Some(deadline)).await;
        let (mut frame, _) = tokio_tungstenite::connect_async(frame_ws).await.unwrap();
        let command = json!({"id": 1, "method": "Runtime.evaluate",
            "params": {"expression": expression, "returnByValue": true, "awaitPromise": true}});
        frame.send(Message::text(command.to_string())).await.unwrap();
        while let Some(Ok(message)) = frame.next().await {
            if let Message::Text(text) = message {
                let answer: Value = serde_json::from_str(&text).unwrap();
                if answer["id"] == 1 {
                    assert!(answer.get("error").is_none(), "Runtime.evaluate in the frame: {answer}");
                    return answer["result"]["result"]["value"].clone();
                }
            }
        }
        panic!("the frame went away");
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

/// The DevTools WebSocket address of the first target of the browser on
/// `port` that `wanted` picks, asked for until there is one (by `deadline`
/// when given).
async fn target_ws(port: &str, wanted: impl Fn(&Value) -> bool, deadline: Option<Instant>) -> String {
    loop {
        let targets: Value = reqwest::get(format!("http://127.0.0.1:{port}/json/list"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let found = targets.as_array().unwrap().iter().find(|t| wanted(t));
        if let Some(ws) = found.and_then(|t| t["webSocketDebuggerUrl"].as_str()) {
            return ws.to_owned();
        }
        assert!(deadline.is_none_or(|d| Instant::now() < d), "no such target: {targets}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
