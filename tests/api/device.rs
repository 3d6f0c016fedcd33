//! The device and the language (SPEC §14), with the real worker and
//! Chromium: a phone is a phone (user agent, client hints, touch, pointer
//! and hover, `<meta name="viewport">`), in the reader's language, clock and
//! colour scheme; a desktop is a desktop with a mouse; cross-site frames
//! see the same; two captures side by side keep their own.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::chromium::Browser;
use crate::helpers::manifest::Manifest;
use crate::helpers::TestApp;

/// A script that reports what the page sees to its own site's `/seen`.
const REPORT: &str = r#"<script>
(async () => {
  const ua = navigator.userAgentData;
  const high = ua ? await ua.getHighEntropyValues(["platform", "fullVersionList"]) : null;
  const media = (q) => matchMedia(q).matches;
  const options = Intl.DateTimeFormat().resolvedOptions();
  const seen = {
    userAgent: navigator.userAgent,
    mobile: ua ? ua.mobile : null,
    platform: high ? high.platform : null,
    brands: ua ? ua.brands : null,
    fullVersionList: high ? high.fullVersionList : null,
    touchPoints: navigator.maxTouchPoints,
    coarse: media("(pointer: coarse)"),
    fine: media("(pointer: fine)"),
    hover: media("(hover: hover)"),
    hoverNone: media("(hover: none)"),
    language: navigator.language,
    languages: navigator.languages,
    intlLocale: options.locale,
    timeZone: options.timeZone,
    // 2026-01-01T00:00:00Z in the page's clock.
    hourOfNewYearUtc: new Date(Date.UTC(2026, 0, 1, 0, 0, 0)).getHours(),
    dark: media("(prefers-color-scheme: dark)"),
    layoutWidth: document.documentElement.clientWidth,
    devicePixelRatio: devicePixelRatio,
  };
  await fetch("/seen?" + encodeURIComponent(JSON.stringify(seen)));
  document.body.dataset.reported = "yes";
})();
</script>"#;

fn reporting_page(head: &str, body: &str) -> Page {
    Page::html(&format!(
        "<!doctype html><html><head><meta charset=\"utf-8\">{head}</head><body>{body}{REPORT}</body></html>"
    ))
}

const SVG: &[u8] = br#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="teal"/></svg>"#;

const DEVICE_WIDTH: &str = r#"<meta name="viewport" content="width=device-width, initial-scale=1">"#;

/// What the page at `site` reported (the last report).
fn seen(site: &Site) -> Value {
    let reports = site.requests("/seen");
    let last = reports.last().expect("the page reported what it saw");
    // `encodeURIComponent` of the JSON, the query's only key.
    let (json, _) = url::form_urlencoded::parse(last.query.as_bytes()).next().unwrap();
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

const TOKYO_PHONE: &str = r#"{"viewport": {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": true},
    "locale": "ja-JP", "timeZone": "Asia/Tokyo", "colorScheme": "dark"}"#;

fn tokyo_phone() -> Value {
    serde_json::from_str(TOKYO_PHONE).unwrap()
}

/// The reader's device, language, clock and colour scheme, as the page
/// (and its server) saw them.
fn assert_sees_a_tokyo_phone(seen: &Value, major: &str) {
    let ua = seen["userAgent"].as_str().unwrap();
    assert_eq!(
        ua,
        format!(
            "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 Mobile Safari/537.36"
        ),
        "{seen}"
    );
    assert_eq!(seen["mobile"], true, "{seen}");
    assert_eq!(seen["platform"], "Android", "{seen}");
    assert_eq!(seen["touchPoints"], 5, "{seen}");
    assert_eq!(
        (&seen["coarse"], &seen["fine"], &seen["hover"], &seen["hoverNone"]),
        (&json!(true), &json!(false), &json!(false), &json!(true)),
        "{seen}"
    );
    assert_eq!(seen["language"], "ja-JP", "{seen}");
    assert_eq!(seen["languages"], json!(["ja-JP", "ja"]), "{seen}");
    assert_eq!(seen["intlLocale"], "ja-JP", "{seen}");
    assert_eq!(seen["timeZone"], "Asia/Tokyo", "{seen}");
    assert_eq!(seen["hourOfNewYearUtc"], 9, "{seen}");
    assert_eq!(seen["dark"], true, "{seen}");
}

