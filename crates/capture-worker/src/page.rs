//! The page being captured: a tab in a browser context of its own, with the
//! named steps of a capture (SPEC §10 "Capture") and what its CDP events
//! told so far ([`PageState`]).
//!
//! Cross-site frames render in processes of their own (site isolation).
//! Each is attached through `Target.setAutoAttach` (flattened, paused until
//! the worker has enabled its network events and set the same auto-attach
//! on it, so nested frames are found too), and its events feed the same
//! [`PageState`]: network idle waits for every frame, and the frame is
//! snapshotted through its own session.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use futures::StreamExt;
use page_import_contract::capture::{AssetKind, Dialog, DialogKind, FontFace, MAX_DIALOGS, MAX_DIALOG_MESSAGE_CHARS};
use page_import_contract::job::Viewport;
use serde_json::{json, Value};

use crate::browser::Browser;
use crate::cdp::{CdpError, Connection, Event, Reply};
use crate::dom::{self, Details, Owner, PixelsOf, Questions, TextNode};
use crate::egress::authority_of;
use crate::failure::{Cause, Failure};

const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// Screenshots and snapshots of big pages take seconds (FACTS: 4.6 s, 2.9 s).
const HEAVY_TIMEOUT: Duration = Duration::from_secs(90);
/// Network idle: nothing in flight and nothing started or ended for this long.
pub const NETWORK_IDLE_PERIOD: Duration = Duration::from_millis(200);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);
const FONTS_TIMEOUT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(50);
/// The scroll pass (SPEC §11): at most this long, this long at each step.
pub const REVEAL_BUDGET: Duration = Duration::from_secs(3);
const REVEAL_PAUSE: Duration = Duration::from_millis(100);
/// How long the page may react to the scroll back to the top.
const TOP_BUDGET: Duration = Duration::from_millis(1000);
/// The page has stopped changing: no mutation, drawing or layout change
/// for this long, waited for at most `QUIET_TIMEOUT`.
pub const PAGE_STILL_PERIOD: Duration = Duration::from_millis(500);
pub const QUIET_TIMEOUT: Duration = Duration::from_secs(5);
/// CDP calls of one kind in flight at once while asking about nodes.
const IN_FLIGHT: usize = 64;
/// A canvas or video is read up to this many pixels, and kept up to this
/// many bytes of PNG.
const MAX_ELEMENT_PIXELS: u64 = 4096 * 4096;
const MAX_ELEMENT_IMAGE_BYTES: usize = 16 * 1024 * 1024;
/// The fonts of at most this many nodes of one computed style stand for
/// the others (see [`representatives`]).
const MAX_REPRESENTATIVES: usize = 16;
/// The worker's watcher in the page (see the file).
const PAGE_SCRIPT: &str = include_str!("page.js");
/// Response bodies Chromium keeps for `Network.getResponseBody`.
const NETWORK_BUFFERS: (u64, u64) = (256 * 1024 * 1024, 64 * 1024 * 1024);

/// What the events of the page's sessions told so far.
#[derive(Default)]
pub struct PageState {
    /// Main-frame documents by request id.
    documents: HashMap<String, DocumentResponse>,
    /// The JavaScript dialogs the page opened (at most `MAX_DIALOGS`).
    dialogs: Vec<Dialog>,
    load_fired: bool,
    crashed: bool,
    /// Requests in flight; a document request names the frame it loads.
    in_flight: HashMap<String, Option<String>>,
    last_activity: Option<Instant>,
    resources: HashMap<String, Resource>,
    /// Cross-site frames attached in their own sessions, parents first.
    frames: Vec<Frame>,
    /// Web fonts Chromium loaded (`CSS.fontsUpdated`).
    web_fonts: Vec<WebFont>,
    /// `host:port` of everything the page's documents asked for.
    requested: HashSet<String>,
}

/// How the main document was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentResponse {
    pub status: u16,
    /// After redirects.
    pub url: String,
    /// As Chromium read it (`Content-Type`, or sniffed).
    pub mime_type: String,
    /// `Content-Disposition: attachment`: a download, not a page.
    pub attachment: bool,
}

/// A cross-site frame's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub session: String,
    pub frame_id: String,
    /// The session of the frame (or page) that holds it.
    pub parent_session: String,
}

/// A web font Chromium loaded: the family its file names, the face its
/// `@font-face` rule declared, and the file's URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebFont {
    pub family: String,
    pub weight: String,
    pub style: String,
    /// The code points it is for (`unicode-range`), inclusive.
    pub unicode_range: Vec<(u32, u32)>,
    pub src: String,
}

/// `unicode-range` as CSS writes it: `U+0-10FFFF, U+0131, U+4??`.
fn unicode_range(text: &str) -> Vec<(u32, u32)> {
    let ranges: Vec<(u32, u32)> = text
        .split(',')
        .filter_map(|part| {
            let part = part.trim();
            let hex = part.strip_prefix("U+").or_else(|| part.strip_prefix("u+"))?;
            let number = |h: &str| u32::from_str_radix(h, 16).ok();
            match hex.split_once('-') {
                Some((low, high)) => Some((number(low)?, number(high)?)),
                None => Some((number(&hex.replace('?', "0"))?, number(&hex.replace('?', "F"))?)),
            }
        })
        .collect();
    if ranges.is_empty() {
        vec![(0, 0x10FFFF)]
    } else {
        ranges
    }
}

/// Of the web fonts of `family`, the file that drew `text`: the same style
/// first, then the file whose `unicode-range` covers most of its
/// characters (a family split by script into files of one face), then the
/// nearest weight, as CSS font matching picks a face.
fn web_font_for<'w>(fonts: &'w [WebFont], family: &str, text: &TextNode) -> Option<&'w WebFont> {
    let number = |w: &str| match w {
        "normal" => Some(400.0),
        "bold" => Some(700.0),
        w => w.parse::<f64>().ok(),
    };
    let wanted = number(&text.font_weight).unwrap_or(400.0);
    let distance = |declared: &str| {
        let mut range = declared.split_whitespace().filter_map(number);
        let low = range.next().unwrap_or(400.0);
        let high = range.next().unwrap_or(low);
        if wanted < low {
            low - wanted
        } else {
            (wanted - high).max(0.0)
        }
    };
    let kind = |s: &str| s.split_whitespace().next().unwrap_or("normal").to_owned();
    let uncovered = |f: &WebFont| {
        text.chars
            .iter()
            .filter(|c| {
                !f.unicode_range
                    .iter()
                    .any(|(low, high)| (*low..=*high).contains(&u32::from(**c)))
            })
            .count()
    };
    let key = |f: &WebFont| {
        (
            kind(&f.style) != kind(&text.font_style),
            uncovered(f),
            distance(&f.weight),
        )
    };
    fonts.iter().filter(|f| f.family == family).min_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0).then(ka.1.cmp(&kb.1)).then(ka.2.total_cmp(&kb.2))
    })
}

/// A response worth keeping as an asset, and the session that can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resource {
    url: String,
    kind: AssetKind,
    mime_type: String,
    session: String,
    finished: bool,
}

