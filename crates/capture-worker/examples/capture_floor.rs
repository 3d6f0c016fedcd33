//! The floor of a capture (bench W, issue 21 part 3): what any capture of a
//! page must do and nothing else, on the worker's own CDP client and the
//! worker's own browser launch (sandboxed, site isolation on, CDP over the
//! pipe, a browser kept warm, each page in a new browser context behind its
//! own egress proxy): navigate to the load event, one full-page PNG (the
//! worker's parameters: `captureBeyondViewport`, a clip of the content
//! height up to 16 384 CSS px at scale 1) and one DOM snapshot with the
//! worker's computed styles, paint order and DOM rects.
//!
//! ```sh
//! capture_floor [--runs N] [--fast] [--one-context|--one-tab] [--width W --height H --scale S] URL...
//! ```
//! `--fast` asks for the PNG with `optimizeForSpeed` (the stricter floor
//! for a worker that does). `--one-context`: every run of a URL in one
//! browser context, a fresh tab each, as an import set's members (issue
//! 53); `openMs` is then what a fresh tab costs. `--one-tab`: one context
//! and one tab, prepared once and navigated again each run. `EGRESS_ALLOW` as for the worker; `CHROMIUM_PATH`
//! and `CHROMIUM_USER` too. Prints one JSON line per capture (after one
//! warm-up capture per URL) with each step's milliseconds.

#[allow(dead_code, unused_imports)]
#[path = "../src/browser.rs"]
mod browser;
#[allow(dead_code, unused_imports)]
#[path = "../src/cdp.rs"]
mod cdp;
#[allow(dead_code, unused_imports)]
#[path = "../src/commands.rs"]
mod commands;
#[allow(dead_code, unused_imports)]
#[path = "../src/config.rs"]
mod config;
#[allow(dead_code, unused_imports)]
#[path = "../src/dom/mod.rs"]
mod dom;
#[allow(dead_code, unused_imports)]
#[path = "../src/egress.rs"]
mod egress;
#[allow(dead_code, unused_imports)]
#[path = "../src/emulation.rs"]
mod emulation;
#[allow(dead_code, unused_imports)]
#[path = "../src/failure.rs"]
mod failure;
#[allow(dead_code, unused_imports)]
#[path = "../src/metrics.rs"]
mod metrics;
#[allow(dead_code, unused_imports)]
#[path = "../src/protocol.rs"]
mod protocol;

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::browser::BrowserSlot;
use crate::cdp::{CdpError, Command, Connection, Reply};
use crate::commands::{
    AddScriptToEvaluateOnNewDocument, CaptureScreenshot, CaptureSnapshot, Clip, Evaluate, GetLayoutMetrics, Navigate,
    NetworkEnable, PageEnable,
};
use crate::config::BrowserUser;
use crate::egress::{EgressPolicy, EgressProxy};
use crate::emulation::SetDeviceMetricsOverride;
use crate::protocol::{Event, Screenshot};

const MAX_HEIGHT_PX: u32 = 16_384;
const TIMEOUT: Duration = Duration::from_secs(90);

struct Options {
    runs: usize,
    fast: bool,
    /// Experiments: what of the worker's own preparation slows the steps.
    scroll: bool,
    network: bool,
    script: bool,
    snapshot_first: bool,
    /// Every run of a URL in one browser context, a fresh tab each (an
    /// import set's members, issue 53): `openMs` is then the tab's cost.
    one_context: bool,
    /// With `one_context`, one tab for every run too, navigated again
    /// (prepared once): what a set's member would pay without a tab of its own.
    one_tab: bool,
    width: u32,
    height: u32,
    scale: f64,
    urls: Vec<String>,
}

