"""Bench R's consent corpus (issue 55): tests/fixtures/consent-corpus/, the
pages tests/api/consent_corpus.rs captures, served the way it serves them,
and the reader's first viewport that test compares the capture with.

`python bench/rebuild.py --worker AFTER [--before BEFORE] --pages corpus`
drives it (rebuild.py `corpus_main`); this module holds the pages, their
site, the reader's reference and the table.

- A banner page (a positive of consent_corpus/positives.rs) is captured
  with its banner and without it, in turn (first alternating run by run),
  `consent: decline` both times: the per-run difference is what the banner
  costs the capture. "Without its banner" is the fixture's
  `<!-- banner -->` part left out (the test's `/bare`) where it has one,
  else the article with no fixture at all.
- A page without a banner (a guard, and the bare article) is captured with
  `consent: keep` and `decline`, in turn: the per-run difference is what the
  consent handling costs it (SPEC §14: ≤ 50 ms).
- The reader: a plain Chromium (bench/rebuild/chrome.py, sandboxed as the
  worker's) at the test's device, the page loaded and its fonts ready, the
  banner's own reject control pressed as positives.rs presses it (or the
  page without its banner where it has none; a guard untouched), 1.5 s, two
  animation frames, a viewport screenshot. "viewport off" is the share of
  its pixels the top of the capture's screenshot shows otherwise (any
  channel off by more than 24), the test's `mismatch`; the test fails at 1 %.
"""

import base64
import http.server
import json
import os
import re
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "tests", "fixtures", "consent-corpus")
CMP = os.path.join(ROOT, "tests", "fixtures", "cmp", "node_modules")

# The test's DESKTOP device (consent_corpus.rs): width, height, scale, mobile.
DEVICE = (800, 600, 1.0, False)

# What the reader presses on each positive (positives.rs): labels (a text,
# or a CSS selector when it starts with #, . or [) pressed in turn; in the
# frame of the second site when the first item is "frame"; None: no reject
# control, the reference is the page without its banner.
READER = {
    "react-cookie-consent": ["I decline"],
    "orejime-forced-modal": [".orejime-PurposeToggles-disableAll", ".orejime-Modal-saveButton"],
    "osano-corner-box": ["Decline"],
    "osano-top-pushdown": ["Decline"],
    "vanilla-cookieconsent-two-layer": ["Manage preferences", "Reject all"],
    "vanilla-cookieconsent-cross-site-frame": ["frame", "Reject all"],
    "klaro-german": [".cn-decline"],
    "tarteaucitron-french": ["#tarteaucitronAllDenied2"],
    "porsche-open-shadow-root": ["Continue with technically required cookies only"],
    "cookies-eu-banner-spanish": ["Rechazar"],
    "cookie-notice-ok-only": None,
    "late-tag-manager": ["Reject all"],
    "german-bottom-bar": ["Nur notwendige"],
    "japanese-modal": ["拒否する"],
    "polish-modal": ["Odrzuć wszystkie"],
    "closed-shadow-sheet": ["Reject all"],
    "italian-top-bar": ["Rifiuta"],
    "consent-or-pay-wall": None,
    "ok-got-it-notice": None,
}
# guards.rs's reloading frame: judged on consent.ms alone (SPEC: one 1.5 s deadline).
NO_READER = ("reloading-frame",)
BARE_ARTICLE = "article"  # the wrapper page with no fixture: a page without a banner
# "Without its banner" where the fixture has no `<!-- banner -->` part but
# more than a banner: what of it stays (bench only). late-tag-manager's
# own feed answers after 3 s and keeps the capture waiting with or without
# the CMP its tag manager loads.
BARE = {
    "late-tag-manager": '<script>addEventListener("load", function () { fetch("/slow-feed.json"); });</script>',
}


