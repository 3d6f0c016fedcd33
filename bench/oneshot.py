"""Chromium's own one-shot screenshot: the floor a capture is compared with
(bench W and bench R); and the same one-shot driven over CDP with the
capture's device, for a phone (bench R `--device phone`); with cookies
stored first, for a page whose consent banner was declined (bench R's
consent pages, issue 40: `decline_cookies` learns them)."""

import base64
import os
import subprocess
import sys
import tempfile
import time

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/lib/chromium/chromium")


def oneshot(url, width, height, scale, sandboxed=True):
    """Seconds `chromium --headless --screenshot` takes on `url` (one
    viewport, a cold browser: that is what the command does). Sandboxed: as
    `nobody` (Chromium cannot sandbox as root) with its own directory, the
    way the worker runs it; else `--no-sandbox` as whoever runs this."""
    with tempfile.TemporaryDirectory() as home:
        profile, out = f"{home}/profile", f"{home}/out"
        os.makedirs(profile)
        os.makedirs(out)
        command = [CHROMIUM, "--headless", "--disable-gpu", "--disable-dev-shm-usage",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
                   f"--window-size={width},{height}", f"--force-device-scale-factor={scale}",
                   f"--screenshot={out}/floor.png", url]
        env = None
        if sandboxed:
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TMPDIR": home}
            if os.geteuid() == 0:
                for d in (home, profile, out):
                    os.chown(d, 65534, 65534)
                command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
        else:
            command.insert(2, "--no-sandbox")
        started = time.monotonic()
        subprocess.run(command, check=True, capture_output=True, timeout=120, env=env)
        return time.monotonic() - started


# What the worker sends as a phone (crates/capture-worker/src/emulation.rs):
# Chrome on Android, its version reduced to the major.
ANDROID_USER_AGENT = ("Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
                      "Chrome/{major}.0.0.0 Mobile Safari/537.36")


def oneshot_device(url, width, height, scale, mobile, png_path=None, cookies=None):
    """Seconds from starting a fresh Chromium to one viewport's PNG of
    `url` with the capture's device: a minimal CDP script, since
    `--screenshot` cannot emulate a phone. Chromium is started as
    bench/rebuild/chrome.py starts it (as `nobody` when root, CDP over a
    pipe, a throwaway profile); the page gets the device metrics the worker
    sets (`mobile`, the screen as large as the viewport) and, when
    `mobile`, touch with five points and the worker's Android user agent
    with this browser's major version; then it navigates, waits for the
    load event and takes `Page.captureScreenshot` of the viewport. The
    browser is closed after the clock stops (`--screenshot`'s time includes
    its exit). The PNG is written to `png_path` when given. `cookies`
    (`Network.getCookies` objects, e.g. `decline_cookies`'s) are stored in
    the fresh profile before the navigation (`Network.setCookies`, inside
    the timed span): a page whose CMP finds its decline stored shows no
    banner, the floor for a capture that declines it."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rebuild")
    if here not in sys.path:
        sys.path.insert(0, here)
    from chrome import Chrome

    chrome = Chrome()
    try:
        chrome.page("Page.enable")
        chrome.page("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=scale,
                    mobile=mobile, screenWidth=width, screenHeight=height)
        if mobile:
            chrome.page("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=5)
            chrome.page("Emulation.setUserAgentOverride",
                        userAgent=ANDROID_USER_AGENT.format(major=chrome.major_version()),
                        acceptLanguage="en-US,en", platform="Linux armv8l")
        if cookies:
            chrome.page("Network.setCookies", cookies=[settable(c) for c in cookies])
        chrome.events.clear()
        chrome.page("Page.navigate", url=url)
        chrome.wait_event("Page.loadEventFired")
        shot = chrome.page("Page.captureScreenshot", format="png")
        seconds = time.monotonic() - chrome.started
    finally:
        chrome.close()
    if png_path:
        with open(png_path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    return seconds


def settable(cookie):
    """A `Network.getCookies` cookie as `Network.setCookies` takes it."""
    keys = ("name", "value", "domain", "path", "secure", "httpOnly", "sameSite", "expires")
    out = {k: cookie[k] for k in keys if k in cookie}
    if cookie.get("session") or out.get("expires", 0) <= 0:
        out.pop("expires", None)
    return out


# A reader's click, as tests/api/consent.rs `click()` makes it: the first
# button (or link, or role=button) whose text holds the label, or the
# element a `#` selector names, a second after it shows; 5 s of polling.
CLICK = """new Promise(done => { const until = Date.now() + 5000; (function look() { const b = %s;
  if (b && b.offsetParent !== null) setTimeout(() => { b.click(); done('clicked'); }, 1000);
  else if (Date.now() > until) done('no button'); else setTimeout(look, 50); })(); })"""


def decline_cookies(url, label, width, height, scale, mobile, settle=1.5):
    """The cookies a CMP stores when a reader declines its banner: `url` in
    a fresh Chromium (as `oneshot_device` starts it, same device metrics),
    the load event, a click on the library's own decline button `label`
    (see CLICK), `settle` seconds, then every cookie of the browser
    (`Network.getCookies` for the page's URL). Raises when no button was
    clicked. Returns (cookies, whether the button still shows after them)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rebuild")
    if here not in sys.path:
        sys.path.insert(0, here)
    import json
    from chrome import Chrome

    find = (f"document.querySelector({json.dumps(label)})" if label.startswith("#") else
            "[...document.querySelectorAll('button, a, [role=button]')]"
            f".find(e => e.textContent.trim().includes({json.dumps(label)}))")
    chrome = Chrome()
    try:
        chrome.page("Page.enable")
        chrome.page("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=scale,
                    mobile=mobile, screenWidth=width, screenHeight=height)
        chrome.events.clear()
        chrome.page("Page.navigate", url=url)
        chrome.wait_event("Page.loadEventFired")
        clicked = chrome.page("Runtime.evaluate", expression=CLICK % find, awaitPromise=True,
                              returnByValue=True)["result"].get("value")
        if clicked != "clicked":
            raise RuntimeError(f"{url}: no decline button {label!r} ({clicked})")
        time.sleep(settle)
        cookies = chrome.page("Network.getCookies", urls=[url])["cookies"]
        still = chrome.page("Runtime.evaluate", returnByValue=True, expression=(
            f"(() => {{ const b = {find}; return b && b.checkVisibility({{opacityProperty: true, "
            "visibilityProperty: true}) ? 'button still shown' : 'button gone'; })()"
        ))["result"].get("value")
    finally:
        chrome.close()
    return cookies, still
