//! Headless Chromium: launched once and kept warm, relaunched when it dies,
//! and killed with every process it started when the worker stops.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;
use tokio::sync::Mutex;

use crate::cdp::Connection;

const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);

/// One running browser.
pub struct Browser {
    pub cdp: Connection,
    pub version: String,
    pid: u32,
    user_data_dir: PathBuf,
}

impl Browser {
    async fn launch(chromium: &Path, guard_proxy: &str) -> anyhow::Result<Self> {
        let user_data_dir = std::env::temp_dir().join(format!("capture-worker-chromium-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&user_data_dir)?;
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--disable-extensions",
                "--disable-breakpad",
                "--disable-crash-reporter",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                "--mute-audio",
                "--password-store=basic",
                "--font-render-hinting=none",
                // All traffic through an egress proxy; `<-loopback>` stops
                // Chromium's implicit bypass for loopback addresses.
                &format!("--proxy-server={guard_proxy}"),
                "--proxy-bypass-list=<-loopback>",
                "--disable-quic",
                "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
                // Cross-site iframes stay in the page's process, so the DOM
                // snapshot sees them.
                "--disable-site-isolation-trials",
                "--disable-features=IsolateOrigins,site-per-process,Translate,MediaRouter,OptimizationHints",
                "--remote-debugging-port=0",
                &format!("--user-data-dir={}", user_data_dir.display()),
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {}", chromium.display()))?;
        let pid = child.id();
        let stderr = child.stderr.take().context("chromium stderr")?;
        // The std Child is never waited on: the reaper collects every exit.
        drop(child);
        let (url_tx, url_rx) = tokio::sync::oneshot::channel::<String>();
        std::thread::Builder::new()
            .name("chromium-stderr".into())
            .spawn(move || {
                let mut url_tx = Some(url_tx);
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Some(url) = line.strip_prefix("DevTools listening on ") {
                        if let Some(tx) = url_tx.take() {
                            let _ = tx.send(url.trim().to_owned());
                        }
                    } else {
                        tracing::trace!(target: "chromium", "{line}");
                    }
                }
            })?;
        let ws_url = match tokio::time::timeout(LAUNCH_TIMEOUT, url_rx).await {
            Ok(Ok(url)) => url,
            _ => {
                kill_group(pid);
                anyhow::bail!("chromium did not print its DevTools address");
            }
        };
        let (cdp, mut browser_events) = Connection::connect(&ws_url).await?;
        tokio::spawn(async move {
            while let Some(event) = browser_events.recv().await {
                tracing::trace!(method = %event.method, "browser event");
            }
        });
        let version = cdp
            .call(None, "Browser.getVersion", json!({}), Duration::from_secs(5))
            .await?
            .get("product")
            .and_then(|p| p.as_str())
            .unwrap_or("unknown")
            .to_owned();
        tracing::info!(pid, %version, "chromium started");
        Ok(Self {
            cdp,
            version,
            pid,
            user_data_dir,
        })
    }

    pub fn is_alive(&self) -> bool {
        !self.cdp.is_closed()
    }

    /// Asks the browser to close, then kills its process group.
    pub async fn close(&self) {
        let _ = self
            .cdp
            .call(None, "Browser.close", json!({}), Duration::from_secs(2))
            .await;
        for _ in 0..20 {
            if !process_exists(self.pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        kill_group(self.pid);
        let _ = std::fs::remove_dir_all(&self.user_data_dir);
    }
}

/// Keeps one browser warm and replaces it when it has died.
pub struct BrowserSlot {
    chromium: PathBuf,
    guard_proxy: String,
    current: Mutex<Option<Arc<Browser>>>,
}

impl BrowserSlot {
    pub fn new(chromium: PathBuf, guard_proxy: String) -> Self {
        Self {
            chromium,
            guard_proxy,
            current: Mutex::new(None),
        }
    }

    /// The running browser, launching one if there is none or it died.
    pub async fn get(&self) -> anyhow::Result<Arc<Browser>> {
        let mut current = self.current.lock().await;
        if let Some(browser) = current.as_ref() {
            if browser.is_alive() {
                return Ok(browser.clone());
            }
            tracing::warn!(pid = browser.pid, "chromium died; starting a new one");
            metrics::counter!("worker_browser_restarts_total").increment(1);
            browser.close().await;
        }
        let browser = Arc::new(Browser::launch(&self.chromium, &self.guard_proxy).await?);
        *current = Some(browser.clone());
        Ok(browser)
    }

    /// The running browser's product string (`Chrome/156…`).
    pub async fn version(&self) -> String {
        match self.current.lock().await.as_ref() {
            Some(browser) => browser.version.clone(),
            None => "unknown".into(),
        }
    }

    pub async fn shutdown(&self) {
        if let Some(browser) = self.current.lock().await.take() {
            browser.close().await;
        }
    }
}

fn kill_group(pid: u32) {
    // SAFETY: kill(2) with a negative pid signals the process group Chromium leads.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}

fn process_exists(pid: u32) -> bool {
    // A zombie still "exists" for kill(0); its /proc state says Z.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}
