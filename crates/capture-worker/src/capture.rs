//! One capture (SPEC §10 "Capture"): the source checked against the egress
//! rules, then the page's steps in order (see [`crate::page::Page`]), with
//! what the page could not do reported as a [`Cause`].

use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

use bytes::Bytes;
use page_import_contract::capture::{BlockedRequest, ConsentInfo, ConsentOutcome, Dialog, FontFace, Timings};
use page_import_contract::job::CaptureJob;

use crate::browser::Browser;
use crate::details::Answers;
use crate::dom;
use crate::egress::{BlockedRequests, EgressPolicy, EgressProxy, EgressReport, Refusal, Refused};
use crate::emulation::Emulation;
use crate::failed_requests::FailedRequests;
use crate::failure::{Cause, Failure};
use crate::page::{About, AssetBody, Extent, Navigation, Page, PartSnapshot, Screenshot};
use crate::room::Room;

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
    /// The width, scale and heights the screenshot covers.
    pub extent: Extent,
    /// The reader the page was shown to.
    pub emulation: Emulation,
    /// What became of a consent banner.
    pub consent: ConsentInfo,
    pub popups_closed: u32,
    pub ready_matched: Option<bool>,
    pub screenshot_png: Bytes,
    pub assets: Vec<AssetBody>,
    pub fonts: Vec<FontFace>,
    pub dialogs: Vec<Dialog>,
    /// `DOMSnapshot.captureSnapshot`'s answers (the page's, then each
    /// cross-site frame's), parsed when the manifest is written
    /// (`dom::Snapshot` borrows its strings from them).
    pub snapshot: Vec<PartSnapshot>,
    /// What Chromium told about the snapshot's nodes, part by part.
    pub answers: Answers,
    /// The page's interaction states and tokens (SPEC §11).
    pub looks: dom::Looks,
    pub blocked: BlockedRequests,
    /// What did not load for another reason (SPEC §11).
    pub failed: FailedRequests,
    pub timings: Timings,
}

/// A child span of the capture per step (SPEC §9): where its time goes.
fn step(name: &'static str) -> tracing::Span {
    tracing::info_span!("step", otel.name = name)
}

/// Captures the job's page in a browser context of its own. The source is
/// checked against the egress rules before the browser is asked to go
/// anywhere.
pub async fn capture(
    browser: &Browser,
    policy: Arc<EgressPolicy>,
    job: &CaptureJob<'_>,
    settings: &CaptureSettings,
) -> Result<Captured, Failure> {
    let room = Room::open(browser, policy.clone(), settings.max_bytes)
        .instrument(step("open"))
        .await?;
    let captured = capture_in(browser, &room, &policy, job, settings).await;
    room.close().await;
    captured
}

/// Captures the job's page in a new tab of `room` (an import set's member,
/// SPEC §15, or [`capture`]'s one page).
pub async fn capture_in(
    browser: &Browser,
    room: &Room,
    policy: &EgressPolicy,
    job: &CaptureJob<'_>,
    settings: &CaptureSettings,
) -> Result<Captured, Failure> {
    let started = Instant::now();
    let requested_url = job.source.url.to_string();
    check_source(policy, &requested_url).instrument(step("source")).await?;
    let proxy = room.next_capture();
    let emulation = Emulation::new(job, &browser.version).map_err(|e| {
        tracing::error!(error = %e, "no user agent can be built for this browser");
        Failure::from(Cause::CaptureError)
    })?;
    let keep_banner = job.consent == page_import_contract::job::Consent::Keep;
    let page = Page::open(
        browser,
        room.context_id(),
        room.take_tab(),
        Arc::new(emulation),
        keep_banner,
    )
    .instrument(step("open"))
    .await?;
    let result = run(&page, proxy, job, settings, started).await;
    let blocked = asked_by_page(&proxy.blocked(), &page);
    let failed = page.state().failures.list(&proxy.report());
    let renderer_crashed = page.renderer_crashed();
    match room.keeps_tabs() && result.is_ok() {
        true => {
            if let Some(tab) = page.release().await {
                room.keep_tab(tab);
            }
        }
        false => page.close().await,
    }
    match result {
        Ok(captured) => Ok(Captured {
            blocked,
            failed,
            ..captured
        }),
        Err(failure) => {
            let cause = if proxy.over_budget() {
                page_too_large(settings)
            } else if renderer_crashed && matches!(failure.cause, Cause::BrowserCrashed | Cause::BrowserTimeout) {
                // The page's renderer went while the browser answers: the
                // page's own doing (SPEC §10), the other captures go on.
                Cause::PageCrashed
            } else {
                failure.cause
            };
            Err(Failure { cause, blocked })
        }
    }
}

