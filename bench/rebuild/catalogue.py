"""The pages bench R captures and rebuilds, and what they need on disk.

Own pages (bench/rebuild/pages/): one per SPEC §11 rule, small, committed.
Real-world pages: code and CSS shipped by registry packages, unchanged, with
a small wrapper page of ours where the package has no page of its own. They
are fetched once into bench/out/rebuild-cache/ (git-ignored); a page whose
package cannot be had (offline, registry down) is left out with a line on
stderr, never a failure. `--smoke` uses two own pages and fetches nothing.
Consent pages (bench/rebuild/consent/, issue 40): tests/api/consent.rs's
pages, with the consent-management libraries it installs, pinned, in
tests/fixtures/cmp/node_modules (`--pages consent`).
"""

import collections
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

Page = collections.namedtuple("Page", "name path needs")

# name, path ({other} = the cross-origin site's origin, URL-encoded), what it needs
OWN = [
    Page("generated", "/generated.html", None),          # ::before/::after/::marker/::first-letter
    Page("text-transform", "/text-transform.html", None),
    Page("shadow-form", "/shadow-form.html", None),       # closed shadow root, form values set by script
    Page("srcset", "/srcset.html", None),
    Page("background", "/background.html", None),
    Page("scroll", "/scroll.html", None),
    Page("stacking", "/stacking.html", None),
    Page("reveal", "/reveal.html", None),                 # IntersectionObserver far below the fold
    Page("animation", "/animation.html", None),           # 30 s CSS animation, an infinite one
    Page("canvas", "/canvas.html", None),                 # chart drawn by script after load
    Page("fonts", "/fonts.html", None),                   # web fonts and a fallback font
    Page("iframe", "/iframe.html?frame={other}%2Fframe.html", None),
]
SMOKE = ("generated", "canvas")

# Exact versions, so that before and after capture the same pages.
NPM_PACKAGES = ["@fortawesome/fontawesome-free@6.7.2", "chart.js@4.6.1", "mermaid@11.17.2", "swagger-ui-dist@5.35.0",
                "bootstrap@5.3.9", "@shoelace-style/shoelace@2.20.1", "aos@2.3.4",
                "three@0.187.0", "swiper@14.4.0", "headroom.js@0.12.0", "video.js@8.24.1",
                # Issue 58: Start Bootstrap landing templates, unchanged.
                "startbootstrap-grayscale@7.0.6", "startbootstrap-freelancer@7.0.7",
                "startbootstrap-new-age@6.0.7", "startbootstrap-business-casual@7.0.9",
                "startbootstrap-agency@7.0.12", "startbootstrap-creative@7.0.7",
                "startbootstrap-landing-page@6.0.6", "startbootstrap-resume@7.0.6"]