def cases():
    """(name, kind) for every corpus page: `banner` (positives), `guard`,
    `frame` (the reloading frame), and the bare article as a guard."""
    names = sorted(f[:-5] for f in os.listdir(CORPUS) if f.endswith(".html") and not f.endswith(".frame.html"))
    out = [(n, "guard" if n.startswith("guard-") else "frame" if n in NO_READER else "banner") for n in names]
    unknown = [n for n, kind in out if kind == "banner" and n not in READER]
    if unknown:  # a new positive: it needs its reader's presses here (from positives.rs)
        raise SystemExit(f"consent corpus: no reader's presses for {unknown} in bench/rebuild/consent_corpus.py")
    # Banner pages first, then the reloading frame, then the pages without a banner.
    order = {"banner": 0, "frame": 1, "guard": 2}
    return sorted(out + [(BARE_ARTICLE, "guard")], key=lambda c: order[c[1]])


def fixture(name):
    if name == BARE_ARTICLE:
        return "<!-- banner --><!-- /banner -->"
    with open(os.path.join(CORPUS, name + ".html"), encoding="utf-8") as f:
        return f.read()


def bare_fixture(name):
    """`name`'s fixture for `/bare`: BARE's part where it has one."""
    return BARE.get(name, fixture(name))


def page(fixture_text, frame_origin, with_banner):
    """The page every fixture is added to. Mirrors `page()` in
    tests/api/consent_corpus.rs (keep the two alike): coloured blocks a
    banner or a backdrop would cover, the `loadTracker` that consent (and
    only consent) calls, and the page's own click log. Without its banner:
    the `<!-- banner -->` part left out, or (a fixture with no such part,
    bench only) the whole fixture (consent_corpus.py BARE says where
    not)."""
    text = fixture_text.replace("{{FRAME_ORIGIN}}", frame_origin)
    if not with_banner:
        if "<!-- banner -->" in text:
            before, rest = text.split("<!-- banner -->", 1)
            text = before + rest.split("<!-- /banner -->", 1)[1]
        else:
            text = ""
    m = re.search(r"<!-- lang: (.*?) -->", text)
    lang = m.group(1) if m else "en"
    inline, after = (text, "") if "<!-- in: article -->" in text else ("", text)
    return f"""<!doctype html><html lang="{lang}"><head><meta charset="utf-8">
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
        </body></html>"""


def library_files():
    """URL path → file under tests/fixtures/cmp/node_modules, as
    consent_corpus.rs `library_files`."""
    files = {
        "/lib/react.js": "react/umd/react.production.min.js",
        "/lib/react-dom.js": "react-dom/umd/react-dom.production.min.js",
        "/lib/react-cookie-consent.js": "react-cookie-consent/dist/react-cookie-consent.umd.js",
        "/lib/orejime.js": "orejime/dist/orejime-standard-en.js",
        "/lib/orejime.css": "orejime/dist/orejime-standard.css",
        "/lib/osano.js": "cookieconsent/build/cookieconsent.min.js",
        "/lib/osano.css": "cookieconsent/build/cookieconsent.min.css",
        "/lib/cc.js": "vanilla-cookieconsent/dist/cookieconsent.umd.js",
        "/lib/cc.css": "vanilla-cookieconsent/dist/cookieconsent.css",
        "/lib/klaro.js": "klaro/dist/klaro.js",
        "/lib/cookies-eu-banner.js": "cookies-eu-banner/dist/cookies-eu-banner.global.js",
        "/lib/cookie-notice.js": "cookie-notice/dist/cookie.notice.min.js",
    }
    for f in ("tarteaucitron.js", "tarteaucitron.services.js", "tarteaucitron.services.min.js",
              "lang/tarteaucitron.fr.js", "lang/tarteaucitron.fr.min.js", "css/tarteaucitron.css",
              "css/tarteaucitron.min.css"):
        files[f"/tac/{f}"] = f"tarteaucitronjs/{f}"
    stencil = "@porscheofficial/cookie-consent-banner/dist/cookie-consent-banner"
    for name in os.listdir(os.path.join(CMP, stencil)):
        if name.endswith(".js"):
            files[f"/lib/porsche/{name}"] = f"{stencil}/{name}"
    return files


def ensure_libraries(log):
    if os.path.isfile(os.path.join(CMP, "orejime", "dist", "orejime-standard-en.js")) and \
            os.path.isdir(os.path.join(CMP, "@porscheofficial")):
        return
    import subprocess
    log("installing the CMP libraries (scripts/lib.sh ensure_cmp_fixtures)")
    subprocess.run(["bash", "-c", "source scripts/lib.sh && ensure_cmp_fixtures"], cwd=ROOT, check=True)


