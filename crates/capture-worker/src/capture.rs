//! One capture in a fresh browser context (SPEC §10 "Capture"): exact
//! viewport and screen, navigation with a timeout, main-document status,
//! `readySelector`, bounded wait for network idle and fonts, a full-page PNG
//! capped in height, a DOM snapshot with styles, and the page's images,
//! stylesheets and fonts.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use page_import_contract::job::CaptureJob;
use serde::Serialize;
use serde_json::{json, Value};

use crate::browser::Browser;
use crate::cdp::Reply;
use crate::cdp::{CdpError, Connection, Event};
use crate::dom;
use crate::egress::{BlockedRequest, EgressPolicy, EgressProxy, Refusal};

const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// Screenshots and snapshots of big pages take seconds (FACTS: 4.6 s, 2.9 s).
const HEAVY_TIMEOUT: Duration = Duration::from_secs(90);
/// Network idle: nothing in flight and nothing started or ended for this long.
const QUIET_PERIOD: Duration = Duration::from_millis(200);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);
const FONTS_TIMEOUT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(50);

#[derive(Debug, Clone)]
pub struct CaptureSettings {
    pub navigation_timeout: Duration,
    pub ready_timeout: Duration,
    pub max_height_px: u32,
    pub max_bytes: u64,
}

/// What a successful capture produced, before anything is uploaded.
pub struct Captured {
    pub requested_url: String,
    pub final_url: String,
    pub http_status: Option<u16>,
    pub title: String,
    pub content_height: u32,
    pub captured_height: u32,
    pub truncated: bool,
    pub ready_matched: Option<bool>,
    pub screenshot_png: Bytes,
    pub assets: Vec<AssetBody>,
    pub fonts: Value,
    /// `DOMSnapshot.captureSnapshot`'s answer, parsed when the manifest is
    /// written (`dom::Snapshot` borrows its strings from it).
    pub snapshot: Reply,
    pub blocked: Vec<BlockedRequest>,
    pub timings: Timings,
}

pub struct AssetBody {
    pub url: String,
    pub kind: &'static str,
    pub mime_type: String,
    pub bytes: Bytes,
}

#[derive(Debug, Default, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    pub navigate_ms: u64,
    pub ready_ms: u64,
    pub settle_ms: u64,
    pub screenshot_ms: u64,
    pub snapshot_ms: u64,
    pub total_ms: u64,
}

/// Why a capture failed: a stable reason code, a message safe to show the
/// user, and whether another attempt might succeed (SPEC §10).
#[derive(Debug, Clone)]
pub struct Failure {
    pub reason: &'static str,
    pub message: String,
    pub retryable: bool,
    pub blocked: Vec<BlockedRequest>,
}

impl Failure {
    fn new(reason: &'static str, message: impl Into<String>, retryable: bool) -> Self {
        Self {
            reason,
            message: message.into(),
            retryable,
            blocked: Vec::new(),
        }
    }

    fn browser_crashed() -> Self {
        Self::new("browser_crashed", "The browser crashed during the capture", true)
    }
}

impl From<CdpError> for Failure {
    fn from(e: CdpError) -> Self {
        match e {
            CdpError::Closed => Self::browser_crashed(),
            CdpError::Timeout { method } => {
                tracing::warn!(%method, "browser command timed out");
                Self::new(
                    "browser_timeout",
                    "The browser stopped responding during the capture",
                    true,
                )
            }
            CdpError::Protocol { method, message } => {
                tracing::warn!(%method, %message, "browser command failed");
                Self::new("capture_error", "The page could not be captured", false)
            }
        }
    }
}

/// What the session's events told us so far.
#[derive(Default)]
struct PageState {
    documents: HashMap<String, (u16, String)>,
    load_fired: bool,
    crashed: bool,
    in_flight: HashSet<String>,
    last_activity: Option<Instant>,
    resources: HashMap<String, Resource>,
}

struct Resource {
    url: String,
    kind: &'static str,
    mime_type: String,
    finished: bool,
}

