"""Bench R runs side by side (issue 31): per page, capture time against
Chromium's one-shot (the median of every given run's one-shots of the page:
it does not depend on the worker) and where the capture's time went,
manifest bytes and
ink share (when the run rebuilt its pages), from what bench/rebuild.py
left under bench/out/rebuild/<label>/<page>/. Reports numbers; asserts
nothing. A `--device phone` run's one-shot is the CDP one with the device
(bench/oneshot.py `oneshot_device`), a desktop run's `--screenshot`: put
runs of one device side by side; a consent page's (issue 40) is the CDP
one with the library's decline cookie stored first. Consent: the
manifest's `consent`: outcome (cmp, ms), of the page's last capture; Δ:
the capture ms against the first run given, per page, with the median of
those differences below.

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
                       "consent": m.get("consent"),
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
    print("| page | run | capture ms | Δ ms | one-shot ms | ratio | consent | load | scroll pass | quiet | snapshot "
          "| screenshot and details | manifest bytes | ink share |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = {label: [] for label in labels}
    deltas = {label: [] for label in labels}
    for page in pages:
        for label in labels:
            r = runs[label][page]
            ratio = r["capture_ms"] / oneshot[page] if oneshot[page] else None
            if ratio:
                ratios[label].append(ratio)
            s = steps(r["timings"])
            ink = "–" if r["ink_share"] is None else f"{100 * r['ink_share']:.1f} %"
            delta = r["capture_ms"] - runs[labels[0]][page]["capture_ms"]
            deltas[label].append(delta)
            c = r["consent"]
            consent = f"{c.get('outcome')} ({c.get('cmp') or 'no cmp'}, {c.get('ms')} ms)" if c else "–"
            print(f"| {page} | {label} | {r['capture_ms']:,} | {'' if label == labels[0] else f'{delta:+,}'} "
                  f"| {oneshot[page] or '–'} "
                  f"| {f'{ratio:.2f}×' if ratio else '–'} | {consent} | {s['load']:,} | {s['scroll']:,} "
                  f"| {s['quiet']:,} | {s['snapshot']:,} | {s['rest']:,} | {r['bytes']:,} | {ink} |")
    print()
    for label in labels:
        total = sum(runs[label][p]["bytes"] for p in pages)
        median = f"{statistics.median(ratios[label]):.2f}×" if ratios[label] else "–"
        delta = "" if label == labels[0] or not deltas[label] else \
            f"; capture ms − `{labels[0]}`'s: median {statistics.median(deltas[label]):+,.0f} ms"
        print(f"- `{label}`: capture / one-shot median {median} over {len(ratios[label])} pages; "
              f"manifest bytes {total:,} over {len(pages)} pages{delta}")


if __name__ == "__main__":
    main()
