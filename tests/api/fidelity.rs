//! Capture fidelity (SPEC §11): one small page per rule, captured for real
//! (the worker binary, headless Chromium, the service, the emulator), and
//! the manifest's keys read exactly as Code2Des reads them.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use tokio::sync::MutexGuard;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::manifest::{assert_absent, assert_valid_manifest, attribute, png_size, Manifest};
use crate::helpers::TestApp;

/// Every key §11 adds to a node; each is absent where the node has nothing to say.
const OPTIONAL_NODE_KEYS: [&str; 11] = [
    "pseudo",
    "text",
    "shadowRoot",
    "inputValue",
    "checked",
    "selected",
    "currentSrc",
    "image",
    "scroll",
    "stackingContext",
    "fonts",
];

/// 2×2 PNGs of one colour each: different bytes, different assets.
pub(crate) const PNG_RED: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR42mP4z8AARAwQCgAf7gP9Y167WwAAAABJRU5ErkJggg==";
const PNG_BLUE: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAD0lEQVR42mNgYPgPRmAKABf2A/3HkIu0AAAAAElFTkSuQmCC";
const PNG_GREEN: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAD0lEQVR42mNgWMAAQhAKABGOAoGmp5hDAAAAAElFTkSuQmCC";
const PNG_YELLOW: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR42mP4f4IBiBggFAA1zgcdck8OXQAAAABJRU5ErkJggg==";

pub(crate) fn png(base64: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(base64).unwrap()
}

/// A web font that is not the page's default: Chromium reports the glyphs
/// it draws under this face's own PostScript name.
pub(crate) const WEB_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf";

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A completed capture of a site's `/`, with what a test reads afterwards.
/// Its manifest is checked against the committed schema when it is dropped,
/// after the test's own assertions passed: a rule that fails says more than
/// the schema does. Fields drop in order: the worker stops before the
/// browser lock is released.
pub(crate) struct Captured {
    pub(crate) app: TestApp,
    pub(crate) id: String,
    pub(crate) manifest: Manifest,
    _worker: WorkerProcess,
    _browser: MutexGuard<'static, ()>,
}

impl Drop for Captured {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_valid_manifest(&self.manifest);
        }
    }
}

/// Captures `site`'s `/` with a worker that may also reach `others` (frames).
pub(crate) async fn capture(pool: PgPool, site: &Site, others: &[&Site]) -> Captured {
    let others: Vec<SocketAddr> = others.iter().map(|s| s.addr).collect();
    capture_allowing(pool, site, &others, json!({})).await
}

/// Captures `site`'s `/` with `settings` (a `viewport`, …) by a worker that
/// may also reach the addresses `others`.
pub(crate) async fn capture_allowing(pool: PgPool, site: &Site, others: &[SocketAddr], settings: Value) -> Captured {
    let browser = BROWSER.lock().await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let allow: Vec<SocketAddr> = std::iter::once(site.addr).chain(others.iter().copied()).collect();
    let worker = WorkerProcess::start(&app, &allow, &[]);
    let id = app.import_with(&tenant, &site.url("/"), settings).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    let manifest = Manifest(app.object_json(&format!("page-imports/{id}/1/capture.json")).await);
    Captured {
        app,
        id,
        manifest,
        _worker: worker,
        _browser: browser,
    }
}

pub(crate) async fn capture_page(pool: PgPool, html: &str) -> Captured {
    let site = Site::start(vec![("/", Page::html(html))]).await;
    capture(pool, &site, &[]).await
}

/// `text[start..start + length]` of each of a node's text boxes: `start`
/// and `length` count UTF-16 units of `text`, as the browser does.
fn box_slices(node: &Value) -> Vec<String> {
    let text: Vec<u16> = node["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text on {node}"))
        .encode_utf16()
        .collect();
    let mut end_of_previous = 0;
    node["textBoxes"]
        .as_array()
        .unwrap_or_else(|| panic!("no textBoxes on {node}"))
        .iter()
        .map(|b| {
            let [start, length] = [&b[4], &b[5]].map(|n| n.as_f64().unwrap_or_else(|| panic!("{b}")) as usize);
            assert!(
                start >= end_of_previous && start + length <= text.len(),
                "box {b} does not index into the text of {node}"
            );
            end_of_previous = start + length;
            String::from_utf16(&text[start..start + length]).unwrap()
        })
        .collect()
}

/// A JSON array of numbers, integers or not.
fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|n| n.as_f64().unwrap_or_else(|| panic!("not a number: {n}")))
        .collect()
}

