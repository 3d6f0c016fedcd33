"""A small CDP client over `--remote-debugging-pipe` for rendering rebuilds.

Chromium is started the way the worker starts it: sandboxed, and as `nobody`
when this runs as root (Chromium cannot sandbox as root), with a throwaway
profile and an environment built from nothing. No port is opened; CDP runs
over fds 3 and 4 (NUL-terminated JSON).
"""

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/lib/chromium/chromium")


def high_fd(fd):
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return new


class Chrome:
    """One Chromium and one page target of it, attached over the pipe.
    `started` is when the process was started (time.monotonic()), for the
    device one-shot (bench/oneshot.py), timed from there."""

    def __init__(self):
        self.home = tempfile.mkdtemp(prefix="rebuild-chrome-")
        os.chmod(self.home, 0o755)
        profile = os.path.join(self.home, "profile")
        os.makedirs(profile)
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        # The child's ends well above 4, so that the shell's `3<&…`/`4>&…` never close one of them.
        to_chrome_r, from_chrome_w = (high_fd(fd) for fd in (to_chrome_r, from_chrome_w))
        command = [CHROMIUM, "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--no-first-run", "--mute-audio", "--font-render-hinting=none",
                   f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home, "TMPDIR": self.home}
        if os.geteuid() == 0:
            for d in (self.home, profile):
                os.chown(d, 65534, 65534)
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
        # fds 3 and 4 as Chromium expects them, through a shell so that no
        # descriptor of this process is clobbered while the child is set up.
        shell = f'exec "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
        self.started = time.monotonic()
        self.proc = subprocess.Popen(["bash", "-c", shell, "bash"] + command, env=env,
                                     pass_fds=(to_chrome_r, from_chrome_w),
                                     stdout=subprocess.DEVNULL, stderr=None if os.environ.get("REBUILD_CHROME_LOG") else subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def _read_message(self):
        while b"\0" not in self._buf:
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the CDP pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, session=None, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data):]
        while True:
            reply = self._read_message()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def page(self, method, **params):
        return self.call(method, session=self.session, **params)

    def wait_event(self, method):
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                del self.events[: i + 1]
                return event
        while True:
            event = self._read_message()
            if event.get("method") == method:
                self.events.clear()
                return event

    def major_version(self):
        """The browser's major version, from `Browser.getVersion`'s product
        (`HeadlessChrome/156.0.8078.114` → 156)."""
        product = self.call("Browser.getVersion")["product"]
        return int(product.split("/", 1)[1].split(".")[0])

    def render(self, url, width, height, scale):
        """A PNG of `url` laid out `width` CSS px wide, `height` CSS px of it,
        at device scale factor `scale`, after its fonts and images loaded."""
        self.page("Page.enable")
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=min(height, 4000),
                  deviceScaleFactor=scale, mobile=False, screenWidth=width, screenHeight=min(height, 4000))
        self.events.clear()
        self.page("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        self.page("Runtime.evaluate", expression="document.fonts.ready.then(() => true)", awaitPromise=True)
        shot = self.page("Page.captureScreenshot", format="png", captureBeyondViewport=True, fromSurface=True,
                         clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        return base64.b64decode(shot["data"])

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._r)
        os.close(self._w)
        shutil.rmtree(self.home, ignore_errors=True)