class CorpusSite:
    """One host: the current case's page at `/` and without its banner at
    `/bare`, `/tracker.js` (its hits counted), `/slow-feed.json` answering
    after 3 s, the libraries and the corpus's frame documents — as
    consent_corpus.rs `site`. `frame_origin` (the second site's) is what
    `{{FRAME_ORIGIN}}` becomes."""

    def __init__(self, host):
        self.case = None
        self.frame_origin = ""
        self.tracker_hits = 0
        files = {path: os.path.join(CMP, f) for path, f in library_files().items()}
        for f in os.listdir(CORPUS):
            if f.endswith(".frame.html"):
                files["/" + f] = os.path.join(CORPUS, f)
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = urllib.parse.urlsplit(self.path).path
                status, ctype, body = 200, "text/html; charset=utf-8", None
                if path in ("/", "/bare") and site.case:
                    text = fixture(site.case) if path == "/" else bare_fixture(site.case)
                    body = page(text, site.frame_origin, path == "/" or site.case in BARE).encode()
                elif path == "/tracker.js":
                    site.tracker_hits += 1
                    ctype, body = "application/javascript", b"document.documentElement.dataset.tracked = 'yes';"
                elif path == "/slow-feed.json":
                    time.sleep(3)
                    ctype, body = "application/json", b"[]"
                elif path in files:
                    with open(files[path], "rb") as f:
                        body = f.read()
                    ctype = {"css": "text/css", "html": "text/html; charset=utf-8"}.get(
                        path.rsplit(".", 1)[-1], "application/javascript")
                if body is None:
                    status, ctype, body = 404, "text/plain", b""
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.addr = f"{host}:{self.server.server_address[1]}"
        self.origin = f"http://{self.addr}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


# ---------------------------------------------------------------- the reader

def _is_selector(label):
    return label[:1] in ("#", ".", "[")


# helpers/press.rs `press`, in the page's main world: the first shown control
# `label` means, in the document or any open shadow root (the closed
# one's through DOM.getDocument, below), a 1 s reading pause, a click.
FIND = """(label, isSelector) => {
  const all = [];
  (function walk(root) {
    for (const el of root.querySelectorAll('*')) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot); }
  })(document);
  const scopes = [document, ...all.filter(e => e.shadowRoot).map(e => e.shadowRoot)];
  const found = isSelector ? scopes.flatMap(s => [...s.querySelectorAll(label)])
    : all.filter(e => (e.tagName === 'BUTTON' || e.tagName === 'A' || e.getAttribute('role') === 'button')
                      && (function text(n) { return [...(n.shadowRoot ? n.shadowRoot.childNodes : []), ...n.childNodes]
                            .map(c => c.nodeType === 3 ? c.nodeValue : c.nodeType === 1 ? text(c) : '').join(''); })(e)
                           .trim().includes(label));
  return found.find(e => e.checkVisibility({opacityProperty: true, visibilityProperty: true})
                         && e.getClientRects().length > 0) || null;
}"""


def _press(chrome, session, label):
    """Presses `label` as press.rs does, closed shadow roots included (their
    nodes through `DOM.getDocument` with `pierce`)."""
    until = time.monotonic() + 5
    while True:
        answer = chrome.call("Runtime.evaluate", session=session, returnByValue=True, expression=(
            f"(() => {{ const b = ({FIND})({json.dumps(label)}, {json.dumps(_is_selector(label))});"
            " if (b) { window.__press = b; return true; } return false; })()"))
        if answer["result"].get("value"):
            time.sleep(1.0)
            chrome.call("Runtime.evaluate", session=session, expression="window.__press.click()")
            return
        # Closed shadow roots: DevTools sees them, a page's script does not.
        doc = chrome.call("DOM.getDocument", session=session, depth=-1, pierce=True)["root"]
        for node_id in _pierced_controls(chrome, session, doc, label):
            obj = chrome.call("DOM.resolveNode", session=session, nodeId=node_id)["object"]["objectId"]
            shown = chrome.call("Runtime.callFunctionOn", session=session, objectId=obj, returnByValue=True,
                                functionDeclaration="function () { return this.checkVisibility({opacityProperty: "
                                "true, visibilityProperty: true}) && this.getClientRects().length > 0; }")
            if shown["result"].get("value"):
                time.sleep(1.0)
                chrome.call("Runtime.callFunctionOn", session=session, objectId=obj,
                            functionDeclaration="function () { this.click(); }")
                return
        if time.monotonic() > until:
            raise RuntimeError(f"no shown control {label!r} to press")
        time.sleep(0.1)


