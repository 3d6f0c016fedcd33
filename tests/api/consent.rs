//! Consent banners (SPEC §14), with the real worker and Chromium, on pages
//! built with real consent-management libraries from the npm registry
//! (pinned in tests/fixtures/cmp, installed by scripts/lib.sh): declined as
//! a reader declines them, so the first viewport is what a plain Chromium
//! shows after a click on the library's own decline button, and the
//! consent-gated tracker is never fetched; kept with `consent: "keep"`;
//! pages without a CMP left alone; a CMP that cannot be declined hidden.

use std::time::Duration;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{worker_metrics, Page, Site, WorkerProcess, BROWSER};
use crate::helpers::manifest::Manifest;
use crate::helpers::pixels::{mismatch, plain_viewport_screenshot_after};
use crate::helpers::{repo_path, Tenant, TestApp};

const WIDTH: i32 = 800;
const HEIGHT: i32 = 600;

/// A file of an installed CMP package.
fn package_file(path: &str) -> Vec<u8> {
    let full = repo_path(&format!("tests/fixtures/cmp/node_modules/{path}"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e} (scripts/lib.sh ensure_cmp_fixtures installs it)"))
}

/// A site's pages, by path.
pub(crate) type Pages = Vec<(&'static str, Page)>;

/// The page under every banner: coloured blocks a banner or backdrop would
/// cover, and a tracker that may load only after consent.
fn article(gated_tracker: &str) -> String {
    format!(
        r#"<style>
          html, body {{ margin: 0; font: 16px sans-serif; }}
          header {{ height: 80px; background: #1d3557; color: white; padding: 16px; }}
          .band {{ height: 300px; background: linear-gradient(90deg, #e63946, #457b9d); }}
          .text {{ padding: 16px; height: 1600px; background: #f1faee; }}
        </style>
        <header><h1 style="margin:0">The article</h1></header>
        <div class="band"></div>
        <div class="text"><p>What the reader came for.</p></div>
        {gated_tracker}"#
    )
}

fn tracker_page() -> Page {
    Page::of(
        "application/javascript",
        b"document.body.dataset.tracked = 'yes';".to_vec(),
    )
}

/// vanilla-cookieconsent 3: a bottom bar, or a centered modal with a
/// backdrop that locks the page (`disablePageInteraction`).
pub(crate) fn vanilla_cookieconsent(layout: &str, position: &str, lock: bool, reject_button: bool) -> Pages {
    // Without a reject button the banner is a wall: accept, or nothing (no
    // preferences to turn off either).
    let (reject, preferences) = if reject_button {
        (
            r#"acceptNecessaryBtn: "Reject all", showPreferencesBtn: "Manage","#,
            r#"acceptNecessaryBtn: "Reject all", savePreferencesBtn: "Save","#,
        )
    } else {
        ("", "")
    };
    let html = format!(
        r#"<!doctype html><html><head><meta charset="utf-8">
        <link rel="stylesheet" href="/cc/cookieconsent.css"></head><body>
        {}
        <script src="/cc/cookieconsent.umd.js"></script>
        <script>
        CookieConsent.run({{
          // The reference, a plain CDP-driven Chromium, has navigator.webdriver
          // (the worker's does not: decision 0043): without this the library
          // would show the reference nothing (FACTS).
          hideFromBots: false,
          disablePageInteraction: {lock},
          guiOptions: {{ consentModal: {{ layout: "{layout}", position: "{position}" }} }},
          categories: {{ necessary: {{ enabled: true, readOnly: true }}, analytics: {{}} }},
          language: {{ default: "en", translations: {{ en: {{
            consentModal: {{ title: "We use cookies", description: "Some help us measure the site.",
                            acceptAllBtn: "Accept all", {reject} }},
            preferencesModal: {{ title: "Preferences", acceptAllBtn: "Accept all", {preferences} sections: [] }}
          }} }} }}
        }});
        </script></body></html>"#,
        article(r#"<script type="text/plain" data-category="analytics" src="/tracker.js"></script>"#)
    );
    vec![
        ("/", Page::html(&html)),
        (
            "/cc/cookieconsent.css",
            Page::of("text/css", package_file("vanilla-cookieconsent/dist/cookieconsent.css")),
        ),
        (
            "/cc/cookieconsent.umd.js",
            Page::of(
                "application/javascript",
                package_file("vanilla-cookieconsent/dist/cookieconsent.umd.js"),
            ),
        ),
        ("/tracker.js", tracker_page()),
    ]
}

/// Klaro: its corner notice (bottom right), with a consent-gated tracker.
fn klaro() -> Pages {
    let html = format!(
        r#"<!doctype html><html><head><meta charset="utf-8">
        <script>
        var klaroConfig = {{
          storageMethod: "cookie", mustConsent: false, acceptAll: true, hideDeclineAll: false,
          services: [{{ name: "tracker", title: "Tracker", purposes: ["analytics"], default: false }}],
        }};
        </script>
        <script defer src="/klaro/klaro.js"></script></head><body>
        {}</body></html>"#,
        article(
            r#"<script type="text/plain" data-type="application/javascript" data-name="tracker" data-src="/tracker.js"></script>"#
        )
    );
    vec![
        ("/", Page::html(&html)),
        (
            "/klaro/klaro.js",
            Page::of("application/javascript", package_file("klaro/dist/klaro.js")),
        ),
        ("/tracker.js", tracker_page()),
    ]
}

/// Osano's classic cookieconsent 3: an opt-in bottom bar whose scripts run
/// only once allowed.
fn osano() -> Pages {
    let html = format!(
        r#"<!doctype html><html><head><meta charset="utf-8">
        <link rel="stylesheet" href="/osano/cookieconsent.min.css"></head><body>
        {}
        <script src="/osano/cookieconsent.min.js"></script>
        <script>
        window.cookieconsent.initialise({{
          type: "opt-in",
          content: {{ message: "We use cookies.", allow: "Allow cookies", deny: "Decline" }},
          onStatusChange: function () {{
            if (this.hasConsented()) {{ var s = document.createElement("script"); s.src = "/tracker.js"; document.body.appendChild(s); }}
          }},
        }});
        </script></body></html>"#,
        article("")
    );
    vec![
        ("/", Page::html(&html)),
        (
            "/osano/cookieconsent.min.css",
            Page::of("text/css", package_file("cookieconsent/build/cookieconsent.min.css")),
        ),
        (
            "/osano/cookieconsent.min.js",
            Page::of(
                "application/javascript",
                package_file("cookieconsent/build/cookieconsent.min.js"),
            ),
        ),
        ("/tracker.js", tracker_page()),
    ]
}

/// tarteaucitron: its bottom bar, with "Deny all cookies"; it loads its
/// language, services and styles from beside its own script.
fn tarteaucitron() -> Pages {
    let html = format!(
        r##"<!doctype html><html><head><meta charset="utf-8">
        <script src="/tac/tarteaucitron.js"></script>
        <script>
        tarteaucitron.init({{
          privacyUrl: "", hashtag: "#tarteaucitron", cookieName: "tarteaucitron", orientation: "bottom",
          showAlertSmall: false, cookieslist: false, showIcon: false, DenyAllCta: true, AcceptAllCta: true,
          highPrivacy: true, handleBrowserDNTRequest: false, removeCredit: true, moreInfoLink: false,
          useExternalCss: false, mandatory: true, readmoreLink: "", groupServices: false,
        }});
        tarteaucitron.services.tracker = {{
          key: "tracker", type: "analytic", name: "Tracker", uri: "", needConsent: true, cookies: [],
          js: function () {{ tarteaucitron.addScript("/tracker.js"); }},
        }};
        (tarteaucitron.job = tarteaucitron.job || []).push("tracker");
        </script></head><body>
        {}</body></html>"##,
        article("")
    );
    let mut pages: Pages = vec![("/", Page::html(&html)), ("/tracker.js", tracker_page())];
    for (path, file) in [
        ("/tac/tarteaucitron.js", "tarteaucitron.js"),
        ("/tac/tarteaucitron.services.js", "tarteaucitron.services.js"),
        ("/tac/tarteaucitron.services.min.js", "tarteaucitron.services.min.js"),
        ("/tac/lang/tarteaucitron.en.js", "lang/tarteaucitron.en.js"),
        ("/tac/lang/tarteaucitron.en.min.js", "lang/tarteaucitron.en.min.js"),
    ] {
        pages.push((
            path,
            Page::of(
                "application/javascript",
                package_file(&format!("tarteaucitronjs/{file}")),
            ),
        ));
    }
    for (path, file) in [
        ("/tac/css/tarteaucitron.css", "css/tarteaucitron.css"),
        ("/tac/css/tarteaucitron.min.css", "css/tarteaucitron.min.css"),
    ] {
        pages.push((
            path,
            Page::of("text/css", package_file(&format!("tarteaucitronjs/{file}"))),
        ));
    }
    pages
}

/// Orejime 3: its banner, which autoconsent's rules do not know (the
/// worker's own rule, `src/consent_rules.json`, declines it).
fn orejime() -> Pages {
    let html = format!(
        r#"<!doctype html><html><head><meta charset="utf-8">
        <link rel="stylesheet" href="/orejime/orejime-standard.css">
        <script>
        window.orejimeConfig = {{
          privacyPolicyUrl: "/privacy",
          purposes: [{{ id: "tracker", title: "Tracker", description: "Measures the site.", cookies: [] }}],
        }};
        </script>
        <script src="/orejime/orejime-standard-en.js"></script></head><body>
        {}</body></html>"#,
        article(
            r#"<script type="opt-in" data-type="application/javascript" data-purpose="tracker" data-src="/tracker.js"></script>"#
        )
    );
    vec![
        ("/", Page::html(&html)),
        (
            "/orejime/orejime-standard.css",
            Page::of("text/css", package_file("orejime/dist/orejime-standard.css")),
        ),
        (
            "/orejime/orejime-standard-en.js",
            Page::of(
                "application/javascript",
                package_file("orejime/dist/orejime-standard-en.js"),
            ),
        ),
        ("/tracker.js", tracker_page()),
    ]
}

/// Imports `url` at 800×600, scale 1, with `settings`, and waits for it.
async fn capture(app: &TestApp, tenant: &Tenant, worker: &WorkerProcess, url: &str, settings: Value) -> Manifest {
    let mut all = json!({"viewport": {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1}});
    for (k, v) in settings.as_object().unwrap() {
        all[k] = v.clone();
    }
    let id = app.import_with(tenant, url, all).await;
    let import = app.finished(tenant, &id, worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    app.manifest(&id, 1).await
}

/// How many frames the worker gave autoconsent (its metric).
async fn engine_loads(health: std::net::SocketAddr) -> u64 {
    let metrics = worker_metrics(health).await;
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("worker_consent_engine_loads_total "))
        .unwrap_or_else(|| panic!("no engine count in {metrics}"))
        .trim()
        .parse()
        .unwrap()
}

/// The first viewport of the capture's screenshot.
async fn first_viewport(app: &TestApp, manifest: &Manifest) -> Vec<u8> {
    let key = manifest.0["screenshot"]["key"].as_str().unwrap();
    app.object(key).await
}

/// The capture's first viewport is the article alone, as a plain Chromium
/// shows it: no banner, no backdrop (within anti-aliasing).
async fn assert_first_viewport_is_the_bare_article(app: &TestApp, manifest: &Manifest) {
    let shot = first_viewport(app, manifest).await;
    let bare = Site::start(vec![(
        "/",
        Page::html(&format!("<!doctype html><html><body>{}</body></html>", article(""))),
    )])
    .await;
    let reader = plain_viewport_screenshot_after(&bare.url("/"), WIDTH, HEIGHT, 1.0, None).await;
    let off = mismatch(&shot, &reader);
    assert!(
        off < 0.01,
        "{:.2} % of the first viewport differs from the bare article",
        off * 100.0
    );
}

/// Whether `node` is laid out and not made invisible (an element with
/// `display: none` has no layout, so no computed style, in the manifest).
fn shown(manifest: &Manifest, node: &Value) -> bool {
    node["style"].is_u64() && manifest.style(node, "display") != "none" && manifest.style(node, "opacity") != "0"
}

/// A reader's click on the (first) button whose text holds `label`, or on
/// the element `label` selects when it starts with `#` or `.`, a second after the
/// banner shows it, as a reader reads before clicking (some libraries
/// build their banner after the load event, and wire its buttons after
/// that): at most 5 s of polling.
fn click(label: &str) -> String {
    let find = if label.starts_with('#') || label.starts_with('.') {
        format!("document.querySelector({label:?})")
    } else {
        format!("[...document.querySelectorAll('button, a, [role=button]')].find(e => e.textContent.trim().includes({label:?}))")
    };
    format!(
        "new Promise(done => {{ const until = Date.now() + 5000; (function look() {{ const b = {find};
           if (b && b.offsetParent !== null) setTimeout(() => {{ b.click(); done('clicked'); }}, 1000);
           else if (Date.now() > until) done('no button'); else setTimeout(look, 50); }})(); }})"
    )
}

/// Each library's banner is declined through its own controls: the
/// capture's first viewport is what Chromium shows a reader who clicked
/// the library's decline button, the gated tracker was never fetched, and
/// the manifest says `declined` with the CMP's name.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn each_librarys_banner_is_declined_as_a_reader_declines_it(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let cases: Vec<(&str, Pages, &str)> = vec![
        (
            "vanilla-cookieconsent, bottom bar",
            vanilla_cookieconsent("bar", "bottom", false, true),
            "Reject all",
        ),
        (
            "vanilla-cookieconsent, centered modal with a backdrop and a scroll lock",
            vanilla_cookieconsent("box", "middle center", true, true),
            "Reject all",
        ),
        ("Klaro, corner notice", klaro(), "I decline"),
        ("Osano cookieconsent, bottom bar", osano(), "Decline"),
        ("tarteaucitron, bottom bar", tarteaucitron(), "#tarteaucitronAllDenied2"),
        (
            "Orejime, banner (our own rule)",
            orejime(),
            ".orejime-Banner-declineButton",
        ),
    ];
    let sites: Vec<Site> =
        futures::future::join_all(cases.iter().map(|(_, pages, _)| Site::start(pages.clone()))).await;
    let (worker, health) = WorkerProcess::start_with_metrics(&app, &sites.iter().map(|s| s.addr).collect::<Vec<_>>());
    for ((name, _, decline), site) in cases.iter().zip(&sites) {
        let loaded = engine_loads(health).await;
        let manifest = capture(&app, &tenant, &worker, &site.url("/"), json!({})).await;
        assert!(
            engine_loads(health).await > loaded,
            "{name}: autoconsent was loaded where the CMP's marks showed"
        );
        let consent = &manifest.0["consent"];
        assert_eq!(
            consent["outcome"],
            "declined",
            "{name}: {consent}\n{}",
            worker.log_text()
        );
        assert!(
            consent["cmp"].as_str().is_some_and(|c| !c.is_empty()),
            "{name}: {consent}"
        );
        assert!(consent["ms"].as_u64().unwrap() < 10_000, "{name}: {consent}");
        if name.starts_with("vanilla-cookieconsent") {
            // Declined by its own button, its modal closed by itself (a fade
            // to `visibility: hidden` in its fixed container), and left as
            // it left it: the worker hid none of it on top (it did, taking
            // the fading modal for one still up, and the outcome then
            // depended on whether a later look came).
            let container = manifest.element("cc-main");
            assert!(
                container["style"].is_u64() && manifest.style(container, "display") != "none",
                "{name}: the CMP's container was hidden by the worker\n{}",
                worker.log_text()
            );
        }
        assert_eq!(
            site.hits("/tracker.js"),
            0,
            "{name}: the consent-gated tracker was fetched"
        );
        // The article is 2 044 px tall (header 112, band 300, text 1 632):
        // the page's full height, not the viewport a scroll lock left.
        let height = manifest.0["page"]["contentHeight"].as_u64().unwrap();
        assert!(height >= 2_044, "{name}: content height {height}");

        let shot = first_viewport(&app, &manifest).await;
        let reader = plain_viewport_screenshot_after(
            &site.url("/"),
            WIDTH,
            HEIGHT,
            1.0,
            Some((&click(decline), Duration::from_millis(1500))),
        )
        .await;
        let off = mismatch(&shot, &reader);
        if off >= 0.01 {
            // For whoever reads the failure: both pictures.
            let stem = repo_path(&format!(
                "target/consent-{}",
                name.split(',').next().unwrap().replace(' ', "-")
            ));
            let _ = std::fs::write(format!("{stem}-capture.png"), &shot);
            let _ = std::fs::write(format!("{stem}-reader.png"), &reader);
        }
        assert!(
            off < 0.01,
            "{name}: {:.2} % of the first viewport differs from the reader's after declining (target/consent-*.png)",
            off * 100.0
        );
    }
}

/// `consent: "keep"`: nothing is done; the banner is in the capture.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_kept_banner_is_captured_as_it_shows(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vanilla_cookieconsent("bar", "bottom", false, true)).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let manifest = capture(&app, &tenant, &worker, &site.url("/"), json!({"consent": "keep"})).await;
    assert_eq!(manifest.0["consent"], json!({"cmp": null, "outcome": "kept", "ms": 0}));
    let title = manifest.text_node("We use cookies");
    assert!(title["box"].is_array(), "the banner's title is laid out: {title}");
    assert!(
        shown(&manifest, manifest.element("cc-main")),
        "the banner is in the capture"
    );
    assert_eq!(site.hits("/tracker.js"), 0, "nothing was accepted either");
}

/// A page without a CMP whose text and buttons say "cookie", "Accept" and
/// "Reject", with a dialog of its own: nothing is clicked, nothing hidden.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_page_without_a_cmp_is_left_alone_whatever_its_text_says(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let html = r#"<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0">
        <h1>Chocolate chip cookies</h1>
        <p>We use cookies, butter and sugar. Accept the recipe's terms or reject them below.</p>
        <form><button type="button" id="accept" onclick="this.dataset.clicked='yes'">Accept</button>
              <button type="button" id="reject" onclick="this.dataset.clicked='yes'">Reject</button></form>
        <div class="message-overlay" id="overlay">Today's message: cookies are half price.</div>
        <dialog open id="region" style="position:fixed; bottom:0; left:0; right:0; margin:0">
          <p>Choose your region to see prices. We use cookies to remember it.</p>
          <button type="button" onclick="this.dataset.clicked='yes'">Accept all</button>
          <button type="button" onclick="this.dataset.clicked='yes'">Reject all</button>
        </dialog></body></html>"#;
    let site = Site::start(vec![("/", Page::html(html))]).await;
    let (worker, health) = WorkerProcess::start_with_metrics(&app, &[site.addr]);
    let manifest = capture(&app, &tenant, &worker, &site.url("/"), json!({})).await;
    assert_eq!(manifest.0["consent"], json!({"cmp": null, "outcome": "none", "ms": 0}));
    assert_eq!(
        engine_loads(health).await,
        0,
        "a page without a CMP's marks never loads autoconsent (SPEC §14 \"Cost\")"
    );
    for id in ["accept", "reject"] {
        let button = manifest.element(id);
        assert!(
            crate::helpers::manifest::attribute(button, "data-clicked").is_none(),
            "{id} was clicked"
        );
    }
    assert!(
        shown(&manifest, manifest.element("region")),
        "the page's own dialog stays"
    );
    // `.message-overlay` is one of the prehide selectors (Sourcepoint's):
    // the page's own element of that class is captured as it shows, and
    // nothing of the worker's is in the page.
    assert!(
        shown(&manifest, manifest.element("overlay")),
        "the page's element a prehide selector matches is captured hidden"
    );
    let ours: Vec<&Value> = manifest
        .nodes()
        .iter()
        .filter(|n| crate::helpers::manifest::attribute(n, "id").is_some_and(|id| id.starts_with("autoconsent")))
        .collect();
    assert!(ours.is_empty(), "the worker's own elements were captured: {ours:?}");
}

