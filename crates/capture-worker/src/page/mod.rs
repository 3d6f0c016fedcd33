//! The page being captured: a tab in a browser context of its own, with the
//! named steps of a capture (SPEC §10 "Capture"), and what its CDP events
//! told so far kept in a [`PageState`] (`page_state.rs`). Its frames and
//! workers, and its events, are `targets.rs`'s; what is asked of Chromium
//! about the page after its snapshot is `details.rs`'s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use page_import_contract::capture::{AssetKind, ConsentInfo, ConsentOutcome, Dialog, FontFace};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::browser::{Browser, Contexts, OnAttached};
use crate::cdp::{CdpError, Command, Connection, Reply};
use crate::commands::{
    AddScriptToEvaluateOnNewDocument, CaptureScreenshot, CaptureSnapshot, Clip, Evaluate, GetFrameOwner,
    GetLayoutMetrics, GetResponseBody, InspectorEnable, Navigate, PageEnable,
};
use crate::consent::Consent;
use crate::dom::Owner;
use crate::emulation::{self, Emulation};
use crate::failure::{Cause, Failure};
use crate::page_state::{DocumentResponse, PageState, Resource};
use crate::protocol::{self, Navigated};
use crate::targets::{self, Setup};

mod motion;
mod tab;

pub use tab::Tab;

/// What a capture that keeps the banner says of it.
const KEPT: ConsentInfo = ConsentInfo {
    cmp: None,
    outcome: ConsentOutcome::Kept,
    ms: 0,
    from: None,
};

/// A page that does not evaluate `1` within this, while its browser
/// answers, is stuck in its own script.
const UNRESPONSIVE_CHECK: Duration = Duration::from_secs(2);
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// Screenshots and snapshots of big pages take seconds (FACTS: 4.6 s, 2.9 s).
pub(crate) const HEAVY_TIMEOUT: Duration = Duration::from_secs(90);
/// Network idle: nothing in flight and nothing started or ended for this long.
pub const NETWORK_IDLE_PERIOD: Duration = Duration::from_millis(100);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);
const FONTS_TIMEOUT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(50);
/// How often what the event task tells (the load event, the network's
/// end) is looked at when its time is not known: reading it costs nothing.
const QUICK_POLL: Duration = Duration::from_millis(5);
/// How long a download's response may lag behind `Page.navigate`'s answer.
const DOWNLOAD_RESPONSE_WAIT: Duration = Duration::from_secs(2);
/// The worker's watcher in the page (see the file).
const PAGE_SCRIPT: &str = include_str!("../page.js");

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

/// What a full-page screenshot covers: the width the page is shown across
/// and its scale (CSS px; on a phone a page laid out wider than the
/// viewport is scaled to fit, SPEC §14), its content height and the part of
/// it captured.
#[derive(Debug, Clone, Copy)]
pub struct Extent {
    pub layout_width: u32,
    pub scale: f64,
    pub content_height: u32,
    pub captured_height: u32,
}

