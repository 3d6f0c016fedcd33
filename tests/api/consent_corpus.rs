//! The consent corpus (issue 55, SPEC §14 "Consent banners"): banners in
//! the forms the open web shows them, and guard pages beside them that are
//! no consent banners, each captured by the real worker and judged against
//! a plain Chromium.
//!
//! Where the pages come from:
//! - Consent libraries from the npm registry, pinned exactly in
//!   `tests/fixtures/cmp/package.json` (installed by scripts/lib.sh
//!   `ensure_cmp_fixtures`, served from their own dist files, no build
//!   step): react-cookie-consent 10.0.2 with react/react-dom 18.3.1 (UMD),
//!   orejime 3.2.1, cookieconsent 3.1.1 (Osano), vanilla-cookieconsent
//!   3.1.0, klaro 0.7.22, tarteaucitronjs 1.34.0,
//!   @porscheofficial/cookie-consent-banner 4.1.0 (a Stencil web
//!   component), cookies-eu-banner 3.0.0 and cookie-notice 1.3.9. Each
//!   page's configuration is in `tests/fixtures/consent-corpus/`.
//! - Banners written by hand as sites write them (German, Japanese,
//!   Polish, Italian, a closed shadow root, a notice with only "OK, got
//!   it", a consent-or-pay wall), and
//!   the guards, also in `tests/fixtures/consent-corpus/` (`guard-*`).
//!
//! Each fixture is the part a site adds to one article page (`page`); its
//! first comment says what it is. A positive is judged as SPEC §14 says:
//! (a) the capture's first viewport equals what plain Chromium shows a
//! reader who pressed the banner's own reject control (or, without one,
//! the page without the banner: the fixture's `<!-- banner -->` part left
//! out), within 1 % as consent.rs; (b) the consent-gated `/tracker.js` is
//! never requested; (c) the manifest says `declined` (or `hidden` where
//! no reject control exists) with a CMP's name; and neither `html` nor
//! `body` keeps a scroll lock, and a banner without a reject control was
//! never pressed (the page's click log). A guard is captured
//! unchanged: the first viewport equals plain Chromium's without a press,
//! the outcome is `none`, and the page's own click log (`data-clicks` on
//! `html`) is empty. Each result is also written to
//! `target/consent-corpus/results.tsv`, and both pictures of a mismatch to
//! `target/consent-corpus/`.

use std::io::Write as _;
use std::time::Duration;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::manifest::{attribute, Manifest};
use crate::helpers::pixels::{mismatch, plain_browser, viewport_screenshot};
use crate::helpers::{repo_path, TestApp};

/// The viewport a capture and its reader share.
#[derive(Clone, Copy)]
struct Device {
    width: i32,
    height: i32,
    scale: f64,
    mobile: bool,
}

const DESKTOP: Device = Device {
    width: 800,
    height: 600,
    scale: 1.0,
    mobile: false,
};

const PHONE: Device = Device {
    width: 390,
    height: 844,
    scale: 2.0,
    mobile: true,
};

/// What the reader does before the reference screenshot.
enum Reader {
    /// Presses these controls (a text or a CSS selector, shadow roots
    /// included) one after the other: the banner's own reject.
    Presses(&'static [&'static str]),
    /// The same, in the frame of the second site.
    PressesInFrame(&'static [&'static str]),
    /// Nothing: the page is served without the banner (no reject control
    /// to press; SPEC: hidden).
    WithoutBanner,
}

/// The share of the first viewport that may differ (consent.rs's bound).
const THRESHOLD: f64 = 0.01;