REAL = [
    Page("fontawesome", "/real/fontawesome.html", "npm"),
    Page("chartjs", "/real/chartjs.html", "npm"),
    Page("mermaid", "/real/mermaid.html", "npm"),
    Page("swagger-ui", "/real/swagger-ui.html", "npm"),
    Page("bootstrap", "/real/bootstrap.html", "npm"),
    Page("shoelace", "/real/shoelace.html", "npm"),
    Page("aos", "/real/aos.html", "npm"),
    Page("rustdoc", "/rustdoc/itoa/struct.Buffer.html", "rustdoc"),
    Page("sphinx", "/sphinx/index.html", "sphinx"),
    # Issue 34: a page as a reader sees it.
    Page("rtl", "/real/rtl.html", "npm"),                 # Bootstrap's RTL build, Arabic, shorter than the viewport
    Page("headroom", "/real/headroom.html", "npm"),       # header that hides on scroll, back-to-top, sticky TOC
    Page("three", "/real/three.html", "npm"),             # three.js render loop that never stops
    Page("swiper", "/real/swiper.html", "npm"),           # Swiper carousel, autoplay every 2.5 s
    Page("videojs", "/real/videojs.html", "npm+video"),   # video.js, muted looping background video
    # Issue 31: tall documentation pages with scroll listeners, from the Rust
    # toolchain's own docs (rustup's rust-docs component), and bench W's
    # 25 000-node page.
    Page("mdbook-strings", "/rust-docs/book/ch08-02-strings.html", "rust-docs"),     # mdBook, the Rust book
    Page("mdbook-ownership", "/rust-docs/book/ch04-01-what-is-ownership.html", "rust-docs"),
    Page("mdbook-manifest", "/rust-docs/cargo/reference/manifest.html", "rust-docs"),  # mdBook, the Cargo book
    Page("rustdoc-option", "/rust-docs/core/option/enum.Option.html", "rust-docs"),    # taller than 16 384 px
    Page("nodes-25000", "/nodes/25000.html", "nodes"),
    # Issue 58: landing templates as real sites deploy them (their CDN fonts
    # and scripts fail here: nothing outside resolves).
    Page("grayscale", "/npm/startbootstrap-grayscale/dist/index.html", "npm"),      # navbar shrinks on scroll, 100vh masthead
    Page("freelancer", "/npm/startbootstrap-freelancer/dist/index.html", "npm"),    # navbar shrinks on scroll
    Page("new-age", "/npm/startbootstrap-new-age/dist/index.html", "npm"),          # SVG gradient with CSS stop-color
    Page("business-casual", "/npm/startbootstrap-business-casual/dist/index.html", "npm"),  # fixed background
    Page("agency", "/npm/startbootstrap-agency/dist/index.html", "npm"),
    Page("creative", "/npm/startbootstrap-creative/dist/index.html", "npm"),
    Page("landing-page", "/npm/startbootstrap-landing-page/dist/index.html", "npm"),
    Page("resume", "/npm/startbootstrap-resume/dist/index.html", "npm"),
]
# Issue 58's landing templates (`--pages landing`).
LANDING = ("grayscale", "freelancer", "new-age", "business-casual", "agency", "creative", "landing-page", "resume")
# The moving pages and the right-to-left one: the capture-speed comparison
# with Chromium's one-shot (`--pages reader`).
READER = ("rtl", "headroom", "three", "swiper", "videojs")
# The capture-speed set of issue 31 (`--pages speed`): tall documentation
# pages with scroll listeners, small real pages and a 25 000-node page.
# Issue 40: tests/api/consent.rs's pages, each with a real CMP library
# (tests/fixtures/cmp, installed by scripts/lib.sh ensure_cmp_fixtures);
# `--pages consent`. DECLINE: what a reader clicks to decline each banner
# (the button whose text holds it, or the element a `#` selector names), as
# the test's `click()` does; bench/oneshot.py `decline_cookies` clicks it to
# learn the cookie the library stores.
CONSENT = [
    Page("consent-vanilla-bar", "/consent/vanilla-bar.html", "cmp"),      # vanilla-cookieconsent 3.1.0, bottom bar
    Page("consent-vanilla-modal", "/consent/vanilla-modal.html", "cmp"),  # its centered modal, backdrop, scroll lock
    Page("consent-klaro", "/consent/klaro.html", "cmp"),                  # Klaro 0.7.22, corner notice
    Page("consent-osano", "/consent/osano.html", "cmp"),                  # Osano cookieconsent 3.1.1, bottom bar
    Page("consent-tarteaucitron", "/consent/tarteaucitron.html", "cmp"),  # tarteaucitron 1.34.0, bottom bar
    Page("consent-bare", "/consent/bare.html", None),                     # the same article, no CMP at all
]
DECLINE = {"consent-vanilla-bar": "Reject all", "consent-vanilla-modal": "Reject all", "consent-klaro": "I decline",
           "consent-osano": "Decline", "consent-tarteaucitron": "#tarteaucitronAllDenied2"}
SPEED = ("mdbook-strings", "mdbook-ownership", "mdbook-manifest", "rustdoc-option", "rustdoc", "sphinx",
         "bootstrap", "shoelace", "fontawesome", "swagger-ui", "rtl", "nodes-25000")


def cache_dir(root):
    return os.path.join(root, "bench", "out", "rebuild-cache")


def cmp_modules(root):
    return os.path.join(root, "tests", "fixtures", "cmp", "node_modules")


def mounts(root):
    cache = cache_dir(root)
    cmp = cmp_modules(root)
    return [mount for mount in [
        ("/", os.path.join(HERE, "pages")),
        ("/npm", os.path.join(cache, "npm", "node_modules")),
        ("/rustdoc", os.path.join(cache, "rustdoc", "doc")),
        ("/sphinx", os.path.join(cache, "sphinx", "html")),
        ("/video", os.path.join(cache, "video")),
        ("/openapi.json", os.path.join(root, "openapi.json")),
        ("/sysfonts", "/usr/share/fonts"),
        ("/rust-docs", rust_docs()),
        ("/nodes", os.path.join(cache, "nodes")),
        ("/consent", os.path.join(HERE, "consent")),
        ("/consent/cc", os.path.join(cmp, "vanilla-cookieconsent", "dist")),
        ("/consent/klaro", os.path.join(cmp, "klaro", "dist")),
        ("/consent/osano", os.path.join(cmp, "cookieconsent", "build")),
        ("/consent/tac", os.path.join(cmp, "tarteaucitronjs")),
    ] if mount[1]]