fn without_white_space(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A node's `fonts`, checked to index `dom.fonts`.
fn font_indexes(m: &Manifest, node: &Value) -> Vec<u64> {
    let table = m["dom"]["fonts"].as_array().expect("dom.fonts").len() as u64;
    let indexes: Vec<u64> = node["fonts"]
        .as_array()
        .unwrap_or_else(|| panic!("no fonts on {node}"))
        .iter()
        .map(|i| i.as_u64().unwrap())
        .collect();
    assert!(!indexes.is_empty() && indexes.iter().all(|i| *i < table), "{node}");
    indexes
}

fn assert_asset_keys_unique(m: &Manifest) {
    let mut keys = HashSet::new();
    for asset in m.assets() {
        assert!(
            keys.insert(asset["key"].clone()),
            "one entry per stored object: {asset}"
        );
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn generated_content_and_rendered_text_carry_the_text_as_laid_out(pool: PgPool) {
    let captured = capture_page(
        pool,
        r#"<!doctype html><html><head><meta charset="utf-8"><style>
        body { margin: 0; }
        #since::before { content: "Since "; color: rgb(0, 128, 0); }
        #since::after { content: "(new)"; }
        #upper, #strasse { text-transform: uppercase; }
        #strasse { width: 40px; }
        </style></head><body>
        <p id="since">2019</p>
        <ul><li id="item">First item</li></ul>
        <p id="upper">hello world</p>
        <p id="strasse">straße maße</p>
        </body></html>"#,
    )
    .await;
    let m = &captured.manifest;

    // Each pseudo-element: a node below its element, with its own box,
    // style, generated text and the fonts that drew it.
    let since = m.element("since");
    let item = m.element("item");
    for (element, pseudo, text) in [
        (since, "before", "Since "),
        (since, "after", "(new)"),
        (item, "marker", "• "),
    ] {
        let found: Vec<&Value> = m
            .children(element)
            .into_iter()
            .filter(|n| n["pseudo"] == pseudo)
            .collect();
        assert_eq!(found.len(), 1, "one ::{pseudo} below {element}");
        let node = found[0];
        assert_eq!(node["name"], format!("::{pseudo}"), "{node}");
        assert_eq!(node["parent"], element["id"], "{node}");
        assert_eq!(node["text"], text, "::{pseudo} {node}");
        let layout_box = node["box"].as_array().unwrap_or_else(|| panic!("no box: {node}"));
        assert!(layout_box[2].as_f64().unwrap() > 0.0, "{node}");
        assert!(node["style"].is_u64(), "{node}");
        font_indexes(m, node);
    }
    let before = m.children(since).into_iter().find(|n| n["pseudo"] == "before").unwrap();
    let after = m.children(since).into_iter().find(|n| n["pseudo"] == "after").unwrap();
    assert_eq!(m.style(before, "content"), r#""Since ""#);
    assert_eq!(m.style(after, "content"), r#""(new)""#);
    assert_eq!(m.style(before, "color"), "rgb(0, 128, 0)", "its own style");
    assert_eq!(m.style(since, "content"), "normal");
    assert_absent(since, &["pseudo", "text"]);

    // Text nodes: `text` as laid out, `value` as in the DOM; text boxes
    // index into `text`.
    let year = m.text_node("2019");
    assert_eq!(year["text"], "2019");
    assert_eq!(box_slices(year), ["2019"]);
    let hello = m.text_node("hello world");
    assert_eq!(hello["text"], "HELLO WORLD");
    assert_eq!(box_slices(hello), ["HELLO WORLD"]);
    font_indexes(m, hello);
    // Uppercase ß is SS: the laid-out text is longer than the DOM's, and
    // the boxes of both lines still index into it.
    let strasse = m.text_node("straße maße");
    assert_eq!(strasse["text"], "STRASSE MASSE");
    assert_eq!(
        without_white_space(&box_slices(strasse).concat()),
        "STRASSEMASSE",
        "{strasse}"
    );
    let lines: HashSet<u64> = strasse["textBoxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_f64().unwrap().round() as u64)
        .collect();
    assert_eq!(lines.len(), 2, "two lines: {strasse}");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn shadow_roots_and_form_state_set_by_script_are_captured_as_shown(pool: PgPool) {
    let captured = capture_page(
        pool,
        r#"<!doctype html><html><head><meta charset="utf-8"></head><body>
        <div id="closed-host"></div>
        <div id="open-host"></div>
        <form>
          <input id="name" type="text"> <input id="untouched" type="text">
          <textarea id="notes"></textarea>
          <input id="agree" type="checkbox"> <input id="spam" type="checkbox">
          <input id="small" type="radio" name="size"> <input id="large" type="radio" name="size">
          <select id="plan"><option id="free">Free</option><option id="team">Team</option><option id="enterprise">Enterprise</option></select>
        </form>
        <script>
        const closed = document.getElementById('closed-host').attachShadow({ mode: 'closed' });
        closed.innerHTML = '<p id="in-closed">In a closed root</p><input id="shadow-input" type="text">';
        const open = document.getElementById('open-host').attachShadow({ mode: 'open' });
        open.innerHTML = '<p id="in-open">In an open root</p>';
        window.addEventListener('load', () => setTimeout(() => {
          document.getElementById('name').value = 'Ada Lovelace';
          document.getElementById('notes').value = 'Notes typed later';
          document.getElementById('agree').checked = true;
          document.getElementById('large').checked = true;
          document.getElementById('enterprise').selected = true;
          closed.getElementById('shadow-input').value = 'Inside the shadow root';
        }, 100));
        </script></body></html>"#,
    )
    .await;
    let m = &captured.manifest;

    // The page's two roots, below their hosts; none of the browser's own
    // (inputs, textarea and select have user-agent roots).
    let roots: Vec<&Value> = m.nodes().iter().filter(|n| n["type"] == 11).collect();
    assert_eq!(roots.len(), 2, "{roots:?}");
    for (host, mode, child) in [("closed-host", "closed", "in-closed"), ("open-host", "open", "in-open")] {
        let root = roots
            .iter()
            .find(|r| r["shadowRoot"] == mode)
            .unwrap_or_else(|| panic!("no {mode} root: {roots:?}"));
        assert_eq!(root["parent"], m.element(host)["id"], "{root}");
        assert_eq!(m.element(child)["parent"], root["id"], "{child} hangs below its root");
        assert_absent(root, &["pseudo", "inputValue", "checked", "selected"]);
    }
    let closed_root = roots.iter().find(|r| r["shadowRoot"] == "closed").unwrap();
    assert_eq!(m.element("shadow-input")["parent"], closed_root["id"]);
    assert_eq!(m.text_node("In a closed root")["text"], "In a closed root");

    // Form state as the page shows it, each key only where set.
    for (id, value) in [
        ("name", "Ada Lovelace"),
        ("notes", "Notes typed later"),
        ("shadow-input", "Inside the shadow root"),
    ] {
        assert_eq!(m.element(id)["inputValue"], value, "{id}: {}", m.element(id));
    }
    for (id, key) in [("agree", "checked"), ("large", "checked"), ("enterprise", "selected")] {
        assert_eq!(m.element(id)[key], true, "{id}: {}", m.element(id));
    }
    assert_absent(m.element("untouched"), &["inputValue", "checked", "selected"]);
    assert_absent(m.element("agree"), &["inputValue", "selected"]);
    for id in ["spam", "small"] {
        assert_absent(m.element(id), &["inputValue", "checked", "selected"]);
    }
    for id in ["free", "team"] {
        assert_absent(m.element(id), &["inputValue", "checked", "selected"]);
    }
    assert_absent(m.element("plan"), &["inputValue", "checked", "selected"]);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn the_drawn_srcset_candidate_and_background_images_are_stored_as_assets(pool: PgPool) {
    let site = Site::start(vec![
        (
            "/",
            Page::html(
                r#"<!doctype html><html><body style="margin:0">
                <img id="photo" srcset="/a.png 1x, /b.png 2x" src="/a.png" width="20" height="20" alt="">
                <div id="banner" style="background-image: url(/bg.png); width: 100px; height: 50px"></div>
                </body></html>"#,
            ),
        ),
        ("/a.png", Page::of("image/png", png(PNG_RED))),
        ("/b.png", Page::of("image/png", png(PNG_BLUE))),
        ("/bg.png", Page::of("image/png", png(PNG_GREEN))),
    ])
    .await;
    let captured = capture(pool, &site, &[]).await;
    let m = &captured.manifest;

    // The job's device scale factor is 2: the 2x candidate is drawn.
    assert_eq!(m.element("photo")["currentSrc"], site.url("/b.png"));
    assert_eq!(
        m.style(m.element("banner"), "background-image"),
        format!(r#"url("{}")"#, site.url("/bg.png"))
    );
    assert_absent(m.element("banner"), &["currentSrc"]);
    for (path, served) in [("/b.png", PNG_BLUE), ("/bg.png", PNG_GREEN)] {
        let found = m.assets_from(&site.url(path));
        assert_eq!(found.len(), 1, "{path} in {:?}", m.assets());
        let asset = found[0];
        assert_eq!(
            (asset["kind"].as_str(), asset["mimeType"].as_str()),
            (Some("image"), Some("image/png"))
        );
        let stored = captured.app.object(asset["key"].as_str().unwrap()).await;
        assert_eq!(stored, png(served), "{path} stored as served");
        assert_eq!(asset["sha256"], sha256_hex(&stored));
    }
    // Every drawn image has its asset.
    for node in m.nodes().iter().filter(|n| n.get("currentSrc").is_some()) {
        let url = node["currentSrc"].as_str().unwrap();
        assert!(!m.assets_from(url).is_empty(), "no asset for {url}");
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn scroll_containers_and_stacking_contexts_are_marked_and_plain_elements_say_nothing(pool: PgPool) {
    let captured = capture_page(
        pool,
        r#"<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0">
        <div id="scroller" style="overflow: auto; width: 200px; height: 100px"><div id="tall" style="height: 500px">Tall content</div></div>
        <div id="fits" style="overflow: auto; width: 200px; height: 100px"><div>Short content</div></div>
        <div id="raised" style="position: relative; z-index: 1">Raised</div>
        <div id="faded" style="opacity: 0.5">Faded</div>
        <div id="plain">Plain</div>
        <script>
        window.addEventListener('load', () => {
          const s = document.getElementById('scroller');
          s.scrollTop = 40;
          // What the browser itself says, scroll bar and all.
          s.setAttribute('data-scroll', JSON.stringify([s.scrollLeft, s.scrollTop, s.scrollWidth, s.scrollHeight]));
        });
        </script></body></html>"#,
    )
    .await;
    let m = &captured.manifest;

    let scroller = m.element("scroller");
    let said: Value = serde_json::from_str(attribute(scroller, "data-scroll").expect("data-scroll")).unwrap();
    assert_eq!(said[1], 40, "the page scrolled it: {said}");
    assert_eq!(said[3], 500);
    assert_eq!(
        numbers(&scroller["scroll"]),
        numbers(&said),
        "[scrollLeft, scrollTop, scrollWidth, scrollHeight] of {scroller}"
    );
    // Boxes are where the content was painted: already scrolled.
    let y = |node: &Value| node["box"][1].as_f64().unwrap();
    assert!(
        (y(m.element("tall")) - (y(scroller) - 40.0)).abs() < 0.5,
        "tall {} in scroller {}",
        m.element("tall")["box"],
        scroller["box"]
    );
    assert_absent(m.element("fits"), &["scroll"]);

    for id in ["raised", "faded"] {
        assert_eq!(m.element(id)["stackingContext"], true, "{id}: {}", m.element(id));
    }

    let plain = m.element("plain");
    assert_absent(plain, &OPTIONAL_NODE_KEYS);
    assert_absent(plain, &["textBoxes"]);
    let text = m.text_node("Plain");
    assert_eq!(text["parent"], plain["id"]);
    assert_eq!(text["text"], "Plain");
    font_indexes(m, text);
    assert_absent(
        text,
        &[
            "pseudo",
            "shadowRoot",
            "inputValue",
            "checked",
            "selected",
            "currentSrc",
            "image",
            "scroll",
            "stackingContext",
        ],
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn content_revealed_on_scroll_is_captured_as_a_reader_who_scrolled_to_it_sees_it(pool: PgPool) {
    let site = Site::start(vec![
        (
            "/",
            Page::html(
                r#"<!doctype html><html><head><meta charset="utf-8"><style>
                body { margin: 0; }
                #page { position: relative; height: 6000px; }
                section { position: absolute; left: 0; width: 400px; height: 200px; opacity: 0; }
                #reveal { top: 3000px; }
                #reveal.revealed { opacity: 1; }
                #in-view { top: 4500px; }
                #in-view.shown { opacity: 1; }
                #lazy { position: absolute; top: 5200px; }
                </style></head><body><div id="page">
                <h1 style="margin: 0">Top of the page</h1>
                <section id="reveal"></section>
                <section id="in-view"></section>
                <img id="lazy" loading="lazy" src="/lazy.png" width="20" height="20" alt="">
                </div><script>
                const reveal = document.getElementById('reveal');
                new IntersectionObserver((entries, observer) => {
                  if (entries.some(e => e.isIntersecting)) {
                    reveal.textContent = 'Revealed on scroll';
                    reveal.classList.add('revealed');
                    observer.disconnect();
                  }
                }).observe(reveal);
                // Shown while in the view, hidden again once it leaves.
                const inView = document.getElementById('in-view');
                new IntersectionObserver(entries => {
                  for (const e of entries) {
                    if (e.isIntersecting) {
                      inView.textContent = 'Shown while in view';
                      inView.classList.add('shown');
                    } else {
                      inView.classList.remove('shown');
                    }
                  }
                }).observe(inView);
                </script></body></html>"#,
            ),
        ),
        ("/lazy.png", Page::of("image/png", png(PNG_YELLOW))),
    ])
    .await;
    let captured = capture(pool, &site, &[]).await;
    let m = &captured.manifest;

    for (id, class, text) in [
        ("reveal", "revealed", "Revealed on scroll"),
        ("in-view", "shown", "Shown while in view"),
    ] {
        let section = m.element(id);
        assert!(
            attribute(section, "class").is_some_and(|c| c.split(' ').any(|c| c == class)),
            "{id} is {class}: {section}"
        );
        assert_eq!(m.style(section, "opacity"), "1", "{id} is visible");
        assert_eq!(m.text_node(text)["parent"], section["id"]);
    }
    let lazy = m.element("lazy");
    assert_eq!(lazy["currentSrc"], site.url("/lazy.png"));
    assert_eq!(m.assets_from(&site.url("/lazy.png")).len(), 1, "{:?}", m.assets());

    // The screenshot covers the whole page, shot from the top.
    assert_eq!(
        m["page"],
        json!({"layoutWidth": 800, "scale": 1.0, "contentHeight": 6000, "capturedHeight": 6000, "truncated": false,
               "popupsClosed": 0, "blockedRequestsOmitted": 0, "failedRequestsOmitted": 0,
               "statesExamined": 0, "statesCut": false})
    );
    assert_eq!(numbers(&m["dom"]["documents"][0]["scroll"]), [0.0, 0.0]);
    let screenshot = captured.app.object(m["screenshot"]["key"].as_str().unwrap()).await;
    assert_eq!(png_size(&screenshot), (1600, 12000));
    assert_eq!(
        (&m["screenshot"]["pixelWidth"], &m["screenshot"]["pixelHeight"]),
        (&json!(1600), &json!(12000))
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn finite_animations_are_captured_at_their_end_and_infinite_ones_do_not_hold_the_capture(pool: PgPool) {
    let captured = capture_page(
        pool,
        r#"<!doctype html><html><head><meta charset="utf-8"><style>
        body { margin: 0; }
        @keyframes fade { from { opacity: 0; } to { opacity: 1; } }
        @keyframes spin { to { transform: rotate(360deg); } }
        #fade { animation: fade 30s forwards; }
        #slide { opacity: 0; transition: opacity 30s linear; }
        #slide.in { opacity: 1; }
        #spin { width: 40px; height: 40px; animation: spin 1s linear infinite; }
        </style></head><body>
        <div id="fade">Fades in over 30 s</div>
        <div id="slide">Fades in over 30 s too, by a transition</div>
        <div id="spin">Spins forever</div>
        <script>
        window.addEventListener('load', () => requestAnimationFrame(() => document.getElementById('slide').classList.add('in')));
        </script></body></html>"#,
    )
    .await;
    let m = &captured.manifest;
    assert_eq!(m.style(m.element("fade"), "opacity"), "1", "the animation's end");
    assert_eq!(m.style(m.element("slide"), "opacity"), "1", "the transition's end");
    // Paused where it was, not removed: its transform still applies.
    let spin = m.style(m.element("spin"), "transform");
    assert!(spin.starts_with("matrix("), "{spin}");
    // Neither the 30 s animations nor the endless one were waited out.
    let total = m["timings"]["totalMs"].as_u64().unwrap();
    assert!(total < 15_000, "the capture took {total} ms: {}", m["timings"]);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn script_drawn_charts_and_late_content_are_captured_once_the_page_is_quiet(pool: PgPool) {
    let captured = capture_page(
        pool,
        r#"<!doctype html><html><head><meta charset="utf-8"><style>
        body { margin: 0; }
        header { height: 300px; }
        canvas { display: inline-block; vertical-align: top; width: 240px; height: 120px; }
        #diagram { height: 1200px; }
        </style></head><body>
        <header>
          <canvas id="chart" width="240" height="120"></canvas>
          <canvas id="reference" width="240" height="120"></canvas>
          <canvas id="blank" width="240" height="120"></canvas>
        </header>
        <script>
        const BARS = [40, 90, 60, 110, 75];
        function axis(ctx) { ctx.fillStyle = 'rgb(40, 40, 40)'; ctx.fillRect(10, 115, 220, 2); }
        function bar(ctx, i) { ctx.fillStyle = 'rgb(230, 80, 20)'; ctx.fillRect(20 + i * 42, 115 - BARS[i], 30, BARS[i]); }
        // The chart as it ends, drawn at once.
        const reference = document.getElementById('reference').getContext('2d');
        axis(reference);
        BARS.forEach((_, i) => bar(reference, i));
        window.addEventListener('load', () => {
          // The same chart drawn after load, one bar per 100 ms of animation frames.
          setTimeout(() => {
            const ctx = document.getElementById('chart').getContext('2d');
            axis(ctx);
            let start = null, drawn = 0;
            function frame(t) {
              if (start === null) start = t;
              while (drawn < BARS.length && t - start >= drawn * 100) bar(ctx, drawn++);
              if (drawn < BARS.length) requestAnimationFrame(frame);
            }
            requestAnimationFrame(frame);
          }, 300);
          // A diagram the page's script inserts later, making the page taller.
          setTimeout(() => {
            const diagram = document.createElement('div');
            diagram.id = 'diagram';
            diagram.textContent = 'Diagram ready';
            document.body.appendChild(diagram);
          }, 700);
        });
        </script></body></html>"#,
    )
    .await;
    let m = &captured.manifest;

    // The chart finished drawing: its pixels are exactly those of the same
    // chart drawn at once (one stored object), and not a blank canvas's.
    let image = |id: &str| -> Value {
        let node = m.element(id);
        assert!(node["image"].is_string(), "{id} has no image: {node}");
        node["image"].clone()
    };
    let (chart, reference, blank) = (image("chart"), image("reference"), image("blank"));
    assert_eq!(chart, reference, "the chart as it ends");
    assert_ne!(chart, blank, "the chart was drawn");
    assert_asset_keys_unique(m);
    // Read from the element: the canvas's own 240×120 pixels. A canvas that
    // reads blank may be cut from the screenshot at its box instead (§11:
    // where reading does not show what is drawn, as with WebGL).
    for (id, key, sizes) in [
        ("chart", &chart, vec![(240, 120)]),
        ("blank", &blank, vec![(240, 120), (480, 240)]),
    ] {
        let asset = m.asset_with_key(key);
        assert_eq!(
            (asset["kind"].as_str(), asset["mimeType"].as_str()),
            (Some("canvas"), Some("image/png")),
            "{asset}"
        );
        assert_absent(asset, &["url"]);
        let stored = captured.app.object(key.as_str().unwrap()).await;
        assert_eq!(asset["sha256"], sha256_hex(&stored));
        assert_eq!(asset["bytes"], stored.len());
        let size = png_size(&stored);
        assert!(sizes.contains(&size), "{id}: a {size:?} PNG");
    }

    // The diagram inserted 700 ms after load is there, and the page's
    // height includes it.
    let diagram = m.element("diagram");
    assert_eq!(diagram["box"][3], 1200.0);
    assert_eq!(m.text_node("Diagram ready")["parent"], diagram["id"]);
    assert_eq!(
        m["page"],
        json!({"layoutWidth": 800, "scale": 1.0, "contentHeight": 1500, "capturedHeight": 1500, "truncated": false,
               "popupsClosed": 0, "blockedRequestsOmitted": 0, "failedRequestsOmitted": 0,
               "statesExamined": 0, "statesCut": false})
    );
    assert_eq!(m["screenshot"]["pixelHeight"], 3000);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn fonts_that_rendered_text_are_a_table_the_text_nodes_index(pool: PgPool) {
    let font = std::fs::read(WEB_FONT).unwrap_or_else(|e| panic!("{WEB_FONT} (fonts-dejavu-core): {e}"));
    let site = Site::start(vec![
        (
            "/",
            Page::html(
                r#"<!doctype html><html><head><meta charset="utf-8">
                <link rel="preload" href="/brand.ttf" as="font" type="font/ttf" crossorigin>
                <style>
                @font-face { font-family: "Brand Serif"; src: url("/brand.ttf") format("truetype"); }
                body { margin: 0; }
                #web { font-family: "Brand Serif"; }
                #fallback { font-family: "Lucida Grande", Arial; }
                </style></head><body>
                <p id="web">Set in the web font</p>
                <p id="fallback">Set in a fallback</p>
                </body></html>"#,
            ),
        ),
        ("/brand.ttf", Page::of("font/ttf", font.clone())),
    ])
    .await;
    let captured = capture(pool, &site, &[]).await;
    let m = &captured.manifest;

    // Preloaded and used: one stored object, one entry.
    let stored = m.assets_from(&site.url("/brand.ttf"));
    assert_eq!(stored.len(), 1, "{:?}", m.assets());
    assert_eq!(stored[0]["kind"], "font");
    assert_eq!(captured.app.object(stored[0]["key"].as_str().unwrap()).await, font);
    assert_asset_keys_unique(m);

    let table = m["dom"]["fonts"].as_array().expect("dom.fonts");
    let keys = |entry: &Value| -> Vec<String> {
        let mut keys: Vec<String> = entry.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let web = m.text_node("Set in the web font");
    let [web_font] = font_indexes(m, web)[..] else {
        panic!("one font drew {web}")
    };
    let entry = &table[web_font as usize];
    assert_eq!(keys(entry), ["asset", "custom", "family", "postScriptName"], "{entry}");
    assert_eq!(entry["postScriptName"], "DejaVuSerif", "{entry}");
    // The face's own family name or the one the page declared: §11 says "family".
    assert!(
        entry["family"] == "DejaVu Serif" || entry["family"] == "Brand Serif",
        "{entry}"
    );
    assert_eq!(entry["custom"], true);
    assert_eq!(entry["asset"], stored[0]["key"]);

    let fallback = m.text_node("Set in a fallback");
    let [system_font] = font_indexes(m, fallback)[..] else {
        panic!("one font drew {fallback}")
    };
    // "Lucida Grande" is not installed; Arial is drawn by its metric twin.
    let entry = &table[system_font as usize];
    assert_eq!(
        *entry,
        json!({"family": "Liberation Sans", "postScriptName": "LiberationSans", "custom": false})
    );
    assert_eq!(
        table.iter().filter(|f| f["custom"] == true).count(),
        1,
        "only the web font is custom: {table:?}"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn manifest_version_2_follows_the_identity_and_every_fidelity_style_property_is_captured(pool: PgPool) {
    let captured = capture_page(
        pool,
        r#"<!doctype html><html><body>
        <p id="shadowed" style="text-shadow: 1px 1px 2px red; filter: blur(1px); mix-blend-mode: multiply">Shadowed</p>
        </body></html>"#,
    )
    .await;
    let (app, id, m) = (&captured.app, &captured.id, &captured.manifest);

    let raw = app.object(&format!("page-imports/{id}/1/capture.json")).await;
    let text = String::from_utf8(raw).unwrap();
    let head = format!(
        r#"{{"schemaVersion":1,"pageImportId":"{id}","attempt":1,"nonce":"{}","manifestVersion":2,"#,
        app.nonce_of(id).await
    );
    assert!(text.starts_with(&head), "{}", &text[..head.len().min(text.len())]);
    assert_eq!(m["manifestVersion"], 2);

    let names: Vec<&str> = m["dom"]["styleNames"]
        .as_array()
        .expect("dom.styleNames")
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let missing: Vec<&&str> = page_import_contract::styles::SPEC_11
        .iter()
        .filter(|n| !names.contains(n))
        .collect();
    assert!(missing.is_empty(), "missing from styleNames: {missing:?}");
    for kept in ["display", "font-family", "background-image", "transform", "box-shadow"] {
        assert!(names.contains(&kept), "§10's {kept} is kept");
    }
    assert_eq!(names.iter().collect::<HashSet<_>>().len(), names.len(), "no name twice");
    for (i, style) in m["dom"]["styles"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            style.as_array().unwrap().len(),
            names.len(),
            "styles[{i}] has one value per name"
        );
    }

    let shadowed = m.element("shadowed");
    assert_eq!(m.style(shadowed, "text-shadow"), "rgb(255, 0, 0) 1px 1px 2px");
    assert_eq!(m.style(shadowed, "filter"), "blur(1px)");
    assert_eq!(m.style(shadowed, "mix-blend-mode"), "multiply");
    assert_eq!(
        m.style(m.text_node("Shadowed"), "text-shadow"),
        "rgb(255, 0, 0) 1px 1px 2px",
        "inherited by its text"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn vertical_japanese_text_keeps_how_its_glyphs_stand_and_its_upright_digits(pool: PgPool) {
    let captured = capture_page(
        pool,
        r#"<!doctype html><html lang="ja"><head><meta charset="utf-8"></head><body>
        <div id="tate" style="writing-mode: vertical-rl; text-orientation: upright; height: 320px; font-size: 24px">令和<span id="tcy" style="text-combine-upright: all">20</span>年<span>12</span>月</div>
        </body></html>"#,
    )
    .await;
    let m = &captured.manifest;
    let tate = m.element("tate");
    assert_eq!(m.style(tate, "writing-mode"), "vertical-rl");
    assert_eq!(m.style(tate, "text-orientation"), "upright");
    assert_eq!(m.style(m.element("tcy"), "text-combine-upright"), "all");
    let twenty = m.text_node("20");
    assert_eq!(
        m.style(twenty, "text-combine-upright"),
        "all",
        "the digits' own text says it"
    );
    assert_eq!(m.style(twenty, "text-orientation"), "upright");
    assert_eq!(
        m.style(m.text_node("12"), "text-combine-upright"),
        "none",
        "digits not combined stay as they are"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn every_document_is_listed_and_a_cross_origin_frame_names_its_iframe(pool: PgPool) {
    let framed = Site::start(vec![(
        "/frame",
        Page::html(r#"<body style="margin:0"><p style="margin:0">Frame text on site B</p></body>"#),
    )])
    .await;
    let site = Site::start(vec![(
        "/",
        Page::html(&format!(
            r#"<!doctype html><html><body style="margin:0"><div style="height:1000px">
            <h1 style="margin:0;height:100px">Page with a frame</h1>
            <iframe id="cross" src="{}" style="display:block;width:400px;height:200px;border:0"></iframe>
            </div></body></html>"#,
            framed.url("/frame")
        )),
    )])
    .await;
    let captured = capture(pool, &site, &[&framed]).await;
    let m = &captured.manifest;

    let documents = m["dom"]["documents"].as_array().expect("dom.documents");
    for (i, document) in documents.iter().enumerate() {
        assert_eq!(document["index"], i, "{document}");
    }
    let page = &documents[0];
    assert!(page["frameId"].as_str().is_some_and(|f| !f.is_empty()), "{page}");
    assert_eq!(page["url"], site.url("/"));
    assert_absent(page, &["owner"]);
    assert_eq!(numbers(&page["scroll"]), [0.0, 0.0]);
    let width = page["contentSize"][0].as_f64().unwrap();
    assert!(width > 0.0 && width <= 800.0, "{page}");
    assert_eq!(page["contentSize"][1], 1000.0, "{page}");
    assert_eq!(m["page"]["contentHeight"], 1000);

    let iframe = m.element("cross");
    let owned: Vec<&Value> = documents.iter().filter(|d| d["owner"] == iframe["id"]).collect();
    assert_eq!(owned.len(), 1, "one document owned by the iframe: {documents:?}");
    let frame = owned[0];
    assert_eq!(frame["url"], framed.url("/frame"));
    assert!(
        frame["frameId"].as_str().is_some_and(|f| !f.is_empty()) && frame["frameId"] != page["frameId"],
        "{frame}"
    );
    assert_eq!(numbers(&frame["scroll"]), [0.0, 0.0]);
    assert_eq!(numbers(&frame["contentSize"]), [400.0, 200.0], "{frame}");

    // The frame's nodes carry its index; the page's carry none (0).
    let text = m.text_node("Frame text on site B");
    assert_eq!(text["document"], frame["index"], "{text}");
    let below_iframe = |node: &Value| {
        let mut at = node;
        while let Some(parent) = at["parent"].as_u64() {
            if parent == iframe["id"] {
                return true;
            }
            at = m.node(&json!(parent));
        }
        false
    };
    let frame_nodes: Vec<&Value> = m.nodes().iter().filter(|n| below_iframe(n)).collect();
    assert!(!frame_nodes.is_empty());
    for node in frame_nodes {
        assert_eq!(node["document"], frame["index"], "{node}");
    }
    assert_absent(iframe, &["document"]);
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn blocked_requests_list_only_what_the_page_asked_for(pool: PgPool) {
    let private = "http://127.0.0.1/private.png";
    let site = Site::start(vec![
        (
            "/",
            Page::html(&format!(
                r#"<!doctype html><html><body><h1>Reaching for a private address</h1>
                <img src="{private}" width="10" height="10" alt="">
                <img src="/slow.png" width="10" height="10" alt=""></body></html>"#
            )),
        ),
        // Holds the capture open a while, so the browser's own background
        // traffic has time to happen.
        (
            "/slow.png",
            Page::of("image/png", png(PNG_RED)).delayed(Duration::from_secs(1)),
        ),
    ])
    .await;
    let captured = capture(pool, &site, &[]).await;
    let m = &captured.manifest;

    let blocked = m["blockedRequests"].as_array().expect("blockedRequests");
    let urls: HashSet<&str> = blocked.iter().map(|b| b["url"].as_str().unwrap()).collect();
    assert_eq!(urls, HashSet::from([private]), "{blocked:?}");
    assert!(
        blocked
            .iter()
            .all(|b| b["reason"].as_str().is_some_and(|r| !r.is_empty())),
        "{blocked:?}"
    );
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_page_that_breaks_what_the_worker_asks_of_it_is_still_captured_and_its_canvas_read_truly(pool: PgPool) {
    // The page replaces the built-ins the worker's steps could use: its
    // canvas "reads" as 3 MB of garbage, scrolling does nothing, animations
    // cannot be listed, and it draws on every frame forever, so it never
    // stops changing.
    let captured = capture_page(
        pool,
        r#"<!doctype html><html><head><meta charset="utf-8"><style>
        body { margin: 0; } .tall { height: 3000px; }
        </style></head><body>
        <canvas id="drawn" width="240" height="120"></canvas>
        <p id="text">Still here</p><div class="tall"></div>
        <script>
        const ctx = document.getElementById('drawn').getContext('2d');
        ctx.fillStyle = 'rgb(230, 80, 20)';
        ctx.fillRect(0, 0, 240, 120);
        HTMLCanvasElement.prototype.toDataURL = () => 'data:image/png;base64,' + 'A'.repeat(4000000);
        window.scrollTo = () => {};
        Element.prototype.scrollTo = () => {};
        document.getAnimations = () => { throw new Error('not today'); };
        const spin = () => { document.body.dataset.t = String(performance.now()); requestAnimationFrame(spin); };
        requestAnimationFrame(spin);
        </script></body></html>"#,
    )
    .await;
    let m = &captured.manifest;
    assert_eq!(
        m.text_node("Still here")["text"],
        "Still here",
        "the page itself was captured"
    );
    // The canvas was read in the worker's own JavaScript world, where the
    // page's replacement does not exist: a real PNG of the canvas's size.
    let canvas = m.element("drawn");
    let asset = m.asset_with_key(&canvas["image"]);
    let stored = captured.app.object(asset["key"].as_str().unwrap()).await;
    assert_eq!(png_size(&stored), (240, 120), "{asset}");
    assert!(
        stored.len() < 100_000,
        "a small PNG, not the page's 3 MB: {} bytes",
        stored.len()
    );
    // The steps the page broke were cut short, not failed: the quiet wait
    // ran to its bound, and the capture still completed.
    let timings = &m["timings"];
    let quiet = timings["quietMs"].as_u64().unwrap() - timings["revealMs"].as_u64().unwrap();
    assert!(quiet >= 4_000, "the page never stopped changing: {timings}");
}