impl PageState {
    /// Applies one event of `session` (`main`: the page's own session).
    pub fn apply(&mut self, session: &str, main: bool, event: &Event) {
        let p = &event.params;
        let request_id = || p["requestId"].as_str().unwrap_or_default().to_owned();
        match event.method.as_str() {
            "Network.requestWillBeSent" => {
                self.requested
                    .extend(p["request"]["url"].as_str().and_then(authority_of));
                // Media streams as long as it plays (a looping background
                // video): it is motion, not a load to wait for.
                if p["type"] == "Media" {
                    return;
                }
                let frame = (p["type"] == "Document").then(|| p["frameId"].as_str().unwrap_or_default().to_owned());
                self.in_flight.insert(request_id(), frame);
                self.last_activity = Some(Instant::now());
            }
            "Network.responseReceived" => {
                let response = &p["response"];
                let url = response["url"].as_str().unwrap_or_default().to_owned();
                let status = response["status"].as_u64().unwrap_or(0) as u16;
                let kind = match p["type"].as_str() {
                    Some("Document") => {
                        if main {
                            let attachment = response["headers"].as_object().is_some_and(|headers| {
                                headers.iter().any(|(name, value)| {
                                    name.eq_ignore_ascii_case("content-disposition")
                                        && value.as_str().is_some_and(|v| {
                                            v.trim_start().to_ascii_lowercase().starts_with("attachment")
                                        })
                                })
                            });
                            let mime_type = response["mimeType"].as_str().unwrap_or_default().to_owned();
                            self.documents.insert(
                                request_id(),
                                DocumentResponse {
                                    status,
                                    url,
                                    mime_type,
                                    attachment,
                                },
                            );
                        }
                        return;
                    }
                    Some("Image") => AssetKind::Image,
                    Some("Stylesheet") => AssetKind::Stylesheet,
                    Some("Font") => AssetKind::Font,
                    _ => return,
                };
                if url.starts_with("http") && (200..300).contains(&status) {
                    self.resources.insert(
                        request_id(),
                        Resource {
                            url,
                            kind,
                            mime_type: response["mimeType"].as_str().unwrap_or_default().to_owned(),
                            session: session.to_owned(),
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
            "Target.attachedToTarget" if p["targetInfo"]["type"] == "iframe" => {
                let frame_id = p["targetInfo"]["targetId"].as_str().unwrap_or_default().to_owned();
                // The frame's own process finishes loading its document and
                // reports it in the frame's session: the request the parent
                // saw start is no longer the parent's to wait for.
                self.in_flight
                    .retain(|_, frame| frame.as_deref() != Some(frame_id.as_str()));
                self.frames.push(Frame {
                    session: p["sessionId"].as_str().unwrap_or_default().to_owned(),
                    frame_id,
                    parent_session: session.to_owned(),
                });
                self.last_activity = Some(Instant::now());
            }
            "Target.detachedFromTarget" => {
                let gone = p["sessionId"].as_str().unwrap_or_default();
                self.frames.retain(|f| f.session != gone);
            }
            "Network.webSocketCreated" => {
                self.requested.extend(p["url"].as_str().and_then(authority_of));
            }
            "CSS.fontsUpdated" => {
                let font = &p["font"];
                if let (Some(family), Some(src)) = (font["platformFontFamily"].as_str(), font["src"].as_str()) {
                    let text = |key: &str| font[key].as_str().unwrap_or("normal").to_owned();
                    self.web_fonts.push(WebFont {
                        family: family.to_owned(),
                        weight: text("fontWeight"),
                        style: text("fontStyle"),
                        unicode_range: unicode_range(font["unicodeRange"].as_str().unwrap_or_default()),
                        src: src.to_owned(),
                    });
                }
            }
            "Page.javascriptDialogOpening" if main => {
                if self.dialogs.len() < MAX_DIALOGS {
                    let kind = match p["type"].as_str() {
                        Some("confirm") => DialogKind::Confirm,
                        Some("prompt") => DialogKind::Prompt,
                        Some("beforeunload") => DialogKind::Beforeunload,
                        _ => DialogKind::Alert,
                    };
                    let message = p["message"].as_str().unwrap_or_default();
                    self.dialogs.push(Dialog {
                        kind,
                        message: message.chars().take(MAX_DIALOG_MESSAGE_CHARS).collect(),
                    });
                }
            }
            "Page.loadEventFired" if main => self.load_fired = true,
            "Inspector.targetCrashed" if main => self.crashed = true,
            _ => {}
        }
    }

    /// Nothing in flight and nothing started or ended for `quiet`.
    pub fn network_idle(&self, quiet: Duration) -> bool {
        self.in_flight.is_empty() && self.last_activity.is_none_or(|t| t.elapsed() >= quiet)
    }

    /// No request in flight, and none started or ended since `since`.
    pub fn untouched_since(&self, since: Instant) -> bool {
        self.in_flight.is_empty() && self.last_activity.is_none_or(|t| t < since)
    }

    /// Whether the page's documents asked for anything at `authority`
    /// (`host:port`, as the egress proxy names a tunnel).
    pub fn requested(&self, authority: &str) -> bool {
        self.requested.contains(authority)
    }
}

/// Where navigation ended.
#[derive(Debug, Default)]
pub struct Navigation {
    /// Chromium's `net::ERR_…` for the main document, when it failed.
    pub net_error: Option<String>,
    /// Chromium took the main document for a download.
    pub is_download: bool,
    /// How the main document was answered, when it was.
    pub document: Option<DocumentResponse>,
}

/// The page's content height and the part of it a screenshot covers (CSS px).
#[derive(Debug, Clone, Copy)]
pub struct Heights {
    pub content_height: u32,
    pub captured_height: u32,
}

/// A full-page PNG and the heights it covers.
pub struct Screenshot {
    pub png: Bytes,
    pub content_height: u32,
    pub captured_height: u32,
}

/// The title, final URL and `document.fonts` of the page.
pub struct About {
    pub title: String,
    pub url: String,
    pub fonts: Vec<FontFace>,
}

/// A snapshot of one part of the page: the page's own session first, then
/// each cross-site frame's, with the element that holds it.
pub struct PartSnapshot {
    pub reply: Reply,
    pub owner: Option<Owner>,
    /// The session it was taken in, which can answer questions about it.
    pub session: String,
}

pub struct AssetBody {
    pub url: String,
    pub kind: AssetKind,
    pub mime_type: String,
    pub bytes: Bytes,
}

/// A font that drew text, and the URL of its file when it is a web font.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FontUse {
    pub family: String,
    pub post_script_name: String,
    pub custom: bool,
    pub src: Option<String>,
}

/// The pixels of a canvas or video as a PNG.
pub struct ElementImage {
    pub kind: AssetKind,
    pub png: Bytes,
}

/// What every part's [`Questions`] were answered with: per part its
/// [`Details`], and the tables they index.
#[derive(Default)]
pub struct Answers {
    pub details: Vec<Details>,
    pub fonts: Vec<FontUse>,
    pub images: Vec<ElementImage>,
}

/// A page in its own browser context. [`Page::close`] disposes of the
/// context. There is no `Drop`: a page dropped without `close` leaves its
/// context open until the worker's connection to that browser ends, when
/// the browser disposes of it (`disposeOnDetach`).
pub struct Page {
    cdp: Connection,
    context_id: String,
    session: String,
    state: Arc<Mutex<PageState>>,
    /// The job's viewport, once [`Page::prepare`] set it.
    viewport: std::sync::OnceLock<Viewport>,
}

impl Page {
    /// A blank tab in a new browser context whose traffic goes through
    /// `proxy_url`.
    pub async fn open(browser: &Browser, proxy_url: &str) -> Result<Self, Failure> {
        let cdp = browser.cdp.clone();
        let (context_id, session) = cdp.open_page(proxy_url, COMMAND_TIMEOUT).await?;
        let state = Arc::new(Mutex::new(PageState::default()));
        watch(&cdp, &session, true, &state);
        Ok(Self {
            cdp,
            context_id,
            session,
            state,
            viewport: std::sync::OnceLock::new(),
        })
    }

    /// Events on, the job's viewport and screen, frames attached as they come.
    pub async fn prepare(&self, viewport: Viewport) -> Result<(), Failure> {
        let _ = self.viewport.set(viewport);
        self.call("Page.enable", json!({})).await?;
        enable_network(&self.cdp, &self.session).await?;
        self.call("Inspector.enable", json!({})).await?;
        self.call("Page.addScriptToEvaluateOnNewDocument", json!({"source": PAGE_SCRIPT}))
            .await?;
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({
                "width": viewport.width, "height": viewport.height,
                "deviceScaleFactor": viewport.device_scale_factor, "mobile": false,
                "screenWidth": viewport.width, "screenHeight": viewport.height,
            }),
        )
        .await?;
        auto_attach(&self.cdp, &self.session).await?;
        Ok(())
    }

    /// Navigates and waits for the load event, all within `timeout`.
    pub async fn navigate(&self, url: &str, timeout: Duration) -> Result<Navigation, Failure> {
        let timed_out = || {
            Failure::from(Cause::NavigationTimeout {
                secs: timeout.as_secs(),
            })
        };
        let deadline = Instant::now() + timeout;
        let navigated = match self.call_within("Page.navigate", json!({"url": url}), timeout).await {
            Err(CdpError::Timeout { .. }) => return Err(timed_out()),
            other => other?,
        };
        let loader_id = navigated["loaderId"].as_str().unwrap_or_default();
        let document = || self.state().documents.get(loader_id).cloned();
        let is_download = navigated["isDownload"].as_bool().unwrap_or(false);
        if let Some(error) = navigated["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Ok(Navigation {
                net_error: Some(error.to_owned()),
                is_download,
                document: document(),
            });
        }
        if is_download {
            return Ok(Navigation {
                net_error: None,
                is_download,
                document: document(),
            });
        }
        loop {
            if self.crashed() {
                return Err(Cause::BrowserCrashed.into());
            }
            if self.state().load_fired {
                break;
            }
            if Instant::now() >= deadline {
                return Err(timed_out());
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(Navigation {
            net_error: None,
            is_download,
            document: document(),
        })
    }

    /// The JavaScript dialogs the page opened so far, in order.
    pub fn dialogs(&self) -> Vec<Dialog> {
        self.state().dialogs.clone()
    }

    /// Waits for `selector` to match, polling; `None` when there is none.
    pub async fn wait_until_ready(&self, selector: Option<&str>, timeout: Duration) -> Result<Option<bool>, Failure> {
        let Some(selector) = selector else {
            return Ok(None);
        };
        let probe = format!("!!document.querySelector({})", Value::String(selector.to_owned()));
        let deadline = Instant::now() + timeout;
        loop {
            if self.evaluate(&probe, false, COMMAND_TIMEOUT).await? == Value::Bool(true) {
                return Ok(Some(true));
            }
            if Instant::now() >= deadline {
                return Err(Cause::ReadyTimeout {
                    secs: timeout.as_secs(),
                }
                .into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Lazy images loaded, the network quiet in every frame, fonts ready
    /// (each wait bounded).
    pub async fn settle(&self) -> Result<(), Failure> {
        // Lazy images would stay blank in a screenshot taken without scrolling.
        self.evaluate(
            "document.querySelectorAll('img[loading=lazy],iframe[loading=lazy]').forEach(e => e.loading = 'eager')",
            false,
            COMMAND_TIMEOUT,
        )
        .await?;
        self.network_quiet(Instant::now() + SETTLE_TIMEOUT).await;
        let _ = self
            .evaluate("document.fonts.ready.then(() => true)", true, FONTS_TIMEOUT)
            .await;
        // The document's size as of now, which [`Page::quiet_and_freeze`]
        // compares with: the page has stopped changing once it is the same
        // there and nothing else changed for [`PAGE_STILL_PERIOD`]. (Seen
        // first there, a size would count as a change and hold every
        // capture for that whole period.)
        self.probe(
            "(s => { const d = document.documentElement; if (s && d) s.size = d.scrollWidth + 'x' + d.scrollHeight; return true; })(window.__pageImportCapture)",
        )
        .await?;
        Ok(())
    }

    /// The scroll pass (SPEC §11): the page scrolled from top to bottom in
    /// viewport steps, up to `max_height` CSS px and [`REVEAL_BUDGET`];
    /// then back to the top as a reader scrolls back
    /// ([`Page::back_to_top`]), and the network waited for again
    /// (bounded). The
    /// worker drives each step and does its own waiting: a page that breaks
    /// its own `scrollTo` or timers only shortens the pass, which improves
    /// a capture and never fails it.
    ///
    /// At each step the page gets two animation frames, in which Chromium
    /// delivers scroll events and IntersectionObserver callbacks. A step
    /// the page may still be reacting to is held for [`REVEAL_PAUSE`] in
    /// all, so what appears in view can appear: one after which the page
    /// mutated its DOM, drew on a canvas in an animation frame, set a timer or
    /// started or ended a request, and every step while an interval runs
    /// or the page has frames (whose scripts `page.js` does not see). A
    /// page none of whose scripts heard the step goes on to the next.
    pub async fn reveal(&self, max_height: u32) -> Result<(), Failure> {
        let started = Instant::now();
        self.probe("(s => { if (s) s.hold = true; return true; })(window.__pageImportCapture)")
            .await?;
        let mut steps = 0;
        while started.elapsed() < REVEAL_BUDGET {
            let step_started = Instant::now();
            let step = format!(
                "(async () => {{
                    const y = Math.max(innerHeight, 100) * {next};
                    if (y >= Math.min(document.documentElement.scrollHeight, {max_height})) return 'end';
                    const s = window.__pageImportCapture;
                    const t = performance.now();
                    scrollTo({{ top: y, left: 0, behavior: 'instant' }});
                    if (!s) return 'heard';
                    await new Promise(done => {{ s.setTimeout(done, {pause}); s.raf(() => s.raf(done)); }});
                    const heard = s.lastChange > t || s.lastFrame > t || s.lastTimer > t || s.intervals.size > 0 || window.frames.length > 0;
                    return heard ? 'heard' : 'unheard';
                }})()",
                next = steps + 1,
                pause = REVEAL_PAUSE.as_millis(),
            );
            let heard = match self.probe_awaiting(&step).await?.as_ref().and_then(Value::as_str) {
                Some("unheard") => !self.state().untouched_since(step_started),
                Some("heard") => true,
                // The end of the page, or a step the page broke.
                _ => break,
            };
            steps += 1;
            if heard {
                tokio::time::sleep(REVEAL_PAUSE.saturating_sub(step_started.elapsed())).await;
            }
        }
        if steps > 0 {
            self.back_to_top().await?;
            self.network_quiet(Instant::now() + SETTLE_TIMEOUT).await;
        }
        Ok(())
    }

    /// Back to the top as a reader scrolls back (SPEC §11): the page hears
    /// it, and gets two animation frames and until the timeouts it set in
    /// reaction are due and its DOM has been still for [`REVEAL_PAUSE`],
    /// within [`TOP_BUDGET`]. What reacts to scrolling ends in its at-top
    /// state; an element that starts in the lower half of the first
    /// viewport or below it, not fixed to the viewport, whose attributes
    /// the page changed on the way back gets back the ones the reader saw
    /// (see `page.js`). `instant`: a page's `scroll-behavior: smooth` would
    /// still be moving when the page is read.
    async fn back_to_top(&self) -> Result<(), Failure> {
        let back = format!(
            "(async () => {{
                const s = window.__pageImportCapture;
                if (!s) {{ scrollTo({{ top: 0, left: 0, behavior: 'instant' }}); return 0; }}
                const t = performance.now();
                s.backToTop();
                await new Promise(done => {{ s.setTimeout(done, {budget}); s.raf(() => s.raf(done)); }});
                while (performance.now() - t < {budget}) {{
                    const now = performance.now();
                    if (now >= s.timerDue && now - s.lastChange >= {pause}) break;
                    await new Promise(done => s.setTimeout(done, {poll}));
                }}
                return s.keepRevealed();
            }})()",
            budget = TOP_BUDGET.as_millis(),
            pause = REVEAL_PAUSE.as_millis(),
            poll = POLL.as_millis(),
        );
        let kept = self.probe_awaiting(&back).await?;
        tracing::debug!(kept = ?kept, "back at the top");
        Ok(())
    }