fn assert_sees_a_desktop_with_the_defaults(seen: &Value, major: &str) {
    assert_eq!(
        seen["userAgent"],
        format!(
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"
        ),
        "{seen}"
    );
    assert_eq!(seen["mobile"], false, "{seen}");
    assert_eq!(seen["platform"], "Linux", "{seen}");
    assert_eq!(seen["touchPoints"], 0, "{seen}");
    assert_eq!(
        (&seen["coarse"], &seen["fine"], &seen["hover"], &seen["hoverNone"]),
        (&json!(false), &json!(true), &json!(true), &json!(false)),
        "{seen}"
    );
    assert_eq!(seen["language"], "en-US", "{seen}");
    assert_eq!(seen["languages"], json!(["en-US", "en"]), "{seen}");
    assert_eq!(seen["intlLocale"], "en-US", "{seen}");
    assert_eq!(seen["timeZone"], "UTC", "{seen}");
    assert_eq!(seen["hourOfNewYearUtc"], 0, "{seen}");
    assert_eq!(seen["dark"], false, "{seen}");
}

/// The Chrome major version of the worker's browser, from the manifest.
fn major_of(manifest: &Manifest) -> String {
    let product = manifest.0["worker"]["browser"].as_str().unwrap();
    product.split('/').nth(1).unwrap().split('.').next().unwrap().to_owned()
}

/// Two captures side by side (the worker runs two at once, and each page
/// waits at `/gate` until both have asked for it): a phone in Tokyo,
/// Japanese and dark, and a desktop with every default. Each page, its
/// server and the manifest see its own settings, none of the other's.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_phone_in_tokyo_and_a_desktop_side_by_side_each_see_their_own(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    // Each page's load waits for an image that is answered only once both
    // pages asked for it.
    let gate_site = Site::start(vec![("/gate.svg", Page::of("image/svg+xml", SVG.to_vec()).barrier(2))]).await;
    let gate = format!(
        "<img src=\"{}\" width=\"10\" height=\"10\">",
        gate_site.url("/gate.svg")
    );
    let phone_site = Site::start(vec![("/", reporting_page(DEVICE_WIDTH, &format!("<p>電話</p>{gate}")))]).await;
    let desktop_site = Site::start(vec![(
        "/",
        reporting_page(DEVICE_WIDTH, &format!("<p>desktop</p>{gate}")),
    )])
    .await;
    let worker = WorkerProcess::start(
        &app,
        &[phone_site.addr, desktop_site.addr, gate_site.addr],
        &[("WORKER_CONCURRENCY", "2")],
    );

    let phone = app.import_with(&tenant, &phone_site.url("/"), tokyo_phone()).await;
    let desktop = app.import_with(&tenant, &desktop_site.url("/"), json!({})).await;
    for id in [&phone, &desktop] {
        let import = app.finished(&tenant, id, &worker).await;
        assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    }
    assert_eq!(gate_site.barrier_timeouts(), 0, "the two captures ran side by side");
    let phone_manifest = app.manifest(&phone, 1).await;
    let desktop_manifest = app.manifest(&desktop, 1).await;
    let major = major_of(&phone_manifest);

    assert_sees_a_tokyo_phone(&seen(&phone_site), &major);
    assert_sees_a_desktop_with_the_defaults(&seen(&desktop_site), &major);
    assert_eq!(seen(&phone_site)["devicePixelRatio"], 3);
    assert_eq!(seen(&phone_site)["layoutWidth"], 390);
    assert_eq!(seen(&desktop_site)["devicePixelRatio"], 2);
    assert_eq!(seen(&desktop_site)["layoutWidth"], 800);

    // What the servers received: the user agent and the language, with
    // client hints that agree.
    let phone_request = &phone_site.requests("/")[0];
    assert_eq!(
        phone_request.user_agent.as_deref(),
        seen(&phone_site)["userAgent"].as_str()
    );
    assert_eq!(phone_request.accept_language.as_deref(), Some("ja-JP,ja;q=0.9"));
    assert_eq!(phone_request.ch_ua_mobile.as_deref(), Some("?1"));
    assert_eq!(phone_request.ch_ua_platform.as_deref(), Some("\"Android\""));
    let desktop_request = &desktop_site.requests("/")[0];
    assert_eq!(
        desktop_request.user_agent.as_deref(),
        seen(&desktop_site)["userAgent"].as_str()
    );
    assert_eq!(desktop_request.accept_language.as_deref(), Some("en-US,en;q=0.9"));
    assert_eq!(desktop_request.ch_ua_mobile.as_deref(), Some("?0"));
    assert_eq!(desktop_request.ch_ua_platform.as_deref(), Some("\"Linux\""));
    for request in phone_site
        .requests("/gate")
        .iter()
        .chain(&desktop_site.requests("/gate"))
    {
        assert!(
            !request.user_agent.as_deref().unwrap().contains("Headless"),
            "{request:?}"
        );
    }

    // The manifest says what was applied.
    assert_eq!(
        phone_manifest.0["emulation"],
        json!({"mobile": true, "colorScheme": "dark", "locale": "ja-JP", "timeZone": "Asia/Tokyo",
               "userAgent": seen(&phone_site)["userAgent"]})
    );
    assert_eq!(
        desktop_manifest.0["emulation"],
        json!({"mobile": false, "colorScheme": "light", "locale": "en-US", "timeZone": "UTC",
               "userAgent": seen(&desktop_site)["userAgent"]})
    );
    assert_eq!(phone_manifest.0["viewport"]["mobile"], true);
    assert_eq!(
        (
            phone_manifest.0["page"]["layoutWidth"].as_u64(),
            phone_manifest.0["page"]["scale"].as_f64()
        ),
        (Some(390), Some(1.0))
    );

    // The client hints are the ones this Chromium itself sends (a plain
    // headless Chromium on the same page: a loopback page is a secure
    // context, where `userAgentData` lives).
    let mut plain = Browser::open(&desktop_site.url("/")).await;
    let plain_brands = plain
        .until(
            "navigator.userAgentData && navigator.userAgentData.brands",
            std::time::Duration::from_secs(10),
        )
        .await;
    assert_eq!(seen(&desktop_site)["brands"], plain_brands);
    assert_eq!(seen(&phone_site)["brands"], plain_brands);
}