def rust_docs():
    """The toolchain's own HTML docs (the Rust and Cargo books, std), or ''."""
    try:
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return os.path.join(sysroot, "share", "doc", "rust", "html") if sysroot else ""


def run(command, log, **kw):
    started = __import__("time").monotonic()
    result = subprocess.run(command, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        log(f"{' '.join(command[:4])}… failed ({result.returncode}): {result.stderr.strip()[-400:]}")
        return False
    log(f"{' '.join(command[:4])}… done in {__import__('time').monotonic() - started:.0f} s")
    return True


def ensure_npm(root, log):
    folder = os.path.join(cache_dir(root), "npm")
    stamp = os.path.join(folder, "installed")
    wanted = "\n".join(NPM_PACKAGES)
    if os.path.isfile(stamp) and open(stamp).read() == wanted:
        return True
    if not shutil.which("npm"):
        log("npm not found: the npm pages are left out")
        return False
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "package.json"), "w") as f:
        f.write('{"name": "bench-rebuild-pages", "private": true}\n')
    if os.path.isdir(os.path.join(folder, "node_modules")):
        shutil.rmtree(os.path.join(folder, "node_modules"))
    ok = run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
              *NPM_PACKAGES], log, cwd=folder, timeout=600)
    if ok:
        with open(stamp, "w") as f:
            f.write(wanted)
    return ok


# A background clip recorded by Chromium's own MediaRecorder from a canvas:
# 6 s of drifting colour and shapes at 30 frames a second, 1280x720 VP8.
RECORD_CLIP = """new Promise((done, fail) => {
  const c = document.createElement('canvas');
  c.width = 1280; c.height = 720;
  const ctx = c.getContext('2d');
  const recorder = new MediaRecorder(c.captureStream(30), { mimeType: 'video/webm;codecs=vp8', videoBitsPerSecond: 2e6 });
  const chunks = [];
  recorder.ondataavailable = e => chunks.push(e.data);
  recorder.onerror = fail;
  recorder.onstop = () => {
    const reader = new FileReader();
    reader.onload = () => done(reader.result.split(',')[1]);
    reader.readAsDataURL(new Blob(chunks, { type: 'video/webm' }));
  };
  let frame = 0;
  const draw = () => {
    frame += 1;
    const g = ctx.createLinearGradient(0, 0, 1280, 720);
    g.addColorStop(0, `hsl(${(frame * 2) % 360}, 60%, 35%)`);
    g.addColorStop(1, `hsl(${(frame * 2 + 120) % 360}, 60%, 25%)`);
    ctx.fillStyle = g;
    ctx.fillRect(0, 0, 1280, 720);
    for (let i = 0; i < 6; i++) {
      ctx.fillStyle = `rgba(255, 255, 255, ${0.15 + i * 0.05})`;
      ctx.beginPath();
      ctx.arc((frame * (3 + i) + i * 200) % 1380 - 50, 360 + Math.sin(frame / 20 + i) * 200, 40 + i * 10, 0, 7);
      ctx.fill();
    }
  };
  draw();
  recorder.start();
  const timer = setInterval(draw, 33);
  setTimeout(() => { clearInterval(timer); recorder.stop(); }, 6000);
})"""


def ensure_video(root, log):
    """The clip the video.js page plays, recorded once (no encoder needed)."""
    folder = os.path.join(cache_dir(root), "video")
    clip = os.path.join(folder, "clip.webm")
    if os.path.isfile(clip):
        return True
    try:
        import base64
        from chrome import Chrome
        chrome = Chrome()
        try:
            answer = chrome.page("Runtime.evaluate", expression=RECORD_CLIP, awaitPromise=True, returnByValue=True)
        finally:
            chrome.close()
        data = base64.b64decode(answer["result"]["value"])
    except Exception as e:  # noqa: BLE001 -- any failure leaves the page out
        log(f"recording the video clip failed: {e}")
        return False
    os.makedirs(folder, exist_ok=True)
    with open(clip, "wb") as f:
        f.write(data)
    log(f"video clip recorded: {len(data):,} bytes")
    return True


