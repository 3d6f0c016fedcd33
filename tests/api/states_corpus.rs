//! Interaction states (SPEC §11) on pages built from real CSS and component
//! libraries the way the web uses them: Tailwind CSS compiled in the page
//! by its run-time compiler (`@tailwindcss/browser`, the "Play CDN"),
//! Shoelace's web components (Lit, states inside open shadow roots, styled
//! from the page through `::part()`), Lit components of the page's own
//! (Lit from an import map), Material Web (on Lit, from the same import
//! map), Bootstrap, daisyUI on Tailwind, the classless Pico CSS and
//! Water.css, and pages with a site's own sheet built to tell alike
//! elements apart only by what their states' values depend on.
//! The libraries are pinned in tests/fixtures/states (installed by
//! scripts/lib.sh `ensure_states_fixtures`) and served unchanged from
//! loopback. Each compared element's entry under each state must be what a
//! plain Chromium computes with that state forced on that element alone:
//! the worker forces elements together where it believes none reaches
//! another (decision 0051), and a wrong belief shows up here.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::capture::{files_under, Page, Site, WorkerProcess, BROWSER};
use crate::helpers::manifest::Manifest;
use crate::helpers::{repo_path, TestApp};
use crate::states::{captured_changes, differences_from_chromium};

/// The libraries' files, by the path the pages load them from.
const LIBRARIES: [(&str, &str); 3] = [
    ("/lib/tailwind.js", "@tailwindcss/browser/dist/index.global.js"),
    ("/lib/bootstrap.css", "bootstrap/dist/css/bootstrap.min.css"),
    ("/lib/daisyui.css", "daisyui/daisyui.css"),
];

/// Shoelace's CDN build, served at `/shoelace/`: its autoloader imports
/// each component it finds from beside itself.
const SHOELACE: &str = "@shoelace-style/shoelace/cdn";

/// Lit's packages, and Material Web's (on Lit, with `tslib`), served at
/// `/npm/` for a page's import map ([`LIT_HEAD`], [`MATERIAL_HEAD`]).
const LIT: [&str; 6] = [
    "lit",
    "lit-html",
    "lit-element",
    "@lit/reactive-element",
    "@material/web",
    "tslib",
];

/// Classless and semantic style sheets, served at `/css/`.
const SEMANTIC: [(&str, &str); 2] = [
    ("/css/pico.css", "@picocss/pico/css/pico.min.css"),
    ("/css/water.css", "water.css/out/water.min.css"),
];

/// A desktop, so that Tailwind's `md:`/`lg:` and Bootstrap's
/// `navbar-expand-lg` are in force.
fn desktop() -> Value {
    json!({"width": 1280, "height": 800, "deviceScaleFactor": 1.0})
}

/// Every page's `ready(waits, names)`: once the page and `waits` (its
/// libraries' promises: `tailwind()`, `components()`) have settled, ids for the
/// elements of open shadow roots the test compares (`names`: `{host id:
/// {selector: id}}`), then for every other element of the body without
/// one (its parent's id and its place, the same in any browser), so that
/// every node a change names has one; then `meta#ready`, the worker's
/// ready selector and the plain Chromium's sign.
const READY: &str = r#"<script>
const deep = (root = document) => [...root.querySelectorAll('*')].flatMap(el => el.shadowRoot ? [el, ...deep(el.shadowRoot)] : [el]);
const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
// Tailwind's compiler has put the page's utilities in a style element.
const tailwind = () => new Promise(r => {
  const t = setInterval(() => {
    if ([...document.querySelectorAll('style')].some(s => s.textContent.includes('@layer utilities'))) { clearInterval(t); r(); }
  }, 20);
});
const loaded = () => new Promise(r => document.readyState === 'complete' ? r() : addEventListener('load', r));
// Every custom element defined and rendered (Shoelace's, Lit's), those
// their renders add too, and every Shoelace icon drawn (an icon's SVG comes
// after its render, within 5 s).
const components = async () => {
  for (let round = 0; round < 3; round++) {
    const els = deep().filter(el => el.localName.includes('-'));
    await Promise.all([...new Set(els.map(el => el.localName))].map(n => customElements.whenDefined(n)));
    await Promise.all(els.map(el => el.updateComplete));
  }
  const drawn = () => deep().filter(el => el.localName === 'sl-icon').every(icon => icon.shadowRoot.querySelector('svg'));
  for (let waited = 0; !drawn() && waited < 5000; waited += 20) await new Promise(r => setTimeout(r, 20));
};
async function ready(waits, names = {}) {
  await Promise.all([loaded(), ...waits]);
  for (const [host, ids] of Object.entries(names)) {
    const root = document.getElementById(host).shadowRoot;
    for (const [selector, id] of Object.entries(ids)) root.querySelector(selector).id = id;
  }
  const name = (parent, prefix) => [...parent.children].forEach((el, i) => {
    if (!el.id) el.id = prefix + '-' + i;
    if (el.shadowRoot) name(el.shadowRoot, el.id + '~');
    name(el, el.id);
  });
  name(document.body, 'body');
  await frames();
  document.head.append(Object.assign(document.createElement('meta'), { id: 'ready' }));
}
</script>"#;

/// A page of the corpus: its path, what its head loads, its body, the
/// promises `ready` waits for and the shadow-root ids it gives (JS), and
/// the elements compared with Chromium, by id.
struct CorpusPage {
    path: &'static str,
    head: &'static str,
    body: &'static str,
    ready: &'static str,
    compared: &'static [&'static str],
}

impl CorpusPage {
    fn html(&self) -> String {
        format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">{READY}{}</head><body>{}<script>ready({});</script></body></html>",
            self.head, self.body, self.ready
        )
    }
}

/// A site with `pages` and every library of tests/fixtures/states.
async fn corpus_site(pages: &[CorpusPage]) -> Site {
    let modules = repo_path("tests/fixtures/states/node_modules");
    let mut served: Vec<(String, Page)> = pages
        .iter()
        .map(|p| (p.path.to_owned(), Page::html(&p.html())))
        .collect();
    for (path, file) in LIBRARIES.into_iter().chain(SEMANTIC) {
        served.push((
            path.to_owned(),
            Page::file(std::path::Path::new(&format!("{modules}/{file}"))),
        ));
    }
    served.extend(files_under(&format!("{modules}/{SHOELACE}"), "/shoelace", |file| {
        file.extension().is_some_and(|e| e == "js" || e == "css" || e == "svg")
    }));
    for package in LIT {
        served.extend(files_under(
            &format!("{modules}/{package}"),
            &format!("/npm/{package}"),
            |file| file.extension().is_some_and(|e| e == "js" || e == "mjs"),
        ));
    }
    Site::start(
        served
            .iter()
            .map(|(path, page)| (path.as_str(), page.clone()))
            .collect(),
    )
    .await
}

/// Whether `node` of `m` is below a shadow root in the manifest's tree
/// (content slotted there too: its parent is the slot).
fn in_shadow_root(m: &Manifest, node: &Value) -> bool {
    let mut at = node;
    while let Some(parent) = at.get("parent").filter(|p| !p.is_null()) {
        at = m.node(parent);
        if at["type"] == 11 {
            return true;
        }
    }
    false
}

/// Captures each of `pages` with one service and one worker (a second
/// service on the same database would race the first for their
/// dispatch), checks that every state was examined within the budget, and
/// fails with every difference of a compared element's entries from what
/// Chromium computes forcing each state on it alone, one a line; returns
/// the manifests.
async fn assert_as_chromium_alone(pool: PgPool, pages: &[CorpusPage]) -> Vec<Manifest> {
    let _browser = BROWSER.lock().await;
    let site = corpus_site(pages).await;
    let app = TestApp::private(pool).await;
    let tenant = app.tenant().await;
    let worker = WorkerProcess::start(&app, &[site.addr], &[]);
    let (mut manifests, mut differences) = (Vec::new(), Vec::new());
    for page in pages {
        let url = site.url(page.path);
        let settings = json!({"readySelector": "#ready", "viewport": desktop()});
        let id = app.import_with(&tenant, &url, settings).await;
        let import = app.finished(&tenant, &id, &worker).await;
        assert_eq!(
            import["status"],
            "completed",
            "{}: {import}\n{}",
            page.path,
            worker.log_text()
        );
        let m = app.manifest(&id, 1).await;
        let examined = m["page"]["statesExamined"].as_u64().unwrap();
        assert_eq!(m["page"]["statesCut"], false, "{}: {}", page.path, m["page"]);
        assert!(
            examined as usize >= page.compared.len(),
            "{}: {examined} examined of {} compared",
            page.path,
            page.compared.len()
        );
        let entries = m["dom"]["states"].as_array().cloned().unwrap_or_default();
        let in_shadow = entries
            .iter()
            .filter(|e| in_shadow_root(&m, m.node(&e["node"])))
            .count();
        eprintln!(
            "{}: {examined} examined, {} entries ({in_shadow} of elements in shadow roots), states {} ms",
            page.path,
            entries.len(),
            m["timings"]["statesMs"]
        );
        let found = differences_from_chromium(&url, &m, page.compared, "ready").await;
        differences.extend(found.into_iter().map(|d| format!("{}: {d}", page.path)));
        manifests.push(m);
    }
    assert!(
        differences.is_empty(),
        "{} entries differ from Chromium forcing the state on the element alone:\n{}",
        differences.len(),
        differences.join("\n")
    );
    manifests
}

const TAILWIND_HEAD: &str = r#"<script src="/lib/tailwind.js"></script>"#;

