"""Bench R runs side by side (issue 31): per page, capture time against
Chromium's one-shot (the median of every given run's one-shots of the page:
it does not depend on the worker) and where the capture's time went,
manifest bytes and
ink share (when the run rebuilt its pages), from what bench/rebuild.py
left under bench/out/rebuild/<label>/<page>/. Reports numbers; asserts
nothing. A `--device phone` run's one-shot is the CDP one with the device
(bench/oneshot.py `oneshot_device`), a desktop run's `--screenshot`: put
runs of one device side by side.

    bench/speed_table.py speed-before speed-after
"""

import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def steps(t):
    """The capture's steps in ms, from its manifest's `timings`."""
    reveal = t.get("revealMs", t["settleMs"])
    quiet = t.get("quietMs", reveal)
    snapshot = t.get("snapshotMs", quiet)
    return {"load": t["settleMs"], "scroll": reveal - t["settleMs"], "quiet": quiet - reveal,
            "snapshot": snapshot - quiet, "rest": t["totalMs"] - snapshot}


def load(label):
    """Each page's capture of run `label`, in the order captured."""
    folder = os.path.join(ROOT, "bench", "out", "rebuild", label)
    inks = {}
    if os.path.isfile(os.path.join(folder, "results.json")):
        with open(os.path.join(folder, "results.json")) as f:
            inks = {r["page"]: r["ink_share"] for r in json.load(f)}
    pages = {}
    for page in os.listdir(folder):
        meta = os.path.join(folder, page, "meta.json")
        if not os.path.isfile(meta):
            continue
        with open(meta) as f:
            m = json.load(f)
        with open(os.path.join(folder, page, "capture.json")) as f:
            timings = json.load(f).get("timings") or {}
        pages[page] = {"capture_ms": round(m["seconds"] * 1000), "bytes": m["bytes"], "timings": timings,
                       "oneshots": m.get("oneshots") or [],
                       "ink_share": inks.get(page), "at": os.path.getmtime(meta)}
    return dict(sorted(pages.items(), key=lambda kv: kv[1]["at"]))


def main():
    labels = sys.argv[1:]
    runs = {label: load(label) for label in labels}
    pages = [p for p in runs[labels[0]] if all(p in runs[label] for label in labels)]
    # The one-shot does not depend on the worker: each page's is the median
    # of every run's one-shots, so that runs are compared on one footing.
    oneshot = {}
    for p in pages:
        shots = [s for label in labels for s in runs[label][p]["oneshots"]]
        oneshot[p] = round(statistics.median(shots) * 1000) if shots else None
    print("| page | run | capture ms | one-shot ms | ratio | load | scroll pass | quiet | snapshot "
          "| screenshot and details | manifest bytes | ink share |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = {label: [] for label in labels}
    for page in pages:
        for label in labels:
            r = runs[label][page]
            ratio = r["capture_ms"] / oneshot[page] if oneshot[page] else None
            if ratio:
                ratios[label].append(ratio)
            s = steps(r["timings"])
            ink = "–" if r["ink_share"] is None else f"{100 * r['ink_share']:.1f} %"
            print(f"| {page} | {label} | {r['capture_ms']:,} | {oneshot[page] or '–'} "
                  f"| {f'{ratio:.2f}×' if ratio else '–'} | {s['load']:,} | {s['scroll']:,} | {s['quiet']:,} "
                  f"| {s['snapshot']:,} | {s['rest']:,} | {r['bytes']:,} | {ink} |")
    print()
    for label in labels:
        total = sum(runs[label][p]["bytes"] for p in pages)
        median = f"{statistics.median(ratios[label]):.2f}×" if ratios[label] else "–"
        print(f"- `{label}`: capture / one-shot median {median} over {len(ratios[label])} pages; "
              f"manifest bytes {total:,} over {len(pages)} pages")


if __name__ == "__main__":
    main()
