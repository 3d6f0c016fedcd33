//! A reader's Chrome, not an automated one (SPEC §14 "The user agent" and
//! "Everything the page runs is the same reader"), with the real worker and
//! Chromium: `navigator.webdriver` is false and the rest of what a page can
//! read for automation is what a reader's Chrome shows, on a desktop and on
//! a phone; the dedicated, shared and service workers a page starts speak
//! for the same reader as the page (language, client hints, clock, and the
//! headers of a service worker's own requests); two captures side by side
//! keep their own.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::TestApp;

/// What a script sees of its reader, in a page or any worker: `who` names
/// the reporter, `/seen-{who}` receives it.
const SEES: &str = r#"
const sees = (who) => {
  const options = Intl.DateTimeFormat().resolvedOptions();
  const ua = navigator.userAgentData;
  return fetch("/seen-" + who + "?" + encodeURIComponent(JSON.stringify({
    userAgent: navigator.userAgent,
    webdriver: "webdriver" in navigator ? navigator.webdriver : "absent",
    language: navigator.language,
    languages: navigator.languages,
    mobile: ua ? ua.mobile : null,
    platform: ua ? ua.platform : null,
    intlLocale: options.locale,
    timeZone: options.timeZone,
  })));
};
"#;

/// A dedicated or shared worker: reports when started (a shared worker
/// when its first page connects).
const WORKER: &str = r#"
if (typeof onconnect === "undefined" && self.constructor.name !== "SharedWorkerGlobalScope") {
  sees("dedicated").then(() => postMessage("reported"));
} else {
  onconnect = (e) => { sees("shared").then(() => e.ports[0].postMessage("reported")); };
}
"#;

/// A service worker that fetches on install, and reports once active.
const SERVICE_WORKER: &str = r#"
self.addEventListener("install", (e) => e.waitUntil(fetch("/fetched-on-install").then(() => self.skipWaiting())));
self.addEventListener("activate", (e) => e.waitUntil(sees("service").then(() =>
  self.clients.matchAll({ includeUncontrolled: true })).then((clients) => clients.forEach((c) => c.postMessage("reported")))));
"#;

/// The page: reports itself, then starts the three workers, and marks
/// `body[data-done]` (the capture's ready selector) once all four have
/// reported.
const PAGE: &str = r#"<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"></head><body><p>読者</p>
<script src="/sees.js"></script>
<script>
(async () => {
  const automation = {
    plugins: navigator.plugins.length,
    mimeTypes: navigator.mimeTypes.length,
    pdfViewerEnabled: navigator.pdfViewerEnabled,
    chrome: typeof window.chrome,
    notification: Notification.permission,
    notificationsQuery: (await navigator.permissions.query({ name: "notifications" })).state,
    screen: [screen.width, screen.height],
    viewport: [innerWidth, innerHeight],
  };
  await fetch("/automation?" + encodeURIComponent(JSON.stringify(automation)));
  await sees("page");
  const done = [];
  done.push(new Promise((r) => { new Worker("/worker.js").onmessage = r; }));
  done.push(new Promise((r) => { const s = new SharedWorker("/worker.js"); s.port.onmessage = r; s.port.start(); }));
  done.push(new Promise((r) => navigator.serviceWorker.addEventListener("message", r)));
  navigator.serviceWorker.register("/sw.js");
  await Promise.all(done);
  document.body.dataset.done = "yes";
})();
</script></body></html>"#;

fn site_pages() -> Vec<(&'static str, Page)> {
    let js = |body: &str| Page::of("application/javascript", format!("{SEES}\n{body}").into_bytes());
    vec![
        ("/", Page::html(PAGE)),
        ("/sees.js", js("")),
        ("/worker.js", js(WORKER)),
        ("/sw.js", js(SERVICE_WORKER)),
        ("/fetched-on-install", Page::of("text/plain", b"ok".to_vec())),
    ]
}

/// What `who` reported to `site` (its last report).
fn seen(site: &Site, path: &str) -> Value {
    let reports = site.requests(path);
    let last = reports.last().unwrap_or_else(|| panic!("nothing reported to {path}"));
    let (json, _) = url::form_urlencoded::parse(last.query.as_bytes()).next().unwrap();
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

const TOKYO_PHONE: &str = r#"{"viewport": {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": true},
    "locale": "ja-JP", "timeZone": "Asia/Tokyo", "readySelector": "body[data-done]"}"#;

const DESKTOP: &str = r#"{"readySelector": "body[data-done]"}"#;