/// One capture's page and what it runs under.
struct Run<'a, 'j> {
    page: &'a Page,
    proxy: &'a EgressProxy,
    job: &'a CaptureJob<'j>,
    settings: &'a CaptureSettings,
    started: Instant,
}

/// The page as it was loaded and frozen.
struct Loaded {
    navigation: Navigation,
    ready_matched: Option<bool>,
    consent: ConsentInfo,
}

/// What was taken of the frozen page.
struct Taken {
    snapshot: Vec<PartSnapshot>,
    screenshot: Screenshot,
    answers: Answers,
    about: About,
    assets: Vec<AssetBody>,
    looks: dom::Looks,
}

/// What the worker read and asked of the page beside its screenshot.
struct Read {
    questions: Vec<(String, dom::Questions)>,
    answers: Answers,
    about: About,
    assets: Vec<AssetBody>,
}

/// The page's steps, in order.
async fn run(
    page: &Page,
    proxy: &EgressProxy,
    job: &CaptureJob<'_>,
    settings: &CaptureSettings,
    started: Instant,
) -> Result<Captured, Failure> {
    let run = Run {
        page,
        proxy,
        job,
        settings,
        started,
    };
    let requested_url = job.source.url.to_string();
    let mut timings = Timings::default();
    let loaded = run.load(&requested_url, &mut timings).await?;
    let taken = run.take(&mut timings).await?;
    if proxy.over_budget() {
        return Err(page_too_large(settings).into());
    }
    timings.total_ms = run.since_start();
    Ok(Captured {
        requested_url,
        final_url: taken.about.url,
        http_status: loaded.navigation.document.as_ref().map(|d| d.status),
        title: taken.about.title,
        extent: taken.screenshot.extent,
        emulation: page.emulation().clone(),
        consent: loaded.consent,
        popups_closed: page.popups(),
        ready_matched: loaded.ready_matched,
        screenshot_png: taken.screenshot.png,
        assets: taken.assets,
        fonts: taken.about.fonts,
        dialogs: page.dialogs(),
        snapshot: taken.snapshot,
        answers: taken.answers,
        looks: taken.looks,
        // The blocked requests are added when the capture ends.
        blocked: BlockedRequests::default(),
        failed: FailedRequests::default(),
        timings,
    })
}

