"""Benchmark R: rebuild a page from its capture manifest (issue 23).

Run by `bench/run --only R` inside the throwaway stack (moto for SQS and S3),
or on its own (`.venv/bin/python bench/rebuild.py --worker PATH`), when it
starts a moto of its own. For every page:

1. the capture worker binary named by `--worker` captures it the way
   bench/worker.py drives it: the job goes straight onto the queue, a
   loopback server answers the signed callback with 200; the pages are
   served on port 80 of 127.0.23.1 (and 127.0.23.2 for the cross-origin
   frame), let through by EGRESS_ALLOW;
2. `capture.json`, `screenshot.png` and every asset are read back from S3;
3. the reference consumer (bench/rebuild/consumer.py) rebuilds the page from
   the manifest and its assets alone, twice: in full, and with background
   colours only;
4. both rebuilds are rendered by Chromium `page.layoutWidth` CSS px wide
   (the viewport's width in a manifest without it), `page.capturedHeight`
   tall, at the device scale factor times `page.scale`: the screenshot's
   pixel size, on a phone whose page laid out at 980 px too. They are
   compared with the screenshot:
   whole-page SSIM (scikit-image) and the ink share: of the pixels that the
   background-colours-only rebuild gets wrong (any channel off by more than
   `--tolerance`), the share that the full rebuild gets right.

`--device` is the reader's (SPEC §14): `desktop` (1440×900 at 2) or
`phone` (390×844 at 3, `viewport.mobile`; a worker from before issue 41
ignores `mobile`). With `--oneshot N` the capture is timed against a cold
Chromium's one viewport of the page with the same device: on a desktop
`chromium --headless --screenshot` (and, for comparison, the CDP one-shot
of bench/oneshot.py), on a phone the CDP one-shot alone.

`--consent decline|keep` is put into the job message (SPEC §14; without
it the field is left out: the worker declines). The manifest's `consent`
{outcome, cmp, ms} is a column of the table. The consent pages (`--pages
consent`, issue 40) are tests/api/consent.rs's, with real CMP libraries;
`consent-bare` is their article without a CMP. Their one-shot is the CDP
one, with the decline already stored: the cookie
the library itself sets when a reader clicks its decline button, learned
once per page in a fresh Chromium (bench/oneshot.py `decline_cookies`) and
set before the navigation, so the banner never shows (`--screenshot`
cannot store a cookie, so it is not run on them). The cookies are written
to <label>/decline-cookies.json.

With `--floor PATH` (issue 52) every run of a page is followed by one run
of the `capture_floor` example (crates/capture-worker/examples) on the same
URL, viewport and scale: a warm Chromium (its warm-up capture untimed), a
fresh browser context, navigate to the load event, one full-page PNG and
one DOM snapshot with the worker's computed styles. meta.json keeps the
median total as `floor` (ms) and each run's steps as `floors`; a floor run
that fails is logged and the page keeps its capture numbers. As the
floor's browser is warm, the worker's is warmed first too: one untimed
capture of the first page.
`bench/speed_table.py` sets the two side by side. capture_floor sets no
mobile viewport, so a `--device phone` run has no floor.

Every capture finishes before the first rebuild is rendered, so only one
Chromium works at a time. Prints a Markdown table; asserts nothing.
"""

import argparse
import hashlib
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "rebuild"))

import consumer  # noqa: E402
import catalogue as page_sets  # noqa: E402

try:
    import boto3
    import numpy as np
    from PIL import Image
    from skimage.metrics import structural_similarity
except ImportError as e:  # pragma: no cover
    raise SystemExit(f"bench R needs boto3, numpy, scikit-image and pillow in the venv ({e}); "
                     "bench/run --only R installs them")

from callbacks import Callbacks  # noqa: E402
from oneshot import decline_cookies, oneshot, oneshot_device  # noqa: E402
from chrome import Chrome  # noqa: E402

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
BUCKET = os.environ.get("ARTIFACT_BUCKET", "page-import-artifacts")
SITE_HOSTS = ("127.0.23.1", "127.0.23.2")
# The reader's devices: width, height (CSS px), device scale factor, mobile.
DEVICES = {"desktop": (1440, 900, 2.0, False), "phone": (390, 844, 3.0, True)}
Image.MAX_IMAGE_PIXELS = None