/// A CMP the rules recognize but whose banner offers no way to decline
/// (here vanilla-cookieconsent without its reject button, in a modal that
/// locks the page): hidden, with its backdrop, and the scroll lock released.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_banner_that_cannot_be_declined_is_hidden_and_its_lock_released(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let site = Site::start(vanilla_cookieconsent("box", "middle center", true, false)).await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let manifest = capture(&app, &tenant, &worker, &site.url("/"), json!({})).await;
    let consent = &manifest.0["consent"];
    assert_eq!(consent["outcome"], "hidden", "{consent}\n{}", worker.log_text());
    assert!(consent["cmp"].is_string(), "{consent}");
    assert_eq!(site.hits("/tracker.js"), 0, "nothing was accepted");
    assert!(!shown(&manifest, manifest.element("cc-main")), "the banner is hidden");
    let html = manifest.nodes().iter().find(|n| n["name"] == "HTML").unwrap();
    assert_ne!(
        manifest.style(html, "overflow-y"),
        "hidden",
        "the scroll lock is released"
    );

    // What the reader sees of the page: the article, no backdrop over it.
    assert_first_viewport_is_the_bare_article(&app, &manifest).await;
}

/// A Sourcepoint-style message (SPEC §14 "Frames"): the page holds a
/// container with a backdrop, a scroll lock on `html`, and a cross-site
/// frame at `/index.html?message_id=…` whose buttons carry Sourcepoint's
/// choice classes; the page removes the container when the frame posts
/// the reader's choice, as Sourcepoint's wrapper does, and loads the
/// tracker only on "accept". (Sourcepoint serves its message itself: no
/// package of it is on a registry. This is the document autoconsent's
/// Sourcepoint rule reads, served from a second loopback site so that the
/// frame renders in a process and a CDP session of its own.)
fn sourcepoint_page(frame_origin: &str) -> Pages {
    let page = format!(
        r#"<!doctype html><html class="sp-message-open"><head><meta charset="utf-8">
        <style>
          html.sp-message-open {{ overflow: hidden; }}
          #sp_message_container_1234 {{ position: fixed; inset: 0; z-index: 2147483647; display: flex;
            align-items: center; justify-content: center; background: rgba(0, 0, 0, 0.6); }}
          #sp_message_container_1234 iframe {{ width: 480px; height: 240px; border: 0; background: white; }}
        </style></head><body>
        {}
        <div id="sp_message_container_1234"><iframe id="sp_message_iframe_1234" title="SP Consent Message"
          src="{frame_origin}/index.html?message_id=1234&consentUUID=00000000"></iframe></div>
        <script>
        addEventListener("message", (e) => {{
          if (e.origin !== "{frame_origin}" || !e.data || !e.data.sp) return;
          document.body.dataset.choice = e.data.choice;
          document.getElementById("sp_message_container_1234").remove();
          document.documentElement.classList.remove("sp-message-open");
          if (e.data.choice === "accept") {{
            const s = document.createElement("script"); s.src = "/tracker.js"; document.body.appendChild(s);
          }}
        }});
        </script></body></html>"#,
        article("")
    );
    vec![("/", Page::html(&page)), ("/tracker.js", tracker_page())]
}

