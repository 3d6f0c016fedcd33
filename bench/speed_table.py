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

A run made with `bench/rebuild.py --floor PATH` (issue 52) has each page's
floor in meta.json (`capture_floor`, measured in turns with the captures):
for those pages a second table sets capture ms against the floor's total
(median of the runs), the ratio and the difference, then the worker's
steps (from the manifests' cumulative `timings`, as durations, median over
the runs) beside the floor's (median per step). Below it, per run: the
median ratio, the pages more than 300 ms over their floor, and each page's
change against the first run given.

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


# The worker's `timings` (ms since the capture's start, in this order) as steps.
WORKER_STEPS = [("navigate", "navigateMs"), ("ready", "readyMs"), ("settle", "settleMs"), ("reveal", "revealMs"),
                ("quiet", "quietMs"), ("snapshot", "snapshotMs"), ("screenshot", "screenshotMs"),
                ("details", "detailsMs"), ("states", "statesMs")]
# capture_floor's keys that are times since its start, not a step's own.
FLOOR_CUMULATIVE = ("totalMs", "beforeScreenshotMs")
OVER_MS = 300


def worker_steps(t):
    """Each step's ms from a manifest's cumulative `timings` (a step missing
    from an older manifest: None, its time counted in the next one's)."""
    out, last = {}, 0
    for name, key in WORKER_STEPS:
        if t.get(key) is None:
            out[name] = None
            continue
        out[name] = t[key] - last
        last = t[key]
    out["total"] = t.get("totalMs")
    return out


def middle(values):
    """The median as bench/rebuild.py keeps capture ms and the floor: of an
    even count, the upper middle."""
    return sorted(values)[len(values) // 2]


def medians(dicts):
    """Per key, the median (`middle`) of the dicts' values that are numbers."""
    keys = list(dict.fromkeys(k for d in dicts for k in d))
    out = {}
    for k in keys:
        values = [d[k] for d in dicts if isinstance(d.get(k), (int, float))]
        out[k] = middle(values) if values else None
    return out


def floor_steps(steps):
    """A capture_floor run's own steps (ms), named without `Ms`."""
    return {k[:-2]: v for k, v in steps.items() if k.endswith("Ms") and k not in FLOOR_CUMULATIVE}


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
                       "floor": m.get("floor"), "floors": m.get("floors") or [],
                       "runs_timings": [t for t in m.get("timings") or [] if t],
                       "ink_share": inks.get(page), "at": os.path.getmtime(meta)}
    return dict(sorted(pages.items(), key=lambda kv: kv[1]["at"]))


def cell(v):
    return "–" if v is None else f"{round(v):,}"


def floor_table(labels, runs, pages):
    """The pages with a floor: capture against it, and both sides' steps."""
    rows = {}
    for label in labels:
        for page in pages:
            r = runs[label][page]
            if r["floor"] is None:
                continue
            timings = r["runs_timings"] or [r["timings"]]
            rows[label, page] = {
                "capture": r["capture_ms"], "floor": r["floor"],
                "worker": medians([worker_steps(t) for t in timings]),
                "floor_steps": medians([floor_steps(f) for f in r["floors"]]), "runs": len(r["floors"]),
            }
    if not rows:
        return
    floor_keys = list(dict.fromkeys(k for row in rows.values() for k in row["floor_steps"]))
    worker_keys = [name for name, _ in WORKER_STEPS]
    print(f"\n### Capture against its floor (issue 52)\n")
    print("capture ms: message sent → callback received; floor ms: `capture_floor`'s total (a warm Chromium, a "
          "fresh context, navigate to the load event, full-page PNG, DOM snapshot), each run after that run's "
          "capture. Then the worker's steps (ms, from the manifests' `timings`; `w total`: its `totalMs`, the rest "
          "of capture ms being the queue, uploads and callback) and the floor's (`f.`). Every figure is the median "
          "over the runs, per step for the steps (of an even count, the upper middle), so steps need not add up.\n")
    print("| page | run | capture ms | floor ms | capture / floor | capture − floor | "
          + " | ".join(worker_keys) + " | w total | " + " | ".join(f"f.{k}" for k in floor_keys) + " |")
    print("|---" * (7 + len(worker_keys) + len(floor_keys)) + "|")
    for page in pages:
        for label in labels:
            row = rows.get((label, page))
            if row is None:
                continue
            w, f = row["worker"], row["floor_steps"]
            print(f"| {page} | {label} | {row['capture']:,} | {row['floor']:,} | {row['capture'] / row['floor']:.2f}× "
                  f"| {row['capture'] - row['floor']:+,} | " + " | ".join(cell(w.get(k)) for k in worker_keys)
                  + f" | {cell(w.get('total'))} | " + " | ".join(cell(f.get(k)) for k in floor_keys) + " |")
    print()
    for label in labels:
        mine = {p: rows[label, p] for p in pages if (label, p) in rows}
        if not mine:
            continue
        ratios = [r["capture"] / r["floor"] for r in mine.values()]
        over = [p for p, r in mine.items() if r["capture"] - r["floor"] > OVER_MS]
        within = sum(1 for x in ratios if x <= 1.25)
        print(f"- `{label}`: capture / floor median {statistics.median(ratios):.2f}× over {len(mine)} pages "
              f"({within} within 1.25×); {len(over)} more than {OVER_MS} ms over their floor"
              + (f" ({', '.join(over)})" if over else ""))
    for label in labels[1:]:
        both = [p for p in pages if (labels[0], p) in rows and (label, p) in rows]
        if not both:
            continue
        print(f"\nChange `{labels[0]}` → `{label}`, per page:\n")
        print("| page | capture Δ ms | floor Δ ms | capture / floor | capture − floor |")
        print("|---|---|---|---|---|")
        changes = []
        for p in both:
            a, b = rows[labels[0], p], rows[label, p]
            over_a, over_b = a["capture"] - a["floor"], b["capture"] - b["floor"]
            changes.append(over_b - over_a)
            print(f"| {p} | {b['capture'] - a['capture']:+,} | {b['floor'] - a['floor']:+,} "
                  f"| {a['capture'] / a['floor']:.2f}× → {b['capture'] / b['floor']:.2f}× "
                  f"| {over_a:+,} → {over_b:+,} ({over_b - over_a:+,}) |")
        print(f"\n- capture − floor, `{label}` against `{labels[0]}`: median change {statistics.median(changes):+,.0f} ms "
              f"over {len(both)} pages")


def main():
    labels = sys.argv[1:]
    if not labels:
        raise SystemExit(__doc__)
    runs = {label: load(label) for label in labels}
    pages = [p for p in runs[labels[0]] if all(p in runs[label] for label in labels)]
    # The one-shot table unless every page of every run has a floor and none a one-shot.
    every_floor = all(runs[label][p]["floor"] is not None for label in labels for p in pages)
    if not every_floor or any(runs[label][p]["oneshots"] for label in labels for p in pages):
        one_shot_table(labels, runs, pages)
    floor_table(labels, runs, pages)


def one_shot_table(labels, runs, pages):
    """The table of issue 31: capture against Chromium's one-shot."""
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
