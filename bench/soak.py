"""Soak: many captures of a mix of real-world-like pages at concurrency 2,
the worker's and Chromium's memory over them, and every failure (issue 31).

    .venv/bin/python bench/soak.py --bin target/release/capture-worker [--captures 500]

Run inside a stack (AWS_ENDPOINT_URL, ARTIFACT_BUCKET; `bench/run --only S`
starts one). The pages are bench R's (`bench/rebuild/catalogue.py`: our own
pages and the registry packages', fetched once), served on 127.0.23.1 and
127.0.23.2 like R serves them; jobs go straight onto a moto queue and a
loopback server answers the signed callbacks, as in bench W. Captures are
kept `--concurrency` in flight (the worker's WORKER_CONCURRENCY), cycling
through the pages. The PSS of the worker and every process below it is
read every 2 s; reported: its median over the first 50 and over the last
50 captures, and the ratio (target ≤ 1.2×). The worker runs with its
defaults otherwise (BROWSER_MAX_CAPTURES 200: two relaunches over 500).
"""

import argparse
import collections
import os
import statistics
import sys
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "rebuild"))

import catalogue as page_sets  # noqa: E402
from callbacks import Callbacks  # noqa: E402
from rebuild import SITE_HOSTS, Site  # noqa: E402
from worker import Worker, aws, job, log, pss_kib, tree  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--captures", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--window", type=int, default=50, help="captures at each end the PSS is compared over")
    args = parser.parse_args()
    pages = page_sets.catalogue(ROOT, smoke=False, log=log)
    sites = [Site(host, page_sets.mounts(ROOT)) for host in SITE_HOSTS]
    urls = [sites[0].origin + p.path.replace("{other}", urllib.parse.quote(sites[1].origin, safe=""))
            for p in pages]
    names = [p.name for p in pages]
    sqs = aws("sqs")
    queue_url = sqs.create_queue(QueueName=f"bench-soak-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    callbacks = Callbacks()
    worker = Worker(args.bin, queue_url, [s.addr for s in sites], args.concurrency)
    samples = []  # (captures done, PSS KiB)
    done = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            samples.append((done[0], pss_kib(tree(worker.proc.pid))))
            stop.wait(2)

    threading.Thread(target=sample, daemon=True).start()
    failures = collections.Counter()
    in_flight = {}
    sent = 0
    started = time.monotonic()
    log(f"{args.captures} captures of {len(urls)} pages at concurrency {args.concurrency}")
    while done[0] < args.captures:
        while sent < args.captures and len(in_flight) < args.concurrency:
            url = urls[sent % len(urls)]
            pid, body = job(queue_url, url, callbacks.url)
            sqs.send_message(QueueUrl=queue_url, MessageBody=body)
            in_flight[pid] = names[sent % len(urls)]
            sent += 1
        for pid in [p for p in in_flight if p in callbacks.arrived]:
            name = in_flight.pop(pid)
            answer = callbacks.arrived[pid][1]
            if answer["outcome"] != "completed":
                failures[(name, answer.get("errorMessage"))] += 1
            done[0] += 1
            if done[0] % 50 == 0:
                log(f"{done[0]} done, {sum(failures.values())} failed, PSS {samples[-1][1] / 1024:.0f} MiB")
        time.sleep(0.02)
    elapsed = time.monotonic() - started
    stop.set()
    rss = worker.stop()
    sqs.delete_queue(QueueUrl=queue_url)
    w = args.window
    first = [kib for n, kib in samples if n <= w] or [0]
    last = [kib for n, kib in samples if n >= args.captures - w] or [0]
    f, l_ = statistics.median(first), statistics.median(last)
    print(f"\n## Soak: {args.captures} captures at concurrency {args.concurrency}\n")
    print(f"{len(urls)} pages ({', '.join(names)}), cycled; {elapsed:.0f} s in all "
          f"({args.captures / elapsed * 60:.0f} captures/min). PSS of the worker and every process below it, "
          f"sampled every 2 s.\n")
    print("| | captures | PSS median | PSS max |")
    print("|---|---|---|---|")
    print(f"| first {w} | 1–{w} | {f / 1024:.0f} MiB | {max(first) / 1024:.0f} MiB |")
    print(f"| last {w} | {args.captures - w + 1}–{args.captures} | {l_ / 1024:.0f} MiB | {max(last) / 1024:.0f} MiB |")
    print(f"\nLast / first: **{l_ / f:.2f}×** (target ≤ 1.2×). The worker's own peak RSS: {rss / 1024:.0f} MiB. "
          f"Failures: **{sum(failures.values())}**" + (f": {dict(failures)}" if failures else "") + ".")


if __name__ == "__main__":
    main()
