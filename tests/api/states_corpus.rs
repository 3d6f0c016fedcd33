//! Interaction states (SPEC §11) on pages built from real CSS and component
//! libraries the way the web uses them: Tailwind CSS compiled in the page
//! by its run-time compiler (`@tailwindcss/browser`, the "Play CDN"),
//! Shoelace's web components (Lit, states inside open shadow roots, styled
//! from the page through `::part()`), a Lit component of the page's own
//! (Lit from an import map), Bootstrap, and daisyUI on Tailwind.
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

/// Lit's packages, served at `/npm/` for a page's import map ([`LIT_HEAD`]).
const LIT: [&str; 4] = ["lit", "lit-html", "lit-element", "@lit/reactive-element"];

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
    for (path, file) in LIBRARIES {
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
            |file| file.extension().is_some_and(|e| e == "js"),
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