impl Run<'_, '_> {
    fn since_start(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Navigates, waits until the page is ready and settled, declines its
    /// consent banner, reveals it, waits for it to be still, deals with a
    /// banner once more, and freezes it.
    async fn load(&self, requested_url: &str, timings: &mut Timings) -> Result<Loaded, Failure> {
        let (page, settings) = (self.page, self.settings);
        page.prepare().instrument(step("prepare")).await?;
        let navigation = page
            .navigate(requested_url, settings.navigation_timeout)
            .instrument(step("navigate"))
            .await?;
        if let Some(cause) = navigation_failure(&navigation, requested_url, &self.proxy.report()) {
            return Err(cause.into());
        }
        timings.navigate_ms = self.since_start();

        let ready_matched = page
            .wait_until_ready(self.job.ready_selector.as_deref(), settings.ready_timeout)
            .instrument(step("ready"))
            .await?;
        timings.ready_ms = self.since_start();

        page.settle().instrument(step("settle")).await?;
        // The banner is declined (or hidden) before the scroll pass and again,
        // for a late one, before the page is frozen (SPEC §14).
        page.consent().instrument(step("consent")).await;
        if self.proxy.over_budget() {
            return Err(page_too_large(settings).into());
        }
        timings.settle_ms = self.since_start();

        page.reveal(settings.max_height_px).instrument(step("reveal")).await?;
        timings.reveal_ms = self.since_start();

        // The last look at a banner sees the page at rest (a banner still
        // sliding in, a CMP a tag manager loaded while the page settled);
        // what it changed is waited for again (only where a banner was
        // dealt with: a render loop's page would otherwise wait anew), then
        // the page is frozen, and a banner come after it is
        // hidden (SPEC §14 "Late banners").
        page.quiet().instrument(step("quiet")).await?;
        let consent = page.consent_last().instrument(step("consent")).await;
        if matches!(consent.outcome, ConsentOutcome::Declined | ConsentOutcome::Hidden) {
            page.quiet().instrument(step("quiet")).await?;
        }
        page.freeze().instrument(step("freeze")).await?;
        let consent = page.consent_frozen(consent).instrument(step("consent")).await;
        crate::metrics::consent(&consent);
        timings.quiet_ms = self.since_start();
        Ok(Loaded {
            navigation,
            ready_matched,
            consent,
        })
    }

    /// The snapshot first; then the screenshot, whose PNG Chromium encodes
    /// off the page's renderer, while the worker reads the snapshot, asks
    /// the renderer what it does not tell about text, and collects the
    /// asset bodies. Only the pixels of canvases and videos wait for the
    /// screenshot (a cut from the page is a screenshot of its own).
    async fn take(&self, timings: &mut Timings) -> Result<Taken, Failure> {
        let page = self.page;
        let snapshot = page.snapshot(dom::STYLE_NAMES).instrument(step("snapshot")).await?;
        timings.snapshot_ms = self.since_start();
        let extent = page.extent(self.settings.max_height_px).await?;
        let (screenshot, read) = tokio::join!(
            // First in the join: its command is sent before the other side
            // parses the snapshot.
            async {
                let screenshot = page.screenshot(extent).await;
                (screenshot, self.since_start())
            }
            .instrument(step("screenshot")),
            self.read(&snapshot).instrument(step("details")),
        );
        let (screenshot, screenshot_ms) = screenshot;
        let screenshot = screenshot?;
        timings.screenshot_ms = screenshot_ms;
        let Read {
            questions,
            mut answers,
            about,
            assets,
        } = read?;
        page.answer_pixels(&questions, &mut answers)
            .instrument(step("pixels"))
            .await;
        page.answer_styles(&questions, &mut answers).await;
        timings.details_ms = self.since_start();
        // Only now, the screenshot and snapshot taken: states are forced.
        let looks = match questions.first() {
            Some((_, asked)) => {
                page.looks(asked.frame_id.as_deref(), &asked.interactive)
                    .instrument(step("states"))
                    .await
            }
            None => dom::Looks::default(),
        };
        timings.states_ms = self.since_start();
        Ok(Taken {
            snapshot,
            screenshot,
            answers,
            about,
            assets,
            looks,
        })
    }

    /// The snapshot's questions and Chromium's answers about its text, the
    /// page's title, URL and fonts, and the asset bodies.
    async fn read(&self, snapshot: &[PartSnapshot]) -> Result<Read, Failure> {
        let questions = questions(snapshot);
        let answers = self.page.answer_text(&questions).await;
        let about = self.page.about().await?;
        let assets = self.page.collect_assets().await?;
        Ok(Read {
            questions,
            answers,
            about,
            assets,
        })
    }
}

/// What to ask Chromium about each part of the snapshot, by its session.
/// A snapshot that does not decode is reported when the manifest is
/// written (the page's fails the capture); nothing is asked about it.
fn questions(snapshot: &[PartSnapshot]) -> Vec<(String, dom::Questions)> {
    snapshot
        .iter()
        .map(|part| {
            let asked = match dom::Snapshot::parse(&part.reply) {
                Ok(snapshot) => snapshot.questions(),
                Err(e) => {
                    tracing::debug!(error = %e, "no questions about a snapshot that does not decode");
                    dom::Questions::default()
                }
            };
            (part.session.clone(), asked)
        })
        .collect()
}

/// The blocked requests the page made (its documents and workers), listed
/// and counted by the `host:port` each was for ([`Refused::asked_by`]):
/// Chromium's own background traffic goes through the same proxy, but no
/// part of the page asked for it.
fn asked_by_page(refused: &Refused, page: &Page) -> BlockedRequests {
    refused.asked_by(|authority| page.requested(authority))
}

fn page_too_large(settings: &CaptureSettings) -> Cause {
    Cause::PageTooLarge {
        mib: settings.max_bytes / (1024 * 1024),
    }
}

/// The source URL must be http(s) and its host must pass the egress rules.
async fn check_source(policy: &EgressPolicy, url: &str) -> Result<(), Failure> {
    let parsed = url::Url::parse(url).map_err(|_| Failure::from(Cause::InvalidSource))?;
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Err(Cause::InvalidSource.into());
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Cause::InvalidSource.into());
    }
    match policy.resolve(host, port).await {
        Ok(_) => Ok(()),
        Err(Refusal::Unresolved) => Err(Cause::DnsFailure.into()),
        Err(refusal) => Err(Failure {
            cause: Cause::BlockedSource,
            blocked: BlockedRequests::one(BlockedRequest::new(url, refusal.reason())),
        }),
    }
}

