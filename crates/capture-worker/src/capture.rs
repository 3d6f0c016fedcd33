//! One capture (SPEC §10 "Capture"): the source checked against the egress
//! rules, then the page's steps in order (see [`crate::page::Page`]), with
//! what the page could not do reported as a [`Cause`].

use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

use bytes::Bytes;
use page_import_contract::capture::{BlockedRequest, FontFace, Timings};
use page_import_contract::job::CaptureJob;

use crate::browser::Browser;
use crate::dom;
use crate::egress::{authority_of, EgressPolicy, EgressProxy, EgressReport, Refusal};
use crate::failure::{Cause, Failure};
use crate::page::{Answers, AssetBody, Navigation, Page, PartSnapshot};

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
    pub fonts: Vec<FontFace>,
    /// `DOMSnapshot.captureSnapshot`'s answers (the page's, then each
    /// cross-site frame's), parsed when the manifest is written
    /// (`dom::Snapshot` borrows its strings from them).
    pub snapshot: Vec<PartSnapshot>,
    /// What Chromium told about the snapshot's nodes, part by part.
    pub answers: Answers,
    pub blocked: Vec<BlockedRequest>,
    pub timings: Timings,
}

/// A child span of the capture per step (SPEC §9): where its time goes.
fn step(name: &'static str) -> tracing::Span {
    tracing::info_span!("step", otel.name = name)
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
    check_source(&policy, &requested_url).instrument(step("source")).await?;
    let proxy = EgressProxy::start(policy, settings.max_bytes).await.map_err(|e| {
        tracing::error!(error = %e, "egress proxy did not start");
        Failure::from(Cause::InternalError)
    })?;
    let page = Page::open(browser, &proxy.url()).instrument(step("open")).await?;
    let result = run(&page, &proxy, job, settings, started).await;
    let blocked = asked_by_page(proxy.blocked(), &page);
    page.close().await;
    match result {
        Ok(captured) => Ok(Captured { blocked, ..captured }),
        Err(failure) => {
            let cause = if proxy.over_budget() {
                page_too_large(settings)
            } else {
                failure.cause
            };
            Err(Failure { cause, blocked })
        }
    }
}