/// The page every fixture is added to: coloured blocks a banner or a
/// backdrop would cover, the `loadTracker` that consent (and only consent)
/// calls, and the page's own click log.
fn page(fixture: &str, frame_origin: &str, with_banner: bool) -> String {
    let fixture = fixture.replace("{{FRAME_ORIGIN}}", frame_origin);
    let fixture = if with_banner {
        fixture
    } else {
        let (before, rest) = fixture.split_once("<!-- banner -->").expect("a <!-- banner --> part");
        let (_, after) = rest.split_once("<!-- /banner -->").expect("a <!-- /banner --> end");
        format!("{before}{after}")
    };
    let lang = fixture
        .split_once("<!-- lang: ")
        .and_then(|(_, rest)| rest.split_once(" -->"))
        .map_or("en", |(lang, _)| lang);
    let (inline, after) = if fixture.contains("<!-- in: article -->") {
        (fixture.as_str(), "")
    } else {
        ("", fixture.as_str())
    };
    format!(
        r#"<!doctype html><html lang="{lang}"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>The article</title>
        <style>
          html, body {{ margin: 0; font: 16px sans-serif; }}
          header {{ height: 80px; background: #1d3557; color: white; padding: 16px; }}
          .band {{ height: 300px; background: linear-gradient(90deg, #e63946, #457b9d); }}
          .text {{ padding: 16px; min-height: 1600px; background: #f1faee; }}
        </style>
        <script>
          function loadTracker() {{
            var s = document.createElement("script"); s.src = "/tracker.js"; document.head.appendChild(s);
          }}
          document.addEventListener("click", function (e) {{
            var root = document.documentElement, t = e.target;
            root.dataset.clicks = (root.dataset.clicks || "") + "[" + ((t.textContent || "").trim().slice(0, 40) || t.id || t.tagName) + "]";
          }}, true);
        </script></head><body>
        <header><h1 style="margin:0">The article</h1></header>
        <div class="band"></div>
        <div class="text"><p>What the reader came for.</p>{inline}</div>
        {after}
        </body></html>"#
    )
}

fn fixture(name: &str) -> String {
    let path = repo_path(&format!("tests/fixtures/consent-corpus/{name}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("css") => "text/css",
        Some("html") => "text/html; charset=utf-8",
        _ => "application/javascript",
    }
}

/// The libraries' files, by the path the fixtures load them from.
fn library_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = [
        ("/lib/react.js", "react/umd/react.production.min.js"),
        ("/lib/react-dom.js", "react-dom/umd/react-dom.production.min.js"),
        (
            "/lib/react-cookie-consent.js",
            "react-cookie-consent/dist/react-cookie-consent.umd.js",
        ),
        ("/lib/orejime.js", "orejime/dist/orejime-standard-en.js"),
        ("/lib/orejime.css", "orejime/dist/orejime-standard.css"),
        ("/lib/osano.js", "cookieconsent/build/cookieconsent.min.js"),
        ("/lib/osano.css", "cookieconsent/build/cookieconsent.min.css"),
        ("/lib/cc.js", "vanilla-cookieconsent/dist/cookieconsent.umd.js"),
        ("/lib/cc.css", "vanilla-cookieconsent/dist/cookieconsent.css"),
        ("/lib/klaro.js", "klaro/dist/klaro.js"),
        (
            "/lib/cookies-eu-banner.js",
            "cookies-eu-banner/dist/cookies-eu-banner.global.js",
        ),
        ("/lib/cookie-notice.js", "cookie-notice/dist/cookie.notice.min.js"),
    ]
    .iter()
    .map(|(path, file)| (path.to_string(), file.to_string()))
    .collect();
    // tarteaucitron loads its language, services and styles from beside itself.
    for file in [
        "tarteaucitron.js",
        "tarteaucitron.services.js",
        "tarteaucitron.services.min.js",
        "lang/tarteaucitron.fr.js",
        "lang/tarteaucitron.fr.min.js",
        "css/tarteaucitron.css",
        "css/tarteaucitron.min.css",
    ] {
        files.push((format!("/tac/{file}"), format!("tarteaucitronjs/{file}")));
    }
    // The Stencil component loads its chunks from beside its loader.
    let stencil = "@porscheofficial/cookie-consent-banner/dist/cookie-consent-banner";
    let dir = repo_path(&format!("tests/fixtures/cmp/node_modules/{stencil}"));
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e} (scripts/lib.sh ensure_cmp_fixtures)")) {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".js") {
            files.push((format!("/lib/porsche/{name}"), format!("{stencil}/{name}")));
        }
    }
    files
}

/// A site with `name`'s page at `/` (and without its banner at `/bare`),
/// the tracker, every library, and the corpus's whole documents
/// (`*.frame.html`) at their names.
async fn site(name: &str, frame_origin: &str) -> Site {
    let mut pages: Vec<(String, Page)> = vec![
        (
            "/tracker.js".into(),
            Page::of(
                "application/javascript",
                b"document.documentElement.dataset.tracked = 'yes';".to_vec(),
            ),
        ),
        // A page's own feed that answers late (late-tag-manager.html).
        (
            "/slow-feed.json".into(),
            Page::of("application/json", b"[]".to_vec()).delayed(std::time::Duration::from_secs(3)),
        ),
    ];
    if !name.is_empty() {
        let fixture = fixture(&format!("{name}.html"));
        pages.push(("/".into(), Page::html(&page(&fixture, frame_origin, true))));
        if fixture.contains("<!-- banner -->") {
            pages.push(("/bare".into(), Page::html(&page(&fixture, frame_origin, false))));
        }
    }
    for (path, file) in library_files() {
        let full = repo_path(&format!("tests/fixtures/cmp/node_modules/{file}"));
        let body = std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e} (scripts/lib.sh ensure_cmp_fixtures)"));
        pages.push((path.clone(), Page::of(content_type(&path), body)));
    }
    let dir = repo_path("tests/fixtures/consent-corpus");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        if file.ends_with(".frame.html") {
            pages.push((format!("/{file}"), Page::html(&fixture(&file))));
        }
    }
    Site::start(pages.iter().map(|(path, page)| (path.as_str(), page.clone())).collect()).await
}

/// One capture of `url` on `device`, completed, and its manifest.
async fn capture(app: &TestApp, worker: &WorkerProcess, url: &str, device: Device) -> Manifest {
    let tenant = app.tenant().await;
    let viewport = json!({"width": device.width, "height": device.height,
                          "deviceScaleFactor": device.scale, "mobile": device.mobile});
    let id = app.import_with(&tenant, url, json!({ "viewport": viewport })).await;
    let import = app.finished(&tenant, &id, worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    app.manifest(&id, 1).await
}

/// An attribute of the captured `html` element.
fn root_attribute<'a>(manifest: &'a Manifest, name: &str) -> Option<&'a str> {
    let html = manifest
        .nodes()
        .iter()
        .find(|n| n["name"] == "HTML")
        .expect("an HTML node");
    attribute(html, name)
}

/// The capture's first viewport against the reader's; both kept when
/// they differ.
async fn compare(app: &TestApp, manifest: &Manifest, reader: &[u8], name: &str) -> f64 {
    let shot = app.object(manifest.0["screenshot"]["key"].as_str().unwrap()).await;
    let off = mismatch(&shot, reader);
    if off >= THRESHOLD {
        let dir = repo_path("target/consent-corpus");
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(format!("{dir}/{name}-capture.png"), &shot);
        let _ = std::fs::write(format!("{dir}/{name}-reader.png"), reader);
    }
    off
}

/// One line of `target/consent-corpus/results.tsv`: the "before" and
/// "after" of issue 55's closing note.
fn record(name: &str, consent: &Value, off: f64, tracker: usize, clicks: Option<&str>, problems: &[String]) {
    let dir = repo_path("target/consent-corpus");
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(format!("{dir}/results.tsv"))
    {
        let verdict = if problems.is_empty() {
            "pass".to_owned()
        } else {
            problems.join("; ")
        };
        let _ = writeln!(
            file,
            "{name}\t{consent}\t{:.2}%\ttracker={tracker}\tclicks={}\t{verdict}",
            off * 100.0,
            clicks.unwrap_or("-")
        );
    }
}

/// A banner declined as a reader declines it (or hidden where it has no
/// reject control): SPEC §14 (a), (b), (c).
async fn positive(pool: PgPool, name: &str, reader: Reader, device: Device) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    // The second site: frames of another site are served from it.
    let elsewhere = site("", "").await;
    let site = site(name, elsewhere.url("").as_str()).await;
    let worker = WorkerProcess::start(&app, &[site.addr, elsewhere.addr], &[]);
    let manifest = capture(&app, &worker, &site.url("/"), device).await;
    let consent = manifest.0["consent"].clone();

    let path = if matches!(reader, Reader::WithoutBanner) {
        "/bare"
    } else {
        "/"
    };
    let mut browser = plain_browser(
        &site.url(path),
        device.width,
        device.height,
        device.scale,
        device.mobile,
    )
    .await;
    match reader {
        Reader::Presses(labels) => {
            for label in labels {
                browser.press(label).await;
            }
        }
        Reader::PressesInFrame(labels) => {
            for label in labels {
                browser.press_in_frame(&elsewhere.url("/"), label).await;
            }
        }
        Reader::WithoutBanner => {}
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let reference = viewport_screenshot(&mut browser).await;
    drop(browser);
    // The reader's own presses never accept: the tracker stays unfetched.
    let tracker = site.hits("/tracker.js");
    let off = compare(&app, &manifest, &reference, &format!("{name}-{}", device.width)).await;

    let expected = if matches!(reader, Reader::WithoutBanner) {
        "hidden"
    } else {
        "declined"
    };
    let clicks = root_attribute(&manifest, "data-clicks");
    let mut problems = Vec::new();
    if off >= THRESHOLD {
        problems.push(format!(
            "{:.2} % of the first viewport differs from the reader's",
            off * 100.0
        ));
    }
    if tracker > 0 {
        problems.push("the consent-gated tracker was fetched".to_owned());
    }
    if consent["outcome"] != expected {
        problems.push(format!("outcome {} (expected {expected})", consent["outcome"]));
    }
    if !consent["cmp"].is_string() {
        problems.push("no cmp".to_owned());
    }
    if expected == "hidden" && clicks.is_some() {
        problems.push(format!("a notice without a reject control was pressed: {clicks:?}"));
    }
    // SPEC: "the scroll lock it set is released" (none of the corpus's
    // pages locks itself once the banner is gone).
    for element in ["HTML", "BODY"] {
        let node = manifest
            .nodes()
            .iter()
            .find(|n| n["name"] == element)
            .expect("the element");
        if manifest.style(node, "overflow-y") == "hidden" {
            problems.push(format!("{element} keeps the scroll lock"));
        }
    }
    if fixture(&format!("{name}.html")).contains("dataset.cmpLoaded")
        && root_attribute(&manifest, "data-cmp-loaded").is_none()
    {
        problems.push("the late CMP had not loaded when the page was captured".to_owned());
    }
    record(
        &format!("{name} ({}px)", device.width),
        &consent,
        off,
        tracker,
        clicks,
        &problems,
    );
    assert!(
        problems.is_empty(),
        "{name}: {problems:?}\nconsent {consent}, clicks {clicks:?} (target/consent-corpus/)\n{}",
        worker.log_text()
    );
}

/// A page with no consent banner, captured as it shows: SPEC §14 "Only
/// consent".
async fn guard(pool: PgPool, name: &str, device: Device) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let site = site(name, "").await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let manifest = capture(&app, &worker, &site.url("/"), device).await;
    let consent = manifest.0["consent"].clone();

    let mut browser = plain_browser(&site.url("/"), device.width, device.height, device.scale, device.mobile).await;
    // A dialog the page adds late is in the reader's view if it was in the
    // capture's.
    if root_attribute(&manifest, "data-survey-shown").is_some() {
        browser
            .until(
                "document.documentElement.dataset.surveyShown === 'yes'",
                Duration::from_secs(10),
            )
            .await;
    }
    let reference = viewport_screenshot(&mut browser).await;
    drop(browser);
    let off = compare(&app, &manifest, &reference, &format!("{name}-{}", device.width)).await;

    let clicks = root_attribute(&manifest, "data-clicks");
    let mut problems = Vec::new();
    if off >= THRESHOLD {
        problems.push(format!(
            "{:.2} % of the first viewport differs from the page's own",
            off * 100.0
        ));
    }
    if consent["outcome"] != "none" || !consent["cmp"].is_null() {
        problems.push(format!("consent {consent} (expected none, no cmp)"));
    }
    if let Some(clicks) = clicks {
        problems.push(format!("pressed: {clicks}"));
    }
    record(
        &format!("{name} ({}px)", device.width),
        &consent,
        off,
        0,
        clicks,
        &problems,
    );
    assert!(
        problems.is_empty(),
        "{name}: {problems:?} (target/consent-corpus/)\n{}",
        worker.log_text()
    );
}

mod guards;
mod positives;
mod unseen;