/// Sourcepoint's message, in its frame (see [`sourcepoint_page`]): the
/// reader's choice is posted to the page.
fn sourcepoint_message() -> Pages {
    let message = r#"<!doctype html><html><head><meta charset="utf-8"><style>
          body { margin: 0; font: 15px sans-serif; padding: 24px; }
          button { margin-right: 8px; padding: 8px 12px; }
        </style></head><body><div class="message-container">
        <p class="message-component">We and our partners use cookies to measure the site.</p>
        <button class="message-component message-button sp_choice_type_11" data-choice="accept">Accept all</button>
        <button class="message-component message-button sp_choice_type_12" data-choice="manage">Settings</button>
        <button class="message-component message-button sp_choice_type_13" data-choice="reject">Reject all</button>
        </div><script>
        for (const b of document.querySelectorAll("button")) {
          b.addEventListener("click", () => parent.postMessage({ sp: true, choice: b.dataset.choice }, "*"));
        }
        </script></body></html>"#;
    vec![("/index.html", Page::html(message))]
}

/// A CMP in a cross-site frame (Sourcepoint and TrustArc work that way) is
/// declined in its frame's own session: the reject button in the frame
/// is pressed, the page takes its container and scroll lock away, the
/// tracker is never fetched, and the first viewport is the bare article.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_cmp_in_a_cross_site_frame_is_declined_in_its_frame(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let frame_site = Site::start(sourcepoint_message()).await;
    let site = Site::start(sourcepoint_page(&frame_site.url(""))).await;
    let worker = WorkerProcess::start(&app, &[site.addr, frame_site.addr], &[]);
    let manifest = capture(&app, &tenant, &worker, &site.url("/"), json!({})).await;
    let consent = &manifest.0["consent"];
    assert_eq!(consent["outcome"], "declined", "{consent}\n{}", worker.log_text());
    assert_eq!(consent["cmp"], "Sourcepoint-frame", "{consent}");
    assert_eq!(frame_site.hits("/index.html"), 1, "the message was shown once");
    let body = manifest.nodes().iter().find(|n| n["name"] == "BODY").unwrap();
    assert_eq!(
        crate::helpers::manifest::attribute(body, "data-choice"),
        Some("reject"),
        "the frame's own reject button was pressed"
    );
    assert_eq!(site.hits("/tracker.js"), 0, "the consent-gated tracker was fetched");
    let html = manifest.nodes().iter().find(|n| n["name"] == "HTML").unwrap();
    assert_ne!(
        manifest.style(html, "overflow-y"),
        "hidden",
        "the page released its scroll lock"
    );

    assert_first_viewport_is_the_bare_article(&app, &manifest).await;
}