/// A phone lays a page without `<meta name="viewport">` out at 980 CSS px
/// and shows it scaled to fit, as a phone does; with one, at the device's
/// width. The screenshot is the phone's screen: 390 CSS px × 3 wide.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_phone_honours_the_pages_meta_viewport(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let wide = "<div style=\"width: 100%; height: 1200px; background: linear-gradient(90deg, red, blue)\"></div>";
    let without = Site::start(vec![("/", reporting_page("", wide))]).await;
    let with = Site::start(vec![("/", reporting_page(DEVICE_WIDTH, wide))]).await;
    let worker = WorkerProcess::start(&app, &[without.addr, with.addr], &[]);
    let a = app.import_with(&tenant, &without.url("/"), tokyo_phone()).await;
    let b = app.import_with(&tenant, &with.url("/"), tokyo_phone()).await;
    for id in [&a, &b] {
        let import = app.finished(&tenant, id, &worker).await;
        assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    }
    assert_eq!(seen(&without)["layoutWidth"], 980);
    assert_eq!(seen(&with)["layoutWidth"], 390);

    let scaled = app.manifest(&a, 1).await;
    assert_eq!(scaled.0["page"]["layoutWidth"], 980, "{}", scaled.0["page"]);
    let scale = scaled.0["page"]["scale"].as_f64().unwrap();
    assert!((scale - 390.0 / 980.0).abs() < 0.01, "{}", scaled.0["page"]);
    let (width, _) =
        crate::helpers::manifest::png_size(&app.object(&format!("page-imports/{a}/1/screenshot.png")).await);
    assert_eq!(width, 1170, "the phone's screen, the whole 980 px page across it");
    assert_eq!(scaled.0["screenshot"]["pixelWidth"], 1170);

    let fitted = app.manifest(&b, 1).await;
    assert_eq!(
        (
            fitted.0["page"]["layoutWidth"].as_u64(),
            fitted.0["page"]["scale"].as_f64()
        ),
        (Some(390), Some(1.0))
    );
    assert_eq!(fitted.0["screenshot"]["pixelWidth"], 1170);
}

