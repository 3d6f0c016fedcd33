//! Interaction states and the page's tokens (SPEC §11), captured for real
//! (the worker binary, headless Chromium, the service, the emulator) and
//! compared with what a plain Chromium computes itself with the state
//! forced on the element.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{Page, Site, WorkerProcess, BROWSER};
use crate::helpers::chromium::Browser;
use crate::helpers::manifest::{attribute, Manifest};
use crate::helpers::pixels::rgba;
use crate::helpers::TestApp;

/// What each state forces (SPEC §11; `focus-visible` is a keyboard
/// user's focus: the element is focused too).
const STATES: [(&str, &[&str]); 3] = [
    ("hover", &["hover"]),
    ("focus-visible", &["focus", "focus-visible", "focus-within"]),
    ("active", &["active"]),
];

/// Changed properties by node: `id` or `id::pseudo`.
pub(crate) type Changes = BTreeMap<String, BTreeMap<String, String>>;

/// What the worker's Chromium is launched with that changes what a page
/// computes (crates/capture-worker/src/browser.rs): a desktop's mouse, so
/// `(hover: hover)` matches (Tailwind's `hover:` asks for it), no
/// scrollbars, its text hinting.
const AS_THE_WORKERS: [&str; 3] = [
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,primaryPointerType=4,availablePointerTypes=4",
    "--hide-scrollbars",
    "--font-render-hinting=none",
];

/// A script's `byId(id)`: the element with that `id` in the document or in
/// any open shadow root, found in that order.
const BY_ID: &str = "const byId = (id, root = document) => root.getElementById(id)
    || [...root.querySelectorAll('*')].reduce((found, el) => found || (el.shadowRoot && byId(id, el.shadowRoot)), null);";

const STATES_PAGE: &str = r##"<!doctype html><html><head><style>
body { margin: 0; font: 16px sans-serif }
a.nav { color: rgb(0, 0, 200); text-decoration: none }
a.nav:hover { color: rgb(200, 0, 0); text-decoration: underline }
.btn { display: block; width: 120px; height: 40px; background: rgb(0, 100, 0); color: white; border: 0;
       padding: 8px; transition: background-color 2s }
.btn:hover { background-color: rgb(0, 200, 0) }
.btn:active { transform: scale(0.95) }
.fake[role=button] { background: rgb(10, 10, 10); color: white }
.fake[role=button]:hover { background: rgb(50, 50, 50) }
.card { padding: 10px; box-shadow: none; outline: none }
.card:hover { box-shadow: rgba(0, 0, 0, 0.5) 0px 4px 8px 0px }
.card:focus-visible { outline: 2px solid rgb(0, 0, 255) }
.icon { color: rgb(0, 0, 0) }
.icon::after { content: '>'; color: rgb(0, 0, 255) }
.menu:hover .icon { color: rgb(255, 0, 0) }
.menu:hover .icon::after { color: rgb(0, 128, 0) }
input.field { border: 1px solid rgb(128, 128, 128) }
input.field:focus { border-color: rgb(0, 0, 255); box-shadow: rgba(0, 0, 255, 0.3) 0px 0px 0px 3px }
.plain { outline: none }
.still:hover { color: red }
.lift { display: block; width: 200px }
.lift:hover { transform: translateY(-4px) }
.badge { position: absolute; right: 0; width: 50% }
.chip { border: 1px solid rgb(0, 0, 0); background: white }
.chip:hover { background-color: rgb(255, 200, 0) }
.chip[data-tone="warm"]:hover { background-color: rgb(255, 100, 0) }
.row a:nth-child(2):hover { color: rgb(128, 0, 128) }
#chip3:focus-visible { outline: 3px dashed rgb(0, 128, 0) }
.tick { outline: 2px solid rgb(0, 0, 0) }
.tick:hover { outline-color: rgb(0, 0, 200) }
.tick:checked:hover { outline-color: rgb(200, 0, 0) }
</style></head><body>
<a class="nav" id="link1" href="#one">One</a> <a class="nav" id="link2" href="#two">Two</a>
<button class="btn" id="btn"><span id="btnlabel">Buy</span></button>
<div role="button" class="fake" id="fake">Fake</div>
<div class="card" id="card" tabindex="0"><span id="cardtext">Card</span></div>
<a class="menu" id="menu" href="#menu">Menu <span class="icon" id="icon">i</span></a>
<input class="field" id="field">
<div role="button" class="plain" id="plain">Plain</div>
<div class="still" id="still">Still</div>
<a class="lift" id="lift" href="#lift">Lift <span class="badge" id="badge">New</span></a>
<button class="chip" id="chip1">One</button><button class="chip" id="chip2">Two</button>
<button class="chip" id="chip3">Three</button><button class="chip" id="chip4" data-tone="warm">Four</button>
<div class="row"><a class="nav" id="row1" href="#r">A</a><a class="nav" id="row2" href="#r">B</a><a class="nav" id="row3" href="#r">C</a></div>
<input type="checkbox" class="tick" id="tick1"><input type="checkbox" class="tick" id="tick2">
<script>document.getElementById("tick2").checked = true;</script>
</body></html>"##;