    /// Runs finite CSS animations and transitions to their end and pauses
    /// infinite ones and playing media where they are (a player's time
    /// display would otherwise change the DOM for as long as its video
    /// plays), until the page has stopped changing for
    /// [`PAGE_STILL_PERIOD`] (no DOM mutation, no change of the document's
    /// size, the network idle, no drawing animation frame in a run's first 600 ms;
    /// a render loop's later frames and a playing video's stream are
    /// motion, which does not hold it) or
    /// [`QUIET_TIMEOUT`] has passed; then freezes the page at that instant:
    /// its animation frames, timers, animations and media stop, and its
    /// scroll and resize listeners and IntersectionObservers hear nothing
    /// more (see `page.js`). A probe the page breaks counts as "still
    /// changing".
    pub async fn quiet_and_freeze(&self) -> Result<(), Failure> {
        const PROBE: &str = r#"(() => {
            for (const a of document.getAnimations()) {
                try {
                    if (a.playState !== 'running') continue;
                    const t = a.effect && a.effect.getComputedTiming();
                    if (t && Number.isFinite(t.endTime)) a.finish(); else a.pause();
                } catch (e) {}
            }
            for (const m of document.querySelectorAll('video, audio')) {
                try { if (!m.paused) m.pause(); } catch (e) {}
            }
            const s = window.__pageImportCapture;
            const d = document.documentElement;
            if (!s || !d) return 0;
            const size = d.scrollWidth + 'x' + d.scrollHeight;
            if (size !== s.size) { s.size = size; s.lastChange = performance.now(); }
            return performance.now() - s.lastChange;
        })()"#;
        let deadline = Instant::now() + QUIET_TIMEOUT;
        loop {
            let still_ms = self.probe(PROBE).await?.and_then(|v| v.as_f64()).unwrap_or(0.0);
            let still =
                still_ms >= PAGE_STILL_PERIOD.as_millis() as f64 && self.state().network_idle(NETWORK_IDLE_PERIOD);
            if still || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // One instant from here on (SPEC §11): the page's frames and timers
        // stop (`page.js`), and so do its animations and media, before the
        // content height, the snapshot, the screenshot and the pixels of
        // its canvases and videos are read.
        self.probe(
            r#"(s => {
                if (s) s.frozen = true;
                for (const m of document.querySelectorAll('video, audio')) { try { m.pause(); } catch (e) {} }
                try { for (const a of document.getAnimations()) a.pause(); } catch (e) {}
                return true;
            })(window.__pageImportCapture)"#,
        )
        .await?;
        Ok(())
    }

    /// Evaluates `expression` in the page for what it is worth: `None` when
    /// it threw, timed out or gave nothing (a page can break what the worker
    /// asks of it); an error only when the browser is gone.
    async fn probe(&self, expression: &str) -> Result<Option<Value>, Failure> {
        self.probe_with(expression, false).await
    }

    /// [`Page::probe`] of an expression whose promise is awaited.
    async fn probe_awaiting(&self, expression: &str) -> Result<Option<Value>, Failure> {
        self.probe_with(expression, true).await
    }

    async fn probe_with(&self, expression: &str, await_promise: bool) -> Result<Option<Value>, Failure> {
        let result = self
            .call_within(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": await_promise}),
                COMMAND_TIMEOUT,
            )
            .await;
        match result {
            Ok(result) if result.get("exceptionDetails").is_none() => {
                Ok(Some(result["result"]["value"].clone()).filter(|v| !v.is_null()))
            }
            Ok(_) => Ok(None),
            Err(_) if self.crashed() => Err(Cause::BrowserCrashed.into()),
            Err(e) => {
                tracing::debug!(error = %e, "a page probe went unanswered");
                Ok(None)
            }
        }
    }

    /// The page's content height, read now, and how much of it a
    /// screenshot of at most `max_height` CSS px covers.
    pub async fn heights(&self, max_height: u32) -> Result<Heights, Failure> {
        let metrics = self.call("Page.getLayoutMetrics", json!({})).await?;
        let content = if metrics["cssContentSize"].is_object() {
            &metrics["cssContentSize"]
        } else {
            &metrics["contentSize"]
        };
        let content_height = content["height"].as_f64().unwrap_or(1.0).ceil().max(1.0) as u32;
        Ok(Heights {
            content_height,
            captured_height: content_height.min(max_height),
        })
    }

    /// A full-page PNG of `width` CSS px and the captured height. The
    /// command is sent when this is first polled.
    pub async fn screenshot(&self, width: i32, heights: Heights) -> Result<Screenshot, Failure> {
        let Heights {
            content_height,
            captured_height,
        } = heights;
        let shot = self
            .call_raw_within(
                "Page.captureScreenshot",
                self.screenshot_params(0.0, 0.0, f64::from(width), f64::from(captured_height), true),
                HEAVY_TIMEOUT,
            )
            .await?;
        // Decoded straight from the answer's text: a tall page's PNG is tens of MiB.
        #[derive(serde::Deserialize)]
        struct Shot<'a> {
            #[serde(borrow)]
            data: std::borrow::Cow<'a, str>,
        }
        let png = shot
            .result::<Shot<'_>>()
            .ok()
            .and_then(|s| STANDARD.decode(s.data.as_bytes()).ok())
            .map(Bytes::from)
            .ok_or(Failure::from(Cause::CaptureError))?;
        Ok(Screenshot {
            png,
            content_height,
            captured_height,
        })
    }

    /// `Page.captureScreenshot`'s parameters for the CSS-px box `x, y,
    /// width, height` of the page scrolled to its top. A box inside the
    /// viewport is cut from the viewport as shown: Chromium 156 shifts a
    /// right-to-left page sideways when `captureBeyondViewport` lays it out
    /// in a viewport as tall as a box no taller than the viewport (issue
    /// 34). A box that reaches below the viewport needs that layout, and is
    /// right with it. `optimizeForSpeed`: the same pixels, losslessly, with
    /// Chromium's fast zlib settings (bench W: the encoding is most of a
    /// tall page's screenshot).
    fn screenshot_params(&self, x: f64, y: f64, width: f64, height: f64, optimize_for_speed: bool) -> Value {
        let beyond_viewport = !self
            .viewport
            .get()
            .is_some_and(|v| x + width <= f64::from(v.width) && y + height <= f64::from(v.height));
        json!({
            "format": "png", "captureBeyondViewport": beyond_viewport, "fromSurface": true,
            "optimizeForSpeed": optimize_for_speed,
            "clip": {"x": x, "y": y, "width": width, "height": height, "scale": 1},
        })
    }

    /// The DOM snapshot of the page and of every cross-site frame (SPEC §10
    /// Frames). A frame that cannot be snapshotted or placed is left out.
    pub async fn snapshot(&self, computed_styles: &[&str]) -> Result<Vec<PartSnapshot>, Failure> {
        let params = json!({
            "computedStyles": computed_styles,
            "includePaintOrder": true,
            "includeDOMRects": true,
        });
        let frames = self.state().frames.clone();
        let (page, frame_parts) = tokio::join!(
            self.call_raw_within("DOMSnapshot.captureSnapshot", params.clone(), HEAVY_TIMEOUT),
            futures::future::join_all(frames.iter().map(|frame| async {
                let (reply, owner) = tokio::join!(
                    self.cdp.call_raw(
                        Some(&frame.session),
                        "DOMSnapshot.captureSnapshot",
                        params.clone(),
                        HEAVY_TIMEOUT
                    ),
                    self.cdp.call(
                        Some(&frame.parent_session),
                        "DOM.getFrameOwner",
                        json!({"frameId": frame.frame_id}),
                        COMMAND_TIMEOUT
                    ),
                );
                Some((reply.ok()?, owner.ok()?["backendNodeId"].as_i64()?))
            }))
        );
        let mut parts = vec![PartSnapshot {
            reply: page?,
            owner: None,
            session: self.session.clone(),
        }];
        // Parts are numbered by session: the page is 0, frames follow in
        // the order they attached, so a frame's parent is an earlier part.
        let mut part_of_session: HashMap<&str, usize> = HashMap::from([(self.session.as_str(), 0)]);
        for (frame, taken) in frames.iter().zip(frame_parts) {
            let Some((reply, backend_node_id)) = taken else {
                tracing::debug!(frame = %frame.frame_id, "a cross-site frame could not be snapshotted");
                continue;
            };
            let Some(&parent) = part_of_session.get(frame.parent_session.as_str()) else {
                continue;
            };
            part_of_session.insert(&frame.session, parts.len());
            parts.push(PartSnapshot {
                reply,
                owner: Some(Owner {
                    part: parent,
                    backend_node_id,
                }),
                session: frame.session.clone(),
            });
        }
        Ok(parts)
    }

    /// Asks Chromium what each part's snapshot does not tell about its
    /// text and shadow trees (see [`Questions`]), in the session the part
    /// was taken in: the fonts that drew its text (one
    /// `CSS.getPlatformFontsForNode` per node, all of them in flight at
    /// once) and which ambiguous elements host a shadow root. None of it
    /// depends on the viewport, so it may run while the screenshot is being
    /// taken. A question Chromium cannot answer stays unanswered. The
    /// pixels are [`Page::answer_pixels`]'.
    pub async fn answer_text(&self, questions: &[(String, Questions)]) -> Answers {
        let mut answers = Answers::default();
        let mut font_ids: HashMap<FontUse, usize> = HashMap::new();
        let parts = futures::future::join_all(questions.iter().map(|(session, asked)| async move {
            tokio::join!(
                self.fonts_of(session, &asked.text_nodes),
                self.shadow_hosts(session, &asked.maybe_hosts),
            )
        }))
        .await;
        let web_fonts = self.state().web_fonts.clone();
        for ((_, asked), (fonts, hosts)) in questions.iter().zip(parts) {
            let mut details = Details {
                hosts,
                ..Details::default()
            };
            let text_of: HashMap<i64, &TextNode> = asked.text_nodes.iter().map(|t| (t.backend_node_id, t)).collect();
            for (node, used) in fonts {
                let Some(text) = text_of.get(&node) else { continue };
                let ids = used
                    .into_iter()
                    .map(|mut font| {
                        if font.custom {
                            font.src = web_font_for(&web_fonts, &font.family, text).map(|f| f.src.clone());
                        }
                        let next = answers.fonts.len();
                        *font_ids.entry(font.clone()).or_insert_with(|| {
                            answers.fonts.push(font);
                            next
                        })
                    })
                    .collect();
                details.fonts.insert(node, ids);
            }
            answers.details.push(details);
        }
        answers
    }

    /// The pixels of each part's canvases and videos (at most
    /// [`dom::MAX_ELEMENT_IMAGES`] in all), added to `answers` (from
    /// [`Page::answer_text`] of the same questions): read with `toDataURL`
    /// in a JavaScript world of the worker's own, or cut from the page.
    /// A cut is a screenshot of its own: call this once the full-page one
    /// is done.
    pub async fn answer_pixels(&self, questions: &[(String, Questions)], answers: &mut Answers) {
        let mut images_left = dom::MAX_ELEMENT_IMAGES;
        for ((session, asked), details) in questions.iter().zip(answers.details.iter_mut()) {
            // One element at a time: each read can be megabytes, and a cut
            // from the page is a screenshot of its own.
            let wanted = &asked.pixels[..asked.pixels.len().min(images_left)];
            if wanted.is_empty() {
                continue;
            }
            images_left -= wanted.len();
            let world = self.isolated_world(session, asked.frame_id.as_deref()).await;
            let main = *session == self.session;
            for element in wanted {
                if let Some(png) = self.pixels_of(session, world, element, main).await {
                    details.pixels.insert(element.backend_node_id, answers.images.len());
                    answers.images.push(ElementImage {
                        kind: element.kind,
                        png,
                    });
                }
            }
        }
    }

    /// The fonts that drew each node's text, most glyphs first.
    ///
    /// One `CSS.getPlatformFontsForNode` per node would be thousands of
    /// calls on a big page, so nodes of one computed style are asked through
    /// representatives (see [`representatives`]): when a representative was
    /// drawn in one font, so was every node of its style whose characters
    /// are all among the representative's. The others are asked themselves.
    /// Every call of a round is in flight at once.
    async fn fonts_of(&self, session: &str, nodes: &[TextNode]) -> Vec<(i64, Vec<FontUse>)> {
        if nodes.is_empty() {
            return Vec::new();
        }
        let cdp = &self.cdp;
        let call = |method: &'static str, params: Value| cdp.call(Some(session), method, params, COMMAND_TIMEOUT);
        // CSS needs DOM; enabling CSS also reports the web fonts loaded
        // (`CSS.fontsUpdated`), which names their files.
        let backend_ids: Vec<i64> = nodes.iter().map(|n| n.backend_node_id).collect();
        let ready = async {
            call("DOM.enable", json!({})).await?;
            call("CSS.enable", json!({})).await?;
            call("DOM.getDocument", json!({"depth": 0})).await?;
            call(
                "DOM.pushNodesByBackendIdsToFrontend",
                json!({"backendNodeIds": backend_ids}),
            )
            .await
        };
        let pushed = match ready.await {
            Ok(pushed) => pushed,
            Err(e) => {
                tracing::debug!(error = %e, "fonts could not be asked for");
                return Vec::new();
            }
        };
        let node_ids: Vec<i64> = pushed["nodeIds"]
            .as_array()
            .map(|ids| ids.iter().map(|id| id.as_i64().unwrap_or(0)).collect())
            .unwrap_or_default();
        let ask = |indexes: Vec<usize>| {
            let asked = indexes
                .into_iter()
                .filter_map(|i| Some((i, *node_ids.get(i).filter(|id| **id != 0)?)))
                .collect();
            platform_fonts_of(self.cdp.clone(), session.to_owned(), asked)
        };
        let representative = representatives(nodes);
        let mut reps: Vec<usize> = representative.clone();
        reps.sort_unstable();
        reps.dedup();
        let mut answers: HashMap<usize, Vec<FontUse>> = ask(reps).await.into_iter().collect();
        let mut rest = Vec::new();
        for (i, rep) in representative.iter().enumerate() {
            if answers.contains_key(&i) {
                continue;
            }
            match answers.get(rep) {
                Some(fonts) if fonts.len() == 1 => {
                    let fonts = fonts.clone();
                    answers.insert(i, fonts);
                }
                _ => rest.push(i),
            }
        }
        answers.extend(ask(rest).await);
        // Their events are not needed past this point.
        let _ = call("CSS.disable", json!({})).await;
        let _ = call("DOM.disable", json!({})).await;
        let mut out: Vec<(i64, Vec<FontUse>)> = answers
            .into_iter()
            .map(|(i, fonts)| (nodes[i].backend_node_id, fonts))
            .collect();
        out.sort_unstable_by_key(|(node, _)| *node);
        out
    }

    /// Of `candidates`, the elements that host a shadow root.
    async fn shadow_hosts(&self, session: &str, candidates: &[i64]) -> HashSet<i64> {
        let asks: Vec<_> = candidates
            .iter()
            .map(|&node| {
                let (cdp, session) = (self.cdp.clone(), session.to_owned());
                async move {
                    let params = json!({"backendNodeId": node, "depth": 1, "pierce": true});
                    let described = cdp
                        .call(Some(&session), "DOM.describeNode", params, COMMAND_TIMEOUT)
                        .await
                        .ok()?;
                    let hosts = described["node"]["shadowRoots"]
                        .as_array()
                        .is_some_and(|r| !r.is_empty());
                    hosts.then_some(node)
                }
            })
            .collect();
        let described: Vec<Option<i64>> = futures::stream::iter(asks).buffer_unordered(IN_FLIGHT).collect().await;
        described.into_iter().flatten().collect()
    }

    /// A JavaScript world of the worker's own in `frame_id` (the page's
    /// scripts cannot reach into it or change what its built-ins do), where
    /// pixels are read.
    async fn isolated_world(&self, session: &str, frame_id: Option<&str>) -> Option<i64> {
        let created = self
            .cdp
            .call(
                Some(session),
                "Page.createIsolatedWorld",
                json!({"frameId": frame_id?, "worldName": "page-import-capture"}),
                COMMAND_TIMEOUT,
            )
            .await
            .ok()?;
        created["executionContextId"].as_i64()
    }

    /// A canvas's or video's pixels as a PNG: read from the element in the
    /// worker's own world when the page allows it (not tainted, at most
    /// [`MAX_ELEMENT_PIXELS`]); else, for an element of the page's own
    /// document (`main`), a screenshot clipped to its box, of the same
    /// frozen page (a tainted canvas, or one that reads blank as WebGL
    /// canvases do). Nothing that is not a PNG of at most
    /// [`MAX_ELEMENT_IMAGE_BYTES`] is kept.
    async fn pixels_of(&self, session: &str, world: Option<i64>, element: &PixelsOf, main: bool) -> Option<Bytes> {
        let read = format!(
            r#"function () {{
                try {{
                    let c = this;
                    if (this instanceof HTMLVideoElement) {{
                        if (!this.videoWidth) return null;
                        c = document.createElement('canvas');
                        c.width = this.videoWidth;
                        c.height = this.videoHeight;
                        c.getContext('2d').drawImage(this, 0, 0);
                    }}
                    if (!c.width || !c.height || c.width * c.height > {MAX_ELEMENT_PIXELS}) return null;
                    const url = c.toDataURL('image/png');
                    const blank = document.createElement('canvas');
                    blank.width = c.width;
                    blank.height = c.height;
                    return url === blank.toDataURL('image/png') ? null : url;
                }} catch (e) {{
                    return null;
                }}
            }}"#
        );
        let call = |method: &'static str, params: Value, timeout| self.cdp.call(Some(session), method, params, timeout);
        let keep = |png: Vec<u8>| {
            (png.len() <= MAX_ELEMENT_IMAGE_BYTES && crate::manifest::png_size(&png).is_some())
                .then(|| Bytes::from(png))
        };
        if let Some(world) = world {
            let object = call(
                "DOM.resolveNode",
                json!({"backendNodeId": element.backend_node_id, "executionContextId": world}),
                COMMAND_TIMEOUT,
            )
            .await
            .ok();
            let object_id = object.as_ref().map(|o| o["object"]["objectId"].clone());
            if let Some(object_id) = object_id.filter(|id| id.is_string()) {
                let read = call(
                    "Runtime.callFunctionOn",
                    json!({"objectId": object_id, "functionDeclaration": read, "returnByValue": true}),
                    HEAVY_TIMEOUT,
                )
                .await
                .ok();
                let data = read.as_ref().and_then(|r| r["result"]["value"].as_str());
                if let Some(data) = data.and_then(|url| url.strip_prefix("data:image/png;base64,")) {
                    // Base64 is 4/3 of the bytes: anything longer is not kept.
                    if data.len() / 4 * 3 <= MAX_ELEMENT_IMAGE_BYTES {
                        return STANDARD.decode(data).ok().and_then(keep);
                    }
                    return None;
                }
            }
        }
        if !main || !element.first_document {
            return None;
        }
        let [x, y, width, height] = element.layout_box;
        let shot = self
            .call_within(
                "Page.captureScreenshot",
                self.screenshot_params(x, y, width, height, false),
                HEAVY_TIMEOUT,
            )
            .await
            .ok()?;
        STANDARD.decode(shot["data"].as_str()?).ok().and_then(keep)
    }

    pub async fn about(&self) -> Result<About, Failure> {
        let about = self
            .evaluate("({title: document.title, url: location.href})", false, COMMAND_TIMEOUT)
            .await?;
        let fonts = self
            .evaluate(
                "Array.from(document.fonts).map(f => ({family: f.family, style: f.style, weight: f.weight, status: f.status}))",
                false,
                COMMAND_TIMEOUT,
            )
            .await?;
        Ok(About {
            title: about["title"].as_str().unwrap_or_default().to_owned(),
            url: about["url"].as_str().unwrap_or_default().to_owned(),
            fonts: serde_json::from_value(fonts).unwrap_or_default(),
        })
    }

    /// The bodies of the images, stylesheets and fonts every frame loaded.
    pub async fn collect_assets(&self) -> Result<Vec<AssetBody>, Failure> {
        let finished: Vec<(String, Resource)> = self
            .state()
            .resources
            .iter()
            .filter(|(_, r)| r.finished)
            .map(|(id, r)| (id.clone(), r.clone()))
            .collect();
        let mut assets = Vec::with_capacity(finished.len());
        for (request_id, resource) in finished {
            let body = match self
                .cdp
                .call(
                    Some(&resource.session),
                    "Network.getResponseBody",
                    json!({"requestId": request_id}),
                    COMMAND_TIMEOUT,
                )
                .await
            {
                Ok(body) => body,
                // Evicted from the buffer, a body Chromium did not keep, or a
                // frame that went away: skip it.
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
                url: resource.url,
                kind: resource.kind,
                mime_type: resource.mime_type,
                bytes: bytes.into(),
            });
        }
        assets.sort_by(|a, b| a.url.cmp(&b.url));
        Ok(assets)
    }

    /// Closes the tab with its browser context.
    pub async fn close(self) {
        self.cdp.forget_session(&self.session);
        for frame in &self.state().frames {
            self.cdp.forget_session(&frame.session);
        }
        let _ = self.cdp.dispose_context(&self.context_id, COMMAND_TIMEOUT).await;
    }

    /// Waits for network idle in every frame, until `deadline`.
    async fn network_quiet(&self, deadline: Instant) {
        while Instant::now() < deadline && !self.crashed() && !self.state().network_idle(NETWORK_IDLE_PERIOD) {
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether the page's documents asked for anything at `authority`.
    pub fn requested(&self, authority: &str) -> bool {
        self.state().requested(authority)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PageState> {
        self.state.lock().expect("page state lock")
    }

    /// The renderer crashed, or the whole browser is gone.
    fn crashed(&self) -> bool {
        self.state().crashed || self.cdp.is_closed()
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.call_within(method, params, COMMAND_TIMEOUT).await
    }

    async fn call_within(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, CdpError> {
        let result = self.cdp.call(Some(&self.session), method, params, timeout).await;
        if matches!(result, Err(CdpError::Timeout { .. })) && self.crashed() {
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
}

/// `CSS.getPlatformFontsForNode` for each `(index, node id)`, [`IN_FLIGHT`]
/// at a time; a node Chromium does not answer for is left out.
async fn platform_fonts_of(cdp: Connection, session: String, asked: Vec<(usize, i64)>) -> Vec<(usize, Vec<FontUse>)> {
    let asks: Vec<_> = asked
        .into_iter()
        .map(|(i, node_id)| {
            let (cdp, session) = (cdp.clone(), session.clone());
            async move {
                let params = json!({"nodeId": node_id});
                let fonts = cdp
                    .call(Some(&session), "CSS.getPlatformFontsForNode", params, COMMAND_TIMEOUT)
                    .await
                    .ok()?;
                Some((i, platform_fonts(&fonts)))
            }
        })
        .collect();
    let answered: Vec<Option<(usize, Vec<FontUse>)>> =
        futures::stream::iter(asks).buffer_unordered(IN_FLIGHT).collect().await;
    answered.into_iter().flatten().collect()
}

/// `CSS.getPlatformFontsForNode`'s answer, most glyphs first.
fn platform_fonts(answer: &Value) -> Vec<FontUse> {
    let mut fonts: Vec<(u64, FontUse)> = answer["fonts"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|f| {
            let font = FontUse {
                family: f["familyName"].as_str().unwrap_or_default().to_owned(),
                post_script_name: f["postScriptName"].as_str().unwrap_or_default().to_owned(),
                custom: f["isCustomFont"].as_bool().unwrap_or(false),
                src: None,
            };
            (f["glyphCount"].as_u64().unwrap_or(0), font)
        })
        .collect();
    fonts.sort_by_key(|(glyphs, _)| std::cmp::Reverse(*glyphs));
    fonts.into_iter().map(|(_, f)| f).collect()
}

/// For each node, the index of the node whose fonts stand for its own: a
/// node of the same computed style whose distinct characters include all of
/// its own (itself when there is none). Nodes are taken most characters
/// first, so a style's few long texts stand for its many short ones; a
/// style has at most [`MAX_REPRESENTATIVES`].
pub fn representatives(nodes: &[TextNode]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(nodes[i].chars.len()));
    let mut reps_of_style: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut representative: Vec<usize> = (0..nodes.len()).collect();
    for i in order {
        let Some(style) = nodes[i].style else { continue };
        let reps = reps_of_style.entry(style).or_default();
        match reps.iter().find(|&&r| is_subset(&nodes[i].chars, &nodes[r].chars)) {
            Some(&r) => representative[i] = r,
            // Beyond that many, a node is asked about itself: the search
            // stays linear in the number of nodes.
            None if reps.len() < MAX_REPRESENTATIVES => reps.push(i),
            None => {}
        }
    }
    representative
}

/// Whether sorted `a` is within sorted `b`.
fn is_subset(a: &[char], b: &[char]) -> bool {
    let mut b = b.iter();
    a.iter().all(|c| b.by_ref().any(|d| d == c))
}

/// Feeds `session`'s events into `state` and sets up every target attached
/// below it: a cross-site frame gets its network events and the same
/// auto-attach (so its own frames are found), then runs; a worker gets its
/// network events, then runs.
fn watch(cdp: &Connection, session: &str, main: bool, state: &Arc<Mutex<PageState>>) {
    let mut events = cdp.subscribe(session);
    let (cdp, session, state) = (cdp.clone(), session.to_owned(), state.clone());
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if event.method == "Target.attachedToTarget" {
                let child = event.params["sessionId"].as_str().unwrap_or_default().to_owned();
                let kind = event.params["targetInfo"]["type"].as_str().unwrap_or_default();
                let frame = kind == "iframe";
                // A worker's requests are the page's too (egress, network idle).
                let watched = frame || kind.ends_with("worker");
                if watched {
                    watch(&cdp, &child, false, &state);
                }
                let cdp = cdp.clone();
                tokio::spawn(async move {
                    if watched {
                        let _ = enable_network(&cdp, &child).await;
                    }
                    if frame {
                        let _ = auto_attach(&cdp, &child).await;
                    }
                    let _ = cdp
                        .call(
                            Some(&child),
                            "Runtime.runIfWaitingForDebugger",
                            json!({}),
                            COMMAND_TIMEOUT,
                        )
                        .await;
                });
            } else if event.method == "Target.detachedFromTarget" {
                cdp.forget_session(event.params["sessionId"].as_str().unwrap_or_default());
            } else if event.method == "Page.javascriptDialogOpening" {
                // Answered at once (SPEC §10): a dialog left open would hold
                // the page's script, and its load, until the deadline.
                // Dismissed: `confirm` is false, `prompt` null.
                let (cdp, session) = (cdp.clone(), session.clone());
                tokio::spawn(async move {
                    let _ = cdp
                        .call(
                            Some(&session),
                            "Page.handleJavaScriptDialog",
                            json!({"accept": false}),
                            COMMAND_TIMEOUT,
                        )
                        .await;
                });
            }
            state.lock().expect("page state lock").apply(&session, main, &event);
        }
    });
}

async fn enable_network(cdp: &Connection, session: &str) -> Result<Value, CdpError> {
    let (total, resource) = NETWORK_BUFFERS;
    cdp.call(
        Some(session),
        "Network.enable",
        json!({"maxTotalBufferSize": total, "maxResourceBufferSize": resource}),
        COMMAND_TIMEOUT,
    )
    .await
}

/// Attaches to the frames and workers below `session` as they appear, each
/// paused until it is set up.
async fn auto_attach(cdp: &Connection, session: &str) -> Result<Value, CdpError> {
    cdp.call(
        Some(session),
        "Target.setAutoAttach",
        json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}),
        COMMAND_TIMEOUT,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(method: &str, params: Value) -> Event {
        Event {
            method: method.into(),
            params,
        }
    }

    #[test]
    fn a_web_font_s_file_is_the_face_css_matching_picks() {
        let face = |weight: &str, style: &str, range: &str, src: &str| WebFont {
            family: "Fira Sans".into(),
            weight: weight.into(),
            style: style.into(),
            unicode_range: unicode_range(range),
            src: src.into(),
        };
        let fonts = [
            face("400", "normal", "U+0-10FFFF", "regular.woff2"),
            face("500", "normal", "U+0-10FFFF", "medium.woff2"),
            face("400", "italic", "U+0-10FFFF", "italic.woff2"),
            face("100 900", "normal", "", "variable.woff2"),
            face("400", "normal", "U+0400-045F, U+0490-0491", "cyrillic.woff2"),
            face("400", "normal", "U+0000-00FF, U+0131", "latin.woff2"),
        ];
        let text = |weight: &str, style: &str, chars: &str| TextNode {
            backend_node_id: 1,
            style: None,
            chars: chars.chars().collect(),
            font_weight: weight.into(),
            font_style: style.into(),
        };
        let pick = |fonts: &[WebFont], t: TextNode| web_font_for(fonts, "Fira Sans", &t).map(|f| f.src.clone());
        let faces = &fonts[..3];
        assert_eq!(pick(faces, text("500", "normal", "a")).as_deref(), Some("medium.woff2"));
        assert_eq!(
            pick(faces, text("normal", "normal", "a")).as_deref(),
            Some("regular.woff2")
        );
        assert_eq!(
            pick(faces, text("700", "normal", "a")).as_deref(),
            Some("medium.woff2"),
            "the nearest weight"
        );
        assert_eq!(pick(faces, text("400", "italic", "a")).as_deref(), Some("italic.woff2"));
        assert_eq!(web_font_for(&fonts, "Other", &text("400", "normal", "a")), None);
        assert_eq!(
            pick(&fonts[3..4], text("650", "normal", "a")).as_deref(),
            Some("variable.woff2"),
            "a weight range"
        );
        // One face split by script: the file whose range holds the text.
        let subsets = &fonts[4..];
        assert_eq!(
            pick(subsets, text("400", "normal", "Hi")).as_deref(),
            Some("latin.woff2")
        );
        assert_eq!(
            pick(subsets, text("400", "normal", "Жы")).as_deref(),
            Some("cyrillic.woff2")
        );
        assert_eq!(unicode_range("U+4??"), vec![(0x400, 0x4FF)]);
    }

    #[test]
    fn a_style_s_long_texts_stand_for_its_short_ones() {
        let node = |id: i64, style: Option<usize>, text: &str| {
            let mut chars: Vec<char> = text.chars().collect();
            chars.sort_unstable();
            chars.dedup();
            TextNode {
                backend_node_id: id,
                style,
                chars,
                font_weight: "400".into(),
                font_style: "normal".into(),
            }
        };
        let nodes = [
            node(1, Some(1), "cab"),
            node(2, Some(1), "abcdef"),
            node(3, Some(1), "xyz"),
            node(4, Some(2), "ab"),
            node(5, None, "a"),
            node(6, Some(1), "fa"),
        ];
        // 2 stands for 1 and 6 (their characters are among its own); 3 has
        // characters 2 lacks; 4 is another style; 5 has none to share.
        assert_eq!(representatives(&nodes), vec![1, 1, 2, 3, 4, 1]);
        assert!(is_subset(&['a', 'c'], &['a', 'b', 'c']));
        assert!(!is_subset(&['a', 'd'], &['a', 'b', 'c']));
        assert!(is_subset(&[], &['a']));
    }

    #[test]
    fn media_that_streams_is_not_a_request_to_wait_for() {
        let mut state = PageState::default();
        state.apply(
            "main",
            true,
            &event(
                "Network.requestWillBeSent",
                json!({"requestId": "v", "type": "Media", "request": {"url": "http://a.test/loop.webm"}}),
            ),
        );
        assert!(state.network_idle(Duration::ZERO), "a playing video holds nothing");
        state.apply(
            "main",
            true,
            &event(
                "Network.requestWillBeSent",
                json!({"requestId": "i", "type": "Image", "request": {"url": "http://a.test/a.png"}}),
            ),
        );
        assert!(!state.network_idle(Duration::ZERO), "an image still does");
    }

    #[test]
    fn network_idle_waits_for_every_request_and_a_quiet_period() {
        let mut state = PageState::default();
        assert!(state.network_idle(NETWORK_IDLE_PERIOD), "nothing ever happened");
        state.apply(
            "P",
            true,
            &event("Network.requestWillBeSent", json!({"requestId": "1", "type": "Image"})),
        );
        assert!(!state.network_idle(Duration::ZERO), "a request is in flight");
        state.apply("P", true, &event("Network.loadingFinished", json!({"requestId": "1"})));
        assert!(state.network_idle(Duration::ZERO));
        assert!(
            !state.network_idle(Duration::from_secs(60)),
            "not quiet long enough yet"
        );
        state.apply(
            "P",
            true,
            &event("Network.requestWillBeSent", json!({"requestId": "2"})),
        );
        state.apply("P", true, &event("Network.loadingFailed", json!({"requestId": "2"})));
        assert!(state.network_idle(Duration::ZERO), "a failed request is over too");
    }

    #[test]
    fn dialogs_are_listed_in_order_their_messages_cut_and_their_number_bounded() {
        let mut state = PageState::default();
        let dialog = |kind: &str, message: &str| {
            event(
                "Page.javascriptDialogOpening",
                json!({"type": kind, "message": message, "url": "http://page/"}),
            )
        };
        state.apply("F", false, &dialog("alert", "from a frame's session"));
        state.apply("P", true, &dialog("confirm", "Sure?"));
        state.apply("P", true, &dialog("prompt", &"é".repeat(1_500)));
        for _ in 0..200 {
            state.apply("P", true, &dialog("beforeunload", ""));
        }
        assert_eq!(state.dialogs.len(), MAX_DIALOGS);
        assert_eq!(
            state.dialogs[0],
            Dialog {
                kind: DialogKind::Confirm,
                message: "Sure?".into()
            }
        );
        assert_eq!(state.dialogs[1].kind, DialogKind::Prompt);
        assert_eq!(state.dialogs[1].message, "é".repeat(MAX_DIALOG_MESSAGE_CHARS));
        assert_eq!(state.dialogs[99].kind, DialogKind::Beforeunload);
    }

    #[test]
    fn main_documents_load_and_crashes_come_from_the_page_s_own_session_only() {
        let mut state = PageState::default();
        let document = |url: &str, status: u16| {
            event(
                "Network.responseReceived",
                json!({"requestId": "L1", "type": "Document", "response": {
                    "url": url, "status": status, "mimeType": "text/html",
                    "headers": {"Content-Disposition": " Attachment; filename=a.html"},
                }}),
            )
        };
        state.apply("F", false, &document("http://frame/", 404));
        state.apply("F", false, &event("Page.loadEventFired", json!({})));
        state.apply("F", false, &event("Inspector.targetCrashed", json!({})));
        assert!(state.documents.is_empty() && !state.load_fired && !state.crashed);
        state.apply("P", true, &document("http://page/", 200));
        state.apply("P", true, &event("Page.loadEventFired", json!({})));
        assert_eq!(
            state.documents["L1"],
            DocumentResponse {
                status: 200,
                url: "http://page/".into(),
                mime_type: "text/html".into(),
                attachment: true,
            }
        );
        assert!(state.load_fired);
        state.apply("P", true, &event("Inspector.targetCrashed", json!({})));
        assert!(state.crashed);
    }

    #[test]
    fn resources_remember_the_session_that_can_read_them_and_only_2xx_http_is_kept() {
        let mut state = PageState::default();
        let response = |id: &str, kind: &str, url: &str, status: u16| {
            event(
                "Network.responseReceived",
                json!({"requestId": id, "type": kind, "response": {"url": url, "status": status, "mimeType": "image/png"}}),
            )
        };
        state.apply("F", false, &response("1", "Image", "http://frame/a.png", 200));
        state.apply("P", true, &response("2", "Image", "http://page/missing.png", 404));
        state.apply("P", true, &response("3", "Image", "data:image/png;base64,AA", 200));
        state.apply("P", true, &response("4", "Script", "http://page/app.js", 200));
        assert_eq!(state.resources.len(), 1);
        assert!(!state.resources["1"].finished);
        state.apply("F", false, &event("Network.loadingFinished", json!({"requestId": "1"})));
        let kept = &state.resources["1"];
        assert_eq!(
            (kept.session.as_str(), kept.kind, kept.finished),
            ("F", AssetKind::Image, true)
        );
    }

    #[test]
    fn a_cross_site_frame_is_tracked_by_session_and_its_document_request_is_handed_over() {
        let mut state = PageState::default();
        // The parent sees the frame's document request start ...
        state.apply(
            "P",
            true,
            &event(
                "Network.requestWillBeSent",
                json!({"requestId": "D", "type": "Document", "frameId": "FRAME1"}),
            ),
        );
        assert!(!state.network_idle(Duration::ZERO));
        // ... and the frame's own process finishes it.
        let attached = |session: &str, target: &str, kind: &str| {
            event(
                "Target.attachedToTarget",
                json!({"sessionId": session, "targetInfo": {"targetId": target, "type": kind}}),
            )
        };
        state.apply("P", true, &attached("S1", "FRAME1", "iframe"));
        assert!(state.network_idle(Duration::ZERO), "{:?}", state.in_flight);
        state.apply("S1", false, &attached("S2", "FRAME2", "iframe"));
        state.apply("P", true, &attached("W", "WORKER", "worker"));
        assert_eq!(
            state.frames,
            [
                Frame {
                    session: "S1".into(),
                    frame_id: "FRAME1".into(),
                    parent_session: "P".into()
                },
                Frame {
                    session: "S2".into(),
                    frame_id: "FRAME2".into(),
                    parent_session: "S1".into()
                },
            ],
            "frames only, nested ones under their parent"
        );
        state.apply(
            "S1",
            false,
            &event("Target.detachedFromTarget", json!({"sessionId": "S2"})),
        );
        assert_eq!(state.frames.len(), 1);
    }
}