/// The page's steps, in order.
async fn run(
    page: &Page,
    proxy: &EgressProxy,
    job: &CaptureJob<'_>,
    settings: &CaptureSettings,
    started: Instant,
) -> Result<Captured, Failure> {
    let since_start = || started.elapsed().as_millis() as u64;
    let requested_url = job.source.url.to_string();
    let mut timings = Timings::default();

    page.prepare(job.viewport).instrument(step("prepare")).await?;
    let navigation = page
        .navigate(&requested_url, settings.navigation_timeout)
        .instrument(step("navigate"))
        .await?;
    if let Some(cause) = navigation_failure(&navigation, &requested_url, &proxy.report()) {
        return Err(cause.into());
    }
    timings.navigate_ms = since_start();

    let ready_matched = page
        .wait_until_ready(job.ready_selector.as_deref(), settings.ready_timeout)
        .instrument(step("ready"))
        .await?;
    timings.ready_ms = since_start();

    page.settle().instrument(step("settle")).await?;
    if proxy.over_budget() {
        return Err(page_too_large(settings).into());
    }
    timings.settle_ms = since_start();

    page.reveal(settings.max_height_px).instrument(step("reveal")).await?;
    timings.reveal_ms = since_start();

    page.quiet_and_freeze().instrument(step("quiet")).await?;
    timings.quiet_ms = since_start();

    // The snapshot first; then the screenshot, whose PNG Chromium encodes
    // off the page's renderer, while the worker reads the snapshot, asks
    // the renderer what it does not tell about text, and collects the
    // asset bodies. Only the pixels of canvases and videos wait for the
    // screenshot (a cut from the page is a screenshot of its own).
    let snapshot = page.snapshot(dom::STYLE_NAMES).instrument(step("snapshot")).await?;
    timings.snapshot_ms = since_start();
    let heights = page.heights(settings.max_height_px).await?;
    let (screenshot, rest) = tokio::join!(
        // First in the join: its command is sent before the other side
        // parses the snapshot.
        async {
            let screenshot = page.screenshot(job.viewport.width, heights).await;
            (screenshot, since_start())
        }
        .instrument(step("screenshot")),
        async {
            let questions: Vec<_> = snapshot
                .iter()
                .map(|part| {
                    let asked = dom::Snapshot::parse(&part.reply)
                        .map(|s| s.questions())
                        .unwrap_or_default();
                    (part.session.clone(), asked)
                })
                .collect();
            let answers = page.answer_text(&questions).await;
            let about = page.about().await?;
            let assets = page.collect_assets().await?;
            Ok::<_, Failure>((questions, answers, about, assets))
        }
        .instrument(step("details")),
    );
    let (screenshot, screenshot_ms) = screenshot;
    let screenshot = screenshot?;
    timings.screenshot_ms = screenshot_ms;
    let (questions, mut answers, about, assets) = rest?;
    page.answer_pixels(&questions, &mut answers)
        .instrument(step("pixels"))
        .await;
    timings.details_ms = since_start();
    if proxy.over_budget() {
        return Err(page_too_large(settings).into());
    }
    timings.total_ms = since_start();
    Ok(Captured {
        requested_url,
        final_url: about.url,
        http_status: navigation.document.as_ref().map(|(status, _)| *status),
        title: about.title,
        content_height: screenshot.content_height,
        captured_height: screenshot.captured_height,
        truncated: screenshot.content_height > screenshot.captured_height,
        ready_matched,
        screenshot_png: screenshot.png,
        assets,
        fonts: about.fonts,
        snapshot,
        answers,
        // The blocked requests are added when the capture ends.
        blocked: Vec::new(),
        timings,
    })
}

/// The blocked requests the page made (its documents and workers): Chromium's
/// own background traffic goes through the same proxy, but no part of the
/// page asked for it.
fn asked_by_page(blocked: Vec<BlockedRequest>, page: &Page) -> Vec<BlockedRequest> {
    blocked
        .into_iter()
        .filter(|b| {
            let authority = authority_of(&b.url).unwrap_or_else(|| b.url.to_ascii_lowercase());
            page.requested(&authority)
        })
        .collect()
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
            blocked: vec![BlockedRequest {
                url: url.to_owned(),
                reason: refusal.reason(),
            }],
        }),
    }
}

/// Why navigation failed, if it did. What the egress proxy met comes first:
/// the browser only saw the proxy's refusal or its `502`, so a blocked
/// address is blocked, and a refused, reset, unresolved or timed-out
/// connection is that, not the proxy's status. Then Chromium's network
/// error, then the main document's status.
fn navigation_failure(navigation: &Navigation, requested_url: &str, egress: &EgressReport) -> Option<Cause> {
    let status = navigation.document.as_ref().map(|(status, _)| *status);
    if navigation.net_error.is_none() && status.is_none_or(|s| s < 400) {
        return None;
    }
    let mut urls = vec![requested_url];
    urls.extend(navigation.document.as_ref().map(|(_, url)| url.as_str()));
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
        (Some(error), _) => Some(Cause::from_net_error(error)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::Upstream;

    fn failed(net_error: Option<&str>, document: Option<(u16, &str)>, egress: &EgressReport) -> Option<Cause> {
        let navigation = Navigation {
            net_error: net_error.map(str::to_owned),
            document: document.map(|(s, u)| (s, u.to_owned())),
        };
        navigation_failure(&navigation, "http://example.com/", egress)
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
        blocked.blocked.push(BlockedRequest {
            url: "example.com:443".into(),
            reason: "non-public address (loopback)".into(),
        });
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