/// A full-page PNG and what it covers.
pub struct Screenshot {
    pub png: Bytes,
    pub extent: Extent,
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

/// A page in a browser context (a room, `room.rs`). [`Page::close`]
/// closes its tab. There is no `Drop`: a page dropped without `close`
/// stays open until its room is closed, or the worker's connection to
/// that browser ends, when the browser disposes of its context
/// (`disposeOnDetach`).
pub struct Page {
    pub(crate) cdp: Connection,
    context_id: String,
    target_id: String,
    /// A tab an earlier member of a set left, set up already.
    reused: bool,
    /// Where the browser finds this capture's shared workers.
    contexts: Contexts,
    pub(crate) session: String,
    state: Arc<Mutex<PageState>>,
    /// The job's device, language, clock and colour scheme, set on the
    /// page by [`Page::prepare`] and on each frame as it is attached.
    emulation: Arc<Emulation>,
    /// Consent handling (SPEC §14), unless the job keeps the banner.
    consent: Option<Consent>,
}

impl Page {
    /// A blank tab in the browser context `context_id` (a capture's own,
    /// or an import set's, `room.rs`), or `tab` an earlier member of the
    /// set left there ([`Page::release`]), to be shown as `emulation` says,
    /// a consent banner declined unless `keep_banner`.
    pub async fn open(
        browser: &Browser,
        context_id: &str,
        tab: Option<Tab>,
        emulation: Arc<Emulation>,
        keep_banner: bool,
    ) -> Result<Self, Failure> {
        let cdp = browser.cdp.clone();
        let context_id = context_id.to_owned();
        let reused = tab.is_some();
        let Tab { target_id, session } = match tab {
            Some(tab) => tab,
            None => {
                let (target_id, session) = cdp.open_target(&context_id, COMMAND_TIMEOUT).await?;
                Tab { target_id, session }
            }
        };
        let state = Arc::new(Mutex::new(PageState::default()));
        let consent = (!keep_banner).then(Consent::default);
        let setup = Setup {
            emulation: emulation.clone(),
            consent: consent.clone(),
            timeout: COMMAND_TIMEOUT,
        };
        targets::watch(&cdp, &session, true, &state, &setup);
        let (attach_state, attach_setup) = (state.clone(), setup.clone());
        let on_attached: OnAttached =
            Arc::new(move |cdp, attached| targets::attach(cdp, attached, &attach_state, &attach_setup));
        browser.contexts.register(&context_id, on_attached);
        Ok(Self {
            cdp,
            context_id,
            target_id,
            reused,
            contexts: browser.contexts.clone(),
            session,
            state,
            emulation,
            consent,
        })
    }