/// Tailwind pages: a header and a toolbar of alike links and buttons
/// (`hover:`, `focus-visible:`, `active:`), cards whose child a parent's
/// state styles
/// (`group-hover:`, named groups), a form whose later siblings a field's
/// state styles (`peer-*:`), and `has-[…]:`.
const TAILWIND: [CorpusPage; 4] = [
    CorpusPage {
        path: "/tailwind/toolbar",
        head: TAILWIND_HEAD,
        body: r##"<header class="flex items-center justify-between border-b border-slate-200 px-6 py-3 font-sans">
  <a id="brand" href="#top" class="text-lg font-semibold text-slate-900 hover:text-sky-600">Acme</a>
  <nav class="flex gap-1">
    <a id="nav-home" href="#home" aria-current="page" class="rounded-md bg-slate-900 px-3 py-2 text-sm font-medium text-white hover:bg-slate-700">Home</a>
    <a id="nav-docs" href="#docs" class="rounded-md px-3 py-2 text-sm font-medium text-slate-600 transition-colors hover:bg-slate-100 hover:text-slate-900">Docs</a>
    <a id="nav-blog" href="#blog" class="rounded-md px-3 py-2 text-sm font-medium text-slate-600 transition-colors hover:bg-slate-100 hover:text-slate-900">Blog</a>
    <a id="nav-changelog" href="#changelog" class="rounded-md px-3 py-2 text-sm font-medium text-slate-600 hover:text-sky-600 hover:underline">Changelog</a>
  </nav>
  <a id="signin" href="#signin" class="rounded-md px-3 py-2 text-sm font-semibold text-sky-700 underline-offset-4 hover:underline focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-sky-600">Sign in</a>
</header>
<main class="p-6 font-sans">
  <div role="toolbar" class="inline-flex gap-0.5 rounded-lg border border-slate-200 bg-white p-1 shadow-sm">
    <button id="tb-bold" type="button" class="rounded px-2.5 py-1.5 text-sm font-bold text-slate-700 hover:bg-slate-100 focus-visible:outline-2 focus-visible:outline-sky-500 active:bg-slate-200">B</button>
    <button id="tb-italic" type="button" class="rounded px-2.5 py-1.5 text-sm italic text-slate-700 hover:bg-slate-100 focus-visible:outline-2 focus-visible:outline-sky-500 active:bg-slate-200">I</button>
    <button id="tb-underline" type="button" class="rounded px-2.5 py-1.5 text-sm underline text-slate-700 hover:bg-slate-100 focus-visible:outline-2 focus-visible:outline-sky-500 active:bg-slate-200">U</button>
    <button id="tb-link" type="button" aria-pressed="true" class="rounded bg-sky-50 px-2.5 py-1.5 text-sm text-sky-700 hover:bg-sky-100 focus-visible:outline-2 focus-visible:outline-sky-500">Link</button>
  </div>
  <div class="mt-6 flex gap-3">
    <button id="cta" type="button" class="rounded-md bg-sky-600 px-4 py-2 text-sm font-semibold text-white shadow-sm transition hover:bg-sky-500 focus-visible:ring-2 focus-visible:ring-sky-500 focus-visible:ring-offset-2 active:scale-95">Get started</button>
    <a id="learn" href="#learn" class="rounded-md px-4 py-2 text-sm font-semibold text-slate-900 ring-1 ring-slate-300 ring-inset transition hover:bg-slate-50 hover:ring-slate-400 active:scale-95">Learn more <span id="learn-arrow" aria-hidden="true">&rarr;</span></a>
  </div>
  <p class="mt-6 max-w-prose text-slate-600">Read the <a id="guide" href="#guide" class="font-medium text-sky-700 underline decoration-sky-300 underline-offset-2 hover:decoration-sky-600 hover:decoration-2">guide</a>
    or the <a id="api" href="#api" class="font-medium text-slate-900 underline decoration-slate-300 underline-offset-2 hover:decoration-slate-600">API</a>.</p>
  <form class="mt-6 flex max-w-md gap-2">
    <input id="search" type="search" placeholder="Search" class="w-full rounded-md border border-slate-300 px-3 py-2 text-sm hover:border-slate-400 focus:border-sky-500 focus:outline-none focus:ring-1 focus:ring-sky-500">
  </form>
</main>"##,
        ready: "[tailwind()]",
        compared: &[
            "brand",
            "nav-home",
            "nav-docs",
            "nav-blog",
            "nav-changelog",
            "signin",
            "tb-bold",
            "tb-italic",
            "tb-underline",
            "tb-link",
            "cta",
            "learn",
            "guide",
            "api",
            "search",
        ],
    },
    CorpusPage {
        path: "/tailwind/groups",
        head: TAILWIND_HEAD,
        body: r##"<ul class="grid grid-cols-3 gap-4 p-6 font-sans">
  <li><a id="card-1" href="#analytics" class="group block rounded-xl border border-slate-200 p-5 transition hover:border-sky-400 hover:shadow-md focus-visible:outline-2 focus-visible:outline-sky-500">
    <h3 id="card-1-title" class="font-semibold text-slate-900 group-hover:text-sky-700">Analytics</h3>
    <p id="card-1-text" class="mt-1 text-sm text-slate-500 group-hover:text-slate-700">Where your readers come from.</p>
    <span id="card-1-more" class="mt-3 inline-flex items-center gap-1 text-sm font-medium text-sky-700 group-focus-visible:underline">Learn more
      <svg id="card-1-icon" class="size-4 transition-transform group-hover:translate-x-1" viewBox="0 0 20 20" fill="currentColor"><path id="card-1-path" d="M3 10h11l-4-4 1-1 6 6-6 6-1-1 4-4H3z"/></svg></span></a></li>
  <li><a id="card-2" href="#automation" class="group block rounded-xl border border-slate-200 p-5 transition hover:border-sky-400 hover:shadow-md focus-visible:outline-2 focus-visible:outline-sky-500">
    <h3 id="card-2-title" class="font-semibold text-slate-900 group-hover:text-sky-700">Automation</h3>
    <p id="card-2-text" class="mt-1 text-sm text-slate-500 group-hover:text-slate-700">Work that runs itself.</p>
    <span id="card-2-more" class="mt-3 inline-flex items-center gap-1 text-sm font-medium text-sky-700 group-focus-visible:underline">Learn more
      <svg id="card-2-icon" class="size-4 transition-transform group-hover:translate-x-1" viewBox="0 0 20 20" fill="currentColor"><path id="card-2-path" d="M3 10h11l-4-4 1-1 6 6-6 6-1-1 4-4H3z"/></svg></span></a></li>
  <li><a id="card-3" href="#security" class="group block rounded-xl border border-sky-200 bg-sky-50 p-5 transition hover:bg-sky-100 active:bg-sky-200">
    <h3 id="card-3-title" class="font-semibold text-sky-900 group-active:text-sky-950">Security</h3>
    <p id="card-3-text" class="mt-1 text-sm text-sky-800 group-hover:underline">Featured.</p></a></li>
</ul>
<div class="divide-y divide-slate-100 px-6 font-sans">
  <a id="row-1" href="#leslie" class="group/row flex items-center justify-between py-3 hover:bg-slate-50">
    <span id="row-1-name" class="font-medium text-slate-900 group-hover/row:text-sky-700">Leslie Alexander</span>
    <span id="row-1-cta" class="invisible text-sm text-sky-700 group-hover/row:visible">View</span></a>
  <a id="row-2" href="#michael" class="group/row flex items-center justify-between py-3 hover:bg-slate-50">
    <span id="row-2-name" class="font-medium text-slate-900 group-hover/row:text-sky-700">Michael Foster</span>
    <span id="row-2-cta" class="invisible text-sm text-sky-700 group-hover/row:visible">View</span></a>
  <a id="row-3" href="#dries" class="group/row flex items-center justify-between py-3 hover:bg-slate-50 focus-visible:bg-slate-100">
    <span id="row-3-name" class="font-medium text-slate-900 group-focus-visible/row:underline">Dries Vincent</span>
    <span id="row-3-cta" class="text-sm text-slate-400 group-hover/row:text-slate-600">Away</span></a>
</div>"##,
        ready: "[tailwind()]",
        compared: &["card-1", "card-2", "card-3", "row-1", "row-2", "row-3"],
    },
    CorpusPage {
        path: "/tailwind/peers",
        head: TAILWIND_HEAD,
        body: r##"<form class="max-w-md space-y-6 p-6 font-sans">
  <div class="relative">
    <input id="email" type="email" placeholder=" " class="peer block w-full rounded-md border border-slate-300 px-3 pt-5 pb-2 text-sm hover:border-slate-400 focus:border-sky-500 focus:outline-none">
    <label id="email-label" for="email" class="absolute top-1 left-3 text-xs text-slate-500 peer-placeholder-shown:top-3.5 peer-placeholder-shown:text-sm peer-hover:text-slate-700 peer-focus:top-1 peer-focus:text-xs peer-focus:text-sky-600">Email</label>
  </div>
  <label id="notify" class="flex items-center gap-3">
    <input id="notify-box" type="checkbox" class="peer sr-only" checked>
    <span id="notify-track" class="h-6 w-11 rounded-full bg-slate-200 transition peer-checked:bg-sky-600 peer-hover:bg-slate-300 peer-checked:peer-hover:bg-sky-700 peer-focus-visible:ring-2 peer-focus-visible:ring-sky-500"></span>
    <span id="notify-text" class="text-sm text-slate-700 peer-checked:font-semibold">Email me</span>
  </label>
  <label id="alerts" class="flex items-center gap-3">
    <input id="alerts-box" type="checkbox" class="peer sr-only">
    <span id="alerts-track" class="h-6 w-11 rounded-full bg-slate-200 transition peer-checked:bg-sky-600 peer-hover:bg-slate-300 peer-checked:peer-hover:bg-sky-700 peer-focus-visible:ring-2 peer-focus-visible:ring-sky-500"></span>
    <span id="alerts-text" class="text-sm text-slate-700 peer-checked:font-semibold">Alert me</span>
  </label>
  <div class="flex gap-2">
    <input id="plan-monthly" type="radio" name="plan" class="peer/monthly sr-only" checked>
    <label id="plan-monthly-label" for="plan-monthly" class="rounded-md border border-slate-300 px-3 py-2 text-sm hover:bg-slate-50 peer-checked/monthly:border-sky-500 peer-checked/monthly:bg-sky-50">Monthly</label>
    <input id="plan-yearly" type="radio" name="plan" class="peer/yearly sr-only">
    <label id="plan-yearly-label" for="plan-yearly" class="rounded-md border border-slate-300 px-3 py-2 text-sm hover:bg-slate-50 peer-checked/yearly:border-sky-500 peer-checked/yearly:bg-sky-50">Yearly</label>
  </div>
  <p class="text-sm"><a id="terms" href="#terms" class="text-sky-700 hover:underline">Terms</a> <a id="privacy" href="#privacy" class="text-sky-700 hover:underline">Privacy</a></p>
</form>"##,
        ready: "[tailwind()]",
        compared: &[
            "email",
            "email-label",
            "notify",
            "notify-box",
            "alerts",
            "alerts-box",
            "plan-monthly",
            "plan-monthly-label",
            "plan-yearly",
            "plan-yearly-label",
            "terms",
            "privacy",
        ],
    },
    CorpusPage {
        path: "/tailwind/has",
        head: TAILWIND_HEAD,
        body: r##"<fieldset class="grid max-w-lg grid-cols-2 gap-3 p-6 font-sans">
  <label id="opt-standard" class="flex items-center gap-2 rounded-lg border border-slate-200 p-4 hover:border-slate-300 has-[:checked]:border-sky-500 has-[:checked]:bg-sky-50 has-[:focus-visible]:outline-2 has-[:focus-visible]:outline-sky-500">
    <input id="opt-standard-input" type="radio" name="shipping" class="accent-sky-600" checked><span id="opt-standard-text" class="text-sm">Standard</span></label>
  <label id="opt-express" class="flex items-center gap-2 rounded-lg border border-slate-200 p-4 hover:border-slate-300 has-[:checked]:border-sky-500 has-[:checked]:bg-sky-50 has-[:focus-visible]:outline-2 has-[:focus-visible]:outline-sky-500">
    <input id="opt-express-input" type="radio" name="shipping" class="accent-sky-600"><span id="opt-express-text" class="text-sm">Express</span></label>
</fieldset>
<div class="group rounded-lg p-6 font-sans has-[a:hover]:bg-slate-50">
  <a id="panel-details" href="#details" class="text-sky-700 hover:underline">Details</a>
  <a id="panel-more" href="#more" class="text-slate-500 group-has-[a:hover]:text-slate-900 hover:text-sky-700">More</a>
</div>"##,
        ready: "[tailwind()]",
        compared: &[
            "opt-standard",
            "opt-standard-input",
            "opt-express",
            "opt-express-input",
            "panel-details",
            "panel-more",
        ],
    },
];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn tailwind_states_are_what_chromium_computes_forcing_each_element_alone(pool: PgPool) {
    assert_as_chromium_alone(pool, &TAILWIND).await;
}