impl PageState {
    fn apply(&mut self, event: &Event) {
        let p = &event.params;
        let request_id = || p["requestId"].as_str().unwrap_or_default().to_owned();
        match event.method.as_str() {
            "Network.requestWillBeSent" => {
                self.in_flight.insert(request_id());
                self.last_activity = Some(Instant::now());
            }
            "Network.responseReceived" => {
                let response = &p["response"];
                let url = response["url"].as_str().unwrap_or_default().to_owned();
                let status = response["status"].as_u64().unwrap_or(0) as u16;
                let kind = match p["type"].as_str() {
                    Some("Document") => {
                        self.documents.insert(request_id(), (status, url));
                        return;
                    }
                    Some("Image") => "image",
                    Some("Stylesheet") => "stylesheet",
                    Some("Font") => "font",
                    _ => return,
                };
                if url.starts_with("http") && (200..300).contains(&status) {
                    self.resources.insert(
                        request_id(),
                        Resource {
                            url,
                            kind,
                            mime_type: response["mimeType"].as_str().unwrap_or_default().to_owned(),
                            finished: false,
                        },
                    );
                }
            }
            "Network.loadingFinished" => {
                let id = request_id();
                self.in_flight.remove(&id);
                self.last_activity = Some(Instant::now());
                if let Some(resource) = self.resources.get_mut(&id) {
                    resource.finished = true;
                }
            }
            "Network.loadingFailed" => {
                self.in_flight.remove(&request_id());
                self.last_activity = Some(Instant::now());
            }
            "Page.loadEventFired" => self.load_fired = true,
            "Inspector.targetCrashed" => self.crashed = true,
            _ => {}
        }
    }
}

/// A page in its own browser context, closed with its context when dropped
/// from scope through [`Page::close`].
struct Page {
    cdp: Connection,
    context_id: String,
    session: String,
    state: Arc<Mutex<PageState>>,
}

impl Page {
    async fn open(browser: &Browser, proxy_url: &str) -> Result<Self, Failure> {
        let cdp = browser.cdp.clone();
        let context = cdp
            .call(
                None,
                "Target.createBrowserContext",
                json!({"disposeOnDetach": true, "proxyServer": proxy_url, "proxyBypassList": "<-loopback>"}),
                COMMAND_TIMEOUT,
            )
            .await?;
        let context_id = context["browserContextId"].as_str().unwrap_or_default().to_owned();
        let page = async {
            let target = cdp
                .call(
                    None,
                    "Target.createTarget",
                    json!({"url": "about:blank", "browserContextId": context_id}),
                    COMMAND_TIMEOUT,
                )
                .await?;
            let attached = cdp
                .call(
                    None,
                    "Target.attachToTarget",
                    json!({"targetId": target["targetId"], "flatten": true}),
                    COMMAND_TIMEOUT,
                )
                .await?;
            Ok::<_, CdpError>(attached["sessionId"].as_str().unwrap_or_default().to_owned())
        }
        .await;
        let session = match page {
            Ok(session) => session,
            Err(e) => {
                let _ = dispose(&cdp, &context_id).await;
                return Err(e.into());
            }
        };
        let state = Arc::new(Mutex::new(PageState::default()));
        let mut events = cdp.subscribe(&session);
        let sink = state.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                sink.lock().expect("page state lock").apply(&event);
            }
        });
        Ok(Self {
            cdp,
            context_id,
            session,
            state,
        })
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.call_within(method, params, COMMAND_TIMEOUT).await
    }

    async fn call_within(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, CdpError> {
        let result = self.cdp.call(Some(&self.session), method, params, timeout).await;
        if matches!(result, Err(CdpError::Timeout { .. })) && self.state.lock().expect("page state lock").crashed {
            return Err(CdpError::Closed);
        }
        result
    }

    async fn call_raw_within(&self, method: &str, params: Value, timeout: Duration) -> Result<Reply, CdpError> {
        let result = self.cdp.call_raw(Some(&self.session), method, params, timeout).await;
        if matches!(result, Err(CdpError::Timeout { .. })) && self.crashed() {
            return Err(CdpError::Closed);
        }
        result
    }

    async fn evaluate(&self, expression: &str, await_promise: bool, timeout: Duration) -> Result<Value, CdpError> {
        let result = self
            .call_within(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": await_promise}),
                timeout,
            )
            .await?;
        Ok(result["result"]["value"].clone())
    }

    /// The renderer crashed, or the whole browser is gone.
    fn crashed(&self) -> bool {
        self.state.lock().expect("page state lock").crashed || self.cdp.is_closed()
    }

    async fn close(self) {
        self.cdp.forget_session(&self.session);
        let _ = dispose(&self.cdp, &self.context_id).await;
    }
}

async fn dispose(cdp: &Connection, context_id: &str) -> Result<Value, CdpError> {
    cdp.call(
        None,
        "Target.disposeBrowserContext",
        json!({"browserContextId": context_id}),
        COMMAND_TIMEOUT,
    )
    .await
}

