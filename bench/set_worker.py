"""Benchmark V: an import set's three variants in one message against three
single imports of the same page (issue 53, SPEC §15 "Cost": a set of a
desktop, a tablet and a phone costs the worker at most 1.6× one capture).

Run by `bench/run --only V` inside the throwaway stack (moto for SQS and
S3), or alone with its `AWS_ENDPOINT_URL` and `ARTIFACT_BUCKET`. The worker
binary runs as in production, at `WORKER_CONCURRENCY` 1; jobs go straight
onto the queue and `callbacks.py` answers the signed callbacks. Pages:
bench W's 100- and 2 000-node pages, and bench R's own pages (served by
R's static server, no caching headers), plus `cached`: a page with a
stylesheet, a web font and images served with `Cache-Control: max-age`.

Per page, `--runs` rounds, each in turn: the three variants as three single
messages one after another (message → its callback, each), then the same
three as one set's message (message → the last member's callback). Prints
medians: one capture (the mean of the three singles), the three singles'
sum, the set, set ÷ one capture (the SPEC's figure) and set ÷ the three
singles, and the page server's requests per round for each. Asserts
nothing.
"""

import argparse
import http.server
import json
import os
import statistics
import sys
import threading
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(__file__))

from callbacks import Callbacks  # noqa: E402
from worker import BUCKET, Worker, aws, loadavg, page  # noqa: E402

VARIANTS = [
    ("desktop", {"width": 1440, "height": 900, "deviceScaleFactor": 1.0, "mobile": False}),
    ("tablet", {"width": 820, "height": 1180, "deviceScaleFactor": 2.0, "mobile": True}),
    ("phone", {"width": 390, "height": 844, "deviceScaleFactor": 3.0, "mobile": True}),
]
R_PAGES = ["fonts", "srcset", "background", "stacking"]
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def log(msg):
    print(f"[bench V {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


MIME = {".html": "text/html; charset=utf-8", ".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png",
        ".ttf": "font/ttf", ".js": "application/javascript"}


class Served:
    """A site on 127.0.0.1:<free port> answering `lookup(path)` → `(content
    type, cache-control or None, body)` or None (404); counts its requests."""

    def __init__(self, lookup):
        self.hits = 0
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                served.hits += 1
                found = lookup(urllib.parse.unquote(urllib.parse.urlsplit(self.path).path))
                ctype, cache, body = found or ("text/plain", None, b"")
                self.send_response(200 if found else 404)
                self.send_header("content-type", ctype)
                if cache:
                    self.send_header("cache-control", cache)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.addr = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def files_in(mounts):
    """`Served`'s lookup of files under (URL prefix, folder) mounts, no
    caching headers (bench R's server)."""
    def lookup(path):
        for prefix, folder in mounts:
            if path.startswith(prefix):
                target = os.path.normpath(os.path.join(folder, path[len(prefix):]))
                if target.startswith(folder) and os.path.isfile(target):
                    with open(target, "rb") as f:
                        return MIME.get(os.path.splitext(target)[1], "application/octet-stream"), None, f.read()
        return None
    return lookup


def cached_files():
    """A page with a stylesheet, a web font and three images, each with
    `Cache-Control: max-age=3600`."""
    def svg(fill):
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300">'
                f'<rect width="400" height="300" fill="{fill}"/></svg>').encode()
    with open(FONT, "rb") as f:
        font = f.read()
    cards = "".join(f'<div class="card"><img src="/img{i % 3}.svg"><h3>Card {i}</h3><p>Text {i}</p></div>'
                    for i in range(60))
    cache = "public, max-age=3600"
    files = {
        "/": ("text/html; charset=utf-8", None, (
            '<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">'
            '<link rel="stylesheet" href="/style.css"></head><body><h1>Breakpoints</h1>'
            f'<div class="grid">{cards}</div></body></html>').encode()),
        "/style.css": ("text/css", cache, (
            '@font-face { font-family: Brand; src: url(/brand.ttf) format("truetype"); }'
            'body { font-family: Brand, sans-serif; margin: 0; }'
            '.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: 8px; }'
            '.card img { width: 100%; height: auto; }').encode()),
        "/brand.ttf": ("font/ttf", cache, font),
        **{f"/img{i}.svg": ("image/svg+xml", cache, svg(c)) for i, c in enumerate(("teal", "tomato", "gold"))},
    }
    return files.get


def job(url, viewport, callback_url):
    pid = str(uuid.uuid4())
    return pid, {
        "schemaVersion": 1, "pageImportId": pid, "attempt": 1, "nonce": uuid.uuid4().hex,
        "source": {"kind": "public_url", "url": url}, "viewport": viewport, "readySelector": None,
        "artifacts": {"bucket": BUCKET, "prefix": f"page-imports/{pid}/1/"}, "callbackUrl": callback_url,
    }