/// Captures `site`'s page with `settings` and waits for it to complete.
async fn captured(app: &TestApp, worker: &WorkerProcess, site: &Site, settings: &str) {
    let tenant = app.tenant().await;
    let id = app
        .import_with(&tenant, &site.url("/"), serde_json::from_str(settings).unwrap())
        .await;
    let import = app.finished(&tenant, &id, worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
}

/// Each of the page's four scripts saw the reader: its language, clock and
/// device. `navigator.userAgent` is the page's in the page and its
/// dedicated worker; Chromium fixes a shared or service worker's at its
/// start from the browser's default, which is Chrome's own desktop string
/// (decision 0043): never `HeadlessChrome`.
fn assert_every_script_sees(site: &Site, language: &str, time_zone: &str, mobile: bool) {
    let page = seen(site, "/seen-page");
    for who in ["page", "dedicated", "shared", "service"] {
        let seen = seen(site, &format!("/seen-{who}"));
        assert_eq!(seen["language"], language, "{who}: {seen}");
        assert_eq!(seen["languages"][0], language, "{who}: {seen}");
        assert_eq!(seen["intlLocale"], language, "{who}: {seen}");
        assert_eq!(seen["timeZone"], time_zone, "{who}: {seen}");
        assert_eq!(seen["mobile"], mobile, "{who}: {seen}");
        assert_eq!(seen["platform"], page["platform"], "{who}: {seen}");
        let user_agent = seen["userAgent"].as_str().unwrap();
        assert!(!user_agent.contains("Headless"), "{who}: {seen}");
        if who == "dedicated" || !mobile {
            assert_eq!(seen["userAgent"], page["userAgent"], "{who}: {seen}");
        }
    }
    // A worker's navigator has no `webdriver` (as in a reader's Chrome); a
    // document's is false.
    for who in ["page", "dedicated", "shared", "service"] {
        let seen = seen(site, &format!("/seen-{who}"));
        let webdriver = if who == "page" { json!(false) } else { json!("absent") };
        assert_eq!(seen["webdriver"], webdriver, "{who}: {seen}");
    }
}

/// The page's own request and the service worker's fetch on install carry
/// the same reader's headers.
fn assert_the_service_workers_requests_carry_the_pages_headers(site: &Site) {
    let page = &site.requests("/")[0];
    let fetched = site.requests("/fetched-on-install");
    let fetched = fetched.first().expect("the service worker fetched on install");
    assert_eq!(fetched.user_agent, page.user_agent, "{fetched:?} / {page:?}");
    assert_eq!(fetched.accept_language, page.accept_language, "{fetched:?} / {page:?}");
    if fetched.ch_ua_mobile.is_some() {
        assert_eq!(fetched.ch_ua_mobile, page.ch_ua_mobile, "{fetched:?} / {page:?}");
    }
}

/// What a page can read for automation is what a reader's Chrome shows.
fn assert_no_automation_shows(site: &Site, viewport: [u64; 2]) {
    let automation = seen(site, "/automation");
    assert_eq!(
        automation,
        json!({
            "plugins": 5, "mimeTypes": 2, "pdfViewerEnabled": true, "chrome": "object",
            "notification": "default", "notificationsQuery": "prompt",
            "screen": viewport, "viewport": viewport,
        }),
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_phone_in_japanese_is_one_reader_in_its_page_and_every_worker_and_not_automated(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let site = Site::start(site_pages()).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    captured(&app, &worker, &site, TOKYO_PHONE).await;
    assert_every_script_sees(&site, "ja-JP", "Asia/Tokyo", true);
    assert_the_service_workers_requests_carry_the_pages_headers(&site);
    assert_eq!(
        site.requests("/fetched-on-install")[0].accept_language.as_deref(),
        Some("ja-JP,ja;q=0.9")
    );
    assert_no_automation_shows(&site, [390, 844]);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_desktop_is_one_reader_in_its_page_and_every_worker_and_not_automated(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let site = Site::start(site_pages()).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    captured(&app, &worker, &site, DESKTOP).await;
    assert_every_script_sees(&site, "en-US", "UTC", false);
    assert_the_service_workers_requests_carry_the_pages_headers(&site);
    assert_no_automation_shows(&site, [800, 600]);
}

/// Two readers side by side (two captures at once in one browser, each
/// page's load held until both have asked for it): each page's workers are
/// its own reader, never the other's.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn two_readers_side_by_side_each_keep_their_own_workers(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    const GATE: &[u8] = br#"<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>"#;
    let gate_site = Site::start(vec![("/gate.svg", Page::of("image/svg+xml", GATE.to_vec()).barrier(2))]).await;
    let gated = |site: Vec<(&'static str, Page)>| {
        let gate = format!("<img src=\"{}\">", gate_site.url("/gate.svg"));
        site.into_iter()
            .map(|(path, page)| match path {
                "/" => (path, Page::html(&PAGE.replace("<p>読者</p>", &gate))),
                _ => (path, page),
            })
            .collect::<Vec<_>>()
    };
    let phone_site = Site::start(gated(site_pages())).await;
    let desktop_site = Site::start(gated(site_pages())).await;
    let worker = WorkerProcess::start(
        &app,
        &[phone_site.addr, desktop_site.addr, gate_site.addr],
        &[("WORKER_CONCURRENCY", "2")],
    );
    let (phone, desktop) = tokio::join!(
        captured(&app, &worker, &phone_site, TOKYO_PHONE),
        captured(&app, &worker, &desktop_site, DESKTOP),
    );
    let ((), ()) = (phone, desktop);
    assert_eq!(gate_site.barrier_timeouts(), 0, "the two captures ran side by side");
    assert_every_script_sees(&phone_site, "ja-JP", "Asia/Tokyo", true);
    assert_every_script_sees(&desktop_site, "en-US", "UTC", false);
}