/// Captures the job's page. The source is checked against the egress rules
/// before the browser is asked to go anywhere.
pub async fn capture(
    browser: &Browser,
    policy: Arc<EgressPolicy>,
    job: &CaptureJob<'_>,
    settings: &CaptureSettings,
) -> Result<Captured, Failure> {
    let started = Instant::now();
    let requested_url = job.source.url.to_string();
    check_source(&policy, &requested_url).await?;
    let proxy = EgressProxy::start(policy, settings.max_bytes).await.map_err(|e| {
        tracing::error!(error = %e, "egress proxy did not start");
        Failure::new("internal_error", "The capture could not be started", true)
    })?;
    let page = Page::open(browser, &proxy.url()).await?;
    let result = run(&page, &proxy, job, settings, started).await;
    page.close().await;
    result.map_err(|mut failure| {
        failure.blocked = proxy.blocked();
        if proxy.over_budget() {
            failure = Failure {
                blocked: failure.blocked,
                ..page_too_large(settings)
            };
        }
        failure
    })
}

fn page_too_large(settings: &CaptureSettings) -> Failure {
    Failure::new(
        "page_too_large",
        format!(
            "The page downloaded more than {} MiB",
            settings.max_bytes / (1024 * 1024)
        ),
        false,
    )
}

/// The source URL must be http(s) and its host must pass the egress rules.
async fn check_source(policy: &EgressPolicy, url: &str) -> Result<(), Failure> {
    let parsed =
        url::Url::parse(url).map_err(|_| Failure::new("invalid_source", "The source URL is not valid", false))?;
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Err(Failure::new("invalid_source", "The source URL is not valid", false));
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Failure::new(
            "invalid_source",
            "The source URL is not http or https",
            false,
        ));
    }
    match policy.resolve(host, port).await {
        Ok(_) => Ok(()),
        Err(Refusal::Unresolved) => Err(Failure::new(
            "dns_failure",
            "The source host name could not be resolved",
            true,
        )),
        Err(refusal) => {
            let mut failure = Failure::new("blocked_address", "The source address is not publicly reachable", false);
            failure.blocked = vec![BlockedRequest {
                url: url.to_owned(),
                reason: refusal.reason(),
            }];
            Err(failure)
        }
    }
}