/// A server that sends another page to a mobile user agent sends the
/// phone's page to a phone capture, the desktop's to a desktop one.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_server_that_picks_its_page_by_user_agent_sends_a_phone_the_phone_page(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vec![(
        "/",
        Page::html("<title>desktop</title><p>the desktop page</p>")
            .for_mobile("<title>phone</title><p>the phone page</p>"),
    )])
    .await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let phone = app.import_with(&tenant, &site.url("/"), tokyo_phone()).await;
    let desktop = app.import_with(&tenant, &site.url("/"), json!({})).await;
    for id in [&phone, &desktop] {
        let import = app.finished(&tenant, id, &worker).await;
        assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    }
    assert_eq!(app.manifest(&phone, 1).await.0["source"]["title"], "phone");
    assert_eq!(app.manifest(&desktop, 1).await.0["source"]["title"], "desktop");
}

/// A cross-site frame renders in a process of its own, attached through
/// its own session: it sees the page's device (user agent, hints, touch,
/// pointer), language, clock and scheme. (Not its `devicePixelRatio`:
/// Chromium takes no device metrics on a frame, docs/worker.md.)
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_cross_site_frame_sees_the_same_reader_as_its_page(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let frame_site = Site::start(vec![("/frame", reporting_page(DEVICE_WIDTH, "<p>枠</p>"))]).await;
    let page_site = Site::start(vec![(
        "/",
        reporting_page(
            DEVICE_WIDTH,
            &format!(
                "<iframe src=\"{}\" style=\"width: 300px; height: 200px\"></iframe>",
                frame_site.url("/frame")
            ),
        ),
    )])
    .await;
    let worker = WorkerProcess::start(&app, &[page_site.addr, frame_site.addr], &[]);
    let id = app.import_with(&tenant, &page_site.url("/"), tokyo_phone()).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    let manifest = app.manifest(&id, 1).await;
    assert_eq!(
        manifest.0["dom"]["documents"].as_array().unwrap().len(),
        2,
        "the frame is its own document"
    );
    let major = major_of(&manifest);
    let page = seen(&page_site);
    let frame = seen(&frame_site);
    assert_sees_a_tokyo_phone(&page, &major);
    assert_sees_a_tokyo_phone(&frame, &major);
    let frame_request = &frame_site.requests("/frame")[0];
    assert_eq!(frame_request.accept_language.as_deref(), Some("ja-JP,ja;q=0.9"));
    assert_eq!(frame_request.user_agent.as_deref(), page["userAgent"].as_str());
}

/// A phone page in Japanese, Arabic, Hebrew, Thai and Hindi is drawn in
/// fonts that have its script (the worker's fonts, SPEC §14), not in
/// boxes of a font without them. (The spaces between words may come from
/// the default sans-serif font.)
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn text_in_the_major_scripts_is_drawn_in_fonts_of_its_script(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let samples = [
        ("ja", "日本語のテキスト", &["Noto Sans CJK"][..]),
        (
            "ar",
            "نص عربي",
            &["DejaVu Sans", "Noto Sans Arabic", "Noto Naskh Arabic"][..],
        ),
        ("he", "טקסט בעברית", &["DejaVu Sans", "Noto Sans Hebrew"][..]),
        (
            "th",
            "ข้อความภาษาไทย",
            &["Noto Sans Thai", "Noto Serif Thai", "Noto Looped Thai"][..],
        ),
        (
            "hi",
            "हिन्दी पाठ",
            &["Noto Sans Devanagari", "Noto Serif Devanagari"][..],
        ),
    ];
    let body: String = samples
        .iter()
        .map(|(lang, text, _)| format!("<p lang=\"{lang}\" style=\"font-family: sans-serif\">{text}</p>"))
        .collect();
    let site = Site::start(vec![("/", reporting_page(DEVICE_WIDTH, &body))]).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let id = app.import_with(&tenant, &site.url("/"), tokyo_phone()).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    let manifest = app.manifest(&id, 1).await;
    let fonts = manifest.0["dom"]["fonts"].as_array().unwrap().clone();
    for (lang, text, families) in samples {
        let node = manifest.text_node(text);
        let used: Vec<&str> = node["fonts"]
            .as_array()
            .unwrap_or_else(|| panic!("{lang}: no fonts named for {node}"))
            .iter()
            .map(|i| fonts[i.as_u64().unwrap() as usize]["family"].as_str().unwrap())
            .collect();
        assert!(
            used.iter().any(|f| families.iter().any(|want| f.starts_with(want))),
            "{lang}: {text:?} was drawn in {used:?}, not in one of {families:?}"
        );
    }
}