fn options() -> Options {
    let mut options = Options {
        runs: 3,
        fast: false,
        scroll: false,
        network: false,
        script: false,
        snapshot_first: false,
        one_context: false,
        one_tab: false,
        width: 1440,
        height: 900,
        scale: 2.0,
        urls: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match arg.as_str() {
            "--runs" => options.runs = value().parse().expect("--runs N"),
            "--fast" => options.fast = true,
            "--scroll" => options.scroll = true,
            "--network" => options.network = true,
            "--script" => options.script = true,
            "--snapshot-first" => options.snapshot_first = true,
            "--one-context" => options.one_context = true,
            "--one-tab" => {
                options.one_context = true;
                options.one_tab = true;
            }
            "--width" => options.width = value().parse().expect("--width W"),
            "--height" => options.height = value().parse().expect("--height H"),
            "--scale" => options.scale = value().parse().expect("--scale S"),
            url => options.urls.push(url.to_owned()),
        }
    }
    options
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options();
    let allow = std::env::var("EGRESS_ALLOW").unwrap_or_default();
    let allow = allow
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("ip:port"));
    let policy = Arc::new(EgressPolicy::new(allow));
    let guard = EgressProxy::start(policy.clone(), u64::MAX).await?;
    let chromium = std::env::var("CHROMIUM_PATH").unwrap_or_else(|_| config::DEFAULT_CHROMIUM.into());
    let user = BrowserUser::parse(&std::env::var("CHROMIUM_USER").unwrap_or_else(|_| "nobody".into()))
        .map_err(anyhow::Error::msg)?;
    // One warm browser for every run, never relaunched.
    let browsers = BrowserSlot::new(chromium.into(), guard.url(), user, u32::MAX, 1024);
    let browser = browsers.get().await?;
    for url in &options.urls {
        let shared = EgressProxy::start(policy.clone(), u64::MAX).await?;
        let shared_context = match options.one_context {
            true => Some(browser.cdp.open_context(&shared.url(), TIMEOUT).await?),
            false => None,
        };
        let tab = match (&shared_context, options.one_tab) {
            (Some(context_id), true) => {
                let (target_id, session) = browser.cdp.open_target(context_id, TIMEOUT).await?;
                let page = Page {
                    cdp: &browser.cdp,
                    session: &session,
                };
                page.prepare(&options).await?;
                Some((target_id, session))
            }
            _ => None,
        };
        for run in 0..=options.runs {
            let proxy = EgressProxy::start(policy.clone(), u64::MAX).await?;
            let shared = Shared {
                context_id: shared_context.as_deref(),
                tab: tab.as_ref().map(|(t, s)| (t.as_str(), s.as_str())),
            };
            let steps = capture(&browser.cdp, &proxy.url(), shared, url, &options).await?;
            if run > 0 {
                println!(
                    "{}",
                    json!({"url": url, "fast": options.fast, "run": run, "steps": steps})
                );
            }
        }
    }
    browsers.shutdown().await;
    Ok(())
}

/// What the caller keeps from run to run: a browser context, and in it a
/// tab (its target and session), prepared.
#[derive(Clone, Copy)]
struct Shared<'a> {
    context_id: Option<&'a str>,
    tab: Option<(&'a str, &'a str)>,
}

/// One capture; each step's milliseconds, and the sizes of what it got.
async fn capture(cdp: &Connection, proxy: &str, shared: Shared<'_>, url: &str, o: &Options) -> anyhow::Result<Value> {
    let started = Instant::now();
    let context_id = match shared.context_id {
        Some(context_id) => context_id.to_owned(),
        None => cdp.open_context(proxy, TIMEOUT).await?,
    };
    let (target_id, session) = match shared.tab {
        Some((target_id, session)) => (target_id.to_owned(), session.to_owned()),
        None => cdp.open_target(&context_id, TIMEOUT).await?,
    };
    let mut events = cdp.subscribe(&session);
    let page = Page { cdp, session: &session };
    if shared.tab.is_none() {
        page.prepare(o).await?;
    }
    let opened_ms = ms(started);

    let step = Instant::now();
    page.navigate(url, &mut events).await?;
    let navigate_ms = ms(step);

    if o.scroll {
        page.scroll_through(o.height).await?;
    }
    let mut snapshot_ms = 0;
    let mut snapshot = None;
    if o.snapshot_first {
        let step = Instant::now();
        snapshot = Some(page.snapshot().await?);
        snapshot_ms = ms(step);
    }
    let scrolled_ms = ms(started);

    let step = Instant::now();
    let (content_height, png) = page.screenshot(o).await?;
    let screenshot_ms = ms(step);

    let snapshot = match snapshot {
        Some(snapshot) => snapshot,
        None => {
            let step = Instant::now();
            let snapshot = page.snapshot().await?;
            snapshot_ms = ms(step);
            snapshot
        }
    };
    let total_ms = ms(started);

    match (shared.context_id, shared.tab) {
        (_, Some(_)) => {}
        (Some(_), None) => {
            cdp.forget_session(&session);
            cdp.close_target(&target_id, TIMEOUT).await?
        }
        (None, None) => {
            cdp.forget_session(&session);
            cdp.dispose_context(&context_id, TIMEOUT).await?
        }
    }
    let nodes = dom::Snapshot::parse(&snapshot)?.questions().text_nodes.len();
    Ok(json!({
        "openMs": opened_ms, "navigateMs": navigate_ms, "beforeScreenshotMs": scrolled_ms, "screenshotMs": screenshot_ms,
        "snapshotMs": snapshot_ms, "totalMs": total_ms, "contentHeight": content_height,
        "pngBytes": png.len(), "textNodes": nodes,
    }))
}