def ensure_rustdoc(root, log):
    """`cargo doc --no-deps` of itoa (in Cargo.lock, no dependencies of its
    own), in a target folder of its own so the workspace's is not touched."""
    folder = os.path.join(cache_dir(root), "rustdoc")
    if os.path.isfile(os.path.join(folder, "doc", "itoa", "struct.Buffer.html")):
        return True
    if not shutil.which("cargo"):
        log("cargo not found: the rustdoc page is left out")
        return False
    return run(["cargo", "doc", "--no-deps", "-p", "itoa", "--target-dir", folder, "--offline", "--quiet"],
               log, cwd=root, timeout=600)


def ensure_sphinx(root, log):
    """A tiny Sphinx doc set (bench/rebuild/sphinx/) built with Sphinx from PyPI."""
    folder = os.path.join(cache_dir(root), "sphinx")
    if os.path.isfile(os.path.join(folder, "html", "index.html")):
        return True
    python = sys.executable
    if subprocess.run([python, "-c", "import sphinx"], capture_output=True).returncode != 0:
        if not run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "sphinx>=7,<9"],
                   log, timeout=600):
            return False
    return run([python, "-m", "sphinx", "-q", "-b", "html", os.path.join(HERE, "sphinx"),
                os.path.join(folder, "html")], log, timeout=600)


def ensure_rust_docs(root, log):
    """rustup's rust-docs component (in its default profile); installed
    when missing, left out when that fails."""
    if os.path.isfile(os.path.join(rust_docs(), "book", "ch08-02-strings.html")):
        return True
    return bool(shutil.which("rustup")) and run(["rustup", "component", "add", "rust-docs"], log, timeout=600) \
        and os.path.isfile(os.path.join(rust_docs(), "book", "ch08-02-strings.html"))


def ensure_nodes(root, log):
    """Bench W's 25 000-node page, written once."""
    folder = os.path.join(cache_dir(root), "nodes")
    path = os.path.join(folder, "25000.html")
    if not os.path.isfile(path):
        sys.path.insert(0, os.path.dirname(HERE))
        import worker
        os.makedirs(folder, exist_ok=True)
        with open(path, "wb") as f:
            f.write(worker.page(25000))
    return True


def ensure_cmp(root, log):
    """The consent tests' CMP libraries (tests/fixtures/cmp), installed by
    scripts/lib.sh's ensure_cmp_fixtures (`npm ci`) when missing."""
    wanted = [os.path.join(cmp_modules(root), p) for p in (
        "vanilla-cookieconsent/dist/cookieconsent.umd.js", "klaro/dist/klaro.js",
        "cookieconsent/build/cookieconsent.min.js", "tarteaucitronjs/tarteaucitron.js")]
    if all(os.path.isfile(p) for p in wanted):
        return True
    return run(["bash", "-c", "source scripts/lib.sh && ensure_cmp_fixtures"], log, cwd=root, timeout=600) \
        and all(os.path.isfile(p) for p in wanted)


def catalogue(root, smoke, log, names=None):
    """The pages to capture: `names` (all when None), or the smoke pages;
    fetches and builds what the wanted real-world pages need."""
    if smoke:
        return [p for p in OWN if p.name in SMOKE]
    if names is not None and "reader" in names:
        names = list(names) + list(READER)
    if names is not None and "speed" in names:
        names = list(names) + list(SPEED)
    if names is not None and "consent" in names:
        names = list(names) + [p.name for p in CONSENT]
    if names is not None and "landing" in names:
        names = list(names) + list(LANDING)
    pages = [p for p in OWN + REAL + CONSENT if names is None or p.name in names]
    ensure = {"npm": ensure_npm, "rustdoc": ensure_rustdoc, "sphinx": ensure_sphinx, "video": ensure_video,
              "rust-docs": ensure_rust_docs, "nodes": ensure_nodes, "cmp": ensure_cmp}
    needs = lambda p: p.needs.split("+") if p.needs else []  # noqa: E731
    ready = {need: ensure[need](root, log) for need in sorted({n for p in pages for n in needs(p)})}
    left_out = [p.name for p in pages if not all(ready[n] for n in needs(p))]
    if left_out:
        log(f"left out (not available): {', '.join(left_out)}")
    return [p for p in pages if all(ready[n] for n in needs(p))]