async fn run(
    page: &Page,
    proxy: &EgressProxy,
    job: &CaptureJob<'_>,
    settings: &CaptureSettings,
    started: Instant,
) -> Result<Captured, Failure> {
    let viewport = job.viewport;
    page.call("Page.enable", json!({})).await?;
    page.call(
        "Network.enable",
        json!({"maxTotalBufferSize": 256 * 1024 * 1024, "maxResourceBufferSize": 64 * 1024 * 1024}),
    )
    .await?;
    page.call("Inspector.enable", json!({})).await?;
    page.call(
        "Emulation.setDeviceMetricsOverride",
        json!({
            "width": viewport.width, "height": viewport.height,
            "deviceScaleFactor": viewport.device_scale_factor, "mobile": false,
            "screenWidth": viewport.width, "screenHeight": viewport.height,
        }),
    )
    .await?;
    let mut timings = Timings::default();

    // Navigate and wait for the load event, all within the navigation timeout.
    let requested_url = job.source.url.to_string();
    let deadline = Instant::now() + settings.navigation_timeout;
    let navigation_timeout = || {
        Failure::new(
            "navigation_timeout",
            format!("Navigation timed out after {} s", settings.navigation_timeout.as_secs()),
            true,
        )
    };
    let navigated = match page
        .call_within(
            "Page.navigate",
            json!({"url": requested_url}),
            settings.navigation_timeout,
        )
        .await
    {
        Err(CdpError::Timeout { .. }) => return Err(navigation_timeout()),
        other => other?,
    };
    if let Some(error) = navigated["errorText"].as_str().filter(|e| !e.is_empty()) {
        return Err(classify_navigation_error(error, &requested_url, &proxy.blocked()));
    }
    let loader_id = navigated["loaderId"].as_str().unwrap_or_default().to_owned();
    loop {
        if page.crashed() {
            return Err(Failure::browser_crashed());
        }
        if page.state.lock().expect("page state lock").load_fired {
            break;
        }
        if Instant::now() >= deadline {
            return Err(navigation_timeout());
        }
        tokio::time::sleep(POLL).await;
    }
    let main = page
        .state
        .lock()
        .expect("page state lock")
        .documents
        .get(&loader_id)
        .cloned();
    let http_status = main.as_ref().map(|(status, _)| *status);
    if let Some((status, url)) = main.as_ref().filter(|(status, _)| *status >= 400) {
        if is_blocked(url, &proxy.blocked()) {
            return Err(Failure::new(
                "blocked_address",
                "The page redirected to an address that is not publicly reachable",
                false,
            ));
        }
        let retryable = matches!(status, 429 | 502 | 503 | 504);
        return Err(Failure::new(
            "http_status",
            format!("The page answered HTTP {status}"),
            retryable,
        ));
    }
    timings.navigate_ms = started.elapsed().as_millis() as u64;

    // The ready selector, polled.
    let ready_matched = match job.ready_selector.as_deref() {
        None => None,
        Some(selector) => {
            let probe = format!("!!document.querySelector({})", Value::String(selector.to_owned()));
            let deadline = Instant::now() + settings.ready_timeout;
            loop {
                if page.evaluate(&probe, false, COMMAND_TIMEOUT).await? == Value::Bool(true) {
                    break Some(true);
                }
                if Instant::now() >= deadline {
                    return Err(Failure::new(
                        "ready_timeout",
                        format!(
                            "The ready selector did not appear within {} s",
                            settings.ready_timeout.as_secs()
                        ),
                        false,
                    ));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    timings.ready_ms = started.elapsed().as_millis() as u64;

    // Lazy images would stay blank in a screenshot taken without scrolling.
    page.evaluate(
        "document.querySelectorAll('img[loading=lazy],iframe[loading=lazy]').forEach(e => e.loading = 'eager')",
        false,
        COMMAND_TIMEOUT,
    )
    .await?;
    wait_for_network_idle(page, SETTLE_TIMEOUT).await;
    let _ = page
        .evaluate("document.fonts.ready.then(() => true)", true, FONTS_TIMEOUT)
        .await;
    if proxy.over_budget() {
        return Err(page_too_large(settings));
    }
    timings.settle_ms = started.elapsed().as_millis() as u64;

    let metrics = page.call("Page.getLayoutMetrics", json!({})).await?;
    let content = if metrics["cssContentSize"].is_object() {
        &metrics["cssContentSize"]
    } else {
        &metrics["contentSize"]
    };
    let content_height = content["height"]
        .as_f64()
        .unwrap_or(viewport.height as f64)
        .ceil()
        .max(1.0) as u32;
    let captured_height = content_height.min(settings.max_height_px);
    let shot = page
        .call_raw_within(
            "Page.captureScreenshot",
            json!({
                "format": "png", "captureBeyondViewport": true, "fromSurface": true,
                "clip": {"x": 0, "y": 0, "width": viewport.width, "height": captured_height, "scale": 1},
            }),
            HEAVY_TIMEOUT,
        )
        .await?;
    // Decoded straight from the answer's text: a tall page's PNG is tens of MiB.
    #[derive(serde::Deserialize)]
    struct Shot<'a> {
        #[serde(borrow)]
        data: std::borrow::Cow<'a, str>,
    }
    let screenshot_png = shot
        .result::<Shot<'_>>()
        .ok()
        .and_then(|s| STANDARD.decode(s.data.as_bytes()).ok())
        .map(Bytes::from)
        .ok_or_else(|| Failure::new("capture_error", "The screenshot could not be taken", true))?;
    drop(shot);
    timings.screenshot_ms = started.elapsed().as_millis() as u64;

    let snapshot = page
        .call_raw_within(
            "DOMSnapshot.captureSnapshot",
            json!({
                "computedStyles": dom::STYLE_NAMES,
                "includePaintOrder": true,
                "includeDOMRects": true,
            }),
            HEAVY_TIMEOUT,
        )
        .await?;
    timings.snapshot_ms = started.elapsed().as_millis() as u64;

    let about = page
        .evaluate("({title: document.title, url: location.href})", false, COMMAND_TIMEOUT)
        .await?;
    let fonts = page
        .evaluate(
            "Array.from(document.fonts).map(f => ({family: f.family, style: f.style, weight: f.weight, status: f.status}))",
            false,
            COMMAND_TIMEOUT,
        )
        .await?;
    let assets = collect_assets(page).await?;
    if proxy.over_budget() {
        return Err(page_too_large(settings));
    }
    timings.total_ms = started.elapsed().as_millis() as u64;
    Ok(Captured {
        requested_url,
        final_url: about["url"].as_str().unwrap_or_default().to_owned(),
        http_status,
        title: about["title"].as_str().unwrap_or_default().to_owned(),
        content_height,
        captured_height,
        truncated: content_height > captured_height,
        ready_matched,
        screenshot_png,
        assets,
        fonts,
        snapshot,
        blocked: proxy.blocked(),
        timings,
    })
}

async fn wait_for_network_idle(page: &Page, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline && !page.crashed() {
        {
            let state = page.state.lock().expect("page state lock");
            let quiet = state.last_activity.is_none_or(|t| t.elapsed() >= QUIET_PERIOD);
            if state.in_flight.is_empty() && quiet {
                return;
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn collect_assets(page: &Page) -> Result<Vec<AssetBody>, Failure> {
    let finished: Vec<(String, String, &'static str, String)> = page
        .state
        .lock()
        .expect("page state lock")
        .resources
        .iter()
        .filter(|(_, r)| r.finished)
        .map(|(id, r)| (id.clone(), r.url.clone(), r.kind, r.mime_type.clone()))
        .collect();
    let mut assets = Vec::with_capacity(finished.len());
    for (request_id, url, kind, mime_type) in finished {
        let body = match page
            .call("Network.getResponseBody", json!({"requestId": request_id}))
            .await
        {
            Ok(body) => body,
            // Evicted from the buffer, or a body Chromium did not keep: skip it.
            Err(CdpError::Protocol { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        let text = body["body"].as_str().unwrap_or_default();
        let bytes = if body["base64Encoded"].as_bool() == Some(true) {
            STANDARD.decode(text).unwrap_or_default()
        } else {
            text.as_bytes().to_vec()
        };
        assets.push(AssetBody {
            url,
            kind,
            mime_type,
            bytes: bytes.into(),
        });
    }
    assets.sort_by(|a, b| a.url.cmp(&b.url));
    Ok(assets)
}

/// Whether the proxy refused `url` (a plain-HTTP request is listed by its
/// URL, a tunnel by its `host:port`).
fn is_blocked(url: &str, blocked: &[BlockedRequest]) -> bool {
    let authority = url::Url::parse(url)
        .ok()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)));
    blocked
        .iter()
        .any(|b| b.url == url || Some(&b.url) == authority.as_ref())
}

fn classify_navigation_error(error: &str, url: &str, blocked: &[BlockedRequest]) -> Failure {
    if is_blocked(url, blocked) || !blocked.is_empty() && error == "net::ERR_TUNNEL_CONNECTION_FAILED" {
        return Failure::new(
            "blocked_address",
            "The page redirected to an address that is not publicly reachable",
            false,
        );
    }
    let transient = [
        "net::ERR_TIMED_OUT",
        "net::ERR_CONNECTION_TIMED_OUT",
        "net::ERR_CONNECTION_REFUSED",
        "net::ERR_CONNECTION_RESET",
        "net::ERR_CONNECTION_CLOSED",
        "net::ERR_CONNECTION_FAILED",
        "net::ERR_EMPTY_RESPONSE",
        "net::ERR_NAME_NOT_RESOLVED",
        "net::ERR_TUNNEL_CONNECTION_FAILED",
        "net::ERR_PROXY_CONNECTION_FAILED",
        "net::ERR_NETWORK_CHANGED",
    ];
    let retryable = transient.contains(&error);
    let reason = if error.contains("TIMED_OUT") {
        "navigation_timeout"
    } else if retryable {
        "network_error"
    } else {
        "navigation_failed"
    };
    Failure::new(reason, format!("The page could not be loaded ({error})"), retryable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_network_errors_are_retryable_and_others_are_not() {
        let f = classify_navigation_error("net::ERR_CONNECTION_REFUSED", "https://example.com/", &[]);
        assert_eq!((f.reason, f.retryable), ("network_error", true));
        let f = classify_navigation_error("net::ERR_CONNECTION_TIMED_OUT", "https://example.com/", &[]);
        assert_eq!((f.reason, f.retryable), ("navigation_timeout", true));
        let f = classify_navigation_error("net::ERR_CERT_DATE_INVALID", "https://example.com/", &[]);
        assert_eq!((f.reason, f.retryable), ("navigation_failed", false));
        let blocked = [BlockedRequest {
            url: "example.com:443".into(),
            reason: "non-public address (loopback)".into(),
        }];
        let f = classify_navigation_error("net::ERR_TUNNEL_CONNECTION_FAILED", "https://example.com/", &blocked);
        assert_eq!((f.reason, f.retryable), ("blocked_address", false));
    }
}
