"""Benchmark M: what manifest v2 (SPEC §11, issue 23) costs a capture.

Run by `bench/run --only M` inside the throwaway stack, or by hand with the
stack's variables set. Two worker binaries (`--before`, `--after`) capture
the same pages of about 2 000 and 25 000 DOM nodes (bench W's pages) at
1440×900, scale 2, one warm-up and `--runs` measured captures each, one
binary at a time. Printed per page and binary (medians):

- message → callback, as bench W measures it;
- the worker's own `timings.totalMs`;
- the bounded waits v2 adds, on their own: the scroll pass (`revealMs` −
  `settleMs`, at most 3 s) and the quiet wait (`quietMs` − `revealMs`, at
  least 0.5 s, at most 5 s);
- the capture without them: `totalMs` minus those two waits;
- snapshot to end (`detailsMs` − `snapshotMs`): the screenshot, with the
  asking of fonts, pixels and shadow hosts alongside it since issue 21
  part 3 (before, the asking alone, after the screenshot);
- manifest bytes.

A v1 manifest has no `revealMs`/`quietMs`/`detailsMs`: those read 0.
Reports numbers; asserts nothing.
"""

import argparse
import os
import statistics
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import worker as w  # noqa: E402
from callbacks import Callbacks  # noqa: E402


def measure(binary, site, sizes, runs):
    sqs, s3 = w.aws("sqs"), w.aws("s3")
    queue_url = sqs.create_queue(QueueName=f"bench-m-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    callbacks = Callbacks()
    worker = w.Worker(binary, queue_url, [site.addr], 1)
    rows = {}
    try:
        for n in sizes:
            url = site.url(f"/{n}")
            w.capture(sqs, queue_url, callbacks, url)  # warm-up
            samples = []
            for _ in range(runs):
                pid, seconds = w.capture(sqs, queue_url, callbacks, url)
                body = s3.get_object(Bucket=w.BUCKET, Key=f"page-imports/{pid}/1/capture.json")["Body"].read()
                t = w.json.loads(body)["timings"]
                reveal = t.get("revealMs", t["settleMs"]) - t["settleMs"]
                quiet = t.get("quietMs", t.get("revealMs", t["settleMs"])) - t.get("revealMs", t["settleMs"])
                details = t.get("detailsMs", t["snapshotMs"]) - t["snapshotMs"]
                samples.append((seconds * 1000, t["totalMs"], reveal, quiet, t["totalMs"] - reveal - quiet,
                                details, len(body)))
            rows[n] = [statistics.median(column) for column in zip(*samples)]
    finally:
        worker.stop()
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    sizes = [100] if args.smoke else [2000, 25000]
    runs = 1 if args.smoke else args.runs
    site = w.Site({f"/{n}": w.page(n) for n in sizes})
    results = {label: measure(binary, site, sizes, runs)
               for label, binary in (("before", args.before), ("after", args.after))}
    print("\n## M: what manifest v2 costs a capture\n")
    print(f"Viewport {w.WIDTH}×{w.HEIGHT} at scale {w.SCALE}; medians of {runs} runs after a warm-up.\n")
    print("| page (nodes) | worker | message → callback ms | totalMs | scroll pass ms | quiet wait ms "
          "| totalMs without the two waits | snapshot → end ms | manifest bytes |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for label in ("before", "after"):
            r = results[label][n]
            print(f"| {n} | {label} | {r[0]:,.0f} | {r[1]:,.0f} | {r[2]:,.0f} | {r[3]:,.0f} | {r[4]:,.0f} "
                  f"| {r[5]:,.0f} | {r[6]:,.0f} |")
        b, a = results["before"][n], results["after"][n]
        print(f"| {n} | after / before | {a[0] / b[0]:.2f}× | {a[1] / b[1]:.2f}× | | | {a[4] / b[4]:.2f}× | "
              f"| {a[6] / b[6]:.2f}× |")


if __name__ == "__main__":
    main()