/// Milliseconds since `since`.
fn ms(since: Instant) -> u64 {
    since.elapsed().as_millis() as u64
}

/// The page of one capture: its session on the browser's connection.
struct Page<'a> {
    cdp: &'a Connection,
    session: &'a str,
}

impl Page<'_> {
    async fn send<C: Command>(&self, command: &C) -> Result<C::Reply, CdpError>
    where
        C::Reply: DeserializeOwned,
    {
        self.cdp.send(Some(self.session), command, TIMEOUT).await
    }

    /// Page events; as the experiments ask, the network's bodies kept and
    /// the worker's page script; the viewport.
    async fn prepare(&self, o: &Options) -> anyhow::Result<()> {
        self.send(&PageEnable {}).await?;
        if o.network {
            let network = NetworkEnable {
                max_total_buffer_size: 256 * 1024 * 1024,
                max_resource_buffer_size: 64 * 1024 * 1024,
            };
            self.send(&network).await?;
        }
        if o.script {
            let script = AddScriptToEvaluateOnNewDocument {
                source: include_str!("../src/page.js"),
                world_name: None,
            };
            self.send(&script).await?;
        }
        let (width, height) = (o.width as i32, o.height as i32);
        let metrics = SetDeviceMetricsOverride {
            width,
            height,
            device_scale_factor: o.scale as f32,
            mobile: false,
            screen_width: width,
            screen_height: height,
        };
        self.send(&metrics).await?;
        Ok(())
    }

    /// Navigates to `url` and waits for its load event.
    async fn navigate(&self, url: &str, events: &mut UnboundedReceiver<Event>) -> anyhow::Result<()> {
        self.send(&Navigate { url }).await?;
        while let Some(event) = events.recv().await {
            if event.method == "Page.loadEventFired" {
                break;
            }
        }
        Ok(())
    }

    /// Scrolls down the page a viewport of `height` at a time, then back up.
    async fn scroll_through(&self, height: u32) -> anyhow::Result<()> {
        let mut y = 0;
        loop {
            y += height;
            let expression = format!("{y} < document.documentElement.scrollHeight && (scrollTo(0, {y}), true)");
            let more = self.send(&evaluate(&expression, true)).await?;
            if more.value() != Some(json!(true)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.send(&evaluate("scrollTo(0, 0)", false)).await?;
        Ok(())
    }

    /// The full-page PNG as the worker takes it: the content's height
    /// (CSS px) and the PNG.
    async fn screenshot(&self, o: &Options) -> anyhow::Result<(u32, Vec<u8>)> {
        let metrics = self.send(&GetLayoutMetrics {}).await?;
        let content = metrics.css_content_size.unwrap_or(metrics.content_size);
        let content_height = content.height.ceil() as u32;
        let shot = CaptureScreenshot {
            format: "png",
            capture_beyond_viewport: true,
            from_surface: true,
            optimize_for_speed: o.fast,
            clip: Clip {
                x: 0.0,
                y: 0.0,
                width: f64::from(o.width),
                height: f64::from(content_height.min(MAX_HEIGHT_PX)),
                scale: 1.0,
            },
        };
        let shot = self.cdp.send_for_text(Some(self.session), &shot, TIMEOUT).await?;
        let png = STANDARD.decode(shot.result::<Screenshot<'_>>()?.data.as_bytes())?;
        Ok((content_height, png))
    }

    /// The DOM snapshot as the worker asks for it, its answer's text.
    async fn snapshot(&self) -> Result<Reply, CdpError> {
        let snapshot = CaptureSnapshot {
            computed_styles: dom::STYLE_NAMES,
            include_paint_order: true,
            include_dom_rects: true,
        };
        self.cdp.send_for_text(Some(self.session), &snapshot, TIMEOUT).await
    }
}

/// `Runtime.evaluate` in the page's main world, its value returned when
/// `by_value`.
fn evaluate(expression: &str, by_value: bool) -> Evaluate<'_> {
    Evaluate {
        expression,
        context_id: None,
        await_promise: false,
        return_by_value: by_value,
    }
}