/// A Tailwind header whose links and menu take their hover and focus look
/// from desktop widths up: a state variant stacked on a breakpoint
/// (`md:hover:`, `lg:hover:`, `md:focus-visible:`), whose class names hold
/// the state's name (`.md\:hover\:bg-slate-100:hover`).
const TAILWIND_STACKED: [CorpusPage; 1] = [CorpusPage {
    path: "/tailwind/responsive",
    head: TAILWIND_HEAD,
    body: r##"<header class="flex items-center gap-1 border-b border-slate-200 px-6 py-3 font-sans">
  <a id="home" href="#home" class="rounded-md px-3 py-2 text-sm font-medium text-slate-600 hover:text-slate-900">Home</a>
  <a id="pricing" href="#pricing" class="rounded-md px-3 py-2 text-sm font-medium text-slate-600 md:hover:bg-slate-100 md:hover:text-slate-900">Pricing</a>
  <a id="changelog" href="#changelog" class="rounded-md px-3 py-2 text-sm font-medium text-slate-600 hover:text-sky-600 lg:hover:underline">Changelog</a>
  <details class="relative"><summary id="more" class="cursor-pointer list-none rounded-md px-3 py-2 text-sm font-medium text-slate-600 md:hover:bg-slate-100 md:focus-visible:bg-sky-50">More</summary></details>
</header>"##,
    ready: "[tailwind()]",
    compared: &["home", "pricing", "changelog", "more"],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn tailwind_state_variants_stacked_on_a_breakpoint_are_what_chromium_computes(pool: PgPool) {
    assert_as_chromium_alone(pool, &TAILWIND_STACKED).await;
}

const SHOELACE_HEAD: &str = r#"<link rel="stylesheet" href="/shoelace/themes/light.css">
<script type="module" src="/shoelace/shoelace-autoloader.js"></script>
<style>
  body { font-family: var(--sl-font-sans); margin: 24px }
  .toolbar { display: flex; gap: 8px; margin: 16px 0 }
  sl-breadcrumb-item::part(label):hover { text-decoration-line: underline }
  sl-button.pill::part(base):focus-visible { box-shadow: 0 0 0 3px rgb(14 165 233 / 0.5) }
</style>"#;

/// Shoelace pages: breadcrumbs (links in shadow roots, one per item, alike
/// but for the last) and a toolbar of buttons (each a `button` or an `a`
/// in its shadow root), styled from the page through `::part()`; tabs and
/// menu items (hosts with a role, whose own shadow content `:host(:hover)`
/// and `:host(:focus-visible)` restyle), a checkbox, a switch and a field.
/// The checkable menu item (role `menuitemcheckbox`, not among SPEC §11's
/// roles, so not examined) is on the page but not compared.
const SHOELACE_PAGES: [CorpusPage; 2] = [
    CorpusPage {
        path: "/shoelace/nav",
        head: SHOELACE_HEAD,
        body: r##"<sl-breadcrumb>
  <sl-breadcrumb-item id="crumb-1" href="#home">Home</sl-breadcrumb-item>
  <sl-breadcrumb-item id="crumb-2" href="#docs">Docs</sl-breadcrumb-item>
  <sl-breadcrumb-item id="crumb-3" href="#components">Components</sl-breadcrumb-item>
  <sl-breadcrumb-item id="crumb-4">Button</sl-breadcrumb-item>
</sl-breadcrumb>
<div class="toolbar">
  <sl-button id="btn-default">Default</sl-button>
  <sl-button id="btn-primary" variant="primary">Primary</sl-button>
  <sl-button id="btn-link" variant="text" href="#docs">Docs</sl-button>
  <sl-button id="btn-outline" variant="neutral" outline>Outline</sl-button>
  <sl-button id="btn-pill" class="pill" pill>Pill</sl-button>
  <sl-icon-button id="btn-close" library="system" name="x-lg" label="Close"></sl-icon-button>
</div>"##,
        ready: r#"[components()], {
  "crumb-1": {"[part~=label]": "crumb-1-label"}, "crumb-2": {"[part~=label]": "crumb-2-label"},
  "crumb-3": {"[part~=label]": "crumb-3-label"}, "crumb-4": {"[part~=label]": "crumb-4-label"},
  "btn-default": {"[part~=base]": "btn-default-base"}, "btn-primary": {"[part~=base]": "btn-primary-base"},
  "btn-link": {"[part~=base]": "btn-link-base"}, "btn-outline": {"[part~=base]": "btn-outline-base"},
  "btn-pill": {"[part~=base]": "btn-pill-base"}, "btn-close": {"[part~=base]": "btn-close-base"}
}"#,
        compared: &[
            "crumb-1-label",
            "crumb-2-label",
            "crumb-3-label",
            "crumb-4-label",
            "btn-default-base",
            "btn-primary-base",
            "btn-link-base",
            "btn-outline-base",
            "btn-pill-base",
            "btn-close-base",
        ],
    },
    CorpusPage {
        path: "/shoelace/controls",
        head: SHOELACE_HEAD,
        body: r##"<sl-tab-group>
  <sl-tab slot="nav" panel="general" id="tab-general">General</sl-tab>
  <sl-tab slot="nav" panel="custom" id="tab-custom">Custom</sl-tab>
  <sl-tab slot="nav" panel="advanced" id="tab-advanced">Advanced</sl-tab>
  <sl-tab-panel name="general">General settings.</sl-tab-panel>
  <sl-tab-panel name="custom">Custom settings.</sl-tab-panel>
  <sl-tab-panel name="advanced">Advanced settings.</sl-tab-panel>
</sl-tab-group>
<sl-menu style="max-width: 220px">
  <sl-menu-item id="menu-undo" value="undo">Undo</sl-menu-item>
  <sl-menu-item id="menu-redo" value="redo">Redo</sl-menu-item>
  <sl-divider></sl-divider>
  <sl-menu-item id="menu-wrap" type="checkbox" checked>Word wrap</sl-menu-item>
</sl-menu>
<div class="toolbar">
  <sl-checkbox id="terms">I agree</sl-checkbox>
  <sl-switch id="notifications" checked>Notifications</sl-switch>
</div>
<sl-input id="name" label="Name" placeholder="Your name"></sl-input>"##,
        ready: r#"[components()], {
  "terms": {"[part~=base]": "terms-base", "input": "terms-input"},
  "notifications": {"[part~=base]": "notifications-base", "input": "notifications-input"},
  "name": {"label": "name-label", "input": "name-input"}
}"#,
        compared: &[
            "tab-general",
            "tab-custom",
            "tab-advanced",
            "menu-undo",
            "menu-redo",
            "terms-base",
            "terms-input",
            "notifications-base",
            "notifications-input",
            "name-label",
            "name-input",
        ],
    },
];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn shoelace_states_in_shadow_roots_are_what_chromium_computes_forcing_each_element_alone(pool: PgPool) {
    let manifests = assert_as_chromium_alone(pool, &SHOELACE_PAGES).await;
    // Elements of shadow roots have entries of their own: a breadcrumb's
    // link, and the page's `::part(label):hover` on it.
    let nav = &manifests[0];
    assert!(in_shadow_root(nav, nav.element("crumb-2-label")));
    let hover = captured_changes(nav, "crumb-2-label", "hover").expect("the breadcrumb link's hover");
    assert_eq!(hover["crumb-2-label"]["text-decoration-line"], "underline", "{hover:?}");
    // A host with a role reads its shadow content: the menu item's
    // `:host(:hover) .menu-item` colours the item's box, not the host.
    let menu = captured_changes(&manifests[1], "menu-undo", "hover").expect("the menu item's hover");
    assert!(
        menu.iter()
            .any(|(node, styles)| node != "menu-undo" && styles.contains_key("background-color")),
        "{menu:?}"
    );
}

/// Lit from the npm registry through an import map, as a page without a
/// bundler loads it, and Tailwind for the page's own classes.
const LIT_HEAD: &str = r#"<script type="importmap">{"imports": {
  "lit": "/npm/lit/index.js", "lit-html": "/npm/lit-html/lit-html.js", "lit-html/": "/npm/lit-html/",
  "lit-element/": "/npm/lit-element/", "@lit/reactive-element": "/npm/@lit/reactive-element/reactive-element.js"}}</script>
<script src="/lib/tailwind.js"></script>
<script type="module">
import { LitElement, html, css } from 'lit';
// A consent checkbox whose text the page gives it: a slot inside the label.
class XConsent extends LitElement {
  static styles = css`
    label { display: inline-flex; gap: 8px; align-items: center; cursor: pointer; color: rgb(51, 65, 85) }
    label:hover { color: rgb(3, 105, 161) }`;
  render() { return html`<label part="label"><input type="checkbox" part="box"><span><slot></slot></span></label>`; }
}
customElements.define('x-consent', XConsent);
</script>"#;