/// Why navigation failed, if it did. What the egress proxy met comes first:
/// the browser only saw the proxy's refusal or its `502`, so a blocked
/// address is blocked, and a refused, reset, unresolved or timed-out
/// connection is that, not the proxy's status. Then the main document's
/// status, then whether it is a page at all, then Chromium's network error
/// (a download is aborted).
fn navigation_failure(navigation: &Navigation, requested_url: &str, egress: &EgressReport) -> Option<Cause> {
    let status = navigation.document.as_ref().map(|d| d.status);
    let not_a_page = not_a_page(navigation);
    if navigation.net_error.is_none() && status.is_none_or(|s| s < 400) && not_a_page.is_none() {
        return None;
    }
    let mut urls = vec![requested_url];
    urls.extend(navigation.document.as_ref().map(|d| d.url.as_str()));
    // A tunnel that failed on a redirect's target names no URL we know:
    // what the proxy met last is what failed.
    let tunnel_failed = navigation.net_error.as_deref() == Some("net::ERR_TUNNEL_CONNECTION_FAILED");
    if urls.iter().any(|url| egress.is_blocked(url)) || tunnel_failed && !egress.blocked.is_empty() {
        return Some(Cause::BlockedRedirect);
    }
    let upstream = urls
        .iter()
        .find_map(|url| egress.upstream_failure(url))
        .or_else(|| tunnel_failed.then(|| egress.last_upstream_failure()).flatten());
    if let Some(upstream) = upstream {
        return Some(Cause::from_upstream(upstream));
    }
    match (&navigation.net_error, status) {
        (_, Some(status)) if status >= 400 => Some(Cause::HttpStatus(status)),
        _ if not_a_page.is_some() => not_a_page,
        (Some(error), _) => Some(Cause::from_net_error(error)),
        _ => None,
    }
}