/// A script of the page's own, first in its `head`: marks `html` with
/// `data-banner-seen` on the first animation frame in which the element
/// `selector` selects is painted in the viewport: not hidden, not
/// transparent (itself or an ancestor), inside the viewport.
fn banner_watch(selector: &str) -> String {
    format!(
        r#"<script>
        (function watch() {{
          const banner = document.querySelector({selector:?});
          if (banner && banner.checkVisibility({{ opacityProperty: true, visibilityProperty: true }})) {{
            const box = banner.getBoundingClientRect();
            if (box.width > 0 && box.height > 0 && box.bottom > 0 && box.top < innerHeight) {{
              document.documentElement.dataset.bannerSeen = "yes";
            }}
          }}
          requestAnimationFrame(watch);
        }})();
        </script>"#
    )
}

/// No flash (SPEC §14): a banner is prehidden from the first paint until
/// it is declined, so no animation frame of the page ever paints it,
/// while a plain Chromium does (the watch sees it there). The libraries
/// whose banner shows before autoconsent's first look (without the
/// prehide, each was painted; vanilla-cookieconsent and Osano's are
/// declined before they show, prehide or not).
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_declined_banner_is_never_painted(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let cases: Vec<(&str, Pages, &str)> = vec![
        ("Klaro", klaro(), ".klaro .cookie-notice"),
        ("tarteaucitron", tarteaucitron(), "#tarteaucitronAlertBig"),
        ("Orejime", orejime(), ".orejime-Banner"),
    ];
    let mut sites = Vec::new();
    for (_, pages, selector) in &cases {
        let mut pages = pages.clone();
        let page = &mut pages[0].1;
        let html = String::from_utf8(page.body.clone()).unwrap().replacen(
            "<head><meta charset=\"utf-8\">",
            &format!("<head><meta charset=\"utf-8\">{}", banner_watch(selector)),
            1,
        );
        page.body = html.into_bytes();
        sites.push(Site::start(pages).await);
    }
    let worker = WorkerProcess::start(&app, &sites.iter().map(|s| s.addr).collect::<Vec<_>>(), &[]);
    let mut painted = Vec::new();
    for ((name, _, _), site) in cases.iter().zip(&sites) {
        // A reader's browser paints it.
        let mut plain = crate::helpers::chromium::Browser::open(&site.url("/")).await;
        plain
            .until(
                "document.documentElement.dataset.bannerSeen === 'yes'",
                Duration::from_secs(10),
            )
            .await;
        drop(plain);

        let manifest = capture(&app, &tenant, &worker, &site.url("/"), json!({})).await;
        assert_eq!(
            manifest.0["consent"]["outcome"],
            "declined",
            "{name}\n{}",
            worker.log_text()
        );
        let root = manifest.nodes().iter().find(|n| n["name"] == "HTML").unwrap();
        if crate::helpers::manifest::attribute(root, "data-banner-seen").is_some() {
            painted.push(*name);
        }
    }
    assert!(
        painted.is_empty(),
        "an animation frame painted the banner of {painted:?}"
    );
}