/// Content a shadow root shows through a slot, under the slot in the
/// manifest's tree: Shoelace buttons with icons in their prefix and suffix
/// slots (the icon takes the button's colour), and a Lit checkbox whose
/// label holds the page's link to its terms (the link, by Tailwind's
/// preflight `a { color: inherit }`, takes the label's colour). Under its
/// state the shadow element's entry lists what changes under it, the
/// slotted content too; a slotted element forced together with the element
/// it is slotted under would inherit that element's state.
const SLOTTED: [CorpusPage; 2] = [
    CorpusPage {
        path: "/shoelace/icons",
        head: SHOELACE_HEAD,
        body: r##"<div class="toolbar">
  <sl-button id="save"><sl-icon slot="prefix" name="floppy"></sl-icon>Save</sl-button>
  <sl-button id="settings" variant="text" href="#settings"><sl-icon slot="prefix" name="gear"></sl-icon>Settings</sl-button>
  <sl-button id="next" variant="primary">Next<sl-icon slot="suffix" name="arrow-right"></sl-icon></sl-button>
</div>"##,
        ready: r#"[components()], {
  "save": {"[part~=base]": "save-base"}, "settings": {"[part~=base]": "settings-base"}, "next": {"[part~=base]": "next-base"}
}"#,
        compared: &["save-base", "settings-base", "next-base"],
    },
    CorpusPage {
        path: "/lit/consent",
        head: LIT_HEAD,
        body: r##"<main class="max-w-md space-y-4 p-6 font-sans text-slate-700">
  <a id="back" href="#back" class="text-sm text-slate-500 hover:text-slate-700">Back</a>
  <form class="space-y-3">
    <x-consent id="consent">I accept the <a id="consent-terms" href="#terms" class="underline hover:decoration-2">terms</a></x-consent>
  </form>
</main>"##,
        ready: r#"[tailwind(), components()], {"consent": {"label": "consent-label", "input": "consent-box"}}"#,
        compared: &["back", "consent-label", "consent-box", "consent-terms"],
    },
];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn slotted_content_changes_with_the_element_it_is_slotted_under_and_only_with_it(pool: PgPool) {
    assert_as_chromium_alone(pool, &SLOTTED).await;
}

const BOOTSTRAP_HEAD: &str = r#"<link rel="stylesheet" href="/lib/bootstrap.css">"#;