def log(msg):
    print(f"[bench R {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- AWS side

class Moto:
    """A moto server of its own when the script runs outside bench/run."""

    def __init__(self):
        venv_bin = os.path.dirname(sys.executable)
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([os.path.join(venv_bin, "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                                     stdout=self.log, stderr=self.log)
        os.environ.update({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_REGION": "us-east-1",
                           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                           "S3_FORCE_PATH_STYLE": "true"})
        import urllib.request
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        log(f"moto on 127.0.0.1:{port} (pid {self.proc.pid})")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def aws(service):
    return boto3.client(service, endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


# ---------------------------------------------------------------- pages

MIME = {".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript",
        ".mjs": "text/javascript", ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png",
        ".jpg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".ico": "image/x-icon",
        ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf", ".otf": "font/otf",
        ".eot": "application/vnd.ms-fontobject", ".map": "application/json", ".txt": "text/plain",
        ".webm": "video/webm"}


class Site:
    """Static files on host:80 (a free port when 80 cannot be had), from a
    list of (URL prefix, folder) mounts, longest prefix first."""

    def __init__(self, host, mounts, port=80):
        mounts = sorted(mounts, key=lambda m: -len(m[0]))

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
                body, ctype = None, "text/plain"
                for prefix, folder in mounts:
                    if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                        rest = path[len(prefix):].lstrip("/")
                        target = os.path.normpath(os.path.join(folder, rest))
                        if os.path.isdir(target):
                            target = os.path.join(target, "index.html")
                        if (target == folder or target.startswith(folder.rstrip("/") + "/")) \
                                and os.path.isfile(target):
                            with open(target, "rb") as f:
                                body = f.read()
                            ctype = MIME.get(os.path.splitext(target)[1].lower(), "application/octet-stream")
                        break
                self.send_response(200 if body is not None else 404)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body or b"")))
                self.send_header("access-control-allow-origin", "*")
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        try:
            self.server = http.server.ThreadingHTTPServer((host, port), Handler)
        except OSError as e:
            log(f"{host}:80 unavailable ({e}); serving on a free port")
            self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        port = self.server.server_address[1]
        self.addr = f"{host}:{port}"
        self.origin = f"http://{host}" if port == 80 else f"http://{self.addr}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class Worker:
    def __init__(self, binary, queue_url, allow, log_path):
        env = {k: v for k, v in os.environ.items() if k.startswith("AWS_") or k in ("PATH", "HOME")}
        env.update({
            "PAGE_IMPORT_QUEUE_URL": queue_url, "ARTIFACT_BUCKET": BUCKET, "S3_FORCE_PATH_STYLE": "true",
            "WEBHOOK_SECRET": SECRET, "EGRESS_ALLOW": ",".join(allow), "WORKER_CONCURRENCY": "1", "WORKER_RECEIVE_WAIT_SECS": "2",
            "RUST_LOG": "warn", "CHROMIUM_PATH": os.environ.get("CHROMIUM_PATH", "/usr/lib/chromium/chromium"),
        })
        if os.environ.get("CHROMIUM_USER"):
            env["CHROMIUM_USER"] = os.environ["CHROMIUM_USER"]
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen([binary], env=env, stderr=self.log, stdout=subprocess.DEVNULL)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=70)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def capture(sqs, s3, queue_url, callbacks, url, viewport, out_dir, consent=None):
    """One capture through the worker; its manifest, screenshot and assets
    downloaded into out_dir. `consent` ("decline" | "keep") goes into the
    message when given. Returns (manifest, raw manifest bytes, seconds)."""
    pid = str(uuid.uuid4())
    prefix = f"page-imports/{pid}/1/"
    message = {
        "schemaVersion": 1, "pageImportId": pid, "attempt": 1, "nonce": uuid.uuid4().hex,
        "source": {"kind": "public_url", "url": url}, "viewport": viewport, "readySelector": None,
        "artifacts": {"bucket": BUCKET, "prefix": prefix}, "callbackUrl": callbacks.url,
    }
    if consent:
        message["consent"] = consent
    body = json.dumps(message)
    sent = time.monotonic()
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    arrived = callbacks.arrival(pid, 240)
    if arrived is None:
        raise RuntimeError(f"no callback within 240 s for {url}")
    at, answer = arrived
    if answer.get("outcome") != "completed":
        raise RuntimeError(f"capture of {url} failed: {answer}")
    raw = s3.get_object(Bucket=BUCKET, Key=prefix + "capture.json")["Body"].read()
    manifest = json.loads(raw)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(os.path.join(out_dir, "assets"))
    with open(os.path.join(out_dir, "capture.json"), "wb") as f:
        f.write(raw)
    shot = s3.get_object(Bucket=BUCKET, Key=manifest["screenshot"]["key"])["Body"].read()
    with open(os.path.join(out_dir, "screenshot.png"), "wb") as f:
        f.write(shot)
    for asset in manifest.get("assets", []):
        key = asset["key"]
        data = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        with open(os.path.join(out_dir, "assets", os.path.basename(key)), "wb") as f:
            f.write(data)
    return manifest, raw, at - sent


def floor_run(binary, url, width, height, scale, allow):
    """One timed run of `capture_floor` (crates/capture-worker/examples) on
    `url`: its own warm Chromium (launch and one warm-up capture untimed), a
    fresh browser context, navigate to the load event, a full-page PNG and
    a DOM snapshot. The env the worker gets for egress and its browser.
    Returns the run's `steps` (ms: openMs, navigateMs, screenshotMs,
    snapshotMs, totalMs, …)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "EGRESS_ALLOW": ",".join(allow),
           "CHROMIUM_PATH": os.environ.get("CHROMIUM_PATH", "/usr/lib/chromium/chromium")}
    if os.environ.get("CHROMIUM_USER"):
        env["CHROMIUM_USER"] = os.environ["CHROMIUM_USER"]
    command = [binary, "--runs", "1", "--width", str(width), "--height", str(height), "--scale", f"{scale:g}", url]
    done = subprocess.run(command, capture_output=True, timeout=300, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"capture_floor exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    rows = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    if len(rows) != 1:
        raise RuntimeError(f"capture_floor printed {len(rows)} runs, not 1")
    return rows[0]["steps"]


# ---------------------------------------------------------------- comparing

def load_rgb(png_bytes_or_path):
    img = Image.open(png_bytes_or_path)
    return np.asarray(img.convert("RGB"))


def fit(img, shape):
    """Crop or pad (white) an H×W×3 array to `shape`."""
    h, w = shape[:2]
    out = np.full((h, w, 3), 255, dtype=np.uint8)
    hh, ww = min(h, img.shape[0]), min(w, img.shape[1])
    out[:hh, :ww] = img[:hh, :ww]
    return out


def wrong(a, b, tolerance):
    return np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2) > tolerance


def gray_css(img, scale):
    """Grey levels at one pixel per CSS pixel (mean of each scale×scale block)."""
    g = img.astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    s = max(1, int(round(scale)))
    h, w = g.shape[0] // s * s, g.shape[1] // s * s
    return g[:h, :w].reshape(h // s, s, w // s, s).mean(axis=(1, 3))


def ssim(a, b, scale):
    return structural_similarity(gray_css(a, scale), gray_css(b, scale), data_range=255.0)


def first_viewport_off(shot_path, oneshot_path, tolerance):
    """The share of the one-shot's pixels that the top of the capture's
    screenshot gets wrong (any channel off by more than `tolerance`)."""
    one = load_rgb(oneshot_path)
    shot = fit(load_rgb(shot_path), one.shape)
    return float(wrong(shot, one, tolerance).mean())


def consent_text(c):
    """A manifest's `consent` as a cell: outcome, cmp, ms."""
    if not c:
        return "–"
    return f"{c.get('outcome')} ({c.get('cmp') or 'no cmp'}, {c.get('ms')} ms)"


def compare(shot, full, bg, scale, tolerance):
    bad_bg = wrong(shot, bg, tolerance)
    bad_full = wrong(shot, full, tolerance)
    ink = int(bad_bg.sum())
    kept = int((bad_bg & ~bad_full).sum())
    return {
        "ink_px": ink, "ink_share": kept / ink if ink else 1.0,
        "ssim": ssim(shot, full, scale), "ssim_bg": ssim(shot, bg, scale),
        "full_wrong_share": float(bad_full.mean()),
    }


def side_by_side(shot, full, tolerance, path, max_height_css=3000, scale=1):
    """screenshot | rebuild | diff (red where the rebuild is off)."""
    h = min(shot.shape[0], int(max_height_css * scale))
    a, b = shot[:h], full[:h]
    bad = wrong(a, b, tolerance)
    diff = (a.astype(np.float32) * 0.25 + 191).astype(np.uint8)
    diff[bad] = [220, 30, 30]
    gap = np.full((h, 16, 3), 128, dtype=np.uint8)
    Image.fromarray(np.concatenate([a, gap, b, gap, diff], axis=1)).save(path, optimize=True)


# ---------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", required=True, help="capture-worker binary")
    parser.add_argument("--smoke", action="store_true", help="two small pages, nothing downloaded")
    parser.add_argument("--pages", help="comma-separated page names, `own` for all of bench/rebuild/pages, `reader`, "
                        "`speed`, `consent` for the consent pages (default: all); `corpus`: the consent corpus "
                        "table of issue 55 alone (bench/rebuild/consent_corpus.py), nothing rebuilt")
    parser.add_argument("--before", metavar="PATH", help="with `--pages corpus`: the capture-worker build to compare "
                        "--worker with, page by page in turn")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "rebuild"))
    parser.add_argument("--label", help="folder under --out for this run (default: the worker's name)")
    parser.add_argument("--tolerance", type=int, default=24, help="max channel difference still counted right")
    parser.add_argument("--device", choices=sorted(DEVICES), default="desktop",
                        help="desktop: 1440×900 at 2; phone: 390×844 at 3, mobile (default: desktop)")
    parser.add_argument("--width", type=int, help="overrides the device's viewport width")
    parser.add_argument("--height", type=int, help="overrides the device's viewport height")
    parser.add_argument("--scale", type=float, help="overrides the device's scale factor")
    parser.add_argument("--reuse", action="store_true", help="rebuild the captures already under --out")
    parser.add_argument("--runs", type=int, default=1, help="captures per page; capture ms is their median")
    parser.add_argument("--no-rebuild", action="store_true",
                        help="capture only (times and bytes for bench/speed_table.py), no rebuild or comparison")
    parser.add_argument("--oneshot", type=int, default=0, metavar="N",
                        help="also time a cold Chromium's one-shot of each page N times (median): "
                             "`chromium --headless --screenshot` and the CDP one-shot with the device on a "
                             "desktop, the CDP one-shot on a phone; on a consent page the CDP one-shot with "
                             "the library's decline cookie stored first")
    parser.add_argument("--floor", metavar="PATH",
                        help="the capture_floor example binary (issue 52): after each run's capture of a page, one "
                             "timed run of it on the same URL, width, height and scale (a warm Chromium, a fresh "
                             "context, navigate to load, full-page PNG, DOM snapshot); meta.json gets `floor` "
                             "(median total ms) and `floors` (each run's steps). The worker's browser is warmed "
                             "first too: one untimed capture of the first page. Desktop only: capture_floor sets "
                             "no mobile viewport, so a `--device phone` run skips it")
    parser.add_argument("--consent", choices=("decline", "keep", "paired"),
                        help="the job's `consent` (SPEC §14); left out of the message when not given (the worker "
                             "declines). `paired`: every run captures the page with `keep` and with `decline`, in "
                             "turn first, and logs the median of the per-run differences (what consent handling "
                             "costs, the machine's drift cancelled); the table's capture ms is decline's")
    args = parser.parse_args()
    width, height, scale, mobile = DEVICES[args.device]
    args.width = args.width or width
    args.height = args.height or height
    args.scale = args.scale or scale

    if args.pages == "corpus":
        return corpus_main(args)
    if args.floor and mobile:
        log("--floor: capture_floor sets no mobile viewport; no floor on a phone run")
        args.floor = None

    label = args.label or os.path.basename(args.worker)
    run_dir = os.path.join(args.out, label)
    os.makedirs(run_dir, exist_ok=True)

    wanted = args.pages.split(",") if args.pages else None
    if wanted and "own" in wanted:
        wanted = wanted + [p.name for p in page_sets.OWN]
    if wanted and "consent" in wanted:
        wanted = wanted + [p.name for p in page_sets.CONSENT]
    catalogue = page_sets.catalogue(ROOT, smoke=args.smoke, log=log, names=wanted)
    viewport = {"width": args.width, "height": args.height, "deviceScaleFactor": args.scale, "mobile": mobile}

    moto = None
    captures = []
    found_cookies = {}
    try:
        if not args.reuse:
            if "AWS_ENDPOINT_URL" not in os.environ:
                moto = Moto()
            sqs, s3 = aws("sqs"), aws("s3")
            try:
                s3.create_bucket(Bucket=BUCKET)
            except Exception:
                pass
            sites = [Site(host, page_sets.mounts(ROOT)) for host in SITE_HOSTS]
            callbacks = Callbacks()
            queue_url = sqs.create_queue(QueueName=f"bench-r-{uuid.uuid4().hex[:8]}")["QueueUrl"]
            worker = Worker(args.worker, queue_url, [s.addr for s in sites], os.path.join(run_dir, "worker.log"))
            log(f"worker {args.worker} (log {worker.log.name}); pages on {sites[0].origin} and {sites[1].origin}")
            try:
                if args.floor and catalogue:
                    # The floor's browser is warm: so is the worker's (its first capture would
                    # otherwise count the launch of its Chromium). One untimed capture of the first page.
                    p = catalogue[0]
                    url = sites[0].origin + p.path.replace("{other}", urllib.parse.quote(sites[1].origin, safe=""))
                    warm_dir = os.path.join(run_dir, ".warm-up")
                    try:
                        capture(sqs, s3, queue_url, callbacks, url, viewport, warm_dir,
                                "decline" if args.consent == "paired" else args.consent)
                    except Exception as e:  # noqa: BLE001 -- the page's own captures will say
                        log(f"warm-up capture of {p.name}: {e}")
                    shutil.rmtree(warm_dir, ignore_errors=True)
                for p in catalogue:
                    url = sites[0].origin + p.path.replace("{other}", urllib.parse.quote(sites[1].origin, safe=""))
                    out_dir = os.path.join(run_dir, p.name)
                    floors = []
                    timings = []
                    try:
                        times = []
                        consents = []
                        paired = {"keep": [], "decline": []}
                        for i in range(args.runs):
                            # `paired`: each run captures the page with `keep` and with `decline`, in turn
                            # first, on the same worker (the machine's drift between runs cancels out).
                            modes = [args.consent]
                            if args.consent == "paired":
                                modes = ["keep", "decline"] if i % 2 == 0 else ["decline", "keep"]
                            for mode in modes:
                                manifest, raw, seconds = capture(sqs, s3, queue_url, callbacks, url, viewport,
                                                                 out_dir, "decline" if mode == "paired" else mode)
                                if mode in paired and args.consent == "paired":
                                    paired[mode].append(seconds)
                                    if mode == "keep":
                                        continue
                                times.append(seconds)
                                consents.append(manifest.get("consent"))
                                timings.append(manifest.get("timings"))
                            # The floor in turn with the capture: same URL, viewport and scale.
                            if args.floor:
                                try:
                                    floors.append(floor_run(args.floor, url, args.width, args.height, args.scale,
                                                            [s.addr for s in sites]))
                                except Exception as e:  # noqa: BLE001 -- the page keeps its capture numbers
                                    log(f"{p.name}: floor run {i + 1} failed: {e}")
                    except Exception as e:  # one page failing does not end the run
                        log(f"{p.name}: {e}")
                        continue
                    seconds = sorted(times)[len(times) // 2]
                    # The floor's median the same way as the capture's (the upper middle of an even count).
                    floor_totals = sorted(f["totalMs"] for f in floors)
                    floor_ms = floor_totals[len(floor_totals) // 2] if floor_totals else None
                    # A consent page's floor: its decline stored first, learned once per page.
                    cookies = None
                    decline = page_sets.DECLINE.get(p.name)
                    if decline and args.oneshot:
                        try:
                            cookies, after = decline_cookies(url, decline, args.width, args.height, args.scale,
                                                             mobile)
                            found_cookies[p.name] = {"button": decline, "after_click": after, "cookies": cookies}
                            log(f"{p.name}: declining stores {[(c['name'], c['value']) for c in cookies]} ({after})")
                        except Exception as e:  # noqa: BLE001 -- the one-shot then runs without
                            log(f"{p.name}: no decline cookie: {e}")
                    # The device one-shot over CDP (the first one's PNG kept); on a phone it is the floor.
                    device_shots = sorted(
                        oneshot_device(url, args.width, args.height, args.scale, mobile,
                                       png_path=os.path.join(out_dir, "oneshot-device.png") if i == 0 else None,
                                       cookies=cookies)
                        for i in range(args.oneshot))
                    consent_page = any(p.name == c.name for c in page_sets.CONSENT)
                    shots = device_shots if mobile or consent_page else sorted(
                        oneshot(url, args.width, args.height, args.scale) for _ in range(args.oneshot))
                    off = None
                    if device_shots:
                        off = first_viewport_off(os.path.join(out_dir, "screenshot.png"),
                                                 os.path.join(out_dir, "oneshot-device.png"), args.tolerance)
                    with open(os.path.join(out_dir, "meta.json"), "w") as f:
                        json.dump({"seconds": seconds, "runs": times, "bytes": len(raw), "device": args.device,
                                   "oneshot": shots[len(shots) // 2] if shots else None, "oneshots": shots,
                                   "oneshot_device": device_shots[len(device_shots) // 2] if device_shots else None,
                                   "oneshots_device": device_shots, "oneshot_cookies": cookies,
                                   "oneshot_off": off, "consent_asked": args.consent, "consent": consents[-1],
                                   "consents": consents, "paired": paired if args.consent == "paired" else None,
                                   "timings": timings, "floor": floor_ms, "floors": floors}, f)
                    if args.consent == "paired":
                        diffs = sorted(d - k for k, d in zip(paired["keep"], paired["decline"]))
                        log(f"{p.name}: paired, keep {1000 * statistics.median(paired['keep']):.0f} ms, decline "
                            f"{1000 * statistics.median(paired['decline']):.0f} ms, decline − keep per run "
                            f"{1000 * statistics.median(diffs):+.0f} ms (median of {len(diffs)})")
                    floor_text = ""
                    if args.floor:
                        floor_text = (f"floor {floor_ms} ms (median of {[f['totalMs'] for f in floors]} ms), "
                                      if floors else "no floor (every floor run failed), ")
                    log(f"{p.name}: captured in {[round(t, 2) for t in times]} s, {floor_text}one-shot "
                        f"{[round(t, 2) for t in shots]} s (CDP with the device {[round(t, 2) for t in device_shots]}"
                        f" s{', the decline stored' if cookies else ''}), consent {consents}, "
                        f"{len(manifest['dom']['nodes'])} nodes, "
                        f"{len(raw):,} manifest bytes, timings of the last {manifest.get('timings')}")
                    captures.append(p)
            finally:
                worker.stop()
                sqs.delete_queue(QueueUrl=queue_url)
                if found_cookies:
                    with open(os.path.join(run_dir, "decline-cookies.json"), "w") as f:
                        json.dump(found_cookies, f, indent=1)
        else:
            captures = [p for p in catalogue if os.path.isfile(os.path.join(run_dir, p.name, "capture.json"))]
    finally:
        if moto:
            moto.stop()

    if args.no_rebuild:
        return
    # The desktop's two floors side by side: `--screenshot` and the CDP one-shot.
    both = not mobile and args.oneshot > 0
    rows = []
    # The rebuilds and the assets they load, over HTTP (Chromium loads no
    # web font from file://), on a free port of loopback.
    server = Site("127.0.0.1", [("/", os.path.abspath(run_dir))], port=0)
    chrome = Chrome()
    try:
        for p in captures:
            rows.append(rebuild_and_compare(chrome, server, p, os.path.join(run_dir, p.name), args.tolerance))
    finally:
        chrome.close()
        server.server.shutdown()

    print(f"\n## R: rebuild from the manifest — `{label}`, {args.device}\n")
    print(f"Viewport {args.width}×{args.height} at scale {args.scale:g}{', mobile' if mobile else ''}; "
          f"tolerance: max channel difference "
          f"{args.tolerance}. Ink share = of the pixels a background-colours-only rebuild gets wrong (the ink, "
          "in CSS px²), the share the full rebuild gets right. SSIM on grey levels at one pixel per CSS px "
          "(per screenshot pixel where a CSS px has fewer than 1.5 of them: a phone's 980 px page has 1.19).\n")
    floor = ("a fresh Chromium driven over CDP with the same device (bench/oneshot.py `oneshot_device`), "
             "process start → one viewport's PNG" if mobile else
             "`chromium --headless --screenshot` of the page at the same window and scale")
    print(f"Consent: the job's `{args.consent or 'decline (left out)'}`; column: the manifest's outcome (cmp, ms), "
          "of the page's last capture. A consent page's one-shot is the CDP one with the library's decline cookie "
          "stored first (`decline_cookies`), so its banner never shows; viewport off: the share of that "
          "one-shot's pixels the top of the capture's screenshot gets wrong.\n")
    print(f"capture ms: message sent → callback received, median of {args.runs}; one-shot ms: {floor}, "
          "sandboxed as the worker runs it, cold by nature (`--oneshot N`, median)"
          + ("; CDP one-shot ms: the same one-shot over CDP with the device (`oneshot_device`)" if both else "")
          + ". Layout: `page.layoutWidth` CSS px at `page.scale`.\n")
    print("| page | manifest | nodes | layout | consent | ink share | ink (CSS px²) | SSIM | SSIM bg-only "
          "| manifest bytes | capture ms | one-shot ms | capture / one-shot | viewport off |"
          + (" CDP one-shot ms |" if both else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if both else ""))
    for r in rows:
        shot = r.get("oneshot_ms")
        ratio = f"{r['capture_ms'] / shot:.2f}×" if shot else "–"
        device = r.get("oneshot_device_ms")
        off = r.get("oneshot_off")
        print(f"| {r['page']} | v{r['version']} | {r['nodes']:,} | {r['layout_width']} at {r['page_scale']:.3g} "
              f"| {consent_text(r.get('consent'))} | {100 * r['ink_share']:.1f} % "
              f"| {r['ink_css_px']:,} | {r['ssim']:.3f} | {r['ssim_bg']:.3f} | {r['bytes']:,} | {r['capture_ms']:,} "
              f"| {f'{shot:,}' if shot else '–'} | {ratio} | {'–' if off is None else f'{100 * off:.2f} %'} |"
              + (f" {f'{device:,}' if device else '–'} |" if both else ""))
    if rows:
        worst = min(rows, key=lambda r: r["ink_share"])
        path = os.path.join(args.out, f"worst-{label}.png")
        shutil.copyfile(worst["side_by_side"], path)
        print(f"\nWorst page: {worst['page']} (ink share {100 * worst['ink_share']:.1f} %); "
              f"screenshot | rebuild | diff: `{os.path.relpath(path, ROOT)}`")
        with open(os.path.join(run_dir, "results.json"), "w") as f:
            json.dump(rows, f, indent=1)


def corpus_main(args):
    """`--pages corpus`: issue 55's consent table over tests/fixtures/consent-corpus
    (bench/rebuild/consent_corpus.py says what is measured), for `--worker`
    ("after") and `--before`, each page in turn on both. `--runs` pairs per
    page and worker (default 3 here). Every page's figures go to
    <out>/<label>/<page>.json as soon as measured; the table is printed at
    the end, and with `--reuse` from those files alone."""
    import consent_corpus as cc
    runs = args.runs if args.runs > 1 else 3
    label = args.label or "consent-corpus"
    run_dir = os.path.join(args.out, label.split(",")[0])
    os.makedirs(run_dir, exist_ok=True)
    workers = [("before", args.before), ("after", args.worker)] if args.before else [("after", args.worker)]
    labels = [w for w, _ in workers]
    wanted = [c for c in cc.cases()]
    only = os.environ.get("CORPUS_ONLY")
    if only:
        wanted = [c for c in wanted if c[0] in only.split(",") or c[1] in only.split(",")]
    width, height, scale, mobile = cc.DEVICE
    viewport = {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile}
    moto = None
    try:
        if not args.reuse:
            cc.ensure_libraries(log)
            if "AWS_ENDPOINT_URL" not in os.environ:
                moto = Moto()
            sqs, s3 = aws("sqs"), aws("s3")
            try:
                s3.create_bucket(Bucket=BUCKET)
            except Exception:
                pass
            site, other = cc.CorpusSite("127.0.55.1"), cc.CorpusSite("127.0.55.2")
            site.frame_origin = other.origin
            callbacks = Callbacks()
            running = {}
            for name, binary in workers:
                q = sqs.create_queue(QueueName=f"bench-r-corpus-{name}-{uuid.uuid4().hex[:8]}")["QueueUrl"]
                running[name] = (Worker(binary, q, [site.addr, other.addr], os.path.join(run_dir, f"worker-{name}.log")), q)
                log(f"{name}: worker {binary}")
            try:
                for case, kind in wanted:
                    site.case = case
                    result = {"name": case, "kind": kind}
                    for name, _ in workers:
                        result[name] = {"runs": {}, "consents": [], "tracker": 0}
                    # banner pages and the reloading frame: `/` against `/bare`, both declining;
                    # a page without a banner: keep against decline.
                    variants = [("/bare", "decline"), ("/", "decline")] if kind in ("banner", "frame") \
                        else [("/", "keep"), ("/", "decline")]
                    last_shot = {}
                    survey = False
                    # One untimed capture per build first: the page's files and Chromium's caches warm.
                    runs_plan = [("warm", None)] + [(i, None) for i in range(runs)]
                    for i, _ in runs_plan:
                        order = workers if i == "warm" or i % 2 == 0 else workers[::-1]
                        for name, _ in order:
                            worker, q = running[name]
                            plan = variants[-1:] if i == "warm" else variants if i % 2 == 0 else variants[::-1]
                            for path, mode in plan:
                                hits = site.tracker_hits
                                pid = str(uuid.uuid4())
                                prefix = f"page-imports/{pid}/1/"
                                message = {"schemaVersion": 1, "pageImportId": pid, "attempt": 1,
                                           "nonce": uuid.uuid4().hex,
                                           "source": {"kind": "public_url", "url": site.origin + path},
                                           "viewport": viewport, "readySelector": None,
                                           "artifacts": {"bucket": BUCKET, "prefix": prefix},
                                           "callbackUrl": callbacks.url, "consent": mode}
                                sent = time.monotonic()
                                sqs.send_message(QueueUrl=q, MessageBody=json.dumps(message))
                                arrived = callbacks.arrival(pid, 240)
                                if arrived is None or arrived[1].get("outcome") != "completed":
                                    raise RuntimeError(f"{case} {path} {mode} on {name}: {arrived and arrived[1]}")
                                seconds = arrived[0] - sent
                                if i == "warm":
                                    continue
                                result[name]["runs"].setdefault(f"{path} {mode}", []).append(seconds)
                                if path == "/" and mode == "decline":
                                    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key=prefix + "capture.json")["Body"].read())
                                    result[name]["consents"].append(manifest.get("consent"))
                                    result[name].setdefault("timings", []).append(manifest.get("timings"))
                                    result[name]["tracker"] += site.tracker_hits - hits
                                    last_shot[name] = s3.get_object(Bucket=BUCKET, Key=manifest["screenshot"]["key"])["Body"].read()
                                    html = next((n for n in manifest["dom"]["nodes"] if n.get("name") == "HTML"), {})
                                    survey |= any(a[0] == "data-survey-shown" for a in html.get("attributes") or [])
                    for name, _ in workers:
                        w = result[name]
                        (a, b) = [f"{p} {m}" for p, m in variants]
                        w["diffs"] = [y - x for x, y in zip(w["runs"][a], w["runs"][b])]
                        w["cost"] = statistics.median(w["diffs"])
                    if kind != "frame":
                        labels_ = cc.READER.get(case) if kind == "banner" else []
                        path = "/bare" if kind == "banner" and labels_ is None else "/"
                        try:
                            ref = cc.reader_view(site.origin + path, labels_, other.origin + "/",
                                                 "document.documentElement.dataset.surveyShown === 'yes'" if survey else None)
                            with open(os.path.join(run_dir, f"{case}-reader.png"), "wb") as f:
                                f.write(ref)
                            for name, _ in workers:
                                shot_path = os.path.join(run_dir, f"{case}-{name}.png")
                                with open(shot_path, "wb") as f:
                                    f.write(last_shot[name])
                                result[name]["off"] = first_viewport_off(shot_path, os.path.join(run_dir, f"{case}-reader.png"), 24)
                        except Exception as e:  # noqa: BLE001 -- the row keeps its times
                            log(f"{case}: no reader's view: {e}")
                    with open(os.path.join(run_dir, f"{case}.json"), "w") as f:
                        json.dump(result, f)
                    log(f"{case} ({kind}): " + "; ".join(
                        f"{name} {cc.consent_cell(result[name]['consents'][-1])}, off {cc.pct(result[name].get('off'))}, "
                        f"cost {cc.ms(result[name]['cost'])} ms {[round(1000 * d) for d in result[name]['diffs']]}"
                        for name, _ in workers))
            finally:
                for worker, q in running.values():
                    worker.stop()
                    sqs.delete_queue(QueueUrl=q)
    finally:
        if moto:
            moto.stop()
    # With `--reuse --label A,B`: the runs of several labels pooled, page by page.
    results = []
    for case, kind in cc.cases():
        parts = []
        for part in label.split(","):
            path = os.path.join(args.out, part, f"{case}.json")
            if os.path.isfile(path):
                with open(path) as f:
                    parts.append(json.load(f))
        if parts:
            results.append(cc.merge(parts))
    print(f"\n## R: consent corpus (issue 55) — {', '.join(f'{n} `{b}`' for n, b in workers)}\n")
    print(f"Device {width}×{height} at {scale:g} (the test's DESKTOP). consent: the manifests' outcome · cmp · ms "
          "(median, range) of the captures with the banner; viewport off: the share of the reader's first viewport "
          "the last such capture shows otherwise (the test fails at 1 %); capture ms: message → callback, median, "
          "with the banner; cost ms: median of the per-run differences (each run in brackets): a banner page's "
          "capture over its page without the banner, a page without a banner's `decline` over `keep`.\n")
    print(cc.table(results, labels))


def rebuild_and_compare(chrome, server, p, out_dir, tolerance):
    with open(os.path.join(out_dir, "capture.json"), "rb") as f:
        raw = f.read()
    manifest = json.loads(raw)
    with open(os.path.join(out_dir, "meta.json")) as f:
        meta = json.load(f)
    # The width the page laid out at, and the screenshot's pixels per CSS px
    # of it (a phone shows a 980 px page scaled to its screen).
    width = manifest["page"].get("layoutWidth") or manifest["viewport"]["width"]
    page_scale = manifest["page"].get("scale") or 1
    scale = manifest["viewport"]["deviceScaleFactor"] * page_scale
    height = manifest["page"]["capturedHeight"]
    assets = {a["key"]: "assets/" + os.path.basename(a["key"]) for a in manifest.get("assets", [])}
    for mode in ("full", "bg"):
        html = consumer.rebuild(manifest, assets, mode=mode)
        with open(os.path.join(out_dir, f"rebuild-{mode}.html"), "w") as f:
            f.write(html)
    images = {}
    for mode in ("full", "bg"):
        png = chrome.render(f"{server.origin}/{p.name}/rebuild-{mode}.html", width, height, scale)
        with open(os.path.join(out_dir, f"rebuild-{mode}.png"), "wb") as f:
            f.write(png)
        images[mode] = png
    shot = load_rgb(os.path.join(out_dir, "screenshot.png"))
    import io
    full = fit(load_rgb(io.BytesIO(images["full"])), shot.shape)
    bg = fit(load_rgb(io.BytesIO(images["bg"])), shot.shape)
    result = compare(shot, full, bg, scale, tolerance)
    sbs = os.path.join(out_dir, "side-by-side.png")
    side_by_side(shot, full, tolerance, sbs, scale=scale)
    timings = manifest.get("timings") or {}
    row = {"page": p.name, "version": manifest.get("manifestVersion", 1), "nodes": len(manifest["dom"]["nodes"]),
           "bytes": len(raw), "capture_ms": int(round(meta["seconds"] * 1000)), "timings": timings,
           "oneshot_ms": int(round(meta["oneshot"] * 1000)) if meta.get("oneshot") else None,
           "oneshot_device_ms": int(round(meta["oneshot_device"] * 1000)) if meta.get("oneshot_device") else None,
           "layout_width": width, "page_scale": page_scale, "pixels_per_css_px": scale,
           "consent": manifest.get("consent"), "oneshot_off": meta.get("oneshot_off"),
           "side_by_side": sbs, "ink_css_px": int(round(result["ink_px"] / scale ** 2)), **result}
    log(f"{p.name}: consent {consent_text(row['consent'])}, "
        f"ink share {100 * row['ink_share']:.1f} % of {row['ink_px']:,} px, SSIM {row['ssim']:.3f} "
        f"(bg-only {row['ssim_bg']:.3f})")
    return row


if __name__ == "__main__":
    main()