    /// Events on, the reader's device, language, clock and colour scheme
    /// (SPEC §14), frames attached as they come.
    pub async fn prepare(&self) -> Result<(), Failure> {
        if self.reused {
            // Events, the page's script, consent's world and auto-attach
            // stay with the tab; only the reader changes.
            return self
                .emulation
                .reapply(&self.cdp, &self.session, COMMAND_TIMEOUT)
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "the browser refused the reader's emulation");
                    Failure::from(Cause::CaptureError)
                });
        }
        self.send(&PageEnable {}).await?;
        targets::enable_network(&self.cdp, &self.session, COMMAND_TIMEOUT).await?;
        self.send(&InspectorEnable {}).await?;
        self.send(&AddScriptToEvaluateOnNewDocument {
            source: PAGE_SCRIPT,
            world_name: None,
        })
        .await?;
        self.emulation
            .apply(&self.cdp, &self.session, emulation::Target::Page, COMMAND_TIMEOUT)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "the browser refused the reader's emulation");
                Failure::from(Cause::CaptureError)
            })?;
        if self.consent.is_some() {
            Consent::install(&self.cdp, &self.session, COMMAND_TIMEOUT).await?;
        }
        targets::auto_attach(&self.cdp, &self.session, COMMAND_TIMEOUT).await?;
        Ok(())
    }

    /// The consent banner dealt with (SPEC §14): waits for an opt-out under
    /// way, within its budget, then says what became of the banner. Asked
    /// again later, it decides again (a banner may come late).
    pub async fn consent(&self) -> ConsentInfo {
        match &self.consent {
            Some(consent) => consent.settle(&self.cdp, COMMAND_TIMEOUT).await,
            None => KEPT,
        }
    }

    /// [`Page::consent`] for the last time, before the page is frozen: then
    /// the prehide is lifted wherever no banner is left hidden, so that
    /// the capture holds the page as it is (SPEC §14 "Only consent").
    pub async fn consent_last(&self) -> ConsentInfo {
        match &self.consent {
            Some(consent) => consent.finish(&self.cdp, COMMAND_TIMEOUT).await,
            None => KEPT,
        }
    }

    /// The page frozen ([`Page::freeze`]): a banner shown now,
    /// come after the last look, is hidden, never half-drawn in the
    /// screenshot (SPEC §14 "Late banners"). `before` is what
    /// [`Page::consent_last`] said.
    pub async fn consent_frozen(&self, before: ConsentInfo) -> ConsentInfo {
        match &self.consent {
            Some(consent) => consent.frozen(&self.cdp, before, COMMAND_TIMEOUT).await,
            None => before,
        }
    }

    /// Navigates and waits for the load event, all within `timeout`.
    pub async fn navigate(&self, url: &str, timeout: Duration) -> Result<Navigation, Failure> {
        let timed_out = || {
            Failure::from(Cause::NavigationTimeout {
                secs: timeout.as_secs(),
            })
        };
        let deadline = Instant::now() + timeout;
        let navigated = match self.send_within(&Navigate { url }, timeout).await {
            Err(CdpError::Timeout { .. }) => return Err(self.stuck_or(timed_out()).await),
            other => other?,
        };
        let is_download = navigated.is_download;
        if is_download {
            // Chromium answers `Page.navigate` as soon as it knows the
            // response is a download (often with `net::ERR_ABORTED`); the
            // `Network.responseReceived` that names its type may still be
            // on its way to the event task.
            let waited = Instant::now() + DOWNLOAD_RESPONSE_WAIT;
            while self.document(&navigated).is_none() && Instant::now() < waited && !self.crashed() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let net_error = navigated.error_text.clone().filter(|e| !e.is_empty());
        if net_error.is_none() && !is_download {
            self.wait_for_load(deadline, timed_out).await?;
        }
        Ok(Navigation {
            net_error,
            is_download,
            document: self.document(&navigated),
        })
    }

    /// How the document `Page.navigate` started was answered, when it was.
    fn document(&self, navigated: &Navigated) -> Option<DocumentResponse> {
        let loader_id = navigated.loader_id.as_deref()?;
        self.state().documents.get(loader_id).cloned()
    }

    /// Waits for the load event until `deadline`.
    async fn wait_for_load(&self, deadline: Instant, timed_out: impl Fn() -> Failure) -> Result<(), Failure> {
        loop {
            if self.crashed() {
                return Err(Cause::BrowserCrashed.into());
            }
            if self.state().load_fired {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.stuck_or(timed_out()).await);
            }
            tokio::time::sleep(QUICK_POLL).await;
        }
    }

    /// The reader the page is shown to.
    pub fn emulation(&self) -> &Emulation {
        &self.emulation
    }

    /// The JavaScript dialogs the page opened so far, in order.
    pub fn dialogs(&self) -> Vec<Dialog> {
        self.state().dialogs.clone()
    }

    /// How many popups the page tried to open (none of them loaded).
    pub fn popups(&self) -> u32 {
        self.state().popups
    }

    /// Waits for `selector` to match, polling; `None` when there is none.
    pub async fn wait_until_ready(&self, selector: Option<&str>, timeout: Duration) -> Result<Option<bool>, Failure> {
        let Some(selector) = selector else {
            return Ok(None);
        };
        let probe = format!("!!document.querySelector({})", Value::String(selector.to_owned()));
        let deadline = Instant::now() + timeout;
        loop {
            let matched = match self.evaluate(&probe, false, COMMAND_TIMEOUT).await {
                Err(CdpError::Timeout { .. }) => return Err(self.stuck_or(Cause::BrowserTimeout.into()).await),
                other => other?,
            };
            if matched == Some(Value::Bool(true)) {
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
        if let Err(e) = self
            .evaluate("document.fonts.ready.then(() => true)", true, FONTS_TIMEOUT)
            .await
        {
            tracing::debug!(error = %e, "the page's fonts were not ready in time; it is captured as it is");
        }
        // The document's size as of now, which [`Page::quiet`]
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
        match self.evaluate(expression, await_promise, COMMAND_TIMEOUT).await {
            Ok(value) => Ok(value),
            Err(_) if self.crashed() => Err(Cause::BrowserCrashed.into()),
            Err(CdpError::Timeout { .. }) if self.unresponsive().await => Err(Cause::PageUnresponsive.into()),
            Err(e) => {
                tracing::debug!(error = %e, "a page probe went unanswered");
                Ok(None)
            }
        }
    }

    /// The page's extent, read now: its content height and how much of it
    /// a screenshot of at most `max_height` CSS px covers; on a phone, the
    /// width the page is shown across and its scale (the visual viewport's,
    /// as the phone shows the page at first), on a desktop the viewport's
    /// width at scale 1.
    pub async fn extent(&self, max_height: u32) -> Result<Extent, Failure> {
        let metrics = self.send(&GetLayoutMetrics {}).await?;
        let content = metrics.css_content_size.unwrap_or(metrics.content_size);
        let content_height = content.height.ceil().max(1.0) as u32;
        let viewport = self.emulation.viewport();
        let (layout_width, scale) = match viewport.mobile {
            true => {
                let visual = metrics.css_visual_viewport;
                (visual.client_width.round().max(1.0) as u32, visual.scale)
            }
            false => (viewport.width as u32, 1.0),
        };
        Ok(Extent {
            layout_width,
            scale,
            content_height,
            captured_height: content_height.min(max_height),
        })
    }

    /// A full-page PNG of the extent: its width, from the top down to the
    /// captured height, at its scale. The command is sent when this is
    /// first polled.
    pub async fn screenshot(&self, extent: Extent) -> Result<Screenshot, Failure> {
        let png = self
            .capture_png(
                0.0,
                0.0,
                f64::from(extent.layout_width),
                f64::from(extent.captured_height),
                extent.scale,
                true,
            )
            .await?
            .map(Bytes::from)
            .ok_or(Failure::from(Cause::CaptureError))?;
        Ok(Screenshot { png, extent })
    }

    /// A PNG of the CSS-px box `x, y, width, height` of the page at `scale`
    /// (see [`Page::screenshot_params`]), decoded straight from the answer's
    /// text: a tall page's PNG is tens of MiB. `None` for an answer without
    /// a PNG in it.
    pub(crate) async fn capture_png(
        &self,
        x: f64,
        y: f64,
        width: f64,
        height: f64,
        scale: f64,
        optimize_for_speed: bool,
    ) -> Result<Option<Vec<u8>>, CdpError> {
        let params = self.screenshot_params(x, y, width, height, scale, optimize_for_speed);
        let shot = self.send_for_text(&params, HEAVY_TIMEOUT).await?;
        let png = shot
            .result::<protocol::Screenshot<'_>>()
            .map_err(|e| e.to_string())
            .and_then(|s| STANDARD.decode(s.data.as_bytes()).map_err(|e| e.to_string()));
        match png {
            Ok(png) => Ok(Some(png)),
            Err(e) => {
                tracing::warn!(error = %e, "Page.captureScreenshot answered no PNG");
                Ok(None)
            }
        }
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
    fn screenshot_params(
        &self,
        x: f64,
        y: f64,
        width: f64,
        height: f64,
        scale: f64,
        optimize_for_speed: bool,
    ) -> CaptureScreenshot {
        let v = self.emulation.viewport();
        let beyond_viewport = !(x + width <= f64::from(v.width) && y + height <= f64::from(v.height));
        CaptureScreenshot {
            format: "png",
            capture_beyond_viewport: beyond_viewport,
            from_surface: true,
            optimize_for_speed,
            clip: Clip {
                x,
                y,
                width,
                height,
                scale,
            },
        }
    }

    /// The DOM snapshot of the page and of every cross-site frame (SPEC §10
    /// Frames). A frame that cannot be snapshotted or placed is left out.
    pub async fn snapshot(&self, computed_styles: &[&str]) -> Result<Vec<PartSnapshot>, Failure> {
        let capture = CaptureSnapshot {
            computed_styles,
            include_paint_order: true,
            include_dom_rects: true,
        };
        let frames = self.state().frames.clone();
        let (page, frame_parts) = tokio::join!(
            self.send_for_text(&capture, HEAVY_TIMEOUT),
            futures::future::join_all(frames.iter().map(|frame| async {
                let owner = GetFrameOwner {
                    frame_id: &frame.frame_id,
                };
                let (reply, owner) = tokio::join!(
                    self.cdp.send_for_text(Some(&frame.session), &capture, HEAVY_TIMEOUT),
                    self.cdp.send(Some(&frame.parent_session), &owner, COMMAND_TIMEOUT),
                );
                Ok::<_, CdpError>((reply?, owner?.backend_node_id))
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
            let (reply, backend_node_id) = match taken {
                Ok(taken) => taken,
                Err(error) => {
                    // Usually a frame removed since it attached.
                    tracing::debug!(frame = %frame.frame_id, %error, "a cross-site frame could not be snapshotted; it is left out");
                    crate::metrics::dropped("frame_snapshot");
                    continue;
                }
            };
            let Some(&parent) = part_of_session.get(frame.parent_session.as_str()) else {
                tracing::debug!(frame = %frame.frame_id, "a cross-site frame whose parent was left out is left out");
                crate::metrics::dropped("frame_snapshot");
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
        let about: TitleAndUrl = page_answer("title and url", about);
        Ok(About {
            title: about.title,
            url: about.url,
            fonts: page_answer("document.fonts", fonts),
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
            let ask = GetResponseBody {
                request_id: &request_id,
            };
            let body = match self.cdp.send(Some(&resource.session), &ask, COMMAND_TIMEOUT).await {
                Ok(body) => body,
                // Evicted from the buffer, a body Chromium did not keep, or a
                // frame that went away: left out, said and counted.
                Err(CdpError::Protocol { message, .. }) => {
                    tracing::debug!(url = %resource.url, %message, "Chromium gave no body for an asset; it is left out");
                    crate::metrics::dropped("asset_body");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let bytes = if body.base64_encoded {
                match STANDARD.decode(&body.body) {
                    Ok(bytes) => bytes,
                    // Never an empty asset in its place: left out, said and counted.
                    Err(e) => {
                        tracing::warn!(url = %resource.url, error = %e, "a response body Chromium sent is not base64; the asset is left out");
                        crate::metrics::dropped("asset_body");
                        continue;
                    }
                }
            } else {
                body.body.into_bytes()
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

    /// Closes the tab; its browser context is the room's (`room.rs`).
    pub async fn close(self) {
        self.contexts.forget(&self.context_id);
        self.cdp.forget_session(&self.session);
        for frame in &self.state().frames {
            self.cdp.forget_session(&frame.session);
        }
        if let Err(e) = self.cdp.close_target(&self.target_id, COMMAND_TIMEOUT).await {
            // Closed with its context at the latest.
            tracing::debug!(error = %e, "a page could not be closed");
        }
    }

    /// Waits for network idle in every frame, until `deadline`.
    async fn network_quiet(&self, deadline: Instant) {
        while Instant::now() < deadline && !self.crashed() {
            let left = self.state().network_idle_in(NETWORK_IDLE_PERIOD);
            if left.is_zero() {
                break;
            }
            tokio::time::sleep(left.clamp(QUICK_POLL, POLL)).await;
        }
    }

    /// Whether the page's documents asked for anything at `authority`.
    pub fn requested(&self, authority: &str) -> bool {
        self.state().requested(authority)
    }

    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, PageState> {
        self.state.lock().expect("page state lock")
    }

    /// The renderer crashed, or the whole browser is gone.
    fn crashed(&self) -> bool {
        self.state().crashed || self.cdp.is_closed()
    }

    /// The page's renderer crashed (`Inspector.targetCrashed`) while the
    /// browser is still there.
    pub fn renderer_crashed(&self) -> bool {
        self.state().crashed && !self.cdp.is_closed()
    }

    /// The page's script never yields (`while (true) {}`): the page does
    /// not evaluate `1` within [`UNRESPONSIVE_CHECK`] while the browser
    /// answers at once.
    async fn unresponsive(&self) -> bool {
        let page = self.evaluate("1", false, UNRESPONSIVE_CHECK).await;
        if !matches!(page, Err(CdpError::Timeout { .. })) || self.crashed() {
            return false;
        }
        self.cdp.version(UNRESPONSIVE_CHECK).await.is_ok()
    }

    /// `PageUnresponsive` when the page's script is stuck, else `otherwise`.
    /// Only a page with a document of its own can be stuck in its script
    /// ([`PageState::document_answered`]): before its main document was
    /// answered the page waits on the network, and the probe of
    /// [`Page::unresponsive`] waits behind that pending navigation too, so
    /// it would time out and blame a script that never ran for what is a
    /// navigation timeout, transient and retryable (SPEC §10).
    async fn stuck_or(&self, otherwise: Failure) -> Failure {
        let answered = self.state().document_answered();
        if answered && self.unresponsive().await {
            Cause::PageUnresponsive.into()
        } else {
            otherwise
        }
    }

    /// A typed [`Command`] on the page's session.
    async fn send<C: Command>(&self, command: &C) -> Result<C::Reply, CdpError>
    where
        C::Reply: DeserializeOwned,
    {
        self.send_within(command, COMMAND_TIMEOUT).await
    }

    async fn send_within<C: Command>(&self, command: &C, timeout: Duration) -> Result<C::Reply, CdpError>
    where
        C::Reply: DeserializeOwned,
    {
        let result = self.cdp.send(Some(&self.session), command, timeout).await;
        self.crash_aware(result)
    }

    /// A [`Command`] on the page's session whose answer is read from its
    /// text.
    async fn send_for_text<C: Command<Reply = Reply>>(
        &self,
        command: &C,
        timeout: Duration,
    ) -> Result<Reply, CdpError> {
        let result = self.cdp.send_for_text(Some(&self.session), command, timeout).await;
        self.crash_aware(result)
    }

    /// A command that timed out because the page's renderer is gone is the
    /// browser connection's end for this page.
    fn crash_aware<T>(&self, result: Result<T, CdpError>) -> Result<T, CdpError> {
        if matches!(result, Err(CdpError::Timeout { .. })) && self.crashed() {
            return Err(CdpError::Closed);
        }
        result
    }

    /// `expression`'s value in the page: `None` when it threw or gave
    /// nothing.
    async fn evaluate(
        &self,
        expression: &str,
        await_promise: bool,
        timeout: Duration,
    ) -> Result<Option<Value>, CdpError> {
        let evaluate = Evaluate {
            expression,
            context_id: None,
            await_promise,
            return_by_value: true,
        };
        Ok(self.send_within(&evaluate, timeout).await?.value())
    }
}

/// The page's title and URL, as its own script answers them.
#[derive(Default, Deserialize)]
struct TitleAndUrl {
    title: String,
    url: String,
}

/// What the page's own script answered, read as `T`; empty, and said,
/// when the page gave nothing or something else (a page may redefine
/// what the worker reads).
fn page_answer<T: DeserializeOwned + Default>(what: &str, answer: Option<Value>) -> T {
    let Some(answer) = answer else {
        tracing::warn!(what, "the page answered nothing; it is left empty");
        return T::default();
    };
    serde_json::from_value(answer).unwrap_or_else(|error| {
        tracing::warn!(what, %error, "the page answered what the worker cannot read; it is left empty");
        T::default()
    })
}