LAST = {"singles": [], "set": []}
STEPS = ["navigateMs", "settleMs", "revealMs", "quietMs", "snapshotMs", "screenshotMs", "detailsMs", "totalMs"]


def steps_of(s3, pids):
    """Each capture's `timings` (ms since its start), for the log."""
    rows = []
    for pid in pids:
        raw = s3.get_object(Bucket=BUCKET, Key=f"page-imports/{pid}/1/capture.json")["Body"].read()
        timings = json.loads(raw)["timings"]
        rows.append([timings[k] for k in STEPS])
    return rows


def singles(sqs, queue_url, callbacks, url):
    """The three variants one after another: each message → its callback."""
    times = []
    for _, viewport in VARIANTS:
        pid, body = job(url, viewport, callbacks.url)
        sent = time.monotonic()
        sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(body))
        callbacks.wait([pid])
        arrived, answer = callbacks.arrived[pid]
        assert answer["outcome"] == "completed", answer
        times.append(arrived - sent)
        LAST["singles"].append(pid)
    return times


def as_set(sqs, queue_url, callbacks, url):
    """The three variants as one set's message: message → last callback."""
    jobs = [job(url, viewport, callbacks.url) for _, viewport in VARIANTS]
    message = {"schemaVersion": 2, "setId": str(uuid.uuid4()), "jobs": [body for _, body in jobs]}
    sent = time.monotonic()
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(message))
    pids = [pid for pid, _ in jobs]
    LAST["set"] = pids
    callbacks.wait(pids)
    for pid in pids:
        assert callbacks.arrived[pid][1]["outcome"] == "completed", callbacks.arrived[pid][1]
    return max(callbacks.arrived[pid][0] for pid in pids) - sent


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--bin", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pages", default="100,2000,cached," + ",".join(R_PAGES))
    args = parser.parse_args()
    runs = 1 if args.smoke else args.runs
    wanted = ["100", "cached"] if args.smoke else args.pages.split(",")
    sqs, s3 = aws("sqs"), aws("s3")
    w_pages = {"/100": page(100), "/2000": page(2000)}
    w_site = Served(lambda path: ("text/html; charset=utf-8", None, w_pages[path]) if path in w_pages else None)
    cached = Served(cached_files())
    pages_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rebuild", "pages") + "/"
    r_site = Served(files_in([("/sysfonts/", "/usr/share/fonts/"), ("/", pages_dir)]))
    servers = {"100": w_site, "2000": w_site, "cached": cached, **{name: r_site for name in R_PAGES}}
    urls = {"100": f"http://{w_site.addr}/100", "2000": f"http://{w_site.addr}/2000",
            "cached": f"http://{cached.addr}/", **{name: f"http://{r_site.addr}/{name}.html" for name in R_PAGES}}
    allow = [w_site.addr, cached.addr, r_site.addr]
    callbacks = Callbacks()
    queue_url = sqs.create_queue(QueueName=f"bench-v-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    worker = Worker(args.bin, queue_url, allow, 1)
    worker.sampling = False

    print("\n## V: an import set of three variants against three single imports\n")
    print("Desktop 1440×900 @1, tablet 820×1180 @2 (mobile), phone 390×844 @3 (mobile); worker warm, "
          f"`WORKER_CONCURRENCY` 1; medians of {runs} rounds, singles and set in turn.\n")
    print("| page | one capture (mean of the 3 singles) | 3 singles, one after another | set of 3 "
          "| set ÷ one capture | set ÷ 3 singles | page server requests: 3 singles → set | load avg before → after |")
    print("|---|---|---|---|---|---|---|---|")
    for name in wanted:
        url = urls[name]
        server = servers[name]
        load_before = loadavg()
        singles(sqs, queue_url, callbacks, url)  # warm-up: Chromium's and the server's first look at the page
        as_set(sqs, queue_url, callbacks, url)
        ones, sums, sets, hits = [], [], [], []
        for _ in range(runs):
            LAST["singles"] = []
            before = server.hits
            times = singles(sqs, queue_url, callbacks, url)
            middle = server.hits
            sets.append(as_set(sqs, queue_url, callbacks, url))
            after = server.hits
            ones.append(sum(times) / len(times))
            sums.append(sum(times))
            hits.append((middle - before, after - middle))
        one, three, whole = (statistics.median(x) for x in (ones, sums, sets))
        requests = f"{hits[-1][0]} → {hits[-1][1]}"
        print(f"| {name} | {one:.2f} s | {three:.2f} s | {whole:.2f} s | {whole / one:.2f}× | {whole / three:.2f}× "
              f"| {requests} | {load_before} → {loadavg()} |")
        log(f"{name}: singles {[round(s, 2) for s in sums]} sets {[round(s, 2) for s in sets]}")
        log(f"{name}: steps {STEPS} of the last round's singles {steps_of(s3, LAST['singles'])} "
            f"and set members {steps_of(s3, LAST['set'])}")
    worker.stop()


if __name__ == "__main__":
    main()