/// The interactive elements of [`STATES_PAGE`], in document order. The
/// chips and the row's links are alike but for what one rule names (an
/// attribute's value, an id, a place among siblings), the ticks but for
/// the box a script ticked: each must have its own looks, not the first
/// alike's.
const INTERACTIVE: [&str; 18] = [
    "link1", "link2", "btn", "fake", "card", "menu", "field", "plain", "lift", "chip1", "chip2", "chip3", "chip4",
    "row1", "row2", "row3", "tick1", "tick2",
];

/// A completed capture of `site`'s `/` by a worker that may also reach
/// `others`, its manifest, and the app that stored it.
async fn capture(pool: PgPool, site: &Site, others: &[&Site]) -> (TestApp, Manifest, WorkerProcess) {
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let allow: Vec<SocketAddr> = std::iter::once(site.addr)
        .chain(others.iter().map(|s| s.addr))
        .collect();
    let worker = WorkerProcess::start(&app, &allow, &[]);
    let id = app.import_url(&tenant, &site.url("/"), None).await;
    let import = app.finished(&tenant, &id, &worker).await;
    assert_eq!(import["status"], "completed", "{import}\n{}", worker.log_text());
    let manifest = app.manifest(&id, 1).await;
    (app, manifest, worker)
}

/// How a node is named in [`Changes`]: its `id` attribute, or its
/// element's with `::pseudo`.
fn name_of(m: &Manifest, node: &Value) -> String {
    match node["pseudo"].as_str() {
        Some(pseudo) => format!("{}::{pseudo}", name_of(m, m.node(&node["parent"]))),
        None => attribute(node, "id").unwrap_or("?").to_owned(),
    }
}

/// The manifest's changes of `element` under `state`; `None` without an entry.
pub(crate) fn captured_changes(m: &Manifest, element: &str, state: &str) -> Option<Changes> {
    let id = &m.element(element)["id"];
    let entries: Vec<&Value> = m["dom"]["states"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["node"] == *id && e["state"] == state)
        .collect();
    assert!(entries.len() <= 1, "one entry per element and state: {entries:?}");
    let entry = entries.first()?;
    let changes = entry["changes"].as_array().expect("changes");
    assert!(!changes.is_empty(), "an entry changes something: {entry}");
    Some(
        changes
            .iter()
            .map(|c| {
                (
                    name_of(m, m.node(&c["node"])),
                    serde_json::from_value(c["styles"].clone()).unwrap(),
                )
            })
            .collect(),
    )
}

/// What the plain browser computes for `element` and everything with an
/// `id` under it in the manifest's tree (the composed tree: a host's
/// shadow tree, and what a slot shows, under the slot), and their
/// `::before`/`::after`, for `names`, with transitions run to their end
/// (and endless animations paused).
async fn computed(browser: &mut Browser, element: &str, names: &Value) -> BTreeMap<String, Vec<String>> {
    let read = format!(
        r#"(() => {{
            const names = {names};
            {BY_ID}
            const shown = el => el.shadowRoot ? [...el.shadowRoot.children]
                : el.localName === 'slot' && el.assignedElements().length ? el.assignedElements() : [...el.children];
            const under = el => [el, ...shown(el).flatMap(under)];
            const all = under(byId('{element}'));
            for (const el of all) for (const a of el.getAnimations({{subtree: true}})) {{ try {{ a.finish(); }} catch (e) {{ a.pause(); }} }}
            const out = {{}};
            const read = (el, pseudo) => {{ const s = getComputedStyle(el, pseudo); return names.map(n => s.getPropertyValue(n)); }};
            for (const el of all.filter(el => el.id)) {{
                out[el.id] = read(el, null);
                for (const p of ['::before', '::after']) {{
                    if (!['none', 'normal'].includes(getComputedStyle(el, p).content)) out[el.id + p] = read(el, p);
                }}
            }}
            return out;
        }})()"#
    );
    serde_json::from_value(browser.eval(&read).await).unwrap()
}