/// Bootstrap: a navbar's links, a toolbar of button groups (links and
/// buttons alike but for their place), radio toggles (styled by a
/// sibling's rule with a state, `.btn-check:focus-visible + .btn`), pills,
/// a list group of actions, a floating label (`.form-control:focus ~
/// label`), fields, and a pagination.
const BOOTSTRAP: [CorpusPage; 1] = [CorpusPage {
    path: "/bootstrap",
    head: BOOTSTRAP_HEAD,
    body: r##"<nav class="navbar navbar-expand-lg bg-body-tertiary"><div class="container-fluid">
  <a id="bs-brand" class="navbar-brand" href="#top">Acme</a>
  <ul class="navbar-nav me-auto">
    <li class="nav-item"><a id="bs-nav-home" class="nav-link active" aria-current="page" href="#home">Home</a></li>
    <li class="nav-item"><a id="bs-nav-features" class="nav-link" href="#features">Features</a></li>
    <li class="nav-item"><a id="bs-nav-pricing" class="nav-link" href="#pricing">Pricing</a></li>
  </ul>
  <form class="d-flex" role="search"><input id="bs-search" class="form-control me-2" type="search" placeholder="Search">
    <button id="bs-search-go" class="btn btn-outline-success" type="submit">Search</button></form>
</div></nav>
<main class="container py-4">
  <div class="btn-toolbar mb-3" role="toolbar">
    <div class="btn-group me-2" role="group">
      <a id="bs-tb-1" href="#1" class="btn btn-outline-secondary">1</a>
      <a id="bs-tb-2" href="#2" class="btn btn-outline-secondary active" aria-current="page">2</a>
      <a id="bs-tb-3" href="#3" class="btn btn-outline-secondary">3</a>
    </div>
    <div class="btn-group me-2" role="group">
      <button id="bs-tb-bold" type="button" class="btn btn-secondary">Bold</button>
      <button id="bs-tb-italic" type="button" class="btn btn-secondary">Italic</button>
    </div>
    <div class="btn-group" role="group">
      <input type="radio" class="btn-check" name="view" id="bs-view-list" autocomplete="off" checked>
      <label id="bs-view-list-label" class="btn btn-outline-primary" for="bs-view-list">List</label>
      <input type="radio" class="btn-check" name="view" id="bs-view-grid" autocomplete="off">
      <label id="bs-view-grid-label" class="btn btn-outline-primary" for="bs-view-grid">Grid</label>
    </div>
  </div>
  <ul class="nav nav-pills mb-3">
    <li class="nav-item"><a id="bs-pill-1" class="nav-link active" aria-current="page" href="#a">Active</a></li>
    <li class="nav-item"><a id="bs-pill-2" class="nav-link" href="#b">Link</a></li>
    <li class="nav-item"><a id="bs-pill-3" class="nav-link" href="#c">Link</a></li>
  </ul>
  <div class="row">
    <div class="col-4"><div class="list-group">
      <a id="bs-lg-inbox" href="#inbox" class="list-group-item list-group-item-action active" aria-current="true">Inbox</a>
      <a id="bs-lg-drafts" href="#drafts" class="list-group-item list-group-item-action">Drafts</a>
      <a id="bs-lg-sent" href="#sent" class="list-group-item list-group-item-action">Sent</a>
      <button id="bs-lg-archive" type="button" class="list-group-item list-group-item-action">Archive</button>
    </div></div>
    <div class="col-8">
      <div class="form-floating mb-3"><input id="bs-email" type="email" class="form-control" placeholder="name@example.com">
        <label id="bs-email-label" for="bs-email">Email address</label></div>
      <div class="mb-3"><label id="bs-message-label" for="bs-message" class="form-label">Message</label>
        <textarea id="bs-message" class="form-control" rows="2"></textarea></div>
      <div class="mb-3"><select id="bs-topic" class="form-select"><option>Sales</option><option>Support</option></select></div>
      <div class="form-check"><input id="bs-agree" class="form-check-input" type="checkbox">
        <label id="bs-agree-label" class="form-check-label" for="bs-agree">I agree to the <a id="bs-agree-terms" href="#terms">terms</a></label></div>
      <div class="form-check form-switch"><input id="bs-switch" class="form-check-input" type="checkbox" role="switch" checked>
        <label id="bs-switch-label" class="form-check-label" for="bs-switch">Notifications</label></div>
    </div>
  </div>
  <nav><ul class="pagination">
    <li class="page-item"><a id="bs-page-prev" class="page-link" href="#prev">Previous</a></li>
    <li class="page-item"><a id="bs-page-1" class="page-link" href="#p1">1</a></li>
    <li class="page-item active"><a id="bs-page-2" class="page-link" href="#p2" aria-current="page">2</a></li>
    <li class="page-item"><a id="bs-page-3" class="page-link" href="#p3">3</a></li>
    <li class="page-item"><a id="bs-page-next" class="page-link" href="#next">Next</a></li>
  </ul></nav>
  <div class="accordion">
    <div class="accordion-item"><h2 class="accordion-header"><button id="bs-faq-1" class="accordion-button" type="button">Question one</button></h2></div>
    <div class="accordion-item"><h2 class="accordion-header"><button id="bs-faq-2" class="accordion-button collapsed" type="button">Question two</button></h2></div>
  </div>
</main>"##,
    ready: "[]",
    compared: &[
        "bs-brand",
        "bs-nav-home",
        "bs-nav-features",
        "bs-nav-pricing",
        "bs-search",
        "bs-search-go",
        "bs-tb-1",
        "bs-tb-2",
        "bs-tb-3",
        "bs-tb-bold",
        "bs-tb-italic",
        "bs-view-list",
        "bs-view-list-label",
        "bs-view-grid",
        "bs-view-grid-label",
        "bs-pill-1",
        "bs-pill-2",
        "bs-pill-3",
        "bs-lg-inbox",
        "bs-lg-drafts",
        "bs-lg-sent",
        "bs-lg-archive",
        "bs-email",
        "bs-message-label",
        "bs-message",
        "bs-topic",
        "bs-agree",
        "bs-agree-label",
        "bs-agree-terms",
        "bs-switch",
        "bs-page-prev",
        "bs-page-1",
        "bs-page-2",
        "bs-page-3",
        "bs-page-next",
        "bs-faq-1",
        "bs-faq-2",
    ],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn bootstrap_states_are_what_chromium_computes_forcing_each_element_alone(pool: PgPool) {
    assert_as_chromium_alone(pool, &BOOTSTRAP).await;
}

/// daisyUI 5's stylesheet on Tailwind's compiler, as its documentation
/// loads them: its CSS nests `&:hover` under the component and the state's
/// declarations under `@media (hover: hover)` inside it.
const DAISYUI: [CorpusPage; 1] = [CorpusPage {
    path: "/daisyui",
    head: r#"<link rel="stylesheet" href="/lib/daisyui.css"><script src="/lib/tailwind.js"></script>"#,
    body: r##"<div class="navbar bg-base-100 shadow-sm">
  <a id="dz-brand" class="btn btn-ghost text-xl" href="#top">daisy</a>
  <ul class="menu menu-horizontal px-1">
    <li><a id="dz-menu-1" href="#item1">Item 1</a></li>
    <li><a id="dz-menu-2" href="#item2" class="menu-active">Item 2</a></li>
    <li><a id="dz-menu-3" href="#item3">Item 3</a></li>
  </ul>
</div>
<div class="p-6 space-y-4">
  <div class="breadcrumbs text-sm"><ul>
    <li><a id="dz-crumb-1" href="#home">Home</a></li>
    <li><a id="dz-crumb-2" href="#documents">Documents</a></li>
    <li>Add Document</li>
  </ul></div>
  <div class="join">
    <a id="dz-join-1" href="#prev" class="join-item btn">«</a>
    <a id="dz-join-2" href="#page2" class="join-item btn btn-active">Page 2</a>
    <a id="dz-join-3" href="#next" class="join-item btn">»</a>
  </div>
  <div role="tablist" class="tabs tabs-box">
    <a id="dz-tab-1" role="tab" class="tab" href="#tab1">Tab 1</a>
    <a id="dz-tab-2" role="tab" class="tab tab-active" href="#tab2">Tab 2</a>
    <a id="dz-tab-3" role="tab" class="tab" href="#tab3">Tab 3</a>
  </div>
  <p><a id="dz-link" class="link link-hover" href="#plain">A link</a> and <a id="dz-link-primary" class="link link-primary" href="#primary">a primary link</a></p>
  <div class="flex gap-2">
    <button id="dz-btn-primary" class="btn btn-primary">Primary</button>
    <a id="dz-btn-outline" href="#outline" class="btn btn-outline btn-secondary">Outline</a>
  </div>
  <div class="flex items-center gap-4">
    <input id="dz-input" type="text" placeholder="Type here" class="input">
    <input id="dz-check" type="checkbox" checked class="checkbox">
    <input id="dz-toggle" type="checkbox" class="toggle">
    <label id="dz-label" class="label"><input id="dz-radio" type="radio" name="choice" class="radio">Choice</label>
  </div>
</div>"##,
    ready: "[tailwind()]",
    compared: &[
        "dz-brand",
        "dz-menu-1",
        "dz-menu-2",
        "dz-menu-3",
        "dz-crumb-1",
        "dz-crumb-2",
        "dz-join-1",
        "dz-join-2",
        "dz-join-3",
        "dz-tab-1",
        "dz-tab-2",
        "dz-tab-3",
        "dz-link",
        "dz-link-primary",
        "dz-btn-primary",
        "dz-btn-outline",
        "dz-input",
        "dz-check",
        "dz-toggle",
        "dz-label",
        "dz-radio",
    ],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn daisyui_states_are_what_chromium_computes_forcing_each_element_alone(pool: PgPool) {
    assert_as_chromium_alone(pool, &DAISYUI).await;
}

/// Material Web (Google's Material 3 components, Lit) from the npm
/// registry through an import map, as a page without a bundler loads it.
/// Its state layers are `md-ripple` and `md-focus-ring`, which the
/// component shows from pointer and focus events (no forced state starts
/// them); what CSS says under a state is its own sheets' `:host(:hover)`,
/// `:where(:hover) .label` and the tokens a page sets on a host.
const MATERIAL_HEAD: &str = r#"<script type="importmap">{"imports": {
  "lit": "/npm/lit/index.js", "lit/": "/npm/lit/",
  "lit-html": "/npm/lit-html/lit-html.js", "lit-html/": "/npm/lit-html/",
  "lit-element/": "/npm/lit-element/",
  "@lit/reactive-element": "/npm/@lit/reactive-element/reactive-element.js", "@lit/reactive-element/": "/npm/@lit/reactive-element/",
  "tslib": "/npm/tslib/tslib.es6.mjs", "@material/web/": "/npm/@material/web/"}}</script>
<script type="module">
import '@material/web/button/filled-button.js';
import '@material/web/button/outlined-button.js';
import '@material/web/button/text-button.js';
import '@material/web/button/filled-tonal-button.js';
import '@material/web/button/elevated-button.js';
import '@material/web/iconbutton/icon-button.js';
import '@material/web/chips/chip-set.js';
import '@material/web/chips/assist-chip.js';
import '@material/web/chips/filter-chip.js';
import '@material/web/list/list.js';
import '@material/web/list/list-item.js';
import '@material/web/checkbox/checkbox.js';
import '@material/web/switch/switch.js';
</script>
<style>
  body { margin: 24px; font-family: sans-serif }
  .row { display: flex; gap: 8px; align-items: center; margin: 16px 0 }
  md-filled-button.danger { --md-filled-button-container-color: rgb(179, 38, 30); --md-filled-button-hover-label-text-color: rgb(255, 218, 214) }
  md-list { max-width: 320px }
  svg { width: 18px; height: 18px }
</style>"#;

/// Material Web: buttons of every variant (one a link with an icon slotted
/// in, one recoloured by the page's tokens on its host), an icon button,
/// assist and filter chips in a chip set (alike but for their label and
/// `selected`), and list items (whose content passes through two slots:
/// the item's into its `md-item`'s), a checkbox and a switch.
const MATERIAL: [CorpusPage; 1] = [CorpusPage {
    path: "/material",
    head: MATERIAL_HEAD,
    body: r##"<div class="row">
  <md-filled-button id="m-filled">Save</md-filled-button>
  <md-outlined-button id="m-outlined">Cancel</md-outlined-button>
  <md-text-button id="m-text">Learn more</md-text-button>
  <md-filled-tonal-button id="m-tonal">Tonal</md-filled-tonal-button>
  <md-elevated-button id="m-elevated">Elevated</md-elevated-button>
  <md-filled-button id="m-link" href="#docs" trailing-icon>Docs<svg slot="icon" viewBox="0 0 24 24"><path d="M4 11h12l-5-5 1.4-1.4L20 12l-7.6 7.4L11 18l5-5H4z"/></svg></md-filled-button>
  <md-filled-button id="m-danger" class="danger">Delete</md-filled-button>
  <md-icon-button id="m-icon" aria-label="Next"><svg viewBox="0 0 24 24"><path d="M4 11h12l-5-5 1.4-1.4L20 12l-7.6 7.4L11 18l5-5H4z"/></svg></md-icon-button>
</div>
<md-chip-set>
  <md-assist-chip id="m-chip-1" label="Share"></md-assist-chip>
  <md-assist-chip id="m-chip-2" label="Copy link"></md-assist-chip>
  <md-assist-chip id="m-chip-3" label="Open" href="#open"></md-assist-chip>
  <md-filter-chip id="m-filter-1" label="Vegan" selected></md-filter-chip>
  <md-filter-chip id="m-filter-2" label="Halal"></md-filter-chip>
  <md-filter-chip id="m-filter-3" label="Kosher"></md-filter-chip>
</md-chip-set>
<md-list>
  <md-list-item id="m-item-1" type="button">Inbox<svg slot="start" viewBox="0 0 24 24"><path d="M4 11h12l-5-5 1.4-1.4L20 12l-7.6 7.4L11 18l5-5H4z"/></svg></md-list-item>
  <md-list-item id="m-item-2" type="button">Starred<span slot="supporting-text">12 new</span></md-list-item>
  <md-list-item id="m-item-3" type="link" href="#sent">Sent</md-list-item>
  <md-list-item id="m-item-4" type="button" disabled>Drafts</md-list-item>
</md-list>
<div class="row"><md-checkbox id="m-check" aria-label="Agree"></md-checkbox><md-switch id="m-switch" selected aria-label="Notify"></md-switch></div>"##,
    ready: r#"[components()], {
  "m-filled": {".button": "m-filled-button"}, "m-outlined": {".button": "m-outlined-button"},
  "m-text": {".button": "m-text-button"}, "m-tonal": {".button": "m-tonal-button"},
  "m-elevated": {".button": "m-elevated-button"}, "m-link": {".button": "m-link-button"},
  "m-danger": {".button": "m-danger-button"}, "m-icon": {".icon-button": "m-icon-button"},
  "m-chip-1": {".primary.action": "m-chip-1-action"}, "m-chip-2": {".primary.action": "m-chip-2-action"},
  "m-chip-3": {".primary.action": "m-chip-3-action"},
  "m-filter-1": {".primary.action": "m-filter-1-action"}, "m-filter-2": {".primary.action": "m-filter-2-action"},
  "m-filter-3": {".primary.action": "m-filter-3-action"},
  "m-item-1": {".list-item": "m-item-1-item"}, "m-item-2": {".list-item": "m-item-2-item"},
  "m-item-3": {".list-item": "m-item-3-item"},
  "m-check": {"input": "m-check-input"}, "m-switch": {"input": "m-switch-input"}
}"#,
    compared: &[
        "m-filled-button",
        "m-outlined-button",
        "m-text-button",
        "m-tonal-button",
        "m-elevated-button",
        "m-link-button",
        "m-danger-button",
        "m-icon-button",
        "m-chip-1-action",
        "m-chip-2-action",
        "m-chip-3-action",
        "m-filter-1-action",
        "m-filter-2-action",
        "m-filter-3-action",
        "m-item-1-item",
        "m-item-2-item",
        "m-item-3-item",
        "m-check-input",
        "m-switch-input",
    ],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn material_web_states_in_shadow_roots_are_what_chromium_computes_forcing_each_element_alone(pool: PgPool) {
    assert_as_chromium_alone(pool, &MATERIAL).await;
}

/// Pico CSS and Water.css, classless: the page's plain elements take their
/// look from the element, its attributes and its place. Long rows of alike
/// elements, one of each differing only by what a state's rule (or a rule
/// the state's value depends on) looks at: an ancestor's class, an
/// attribute (`aria-current`, `role`), its place (`:nth-child`, the last),
/// a preceding sibling's state (`.rating a:hover ~ a`). Pico has states inside `:has()` (`[role=group]:has(button:focus)`),
/// Water.css states behind `:nth-child` (`tbody tr:nth-child(2n) button:hover`).
const SEMANTIC_PAGES: [CorpusPage; 2] = [
    CorpusPage {
        path: "/pico",
        head: r#"<link rel="stylesheet" href="/css/pico.css">"#,
        body: r##"<header class="container"><nav>
  <ul><li><strong>Acme</strong></li></ul>
  <ul>
    <li><a id="p-nav-1" href="#about">About</a></li>
    <li><a id="p-nav-2" href="#services">Services</a></li>
    <li><a id="p-nav-3" href="#products" aria-current="page">Products</a></li>
    <li><a id="p-nav-4" href="#blog">Blog</a></li>
    <li><a id="p-nav-5" href="#contact" class="secondary">Contact</a></li>
    <li><a id="p-nav-6" href="#login" role="button">Log in</a></li>
  </ul>
</nav></header>
<main class="container">
  <nav aria-label="breadcrumb"><ul>
    <li><a id="p-crumb-1" href="#home">Home</a></li>
    <li><a id="p-crumb-2" href="#category">Category</a></li>
    <li>Page</li>
  </ul></nav>
  <div class="grid">
    <aside><nav><ul>
      <li><a id="p-side-1" href="#s1">Getting started</a></li>
      <li><a id="p-side-2" href="#s2">Layout</a></li>
      <li><a id="p-side-3" href="#s3" class="contrast">Content</a></li>
      <li><a id="p-side-4" href="#s4">Forms</a></li>
      <li><a id="p-side-5" href="#s5">Components</a></li>
    </ul></nav></aside>
    <section>
      <details><summary id="p-faq-1">First question</summary><p>Answer.</p></details>
      <details open><summary id="p-faq-2">Second question</summary><p>Answer.</p></details>
      <details name="one" class="dropdown"><summary id="p-dropdown">Dropdown</summary><ul>
        <li><a id="p-dd-1" href="#solid">Solid</a></li>
        <li><a id="p-dd-2" href="#liquid">Liquid</a></li>
        <li><a id="p-dd-3" href="#gas">Gas</a></li>
      </ul></details>
      <div class="grid">
        <button id="p-btn-1">Primary</button>
        <button id="p-btn-2" class="secondary">Secondary</button>
        <button id="p-btn-3" class="contrast">Contrast</button>
        <button id="p-btn-4" class="outline">Outline</button>
      </div>
      <div role="group">
        <button id="p-grp-1">Day</button>
        <button id="p-grp-2" aria-current="true">Week</button>
        <button id="p-grp-3">Month</button>
      </div>
      <form>
        <fieldset role="group">
          <input id="p-email" name="email" type="email" placeholder="Email" aria-label="Email">
          <input id="p-subscribe" type="submit" value="Subscribe">
        </fieldset>
        <input id="p-search" type="search" name="search" placeholder="Search" aria-label="Search">
        <select id="p-select" aria-label="Size"><option>Small</option><option>Large</option></select>
        <fieldset>
          <label id="p-terms-label"><input id="p-terms" type="checkbox" name="terms"> I agree</label>
          <label id="p-switch-label"><input id="p-switch" type="checkbox" role="switch" checked> Notify me</label>
          <label><input id="p-radio" type="radio" name="size"> Small</label>
        </fieldset>
        <textarea id="p-message" aria-label="Message"></textarea>
        <input id="p-range" type="range" aria-label="Volume">
      </form>
    </section>
  </div>
</main>"##,
        ready: "[]",
        compared: &[
            "p-nav-1",
            "p-nav-2",
            "p-nav-3",
            "p-nav-4",
            "p-nav-5",
            "p-nav-6",
            "p-crumb-1",
            "p-crumb-2",
            "p-side-1",
            "p-side-2",
            "p-side-3",
            "p-side-4",
            "p-side-5",
            "p-faq-1",
            "p-faq-2",
            "p-dropdown",
            "p-btn-1",
            "p-btn-2",
            "p-btn-3",
            "p-btn-4",
            "p-grp-1",
            "p-grp-2",
            "p-grp-3",
            "p-email",
            "p-subscribe",
            "p-search",
            "p-select",
            "p-terms-label",
            "p-terms",
            "p-switch",
            "p-radio",
            "p-message",
            "p-range",
        ],
    },
    CorpusPage {
        path: "/water",
        head: r#"<link rel="stylesheet" href="/css/water.css">
<style>
  .rating a { text-decoration: none; font-size: 20px }
  .rating a:hover, .rating a:hover ~ a { color: rgb(202, 138, 4) }
  .links { display: flex; gap: 12px; list-style: none; padding: 0 }
  .links li:last-child a { --links: rgb(185, 28, 28) }
</style>"#,
        body: r##"<header><nav class="links">
  <li><a id="w-nav-1" href="#home">Home</a></li>
  <li><a id="w-nav-2" href="#docs">Docs</a></li>
  <li><a id="w-nav-3" href="#blog" aria-current="page">Blog</a></li>
  <li><a id="w-nav-4" href="#about">About</a></li>
  <li><a id="w-nav-5" href="#signout">Sign out</a></li>
</nav></header>
<p class="rating">
  <a id="w-star-1" href="#1">&#9733;</a><a id="w-star-2" href="#2">&#9733;</a><a id="w-star-3" href="#3">&#9733;</a><a id="w-star-4" href="#4">&#9733;</a><a id="w-star-5" href="#5">&#9733;</a>
</p>
<table>
  <thead><tr><th>Name</th><th>Action</th></tr></thead>
  <tbody>
    <tr><td>Alpha</td><td><button id="w-row-1">Edit</button></td></tr>
    <tr><td>Beta</td><td><button id="w-row-2">Edit</button></td></tr>
    <tr><td>Gamma</td><td><button id="w-row-3">Edit</button></td></tr>
    <tr><td>Delta</td><td><button id="w-row-4">Edit</button></td></tr>
    <tr><td>Epsilon</td><td><button id="w-row-5" disabled>Edit</button></td></tr>
  </tbody>
</table>
<form>
  <label id="w-q-label" for="w-q">Search</label><input id="w-q" type="search">
  <input id="w-name" type="text" placeholder="Name">
  <select id="w-select"><option>One</option><option>Two</option></select>
  <textarea id="w-text"></textarea>
  <label id="w-check-label"><input id="w-check" type="checkbox"> Remember me</label>
  <input id="w-range" type="range">
  <input id="w-submit" type="submit" value="Send">
  <input id="w-reset" type="reset" value="Clear">
  <button id="w-plain" type="button">Plain</button>
</form>
<details><summary id="w-summary">More</summary><p>Details.</p></details>
<details open><summary id="w-summary-open">Open</summary><p>Details.</p></details>"##,
        ready: "[]",
        compared: &[
            "w-nav-1",
            "w-nav-2",
            "w-nav-3",
            "w-nav-4",
            "w-nav-5",
            "w-star-1",
            "w-star-2",
            "w-star-3",
            "w-star-4",
            "w-star-5",
            "w-row-1",
            "w-row-2",
            "w-row-3",
            "w-row-4",
            "w-q-label",
            "w-q",
            "w-name",
            "w-select",
            "w-text",
            "w-check-label",
            "w-check",
            "w-range",
            "w-submit",
            "w-reset",
            "w-plain",
            "w-summary",
            "w-summary-open",
        ],
    },
];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn classless_states_are_what_chromium_computes_forcing_each_element_alone(pool: PgPool) {
    assert_as_chromium_alone(pool, &SEMANTIC_PAGES).await;
}

/// Water.css with `:focus-within` containers: a search field's label
/// coloured while the field (or anything in its box) has focus, and a
/// table of contents that dims its links while one of them has focus.
/// Chromium forcing focus on an element makes its ancestors (across
/// shadow roots too) match `:focus-within`, so the label's and each
/// link's own look changes under its focus-visible.
const FOCUS_WITHIN: [CorpusPage; 1] = [CorpusPage {
    path: "/water/focus-within",
    head: r#"<link rel="stylesheet" href="/css/water.css">
<style>
  .search { display: flex; gap: 8px; align-items: center }
  .search:focus-within label { color: rgb(37, 99, 235) }
  .toc { display: flex; flex-direction: column }
  .toc:focus-within a { color: rgb(100, 116, 139) }
</style>"#,
    body: r##"<form><div class="search"><label id="fw-label" for="fw-q">Search</label><input id="fw-q" type="search"></div></form>
<nav class="toc">
  <a id="fw-toc-1" href="#intro">Introduction</a>
  <a id="fw-toc-2" href="#usage">Usage</a>
  <a id="fw-toc-3" href="#api">API</a>
</nav>
<p><a id="fw-outside" href="#outside">Outside the contents</a></p>"##,
    ready: "[]",
    compared: &["fw-label", "fw-q", "fw-toc-1", "fw-toc-2", "fw-toc-3", "fw-outside"],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn states_of_elements_in_a_focus_within_container_are_what_chromium_computes(pool: PgPool) {
    assert_as_chromium_alone(pool, &FOCUS_WITHIN).await;
}

/// A site's own style sheet, no framework: a menu of alike links whose
/// state rules look at no place, no sibling and no `:has()`, so that
/// alike links are read once (decision 0050) and forced together
/// (decision 0051). One link of each row differs only by what the state's
/// value depends on and no state's selector names: a custom property its
/// `li:last-child`, or an `li` after the divider (`.divider ~ li`) sets,
/// a font size its `:nth-child(2)` sets (the focus ring's `.25em`), an
/// `aria-current` the rules name. The sidebar's `:focus-within` styles
/// its own links.
const SITE_MENU: [CorpusPage; 1] = [CorpusPage {
    path: "/site/menu",
    head: r#"<style>
  body { margin: 24px; font: 16px/1.5 sans-serif; color: rgb(15, 23, 42) }
  .menu { list-style: none; margin: 0 0 16px; padding: 0; display: flex; gap: 4px }
  .menu a { display: block; padding: 4px 10px; border-radius: 6px; color: rgb(30, 64, 175); text-decoration: none }
  .menu a:hover { background-color: var(--menu-hover, rgb(239, 246, 255)) }
  .menu a:focus-visible { outline: 2px solid rgb(37, 99, 235); box-shadow: 0 0 0 .25em rgb(191, 219, 254) }
  .menu a:active { box-shadow: inset 0 -2px rgb(30, 64, 175) }
  .menu a[aria-current="page"] { font-weight: 600 }
  .menu a[aria-current="page"]:hover { background-color: rgb(224, 231, 255) }
  .menu .divider { width: 1px; background: rgb(203, 213, 225) }
  .menu li:last-child { --menu-hover: rgb(254, 226, 226) }
  .menu .divider ~ li { --menu-hover: rgb(243, 232, 255) }
  .menu li:nth-child(2) a { font-size: 20px }
  .sidebar { display: flex; flex-direction: column; width: 220px; padding: 8px; border: 1px solid rgb(226, 232, 240) }
  .sidebar a { color: rgb(51, 65, 85); text-decoration: none; padding: 2px 0 }
  .sidebar a:hover { color: rgb(15, 23, 42); text-decoration-line: underline }
  .sidebar:focus-within a { color: rgb(30, 41, 59) }
  .sidebar .beta { --menu-hover: rgb(220, 252, 231) }
</style>"#,
    body: r##"<ul class="menu">
  <li><a id="menu-1" href="#home">Home</a></li>
  <li><a id="menu-2" href="#features">Features</a></li>
  <li><a id="menu-3" href="#pricing" aria-current="page">Pricing</a></li>
  <li><a id="menu-4" href="#docs">Docs</a></li>
  <li class="divider" aria-hidden="true"></li>
  <li><a id="menu-5" href="#account">Account</a></li>
  <li><a id="menu-6" href="#signout">Sign out</a></li>
</ul>
<ul class="menu">
  <li><a id="menu-7" href="#a">Alpha</a></li>
  <li><a id="menu-8" href="#b">Beta</a></li>
  <li><a id="menu-9" href="#c">Gamma</a></li>
</ul>
<nav class="sidebar">
  <a id="side-1" href="#s1">Overview</a>
  <a id="side-2" href="#s2">Billing</a>
  <a id="side-3" href="#s3" class="beta">Labs</a>
  <input id="side-filter" type="search" placeholder="Filter">
</nav>"##,
    ready: "[]",
    compared: &[
        "menu-1",
        "menu-2",
        "menu-3",
        "menu-4",
        "menu-5",
        "menu-6",
        "menu-7",
        "menu-8",
        "menu-9",
        "side-1",
        "side-2",
        "side-3",
        "side-filter",
    ],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn alike_links_apart_only_by_what_their_state_values_depend_on_are_what_chromium_computes(pool: PgPool) {
    assert_as_chromium_alone(pool, &SITE_MENU).await;
}

/// Layout reach: in one flex row, a button whose hover changes a size
/// (padding and border width) beside buttons whose hover only recolours;
/// tabs in a grid whose hover makes the text bold beside tabs that only
/// underline; and cards whose hover translates them (the card becomes
/// the containing block of its absolutely positioned badge, which is laid
/// out against the grid at rest).
const SITE_LAYOUT: [CorpusPage; 1] = [CorpusPage {
    path: "/site/layout",
    head: r#"<style>
  body { margin: 24px; font: 16px/1.5 sans-serif; color: rgb(15, 23, 42) }
  .actions { display: flex; gap: 8px; margin-bottom: 24px }
  .act { box-sizing: border-box; min-width: 120px; padding: 6px 12px; border: 1px solid rgb(100, 116, 139); border-radius: 6px;
         background: white; color: rgb(15, 23, 42); font: 16px sans-serif }
  .act:hover { padding-inline: 32px; border-width: 2px }
  .quiet { padding: 6px 12px; border: 1px solid transparent; background: none; color: rgb(71, 85, 105); font: 16px sans-serif }
  .quiet:hover { color: rgb(15, 23, 42); background-color: rgb(241, 245, 249) }
  .tabs { display: grid; grid-template-columns: repeat(4, max-content); gap: 16px; margin-bottom: 24px }
  .tabs a { color: rgb(71, 85, 105); text-decoration: none; border-bottom: 2px solid transparent }
  .tabs a.grow:hover { font-weight: 700; border-bottom-color: rgb(37, 99, 235) }
  .tabs a:not(.grow):hover { text-decoration-line: underline }
  .cards { position: relative; display: grid; grid-template-columns: repeat(3, 200px); gap: 16px; padding-top: 24px }
  .card { display: block; height: 80px; padding: 12px; border: 1px solid rgb(226, 232, 240); border-radius: 8px;
          color: inherit; text-decoration: none; transition: transform .2s, box-shadow .2s }
  .card:hover { transform: translateY(-4px); box-shadow: 0 4px 12px rgb(0 0 0 / .15) }
  .card:active { transform: scale(.98) }
  .badge { position: absolute; top: 8px; right: 8px; padding: 0 6px; border-radius: 4px; background: rgb(220, 252, 231); font-size: 12px }
  .card.plain:hover { transform: none; background-color: rgb(248, 250, 252) }
</style>"#,
    body: r##"<div class="actions">
  <button id="act-back" class="quiet" type="button">Back</button>
  <button id="act-ok" class="act" type="button">OK</button>
  <button id="act-skip" class="quiet" type="button">Skip</button>
</div>
<nav class="tabs">
  <a id="tab-1" class="grow" href="#t1">Overview</a>
  <a id="tab-2" href="#t2">Activity</a>
  <a id="tab-3" class="grow" href="#t3">Settings and privacy</a>
  <a id="tab-4" href="#t4">Help</a>
</nav>
<div class="cards">
  <a id="card-a" class="card" href="#a"><span id="card-a-badge" class="badge">New</span>Analytics</a>
  <a id="card-b" class="card" href="#b"><span id="card-b-badge" class="badge">Beta</span>Automation</a>
  <a id="card-c" class="card plain" href="#c"><span id="card-c-badge" class="badge">Soon</span>Security</a>
</div>"##,
    ready: "[]",
    compared: &[
        "act-back", "act-ok", "act-skip", "tab-1", "tab-2", "tab-3", "tab-4", "card-a", "card-b", "card-c",
    ],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn hovers_that_change_sizes_beside_hovers_that_recolour_are_what_chromium_computes(pool: PgPool) {
    assert_as_chromium_alone(pool, &SITE_LAYOUT).await;
}

/// A dialog's actions, alike but for their text: `min-width` makes "OK",
/// "Continue" and "Cancel" equally wide at rest, and their hover's wider
/// padding and border make "Continue" (only its text, which nothing read
/// at rest says, is longer) outgrow it.
const SITE_TEXT: [CorpusPage; 1] = [CorpusPage {
    path: "/site/actions",
    head: r#"<style>
  body { margin: 24px; font: 16px/1.5 sans-serif; color: rgb(15, 23, 42) }
  .actions { display: flex; gap: 8px }
  .act { box-sizing: border-box; min-width: 120px; padding: 6px 12px; border: 1px solid rgb(100, 116, 139); border-radius: 6px;
         background: white; color: rgb(15, 23, 42); font: 16px sans-serif }
  .act:hover { padding-inline: 32px; border-width: 2px }
</style>"#,
    body: r##"<div class="actions">
  <button id="text-ok" class="act" type="button">OK</button>
  <button id="text-continue" class="act" type="button">Continue</button>
  <button id="text-cancel" class="act" type="button">Cancel</button>
</div>"##,
    ready: "[]",
    compared: &["text-ok", "text-continue", "text-cancel"],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn alike_buttons_apart_only_by_their_text_are_what_chromium_computes(pool: PgPool) {
    assert_as_chromium_alone(pool, &SITE_TEXT).await;
}

/// A site's own sheet where what a state's rule gives depends on what no
/// selector names: user names with `dir="auto"` whose hover colours the
/// inline-start border (the left of an English name, the right of a
/// Hebrew or Arabic one: the text decides), and a container query that
/// gives a link a hover background only where its container is wide (two
/// alike links, a narrow column's and a wide one's).
const SITE_DIRECTION: [CorpusPage; 1] = [CorpusPage {
    path: "/site/direction",
    head: r#"<style>
  body { margin: 24px; font: 16px/1.5 sans-serif; color: rgb(15, 23, 42) }
  .names { list-style: none; padding: 0; display: flex; gap: 8px }
  .names a { display: inline-block; padding: 2px 6px; border: 3px solid; border-color: transparent; color: rgb(30, 64, 175); text-decoration: none }
  .names a:hover { border-inline-start-color: rgb(37, 99, 235) }
  .shelves { display: grid; grid-template-columns: 200px 1fr; gap: 16px; margin: 16px 0 }
  .shelf { container-type: inline-size; border: 1px solid rgb(226, 232, 240); padding: 8px }
  .shelf a { color: rgb(30, 64, 175) }
  .shelf a:hover { text-decoration-line: underline }
  @container (min-width: 400px) { .shelf a:hover { background-color: rgb(239, 246, 255) } }
</style>"#,
    body: r##"<ul class="names">
  <li><a id="name-en" dir="auto" href="#u1">Alice</a></li>
  <li><a id="name-he" dir="auto" href="#u2">&#1513;&#1512;&#1492;</a></li>
  <li><a id="name-ar" dir="auto" href="#u3">&#1593;&#1604;&#1610;</a></li>
  <li><a id="name-en-2" dir="auto" href="#u4">Bob</a></li>
</ul>
<div class="shelves">
  <div class="shelf"><a id="shelf-narrow" href="#n">All posts</a></div>
  <div class="shelf"><a id="shelf-wide" href="#w">All posts</a></div>
</div>"##,
    ready: "[]",
    compared: &[
        "name-en",
        "name-he",
        "name-ar",
        "name-en-2",
        "shelf-narrow",
        "shelf-wide",
    ],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn alike_links_apart_by_direction_or_container_are_what_chromium_computes(pool: PgPool) {
    assert_as_chromium_alone(pool, &SITE_DIRECTION).await;
}

/// Today's CSS nesting and scoping: `@scope (.post:hover)` restyling a
/// post's title (the state in the scope's root, not in a style rule's
/// selector), and a chip whose hover declarations sit in an
/// `@media (hover: hover)` inside `&:hover` (CSSOM: a
/// `CSSNestedDeclarations` rule, not a style rule).
const SITE_SCOPE: [CorpusPage; 1] = [CorpusPage {
    path: "/site/scope",
    head: r#"<style>
  body { margin: 24px; font: 16px/1.5 sans-serif; color: rgb(15, 23, 42) }
  .post { display: block; color: inherit; text-decoration: none; padding: 8px; border: 1px solid rgb(226, 232, 240) }
  .post-title { margin: 0; color: rgb(15, 23, 42) }
  @scope (.post:hover) { .post-title { color: rgb(37, 99, 235) } }
  .chip {
    display: inline-block; padding: 4px 10px; border-radius: 999px; background-color: rgb(241, 245, 249); color: rgb(51, 65, 85); text-decoration: none;
    &:hover { @media (hover: hover) { background-color: rgb(226, 232, 240) } }
    &:active { background-color: rgb(203, 213, 225) }
  }
</style>"#,
    body: r##"<a id="post" class="post" href="#post"><h3 id="post-title" class="post-title">A post</h3><p>Its summary.</p></a>
<p><a id="chip-1" class="chip" href="#c1">Design</a> <a id="chip-2" class="chip" href="#c2">Code</a></p>"##,
    ready: "[]",
    compared: &["post", "chip-1", "chip-2"],
}];

/// Custom elements whose state is a custom state (`ElementInternals.states`,
/// CSS `:state()`), which no attribute says: a listbox of chips, the
/// selected one bold and with a darker hover (`x-chip:state(selected):hover`).
/// Their ARIA says it too (`aria-selected`), a value no selector names.
const CUSTOM_STATES: [CorpusPage; 1] = [CorpusPage {
    path: "/site/custom-states",
    head: r#"<script>
customElements.define('x-chip', class extends HTMLElement {
  constructor() { super(); this.internals = this.attachInternals(); }
  select() { this.internals.states.add('selected'); this.setAttribute('aria-selected', 'true'); }
});
const select = () => document.getElementById('chip-b').select();
</script>
<style>
  body { margin: 24px; font: 16px/1.5 sans-serif; color: rgb(15, 23, 42) }
  [role=listbox] { display: flex; gap: 8px }
  x-chip { display: inline-block; padding: 4px 10px; border-radius: 999px; background-color: rgb(241, 245, 249); cursor: pointer }
  x-chip:hover { background-color: rgb(226, 232, 240) }
  x-chip:state(selected) { font-weight: 600 }
  x-chip:state(selected):hover { background-color: rgb(191, 219, 254) }
</style>"#,
    body: r##"<div role="listbox" aria-label="Topics">
  <x-chip id="chip-a" role="option" tabindex="0" aria-selected="false">Design</x-chip>
  <x-chip id="chip-b" role="option" tabindex="0" aria-selected="false">Code</x-chip>
  <x-chip id="chip-c" role="option" tabindex="0" aria-selected="false">Data</x-chip>
</div>"##,
    ready: "[Promise.resolve().then(select)]",
    compared: &["chip-a", "chip-b", "chip-c"],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn custom_elements_apart_only_by_a_custom_state_are_what_chromium_computes(pool: PgPool) {
    assert_as_chromium_alone(pool, &CUSTOM_STATES).await;
}

/// The same on Tailwind's own utilities: logical borders (`border-s-*`,
/// `hover:border-s-sky-500`) on names with `dir="auto"`, and a container
/// query stacked on a state (`@md:hover:bg-sky-50` under `@container`).
const TAILWIND_LOGICAL: [CorpusPage; 1] = [CorpusPage {
    path: "/tailwind/logical",
    head: TAILWIND_HEAD,
    body: r##"<ul class="flex gap-2 p-6 font-sans">
  <li><a id="tw-name-en" dir="auto" href="#u1" class="inline-block border-s-4 border-transparent px-2 text-sky-800 hover:border-s-sky-500">Alice</a></li>
  <li><a id="tw-name-he" dir="auto" href="#u2" class="inline-block border-s-4 border-transparent px-2 text-sky-800 hover:border-s-sky-500">&#1513;&#1512;&#1492;</a></li>
  <li><a id="tw-name-en-2" dir="auto" href="#u3" class="inline-block border-s-4 border-transparent px-2 text-sky-800 hover:border-s-sky-500">Bob</a></li>
</ul>
<div class="grid grid-cols-[12rem_1fr] gap-4 p-6 font-sans">
  <div class="@container rounded border border-slate-200 p-3"><a id="tw-more-narrow" href="#n" class="text-sky-700 hover:underline @md:hover:bg-sky-50">All posts</a></div>
  <div class="@container rounded border border-slate-200 p-3"><a id="tw-more-wide" href="#w" class="text-sky-700 hover:underline @md:hover:bg-sky-50">All posts</a></div>
</div>"##,
    ready: "[tailwind()]",
    compared: &[
        "tw-name-en",
        "tw-name-he",
        "tw-name-en-2",
        "tw-more-narrow",
        "tw-more-wide",
    ],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn tailwind_logical_and_container_states_are_what_chromium_computes(pool: PgPool) {
    assert_as_chromium_alone(pool, &TAILWIND_LOGICAL).await;
}

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn states_in_a_scope_root_and_in_nested_media_are_what_chromium_computes(pool: PgPool) {
    let manifests = assert_as_chromium_alone(pool, &SITE_SCOPE).await;
    for (element, state) in [("post", "hover"), ("chip-1", "hover"), ("chip-1", "active")] {
        eprintln!(
            "{element} {state}: {:?}",
            captured_changes(&manifests[0], element, state)
        );
    }
}

/// Lit components of the page's own, nested: `x-action`'s button shows its
/// host's content through two slots, `x-card` passes its own slots down
/// into an `x-action` (a slot that is itself slotted), and `x-panel`
/// passes them down once more into an `x-card`; each re-exports the
/// inner button as a part of its own (`exportparts`), and the page styles
/// those parts under their states (`x-card::part(action):hover`,
/// `x-panel::part(panel-action):hover`). A card's host has a
/// `:focus-within` look, its title a link slotted into its header.
const NESTED_HEAD: &str = r#"<script type="importmap">{"imports": {
  "lit": "/npm/lit/index.js", "lit-html": "/npm/lit-html/lit-html.js", "lit-html/": "/npm/lit-html/",
  "lit-element/": "/npm/lit-element/", "@lit/reactive-element": "/npm/@lit/reactive-element/reactive-element.js"}}</script>
<script>
// The inner buttons by their outer host's id (BY_ID finds them).
const nameParts = () => {
  for (const host of document.querySelectorAll('x-card[id], x-panel[id]')) {
    deep(host.shadowRoot).find(el => el.localName === 'button').id = host.id + '-button';
  }
};
</script>
<script type="module">
import { LitElement, html, css } from 'lit';
class XAction extends LitElement {
  static styles = css`
    :host { display: inline-block }
    button { display: inline-flex; gap: 6px; align-items: center; padding: 6px 12px; border: 1px solid rgb(203, 213, 225);
             border-radius: 6px; background: white; color: rgb(30, 64, 175); font: inherit }
    button:hover { background-color: rgb(239, 246, 255) }
    button:focus-visible { outline: 2px solid rgb(37, 99, 235); outline-offset: 2px }
    button:active { background-color: rgb(219, 234, 254) }
    ::slotted(svg) { width: 16px; height: 16px; fill: currentcolor }`;
  render() { return html`<button part="button"><slot name="icon"></slot><span part="label"><slot></slot></span></button>`; }
}
class XCard extends LitElement {
  static styles = css`
    :host { display: block; max-width: 360px; margin: 8px 0; padding: 12px; border: 1px solid rgb(226, 232, 240); border-radius: 8px }
    :host(:focus-within) { border-color: rgb(37, 99, 235) }
    header { margin-bottom: 8px; font-weight: 600; color: rgb(15, 23, 42) }`;
  render() {
    return html`<header><slot name="title"></slot></header>
      <x-action exportparts="button: action, label: action-label"><slot name="icon" slot="icon"></slot><slot></slot></x-action>`;
  }
}
class XPanel extends LitElement {
  static styles = css`:host { display: block; padding: 8px; background: rgb(248, 250, 252) }`;
  render() {
    return html`<x-card exportparts="action: panel-action, action-label: panel-action-label">
      <slot name="title" slot="title"></slot><slot name="icon" slot="icon"></slot><slot></slot></x-card>`;
  }
}
customElements.define('x-action', XAction);
customElements.define('x-card', XCard);
customElements.define('x-panel', XPanel);
</script>
<style>
  body { margin: 24px; font: 16px/1.5 sans-serif }
  x-card a, x-panel a { color: rgb(15, 23, 42); text-decoration: none }
  x-card a:hover, x-panel a:hover { text-decoration-line: underline }
  x-card::part(action):hover { border-color: rgb(37, 99, 235) }
  x-card.danger::part(action-label) { color: rgb(185, 28, 28) }
  x-card.danger::part(action):hover { background-color: rgb(254, 242, 242) }
  x-panel::part(panel-action):hover { color: rgb(126, 34, 206) }
  x-panel::part(panel-action):focus-visible { box-shadow: 0 0 0 4px rgb(233, 213, 255) }
  b { font-weight: 800 }
</style>"#;

const NESTED: [CorpusPage; 1] = [CorpusPage {
    path: "/lit/nested",
    head: NESTED_HEAD,
    body: r##"<x-card id="card-1"><a id="card-1-title" slot="title" href="#one">First</a><svg id="card-1-icon" slot="icon" viewBox="0 0 24 24"><path d="M4 11h12l-5-5 1.4-1.4L20 12l-7.6 7.4L11 18l5-5H4z"/></svg>Open <b id="card-1-strong">one</b></x-card>
<x-card id="card-2"><a id="card-2-title" slot="title" href="#two">Second</a><svg id="card-2-icon" slot="icon" viewBox="0 0 24 24"><path d="M4 11h12l-5-5 1.4-1.4L20 12l-7.6 7.4L11 18l5-5H4z"/></svg>Open <b id="card-2-strong">two</b></x-card>
<x-card id="card-3" class="danger"><a id="card-3-title" slot="title" href="#three">Third</a>Delete <b id="card-3-strong">three</b></x-card>"##,
    ready: "[components().then(nameParts)]",
    compared: &[
        "card-1-button",
        "card-1-title",
        "card-2-button",
        "card-2-title",
        "card-3-button",
        "card-3-title",
    ],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn states_through_a_slot_passed_down_and_parts_exported_are_what_chromium_computes(pool: PgPool) {
    let manifests = assert_as_chromium_alone(pool, &NESTED).await;
    // The card's button shows the page's text through two slots; under the
    // exported part's hover (`x-card::part(action):hover`) its border
    // takes the page's colour.
    let hover = captured_changes(&manifests[0], "card-1-button", "hover").expect("the card button's hover");
    assert_eq!(
        hover["card-1-button"]["border-top-color"], "rgb(37, 99, 235)",
        "{hover:?}"
    );
}

/// The panel passes its content down twice more (into its card, then into
/// the card's action) and re-exports the button as `panel-action`, whose
/// hover the page recolours: the slotted text and icon inherit the colour
/// through the slots passed down, each an element of the flat tree under
/// the button whose computed colour changes.
const NESTED_PANEL: [CorpusPage; 1] = [CorpusPage {
    path: "/lit/panel",
    head: NESTED_HEAD,
    body: r##"<x-panel id="panel"><a id="panel-title" slot="title" href="#panel">Panel</a><svg id="panel-icon" slot="icon" viewBox="0 0 24 24"><path d="M4 11h12l-5-5 1.4-1.4L20 12l-7.6 7.4L11 18l5-5H4z"/></svg>Open <b id="panel-strong">panel</b></x-panel>"##,
    ready: "[components().then(nameParts)]",
    compared: &["panel-button", "panel-title"],
}];

#[sqlx::test(migrator = "page_import::MIGRATOR")]
async fn states_through_slots_passed_down_twice_are_what_chromium_computes(pool: PgPool) {
    let manifests = assert_as_chromium_alone(pool, &NESTED_PANEL).await;
    // The panel's button shows the page's text through three slots: under
    // the part's hover (the page's `x-panel::part(panel-action):hover`)
    // the slotted `b` takes the button's colour.
    let hover = captured_changes(&manifests[0], "panel-button", "hover").expect("the panel button's hover");
    assert_eq!(hover["panel-strong"]["color"], "rgb(126, 34, 206)", "{hover:?}");
}