def _pierced_controls(chrome, session, root, label):
    nodes = []

    def walk(n):
        nodes.append(n)
        for key in ("shadowRoots", "children"):
            for c in n.get(key) or []:
                walk(c)
        if isinstance(n.get("contentDocument"), dict):
            walk(n["contentDocument"])

    def text(n):
        out = []

        def t(m):
            if m.get("nodeType") == 3:
                out.append(m.get("nodeValue", ""))
            for key in ("shadowRoots", "children"):
                for c in m.get(key) or []:
                    t(c)
        t(n)
        return "".join(out)

    walk(root)
    if _is_selector(label):
        found = []
        for scope in (n for n in nodes if n.get("nodeType") in (9, 11)):
            found += chrome.call("DOM.querySelectorAll", session=session, nodeId=scope["nodeId"],
                                 selector=label).get("nodeIds", [])
        return found
    ids = []
    for n in nodes:
        attrs = n.get("attributes") or []
        role = dict(zip(attrs[::2], attrs[1::2])).get("role")
        if n.get("nodeType") == 1 and (n.get("nodeName") in ("BUTTON", "A") or role == "button") \
                and label in text(n).strip():
            ids.append(n["nodeId"])
    return ids


def _press_in_frame(chrome, frame_prefix, label):
    """press.rs `press_in_frame`: the control in the other site's frame,
    through that frame's own target."""
    until = time.monotonic() + 10
    while True:
        targets = chrome.call("Target.getTargets")["targetInfos"]
        frame = next((t for t in targets if t["type"] == "iframe" and t["url"].startswith(frame_prefix)), None)
        if frame:
            break
        if time.monotonic() > until:
            raise RuntimeError(f"no frame at {frame_prefix}")
        time.sleep(0.1)
    session = chrome.call("Target.attachToTarget", targetId=frame["targetId"], flatten=True)["sessionId"]
    _press(chrome, session, label)


def reader_view(url, labels, frame_prefix, wait_for=None):
    """The reader's first viewport of `url` (PNG bytes): a plain Chromium
    (pixels.rs `plain_browser`), `labels` pressed, 1.5 s, two frames."""
    import sys
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    from chrome import Chrome
    width, height, scale, mobile = DEVICE
    chrome = Chrome()
    try:
        s = chrome.session
        chrome.page("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=scale,
                    mobile=mobile)
        chrome.page("Emulation.setScrollbarsHidden", hidden=True)
        chrome.page("Page.navigate", url=url)
        until = time.monotonic() + 20
        ready = "document.readyState === 'complete' && document.fonts.status === 'loaded'"
        while not chrome.page("Runtime.evaluate", expression=ready, returnByValue=True)["result"].get("value"):
            if time.monotonic() > until:
                raise RuntimeError(f"{url} did not load")
            time.sleep(0.05)
        if wait_for:
            until = time.monotonic() + 10
            while not chrome.page("Runtime.evaluate", expression=wait_for, returnByValue=True)["result"].get("value"):
                if time.monotonic() > until:
                    break
                time.sleep(0.05)
        if labels:
            if labels[0] == "frame":
                for label in labels[1:]:
                    _press_in_frame(chrome, frame_prefix, label)
            else:
                for label in labels:
                    _press(chrome, s, label)
            time.sleep(1.5)
        chrome.page("Runtime.evaluate", awaitPromise=True, expression=(
            "new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"))
        shot = chrome.page("Page.captureScreenshot", format="png")
        return base64.b64decode(shot["data"])
    finally:
        chrome.close()


