"""Chromium's own one-shot screenshot: the floor a capture is compared with
(bench W and bench R)."""

import os
import subprocess
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
