"""Benchmark W: the capture worker against Chromium's own floor.

Run by `bench/run --only W` inside the throwaway stack (moto for SQS and S3).
The worker binary runs as it does in production; jobs go straight onto the
queue (no service in the way) and a small HTTP server on loopback answers
the signed callbacks with 200 and notes when each arrived. Pages of about
100, 2 000 and 25 000 DOM nodes are served from loopback, plus the 100-node
page with two cross-origin iframes (each a 100-node page of its own on another
loopback address, 127.0.0.3 and 127.0.0.4, so each frame is a different site).

For each page size, side by side in one run:
- capture time: message sent → callback received, worker warm (one browser
  kept running), medians of `--runs`;
- the floor: `chromium --headless --screenshot` of the same page at the same
  window size and scale (a cold browser each time: that is what the command
  does), once with `--no-sandbox` as the caller (as measured before the
  worker's browser was sandboxed) and once sandboxed as `nobody`, the way the
  worker now runs Chromium;
- manifest bytes per DOM node;
- peak PSS of the worker plus Chromium while that page was being captured,
  the most Chromium processes (and renderers) alive at once, and how many
  distinct renderer processes were seen over its captures (sampled every
  100 ms, like the PSS).
Then captures per minute at WORKER_CONCURRENCY 1 and 2, peak PSS of the
worker plus Chromium per concurrent capture, and the worker's own peak RSS.
Reports numbers; asserts nothing.

Since issue 21 part 3: a `tall` page (20 000 nodes, exactly 16 384 px), the
floor on the worker's own CDP client (`--floor`, the `capture_floor`
example: navigate, full-page PNG, DOM snapshot; plain and with
`optimizeForSpeed`), a step-by-step table, `--pages`/`--tput-pages` to pick
pages, and timed captures without the PSS sampler (memory is sampled on
extra captures).
"""

import argparse
import collections
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import boto3

from callbacks import Callbacks
from oneshot import oneshot

ENDPOINT = os.environ["AWS_ENDPOINT_URL"]
BUCKET = os.environ["ARTIFACT_BUCKET"]
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/lib/chromium/chromium")
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
WIDTH, HEIGHT, SCALE = 1440, 900, 2