# ---------------------------------------------------------------- the table

def pct(x):
    return "–" if x is None else f"{100 * x:.2f} %"


def ms(x):
    return "–" if x is None else f"{1000 * x:+.0f}"


def consent_cell(c):
    if not c:
        return "–"
    return f"{c.get('outcome')} · {c.get('cmp') or 'no cmp'} · {c.get('ms')}"


def consents_cell(consents):
    """The manifests' consents of a page: outcome · cmp · ms (median, and
    the range when runs differ), one line per (outcome, cmp)."""
    import statistics
    groups = {}
    for c in consents:
        c = c or {}
        groups.setdefault((c.get("outcome"), c.get("cmp") or "no cmp"), []).append(c.get("ms") or 0)
    out = []
    for (outcome, cmp), values in groups.items():
        spread = f" ({min(values)}–{max(values)})" if min(values) != max(values) else ""
        times = f" ×{len(values)}" if len(groups) > 1 else ""
        out.append(f"{outcome} · {cmp} · {statistics.median(values):.0f}{spread}{times}")
    return "<br>".join(out) or "–"


def merge(parts):
    """One page's results from several runs of the bench (labels): the runs,
    consents and timings pooled, the differences recomputed; the viewport
    and tracker of the last."""
    import statistics
    out = json.loads(json.dumps(parts[-1]))
    for name, w in out.items():
        if not isinstance(w, dict):
            continue
        ws = [p[name] for p in parts if isinstance(p.get(name), dict)]
        w["runs"] = {k: [x for p in ws for x in p["runs"].get(k, [])] for k in w["runs"]}
        w["consents"] = [c for p in ws for c in p["consents"]]
        w["tracker"] = sum(p.get("tracker", 0) for p in ws)
        w["diffs"] = [d for p in ws for d in p["diffs"]]
        w["cost"] = statistics.median(w["diffs"])
    return out


def table(results, labels):
    """Markdown: the per-page table, before and after, and the cost figures."""
    import statistics
    lines = []
    head = "| page | kind |" + "".join(
        f" consent ({l}) | viewport off ({l}) | capture ms ({l}) | cost ms ({l}) |" for l in labels)
    lines += [head, "|---|---|" + "---|---|---:|---|" * len(labels)]
    for r in results:
        cells = f"| {r['name']} | {r['kind']} |"
        for l in labels:
            w = r.get(l)
            if not w:
                cells += " – | – | – | – |"
                continue
            with_banner = w["runs"].get("/ decline") or []
            tracker = f"<br>tracker fetched ×{w['tracker']}" if w.get("tracker") else ""
            cells += (f" {consents_cell(w['consents'])}{tracker} | {pct(w.get('off'))} |"
                      f" {1000 * statistics.median(with_banner):,.0f} |"
                      f" **{ms(w.get('cost'))}** ({', '.join(ms(d) for d in w.get('diffs') or [])}) |")
        lines.append(cells)
    lines.append("")
    for l in labels:
        for kind, what in (("banner", "a banner page over the same page without its banner (both declining)"),
                           ("guard", "a page without a banner, `decline` over `keep`")):
            rows = [r for r in results if r["kind"] == kind and r.get(l) and r[l].get("cost") is not None]
            if rows:
                costs = [r[l]["cost"] for r in rows]
                worst = max(rows, key=lambda r: r[l]["cost"])
                lines.append(f"- {l}: {what}: median **{1000 * statistics.median(costs):+.0f} ms**, worst "
                             f"{1000 * worst[l]['cost']:+.0f} ms ({worst['name']}), {len(rows)} pages")
        judged = [r for r in results if r.get(l) and r[l].get("off") is not None]
        if judged:
            ok = [r for r in judged if r[l]["off"] < 0.01]
            lines.append(f"- {l}: first viewport within 1 % of the reader's on {len(ok)} of {len(judged)} pages "
                         f"({len([r for r in ok if r['kind'] == 'banner'])} of "
                         f"{len([r for r in judged if r['kind'] == 'banner'])} banner pages)")
    return "\n".join(lines)