/// What Chromium itself computes changing under `forced` on `element`
/// (in the document or an open shadow root).
async fn chromium_changes(browser: &mut Browser, element: &str, forced: &[&str], names: &Value) -> Changes {
    browser.call("DOM.getDocument", json!({"depth": 0})).await;
    let found = browser
        .call(
            "Runtime.evaluate",
            json!({"expression": format!("(() => {{ {BY_ID} return byId('{element}'); }})()")}),
        )
        .await;
    let object = &found["result"]["objectId"];
    assert!(object.is_string(), "no element #{element}: {found}");
    let node = browser.call("DOM.requestNode", json!({"objectId": object})).await["nodeId"].clone();
    let rest = computed(browser, element, names).await;
    let force = |classes: &[&str]| json!({"nodeId": node, "forcedPseudoClasses": classes});
    browser.call("CSS.forcePseudoState", force(forced)).await;
    let now = computed(browser, element, names).await;
    browser.call("CSS.forcePseudoState", force(&[])).await;
    computed(browser, element, names).await;
    let names: Vec<String> = serde_json::from_value(names.clone()).unwrap();
    let mut changes = Changes::new();
    for (node, values) in now {
        let changed: BTreeMap<String, String> = values
            .iter()
            .zip(&rest[&node])
            .zip(&names)
            .filter(|((now, before), _)| now != before)
            .map(|((now, _), name)| (name.clone(), now.clone()))
            .collect();
        if !changed.is_empty() {
            changes.insert(node, changed);
        }
    }
    changes
}