/// The main document is a download, or not HTML, XHTML, SVG or plain text
/// (SPEC §10): an archive, a PDF, an image.
fn not_a_page(navigation: &Navigation) -> Option<Cause> {
    const PAGE_TYPES: &[&str] = &["text/html", "application/xhtml+xml", "image/svg+xml", "text/plain"];
    let document = navigation.document.as_ref();
    let content_type = document.map(|d| d.mime_type.as_str()).filter(|m| !m.is_empty());
    let attachment = document.is_some_and(|d| d.attachment);
    let a_page_type = content_type.is_none_or(|m| PAGE_TYPES.iter().any(|t| m.eq_ignore_ascii_case(t)));
    (navigation.is_download || attachment || !a_page_type).then(|| Cause::NotAPage {
        content_type: content_type.unwrap_or("unknown").chars().take(100).collect(),
        download: navigation.is_download || attachment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::Upstream;
    use crate::page_state::DocumentResponse;

    fn failed(net_error: Option<&str>, document: Option<(u16, &str)>, egress: &EgressReport) -> Option<Cause> {
        let navigation = Navigation {
            net_error: net_error.map(str::to_owned),
            is_download: false,
            document: document.map(|(status, url)| html(status, url)),
        };
        navigation_failure(&navigation, "http://example.com/", egress)
    }

    fn html(status: u16, url: &str) -> DocumentResponse {
        DocumentResponse {
            status,
            url: url.to_owned(),
            mime_type: "text/html".into(),
            attachment: false,
        }
    }

    #[test]
    fn a_document_that_is_not_a_page_fails_not_a_page_naming_its_type() {
        let none = EgressReport::default();
        let served = |mime_type: &str, attachment: bool, is_download: bool, net_error: Option<&str>| {
            let navigation = Navigation {
                net_error: net_error.map(str::to_owned),
                is_download,
                document: Some(DocumentResponse {
                    mime_type: mime_type.into(),
                    attachment,
                    ..html(200, "http://example.com/")
                }),
            };
            navigation_failure(&navigation, "http://example.com/", &none)
        };
        for page_type in [
            "text/html",
            "application/xhtml+xml",
            "image/svg+xml",
            "text/plain",
            "TEXT/HTML",
        ] {
            assert_eq!(served(page_type, false, false, None), None, "{page_type}");
        }
        for (mime, attachment, download, net_error) in [
            ("application/zip", false, true, Some("net::ERR_ABORTED")),
            ("application/pdf", false, false, None),
            ("image/png", false, false, None),
            ("text/html", true, false, Some("net::ERR_ABORTED")),
        ] {
            let cause = served(mime, attachment, download, net_error).unwrap();
            assert_eq!((cause.reason(), cause.retryable()), ("not_a_page", false), "{mime}");
            assert!(cause.message().contains(mime), "{}", cause.message());
        }
        // A status is said first: a missing archive is a 404.
        let navigation = Navigation {
            net_error: None,
            is_download: false,
            document: Some(DocumentResponse {
                mime_type: "application/zip".into(),
                ..html(404, "http://example.com/")
            }),
        };
        assert_eq!(
            navigation_failure(&navigation, "http://example.com/", &none),
            Some(Cause::HttpStatus(404))
        );
    }

    #[test]
    fn a_loaded_page_is_no_failure() {
        let none = EgressReport::default();
        assert_eq!(failed(None, Some((200, "http://example.com/")), &none), None);
        assert_eq!(failed(None, Some((304, "http://example.com/")), &none), None);
    }

    #[test]
    fn what_the_proxy_met_upstream_outranks_its_own_502_and_chromium_s_error() {
        let refused = EgressReport::default().with_upstream_failure("example.com:80", Upstream::Refused);
        // Chromium shows the proxy's empty 502 as its own error page.
        for (net_error, document) in [
            (
                Some("net::ERR_HTTP_RESPONSE_CODE_FAILURE"),
                Some((502, "http://example.com/")),
            ),
            (None, Some((502, "http://example.com/"))),
        ] {
            let cause = failed(net_error, document, &refused).unwrap();
            assert_eq!((cause.reason(), cause.retryable()), ("connection_refused", true));
        }
        // A tunnel to a redirect's target that did not resolve.
        let unresolved = EgressReport::default().with_upstream_failure("elsewhere.example:443", Upstream::Unresolved);
        let cause = failed(Some("net::ERR_TUNNEL_CONNECTION_FAILED"), None, &unresolved).unwrap();
        assert_eq!((cause.reason(), cause.retryable()), ("dns_failure", true));
    }

    #[test]
    fn blocked_addresses_are_final_and_real_statuses_stay_statuses() {
        let mut blocked = EgressReport::default();
        blocked.blocked.record(
            "example.com:443".into(),
            "example.com:443",
            "non-public address (loopback)".into(),
        );
        let cause = failed(Some("net::ERR_TUNNEL_CONNECTION_FAILED"), None, &blocked).unwrap();
        assert_eq!((cause.reason(), cause.retryable()), ("blocked_address", false));
        let none = EgressReport::default();
        let cause = failed(
            Some("net::ERR_HTTP_RESPONSE_CODE_FAILURE"),
            Some((404, "http://example.com/")),
            &none,
        );
        assert_eq!(cause, Some(Cause::HttpStatus(404)));
        assert_eq!(
            failed(None, Some((503, "http://example.com/")), &none),
            Some(Cause::HttpStatus(503))
        );
        let cause = failed(Some("net::ERR_CERT_DATE_INVALID"), None, &none).unwrap();
        assert_eq!((cause.reason(), cause.retryable()), ("navigation_failed", false));
    }
}
