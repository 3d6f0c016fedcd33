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
//! capture_floor [--runs N] [--fast] [--width W --height H --scale S] URL...
//! ```
//! `--fast` asks for the PNG with `optimizeForSpeed` (the stricter floor
//! for a worker that does). `EGRESS_ALLOW` as for the worker; `CHROMIUM_PATH`
//! and `CHROMIUM_USER` too. Prints one JSON line per capture (after one
//! warm-up capture per URL) with each step's milliseconds.

#[allow(dead_code, unused_imports)]
#[path = "../src/browser.rs"]
mod browser;
#[allow(dead_code, unused_imports)]
#[path = "../src/cdp.rs"]
mod cdp;
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
use serde_json::{json, Value};

use crate::browser::BrowserSlot;
use crate::cdp::Connection;
use crate::config::BrowserUser;
use crate::egress::{EgressPolicy, EgressProxy};

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
        for run in 0..=options.runs {
            let proxy = EgressProxy::start(policy.clone(), u64::MAX).await?;
            let steps = capture(&browser.cdp, &proxy.url(), url, &options).await?;
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

/// One capture; each step's milliseconds, and the sizes of what it got.
async fn capture(cdp: &Connection, proxy: &str, url: &str, o: &Options) -> anyhow::Result<Value> {
    let started = Instant::now();
    let ms = |since: Instant| since.elapsed().as_millis() as u64;
    let (context_id, session) = cdp.open_page(proxy, TIMEOUT).await?;
    let mut events = cdp.subscribe(&session);
    let call = |method: &'static str, params: Value| cdp.call(Some(&session), method, params, TIMEOUT);
    call("Page.enable", json!({})).await?;
    if o.network {
        call(
            "Network.enable",
            json!({"maxTotalBufferSize": 256 * 1024 * 1024, "maxResourceBufferSize": 64 * 1024 * 1024}),
        )
        .await?;
    }
    if o.script {
        call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": include_str!("../src/page.js")}),
        )
        .await?;
    }
    call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": o.width, "height": o.height, "deviceScaleFactor": o.scale, "mobile": false,
               "screenWidth": o.width, "screenHeight": o.height}),
    )
    .await?;
    let opened_ms = ms(started);

    let step = Instant::now();
    call("Page.navigate", json!({"url": url})).await?;
    while let Some(event) = events.recv().await {
        if event.method == "Page.loadEventFired" {
            break;
        }
    }
    let navigate_ms = ms(step);

    if o.scroll {
        let mut y = 0;
        loop {
            y += o.height;
            let more = call(
                "Runtime.evaluate",
                json!({"expression": format!("{y} < document.documentElement.scrollHeight && (scrollTo(0, {y}), true)"), "returnByValue": true}),
            )
            .await?;
            if more["result"]["value"] != json!(true) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        call("Runtime.evaluate", json!({"expression": "scrollTo(0, 0)"})).await?;
    }
    let mut snapshot_ms = 0;
    let mut snapshot = None;
    if o.snapshot_first {
        let step = Instant::now();
        snapshot = Some(
            cdp.call_raw(
                Some(&session),
                "DOMSnapshot.captureSnapshot",
                json!({"computedStyles": dom::STYLE_NAMES, "includePaintOrder": true, "includeDOMRects": true}),
                TIMEOUT,
            )
            .await?,
        );
        snapshot_ms = ms(step);
    }
    let scrolled_ms = ms(started);

    let step = Instant::now();
    let metrics = call("Page.getLayoutMetrics", json!({})).await?;
    let content_height = metrics["cssContentSize"]["height"].as_f64().unwrap_or(1.0).ceil() as u32;
    let mut params = json!({
        "format": "png", "captureBeyondViewport": true, "fromSurface": true,
        "clip": {"x": 0, "y": 0, "width": o.width, "height": content_height.min(MAX_HEIGHT_PX), "scale": 1},
    });
    if o.fast {
        params["optimizeForSpeed"] = json!(true);
    }
    let shot = call("Page.captureScreenshot", params).await?;
    let png = STANDARD.decode(shot["data"].as_str().unwrap_or_default())?;
    let screenshot_ms = ms(step);

    let snapshot = match snapshot {
        Some(snapshot) => snapshot,
        None => {
            let step = Instant::now();
            let snapshot = cdp
                .call_raw(
                    Some(&session),
                    "DOMSnapshot.captureSnapshot",
                    json!({"computedStyles": dom::STYLE_NAMES, "includePaintOrder": true, "includeDOMRects": true}),
                    TIMEOUT,
                )
                .await?;
            snapshot_ms = ms(step);
            snapshot
        }
    };
    let total_ms = ms(started);
    let nodes = dom::Snapshot::parse(&snapshot)
        .map(|s| s.questions().text_nodes.len())
        .unwrap_or(0);

    cdp.forget_session(&session);
    cdp.dispose_context(&context_id, TIMEOUT).await?;
    Ok(json!({
        "openMs": opened_ms, "navigateMs": navigate_ms, "beforeScreenshotMs": scrolled_ms, "screenshotMs": screenshot_ms,
        "snapshotMs": snapshot_ms, "totalMs": total_ms, "contentHeight": content_height,
        "pngBytes": png.len(), "textNodes": nodes,
    }))
}