/// Each of `elements` under each state changed in `m` what a plain
/// Chromium computes with that state forced on it alone; `last` is the
/// id of the page's last element (the page is loaded when it is there).
async fn assert_as_chromium(url: &str, m: &Manifest, elements: &[&str], last: &str) {
    let differences = differences_from_chromium(url, m, elements, last).await;
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Where `m`'s entries of `elements` differ from what a plain Chromium, on
/// the manifest's viewport and launched as the worker's is, computes with
/// each state forced on each element alone: one line each, the element,
/// the state, the captured changes and Chromium's.
pub(crate) async fn differences_from_chromium(url: &str, m: &Manifest, elements: &[&str], last: &str) -> Vec<String> {
    let names = m["dom"]["styleNames"].clone();
    let mut chromium = Browser::open_with("about:blank", &AS_THE_WORKERS).await;
    let viewport = &m["viewport"];
    let metrics = json!({"width": viewport["width"], "height": viewport["height"],
        "deviceScaleFactor": viewport["deviceScaleFactor"], "mobile": viewport["mobile"].as_bool().unwrap_or(false),
        "screenWidth": viewport["width"], "screenHeight": viewport["height"]});
    chromium.call("Emulation.setDeviceMetricsOverride", metrics).await;
    chromium.call("Page.navigate", json!({"url": url})).await;
    chromium
        .until(
            &format!("document.readyState === 'complete' && !!document.getElementById('{last}')"),
            Duration::from_secs(20),
        )
        .await;
    chromium.call("DOM.enable", json!({})).await;
    chromium.call("CSS.enable", json!({})).await;
    let mut differences = Vec::new();
    for element in elements {
        for (state, forced) in STATES {
            let expected = chromium_changes(&mut chromium, element, forced, &names).await;
            match captured_changes(m, element, state) {
                None if expected.is_empty() => {}
                None => differences.push(format!("{element} {state}: no entry, Chromium: {expected:?}")),
                Some(captured) if captured == expected => {}
                Some(captured) => differences.push(format!(
                    "{element} {state}: captured {captured:?}, Chromium: {expected:?}"
                )),
            }
        }
    }
    differences
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn each_state_changes_what_chromium_computes_with_it_forced_and_the_screenshot_shows_none(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = Site::start(vec![("/", Page::html(STATES_PAGE))]).await;
    let (app, m, _worker) = capture(pool, &site, &[]).await;

    // Every interactive element was examined; the plain `div` was not.
    assert_eq!(m["page"]["statesExamined"], INTERACTIVE.len(), "{}", m["page"]);
    assert_eq!(m["page"]["statesCut"], false);
    assert!(m["timings"]["statesMs"].as_u64().is_some(), "{}", m["timings"]);
    let still = &m.element("still")["id"];
    assert!(
        m["dom"]["states"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["node"] != *still),
        "a non-interactive element is not examined"
    );

    assert_as_chromium(&site.url("/"), &m, &INTERACTIVE, "still").await;
    // What the page says, spot-checked: the transition ran to its end, the
    // parent's hover reached the icon and its generated content, the
    // field's focus ring, the lift's badge, and nothing for the plain
    // button.
    let btn = captured_changes(&m, "btn", "hover").expect("the button's hover");
    assert_eq!(btn["btn"]["background-color"], "rgb(0, 200, 0)");
    let menu = captured_changes(&m, "menu", "hover").expect("the menu's hover");
    assert_eq!(menu["icon"]["color"], "rgb(255, 0, 0)");
    assert_eq!(menu["icon::after"]["color"], "rgb(0, 128, 0)");
    let field = captured_changes(&m, "field", "focus-visible").expect("the field's focus");
    assert_eq!(field["field"]["border-top-color"], "rgb(0, 0, 255)");
    // A transform is the containing block of its positioned descendants:
    // the badge, half the viewport wide at rest, is half the lifted link.
    let lift = captured_changes(&m, "lift", "hover").expect("the lift's hover");
    assert_eq!(lift["badge"]["width"], "100px", "{lift:?}");
    for (state, _) in STATES {
        assert_eq!(captured_changes(&m, "plain", state), None, "plain {state}");
    }

    // The screenshot shows the button at rest.
    let shot = app.object(m["screenshot"]["key"].as_str().unwrap()).await;
    let (width, _, pixels) = rgba(&shot);
    let scale = m["viewport"]["deviceScaleFactor"].as_f64().unwrap();
    let b = m.element("btn")["box"].clone();
    let (x, y) = (
        ((b[0].as_f64().unwrap() + 3.0) * scale) as u32,
        ((b[1].as_f64().unwrap() + 3.0) * scale) as u32,
    );
    let at = ((y * width + x) * 4) as usize;
    assert_eq!(
        &pixels[at..at + 3],
        &[0, 100, 0],
        "the button's rest colour in the screenshot"
    );
}

/// Pages whose elements reach into one another's reads when forced at the
/// same time (decision 0051: elements are forced together only when none
/// can), as their case, style and body ([`reaching_page`] adds a first
/// link: the examination's first chunk is one element). The elements are
/// unalike (their classes), so each is forced itself; they are links, as
/// a button's pressed look (Chromium's own) changes its size and so never
/// shares a group.
const REACHING_PAGES: [(&str, &str, &str, &[&str]); 4] = [
    (
        // A sibling's rule: the second tab is red while the first is hovered.
        "siblings",
        r##".tab { color: rgb(0, 0, 0) }
.tab:hover { color: rgb(0, 0, 200) }
.tab:hover + .tab { color: rgb(200, 0, 0) }"##,
        r##"<div><a class="tab one" id="tab1" href="#1">One</a><a class="tab two" id="tab2" href="#2">Two</a><a class="tab three" id="tab3" href="#3">Three</a></div>"##,
        &["tab1", "tab2", "tab3"],
    ),
    (
        // `:has()`: the box's link turns green while the button beside it
        // is hovered.
        "has",
        r##".go { background-color: rgb(100, 100, 100); color: white }
.go:hover { background-color: rgb(200, 200, 0) }
.more { color: rgb(0, 0, 0); text-decoration-line: none }
.more:hover { text-decoration-line: underline }
.box:has(.go:hover) .more { color: rgb(0, 150, 0) }"##,
        r##"<div class="box"><a class="go" id="go" href="#g">Go</a> <a class="more" id="more" href="#m">More</a></div>"##,
        &["go", "more"],
    ),
    (
        // Sizes: two items of one flex row share its width, so one's
        // padding under hover narrows the other.
        "layout",
        r##".bar { display: flex; width: 300px }
.grow { flex: 1 1 auto; padding: 0 }
.grow:hover { padding: 0 30px }"##,
        r##"<div class="bar"><a class="grow g1" id="g1" href="#a">A</a><a class="grow g2" id="g2" href="#b">B</a></div>"##,
        &["g1", "g2"],
    ),
    (
        // A rule for another element than the state's: any hovered
        // element shows its anchor. It changes nothing else a link reads,
        // so links without one are forced together; the heading with one
        // has its anchor's `display` read. A padding for the bar's links
        // only: the bar's link reads it, the others do not.
        "subject",
        r##".anchor { display: none }
*:hover > .anchor { display: inline }
.l { color: rgb(0, 0, 0) }
.l:hover { color: rgb(0, 0, 200) }
.bar > a:hover { padding: 0 8px }"##,
        r##"<div class="bar"><a class="tool" id="tool" href="#t">Tool</a></div>
<h3 class="head" id="head" tabindex="0">Title <a class="anchor" id="anchor" href="#h">#</a></h3>
<p><a class="l one" id="l1" href="#1">One</a></p><p><a class="l two" id="l2" href="#2">Two</a></p>"##,
        &["tool", "head", "l1", "l2"],
    ),
];

/// A page of [`REACHING_PAGES`]: a first link, then the case.
fn reaching_page(style: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><style>body {{ margin: 0; font: 16px sans-serif }}
        .first:hover {{ color: rgb(0, 0, 255) }}\n{style}</style></head><body>
        <a class=\"first\" id=\"first\" href=\"#f\">First</a>\n{body}\n<p id=\"end\">End</p></body></html>"
    )
}

/// Elements are forced together to save style recalculations (decision
/// 0051), but never where one's state reaches into another's reads: a
/// sibling's rule, a state under `:has()`, or a change of size that moves
/// its neighbours; and a rule for another element than the state's counts
/// only where that element is under it. Each page's elements read as
/// Chromium computes each forced alone.
#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn elements_forced_together_do_not_reach_into_one_anothers_reads(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    // One service and one worker for all the pages (a second service on the
    // same database would race the first for their dispatch).
    let pages: Vec<(String, Page)> = REACHING_PAGES
        .iter()
        .map(|(case, style, body, _)| (format!("/{case}"), Page::html(&reaching_page(style, body))))
        .collect();
    let site = Site::start(pages.iter().map(|(path, page)| (path.as_str(), page.clone())).collect()).await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    for (case, _, _, cased) in REACHING_PAGES {
        let elements: Vec<&str> = std::iter::once("first").chain(cased.iter().copied()).collect();
        let url = site.url(&format!("/{case}"));
        let id = app.import_url(&tenant, &url, None).await;
        let import = app.finished(&tenant, &id, &worker).await;
        assert_eq!(import["status"], "completed", "{case}: {import}\n{}", worker.log_text());
        let m = app.manifest(&id, 1).await;
        assert_eq!(m["page"]["statesExamined"], elements.len(), "{case}: {}", m["page"]);
        assert_as_chromium(&url, &m, &elements, "end").await;
        // Spot-checked: each element's own look, none of its neighbour's.
        let hover = |element: &str| captured_changes(&m, element, "hover").expect("a hover entry");
        match case {
            "siblings" => assert_eq!(hover("tab2")["tab2"]["color"], "rgb(0, 0, 200)", "{case}"),
            "subject" => {
                assert_eq!(hover("head")["anchor"]["display"], "inline", "{case}");
                assert_eq!(hover("tool")["tool"]["padding-left"], "8px", "{case}");
            }
            "has" => assert!(
                !hover("more")["more"].contains_key("color"),
                "{case}: {:?}",
                hover("more")
            ),
            _ => assert_eq!(hover("g2")["g2"]["padding-left"], "30px", "{case}"),
        }
    }
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn eight_hundred_links_are_cut_at_five_hundred_and_the_capture_completes(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let links: String = (0..800)
        .map(|i| format!("<a href=\"#l{i}\">link {i}</a><br>"))
        .collect();
    let html = format!("<!doctype html><style>a:hover {{ color: rgb(255, 0, 0) }}</style><body>{links}</body>");
    let site = Site::start(vec![("/", Page::html(&html))]).await;
    let (_app, m, _worker) = capture(pool, &site, &[]).await;
    assert_eq!(m["page"]["statesCut"], true, "{}", m["page"]);
    let examined = m["page"]["statesExamined"].as_u64().unwrap();
    assert!(examined > 0 && examined <= 500, "{examined}");
    let hovers = m["dom"]["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["state"] == "hover")
        .count();
    assert!(
        hovers as u64 <= examined,
        "{hovers} hover entries for {examined} examined"
    );
    // Document order: the first link is among them.
    let first = &m.nodes().iter().find(|n| n["name"] == "A").unwrap()["id"];
    assert!(m["dom"]["states"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["node"] == *first));
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn tokens_in_force_on_the_root_and_where_elements_redefine_them_as_chromium_computes_them(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let other = Site::start(vec![(
        "/tokens.css",
        Page::of(
            "text/css",
            b":root { --remote-radius: 3px } .remote { --remote-only: 1 }".to_vec(),
        ),
    )])
    .await;
    let html = format!(
        r#"<!doctype html><html><head>
        <style>:root {{ --brand: #0a66c2; --space-4: 16px; --accent: var(--brand) }}
        .section {{ --brand: rebeccapurple }} .never-used {{ --tail-1: 1px; --tail-2: 2px }}</style>
        <link rel="stylesheet" href="{}">
        </head><body>
        <section class="section" id="sec"><p id="inside" style="color: var(--brand)">Section</p></section>
        <div id="inline" style="--inline-gap: 5px">Inline</div>
        <div id="host"></div>
        <script>
        const root = document.getElementById('host').attachShadow({{mode: 'open'}});
        root.innerHTML = '<style>:host {{ --host-accent: teal }} .inner {{ --inner-gap: 4px }}</style><p class="inner" id="inner">In the shadow</p>';
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(':root {{ --constructed: green }}');
        document.adoptedStyleSheets = [sheet];
        </script></body></html>"#,
        other.url("/tokens.css")
    );
    let site = Site::start(vec![("/", Page::html(&html))]).await;
    let (_app, m, _worker) = capture(pool, &site, &[&other]).await;

    let mut chromium = Browser::open(&site.url("/")).await;
    chromium
        .until(
            "document.readyState === 'complete' && getComputedStyle(document.documentElement).getPropertyValue('--remote-radius') !== ''",
            Duration::from_secs(20),
        )
        .await;
    let value = |element: &'static str, name: &'static str| {
        format!("getComputedStyle({element}).getPropertyValue('{name}').trim()",)
    };
    let root_names = ["--accent", "--brand", "--constructed", "--remote-radius", "--space-4"];
    let mut expected = BTreeMap::new();
    for name in root_names {
        expected.insert(
            name.to_owned(),
            chromium.eval(&value("document.documentElement", name)).await,
        );
    }
    assert_eq!(
        m["dom"]["tokens"],
        json!(expected),
        "in force on the root, tails left out"
    );

    let on = |id: &str| m.element(id)["tokens"].clone();
    let sec = chromium.eval(&value("document.getElementById('sec')", "--brand")).await;
    assert_eq!(on("sec"), json!({"--brand": sec}));
    assert_eq!(sec, "rebeccapurple");
    assert_eq!(on("inline"), json!({"--inline-gap": "5px"}));
    let host = chromium
        .eval(&value("document.getElementById('host')", "--host-accent"))
        .await;
    assert_eq!(on("host"), json!({"--host-accent": host}));
    let inner = chromium
        .eval(&value(
            "document.getElementById('host').shadowRoot.getElementById('inner')",
            "--inner-gap",
        ))
        .await;
    assert_eq!(on("inner"), json!({"--inner-gap": inner}));
    // Elements that set nothing say nothing.
    assert!(m.element("inside").get("tokens").is_none());
    let with_tokens = m.nodes().iter().filter(|n| n.get("tokens").is_some()).count();
    assert_eq!(with_tokens, 4, "sec, inline, host, inner");
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn a_page_without_states_or_tokens_says_only_the_two_counters(pool: PgPool) {
    let _browser = BROWSER.lock().await;
    let site = Site::start(vec![(
        "/",
        Page::html("<!doctype html><body><h1>Plain</h1><p>No links, no custom properties.</p></body>"),
    )])
    .await;
    let (_app, m, _worker) = capture(pool, &site, &[]).await;
    assert_eq!(m["page"]["statesExamined"], 0);
    assert_eq!(m["page"]["statesCut"], false);
    let dom = m["dom"].as_object().unwrap();
    assert!(
        !dom.contains_key("states") && !dom.contains_key("tokens"),
        "{:?}",
        dom.keys()
    );
    assert!(m.nodes().iter().all(|n| n.get("tokens").is_none()));
}