def log(msg):
    print(f"[bench W {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def aws(service):
    return boto3.client(service, endpoint_url=ENDPOINT, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


def page(nodes, top=""):
    """An HTML page of about `nodes` DOM nodes: cards of a heading, a
    paragraph with a link and a list, with a few distinct styles. `top` is
    HTML put before the cards."""
    per_card = 12
    cards = max(1, nodes // per_card)
    body = []
    for i in range(cards):
        body.append(
            f'<div class="card c{i % 7}"><h3>Card {i}</h3><p>Text of card {i} with '
            f'<a href="#c{i}">a link</a> and <b>bold</b> words.</p>'
            f'<ul><li>one</li><li>two</li></ul></div>')
    css = "".join(f".c{k} {{ color: rgb({k * 30}, 40, 90); margin: {k}px; }}" for k in range(7))
    return (f"<!doctype html><html><head><title>{nodes} nodes</title><style>body {{ font-family: sans-serif; }}"
            f".card {{ padding: 8px; border: 1px solid #ccc; }} {css}</style></head><body>" + top
            + "".join(body) + "</body></html>").encode()


def tall_page(nodes=20000, height=16384):
    """`page(nodes)`'s cards in a grid of fixed rows, so the document is
    exactly `height` CSS px tall at the bench's width: a page the
    screenshot takes whole (no truncation) with every card on it."""
    per_card, columns = 12, 14
    cards = nodes // per_card
    rows = -(-cards // columns)
    row = height // rows
    css = (f"html, body {{ margin: 0; }} body {{ display: grid; grid-template-columns: repeat({columns}, 1fr); "
           f"grid-auto-rows: {row}px; align-content: start; height: {height}px; }} "
           f".card {{ overflow: hidden; font-size: 11px; box-sizing: border-box; }}")
    return page(nodes).decode().replace("</style>", css + "</style>", 1).encode()


class Site:
    """Static pages on <host>:<free port>, 127.0.0.1 unless told (the worker
    reaches it through EGRESS_ALLOW; jobs here never pass the service's source
    URL rules). Counts the requests it answers."""

    def __init__(self, pages, host="127.0.0.1"):
        pages = dict(pages)
        self.host = host
        self.hits = 0
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                site.hits += 1
                body = pages.get(self.path)
                self.send_response(200 if body else 404)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.addr = f"{host}:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://{self.addr}{path}"


def pss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def tree(root):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
                ppid = int(stat[stat.rindex(")") + 2:].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, ValueError):
                pass
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


def is_renderer(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"--type=renderer" in f.read()
    except OSError:
        return False


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Worker:
    def __init__(self, binary, queue_url, allow, concurrency):
        env = {k: v for k, v in os.environ.items() if k.startswith("AWS_") or k in ("PATH", "HOME")}
        env.update({
            "PAGE_IMPORT_QUEUE_URL": queue_url, "ARTIFACT_BUCKET": BUCKET, "S3_FORCE_PATH_STYLE": "true",
            "WEBHOOK_SECRET": SECRET, "EGRESS_ALLOW": ",".join(allow),
            "WORKER_CONCURRENCY": str(concurrency), "WORKER_RECEIVE_WAIT_SECS": "2", "RUST_LOG": "warn", "CHROMIUM_PATH": CHROMIUM,
        })
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([binary], env=env, stderr=self.log, stdout=subprocess.DEVNULL)
        self.peak_pss = 0
        self.window = None
        self.sampling = True
        threading.Thread(target=self._sample, daemon=True).start()
        time.sleep(2)  # the browser starts warm

    def _sample(self):
        # Only inside a window: reading smaps_rollup of Chromium's processes
        # every 100 ms takes the renderers' memory-map lock and a core (it
        # slowed the tall page's capture by a third), so timed captures run
        # without it.
        while self.sampling:
            if self.window is None:
                time.sleep(0.05)
                continue
            pids = tree(self.proc.pid)
            pss = pss_kib(pids)
            self.peak_pss = max(self.peak_pss, pss)
            window = self.window
            if window is not None:
                renderers = [p for p in pids if is_renderer(p)]
                window["seen"].update(renderers)
                window["pss"] = max(window["pss"], pss)
                # every process under the worker is Chromium's
                window["procs"] = max(window["procs"], len(pids) - 1)
                window["renderers"] = max(window["renderers"], len(renderers))
            time.sleep(0.1)

    def watch(self):
        """Starts a window: peak PSS, the most Chromium processes and
        renderers alive at once, and every renderer seen until `unwatch`."""
        self.window = {"pss": 0, "procs": 0, "renderers": 0, "seen": set()}

    def unwatch(self):
        time.sleep(0.15)  # one more sample
        window, self.window = self.window, None
        return window

    def stop(self):
        self.sampling = False
        rss = peak_rss_kib(self.proc.pid)
        self.proc.terminate()
        self.proc.wait(timeout=60)
        return rss


def job(queue_url, url, callback_url):
    pid = str(uuid.uuid4())
    return pid, json.dumps({
        "schemaVersion": 1, "pageImportId": pid, "attempt": 1, "nonce": uuid.uuid4().hex,
        "source": {"kind": "public_url", "url": url},
        "viewport": {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": SCALE},
        "readySelector": None,
        "artifacts": {"bucket": BUCKET, "prefix": f"page-imports/{pid}/1/"},
        "callbackUrl": callback_url,
    })


def capture(sqs, queue_url, callbacks, url):
    pid, body = job(queue_url, url, callbacks.url)
    sent = time.monotonic()
    sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    callbacks.wait([pid])
    arrived, answer = callbacks.arrived[pid]
    assert answer["outcome"] == "completed", answer
    return pid, arrived - sent


def floor(url, sandboxed):
    """`chromium --headless --screenshot` of `url` at bench W's window (see
    `oneshot.py`)."""
    return oneshot(url, WIDTH, HEIGHT, SCALE, sandboxed)


def cdp_floor(binary, urls, allow, runs, fast):
    """`capture_floor` (crates/capture-worker/examples): navigate, one
    full-page PNG and one DOM snapshot on the worker's own CDP client and
    browser launch, a warm browser, a new context per capture. Returns
    {url: [steps per run]}."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CHROMIUM_PATH": CHROMIUM, "EGRESS_ALLOW": ",".join(allow)}
    command = [binary, "--runs", str(runs), "--width", str(WIDTH), "--height", str(HEIGHT), "--scale", str(SCALE)]
    if fast:
        command.append("--fast")
    out = subprocess.run(command + urls, check=True, capture_output=True, timeout=900, env=env).stdout
    steps = collections.defaultdict(list)
    for line in out.decode().splitlines():
        row = json.loads(line)
        steps[row["url"]].append(row["steps"])
    return steps


def median_of(rows, key):
    return statistics.median(r[key] for r in rows)


STEPS = ["navigateMs", "readyMs", "settleMs", "revealMs", "quietMs", "screenshotMs", "snapshotMs", "detailsMs",
         "totalMs"]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--bin", required=True)
    parser.add_argument("--floor", help="the capture_floor example binary (the floor on the worker's CDP client)")
    parser.add_argument("--no-floors", action="store_true", help="the worker alone (quick looks while changing it)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pages", default="100,iframes,2000,25000,tall",
                        help="of 100, iframes, 2000, 25000, tall (20 000 nodes, 16 384 px)")
    parser.add_argument("--tput-pages", default="2000", help="pages for captures/min at concurrency 1 and 2")
    parser.add_argument("--tput-jobs", type=int, default=12)
    args = parser.parse_args()
    runs = 1 if args.smoke else args.runs
    wanted = ["100"] if args.smoke else args.pages.split(",")
    tput_wanted = ["100"] if args.smoke else [p for p in args.tput_pages.split(",") if p]
    sqs, s3 = aws("sqs"), aws("s3")
    # Two more sites, one frame page each: other loopback addresses, free ports.
    frame_sites = [Site({"/frame": page(100)}, host) for host in ("127.0.0.3", "127.0.0.4")]
    frames = "".join(f'<iframe src="{fs.url("/frame")}" width="600" height="400"></iframe>' for fs in frame_sites)
    bodies = {"/100": page(100), "/2000": page(2000), "/25000": page(25000), "/tall": tall_page(),
              "/iframes": page(100, f"<div>{frames}</div>")}
    site = Site(bodies)
    allow = [site.addr] + [fs.addr for fs in frame_sites]
    callbacks = Callbacks()
    # (label, path) in this order: the iframe page right after the small page
    # it extends, before the big pages leave Chromium's memory high.
    labels = {"100": "100", "iframes": "2 cross-origin iframes: 100 + 2×100", "2000": "2000", "25000": "25000",
              "tall": "tall: 20000 in 16 384 px"}
    pages = [(labels[k], f"/{k}") for k in labels if k in wanted]

    floors_cdp, floors_fast = {}, {}
    if args.floor and not args.no_floors:
        urls = [site.url(path) for _, path in pages]
        log(f"CDP floor, load {loadavg()}")
        floors_cdp = cdp_floor(args.floor, urls, allow, runs, fast=False)
        floors_fast = cdp_floor(args.floor, urls, allow, runs, fast=True)
        log(f"CDP floor done, load {loadavg()}")

    print("\n## W: capture worker vs `chromium --headless --screenshot` and the CDP floor\n")
    print(f"Viewport {WIDTH}×{HEIGHT} at scale {SCALE}; medians of {runs} runs; worker warm, "
          "`--screenshot` floor cold by nature, CDP floor warm (`capture_floor`: navigate, PNG, snapshot).\n")
    print("| page (DOM nodes) | worker: message → callback | floor: chromium --screenshot --no-sandbox | worker / floor "
          "| floor, sandboxed as nobody | worker / sandboxed floor "
          "| CDP floor | worker / CDP floor | CDP floor, optimizeForSpeed | worker / that floor "
          "| manifest bytes | bytes per node | peak PSS while capturing | Chromium processes (renderers), most at once "
          "| renderer processes seen | load avg before → after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    queue_url = sqs.create_queue(QueueName=f"bench-w-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    worker = Worker(args.bin, queue_url, allow, 1)
    peak_single = 0
    step_rows = []
    for label, path in pages:
        load_before = loadavg()
        url = site.url(path)
        frame_hits = [fs.hits for fs in frame_sites]
        capture(sqs, queue_url, callbacks, url)  # warm-up: first use of this page
        times, manifest_bytes, node_count, timings = [], 0, 0, []
        for _ in range(runs):
            pid, seconds = capture(sqs, queue_url, callbacks, url)
            times.append(seconds)
            raw = s3.get_object(Bucket=BUCKET, Key=f"page-imports/{pid}/1/capture.json")["Body"].read()
            manifest = json.loads(raw)
            timings.append(manifest["timings"])
        # Memory and processes: one more capture, sampled.
        worker.watch()
        capture(sqs, queue_url, callbacks, url)
        seen = worker.unwatch()
        manifest_bytes, node_count = len(raw), len(manifest["dom"]["nodes"])
        log(f"{label}: worker timings of the last timed run (ms since start) {manifest['timings']}")
        if path == "/iframes":
            log(f"{label}: frame sites answered {[fs.hits - h for fs, h in zip(frame_sites, frame_hits)]} requests "
                f"over {runs + 1} captures; blocked requests in the last manifest: {manifest.get('blockedRequests')}; "
                f"<iframe> nodes {sum(1 for d in manifest['dom']['nodes'] if d['name'].upper() == 'IFRAME')}, "
                f"nodes per document {collections.Counter(d.get('document', 0) for d in manifest['dom']['nodes'])}")
        floors = [floor(url, sandboxed=False) for _ in range(0 if args.no_floors else runs)] or [float("nan")]
        sandboxed_floors = [floor(url, sandboxed=True) for _ in range(0 if args.no_floors else runs)] or [float("nan")]
        w, f, fs = statistics.median(times), statistics.median(floors), statistics.median(sandboxed_floors)
        cdp = floors_cdp.get(url)
        fast = floors_fast.get(url)
        c = median_of(cdp, "totalMs") / 1000 if cdp else None
        cf = median_of(fast, "totalMs") / 1000 if fast else None
        cells = " | ".join(f"{x:.2f} s | {w / x:.2f}×" if x else "– | –" for x in (c, cf))
        print(f"| {label} ({node_count}) | {w:.2f} s | {f:.2f} s | {w / f:.2f}× | {fs:.2f} s | {w / fs:.2f}× | {cells} "
              f"| {manifest_bytes:,} | {manifest_bytes / node_count:.0f} | {seen['pss'] / 1024:.0f} MiB "
              f"| {seen['procs']} ({seen['renderers']}) | {len(seen['seen'])} over 1 capture "
              f"| {load_before} → {loadavg()} |")
        log(f"{label}: worker {[round(t, 2) for t in times]} floor {[round(t, 2) for t in floors]} "
            f"sandboxed floor {[round(t, 2) for t in sandboxed_floors]} "
            f"CDP floor {[r['totalMs'] for r in cdp or []]} fast {[r['totalMs'] for r in fast or []]}")
        step_rows.append((label, timings, cdp, fast))
    peak_single = worker.peak_pss
    worker_rss_single = worker.stop()

    print("\nStep by step: when each step ended, ms since the capture started (medians; the worker's from its "
          "manifest `timings`, whose snapshot, screenshot and details may overlap; the floor's from `capture_floor`):\n")
    print("| page | who | " + " | ".join(k[:-2] for k in STEPS) + " |")
    print("|---|---|" + "---|" * len(STEPS))
    for label, timings, cdp, fast in step_rows:
        print(f"| {label} | worker | " + " | ".join(f"{median_of(timings, k):.0f}" for k in STEPS) + " |")
        for who, rows in (("CDP floor", cdp), ("CDP floor, optimizeForSpeed", fast)):
            if rows:
                ended = {"navigateMs": [r["openMs"] + r["navigateMs"] for r in rows],
                         "screenshotMs": [r["openMs"] + r["navigateMs"] + r["screenshotMs"] for r in rows],
                         "snapshotMs": [r["totalMs"] for r in rows], "totalMs": [r["totalMs"] for r in rows]}
                print(f"| {label} | {who} | "
                      + " | ".join(f"{statistics.median(ended[k]):.0f}" if k in ended else "" for k in STEPS) + " |")

    count = 2 if args.smoke else args.tput_jobs
    print(f"\n| page | WORKER_CONCURRENCY | captures/min ({count} jobs) "
          "| peak PSS worker+Chromium | per concurrent capture | worker process peak RSS | load avg before → after |")
    print("|---|---|---|---|---|---|---|")
    for key in tput_wanted:
        tput_page = site.url(f"/{key}")
        for concurrency in (1, 2):
            load_before = loadavg()
            queue_url = sqs.create_queue(QueueName=f"bench-w-{uuid.uuid4().hex[:8]}")["QueueUrl"]
            worker = Worker(args.bin, queue_url, allow, concurrency)
            capture(sqs, queue_url, callbacks, tput_page)
            jobs = [job(queue_url, tput_page, callbacks.url) for _ in range(count)]
            started = time.monotonic()
            for _, body in jobs:
                sqs.send_message(QueueUrl=queue_url, MessageBody=body)
            callbacks.wait([pid for pid, _ in jobs], limit_s=900)
            elapsed = time.monotonic() - started
            # Memory: `concurrency` more jobs at once, sampled.
            worker.watch()
            jobs = [job(queue_url, tput_page, callbacks.url) for _ in range(concurrency)]
            for _, body in jobs:
                sqs.send_message(QueueUrl=queue_url, MessageBody=body)
            callbacks.wait([pid for pid, _ in jobs], limit_s=900)
            worker.unwatch()
            rss = worker.stop()
            print(f"| {labels[key]} | {concurrency} | {count / elapsed * 60:.1f} | {worker.peak_pss / 1024:.0f} MiB "
                  f"| {worker.peak_pss / 1024 / concurrency:.0f} MiB | {rss / 1024:.1f} MiB "
                  f"| {load_before} → {loadavg()} |")
    print(f"\nSingle-capture run above: peak PSS {peak_single / 1024:.0f} MiB, "
          f"worker process peak RSS {worker_rss_single / 1024:.1f} MiB.")


if __name__ == "__main__":
    main()
