#!/usr/bin/env python3
"""Draws one import's trace from the spans both binaries export (SPEC §9).

    scripts/trace-picture.py collect --port 4318 --out spans.jsonl
        a stand-in OTLP/HTTP collector for `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`:
        appends each export's JSON to the file, one line each, until Ctrl-C

    scripts/trace-picture.py render spans.jsonl [--trace ID] > docs/one-import-trace.svg
        an SVG waterfall of one trace (default: the one with a `capture` span
        and the most spans): one row per span, indented under its parent,
        coloured by the service that made it, with its duration; a span's
        links (a re-dispatched attempt's to the create's trace) are listed
        under the picture.

Standard library only.
"""

import argparse
import html
import http.server
import json
import sys

COLOURS = {"page-import": "#3b6fd8", "capture-worker": "#d8743b"}


def collect(port, out):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            try:
                with open(out, "a") as f:
                    f.write(json.dumps(json.loads(body)) + "\n")
                self.send_response(200)
            except ValueError:
                self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"collecting OTLP/HTTP JSON at http://127.0.0.1:{port}/v1/traces into {out}", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def attr(attrs, key):
    for a in attrs or []:
        if a["key"] == key:
            v = a["value"]
            return v.get("stringValue") or v.get("intValue") or v.get("doubleValue") or v.get("boolValue")
    return None


def load(path):
    spans = []
    with open(path) as f:
        for line in f:
            for rs in json.loads(line).get("resourceSpans", []):
                service = attr(rs.get("resource", {}).get("attributes"), "service.name") or "?"
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        spans.append({
                            "service": service,
                            "trace": s["traceId"],
                            "id": s["spanId"],
                            "parent": s.get("parentSpanId") or None,
                            "name": s["name"],
                            "start": int(s["startTimeUnixNano"]),
                            "end": int(s["endTimeUnixNano"]),
                            "attrs": {a["key"]: attr([a], a["key"]) for a in s.get("attributes", [])},
                            "links": [l["traceId"] for l in s.get("links", [])],
                        })
    return spans


def pick(spans, trace):
    if trace:
        return [s for s in spans if s["trace"] == trace]
    traces = {}
    for s in spans:
        traces.setdefault(s["trace"], []).append(s)
    with_capture = [t for t in traces.values() if any(s["name"] == "capture" for s in t)]
    candidates = with_capture or list(traces.values())
    return max(candidates, key=len)


def ordered(spans):
    """Depth-first, children by start time: a waterfall's rows."""
    ids = {s["id"] for s in spans}
    children = {}
    for s in spans:
        parent = s["parent"] if s["parent"] in ids else None
        children.setdefault(parent, []).append(s)
    rows = []

    def walk(parent, depth):
        for s in sorted(children.get(parent, []), key=lambda s: s["start"]):
            rows.append((depth, s))
            walk(s["id"], depth + 1)

    walk(None, 0)
    return rows


def label(s):
    extra = [f"{k}={s['attrs'][k]}" for k in ("page_import_id", "attempt", "queue", "path") if s["attrs"].get(k)]
    if s["name"] == "request" and s["attrs"].get("method"):
        extra = [f"{s['attrs']['method']} {s['attrs'].get('path', '')}"]
    return s["name"] + (f"  ({', '.join(str(e) for e in extra)})" if extra else "")


def render(path, trace):
    spans = pick(load(path), trace)
    if not spans:
        sys.exit("no spans")
    rows = ordered(spans)
    t0 = min(s["start"] for s in spans)
    t1 = max(s["end"] for s in spans)
    total = max(t1 - t0, 1)
    width, left, row_h, top = 1200, 430, 22, 60
    bar_w = width - left - 90
    height = top + row_h * len(rows) + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="DejaVu Sans Mono, monospace" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="22" font-size="15" font-weight="bold">One import, one trace: '
           f'{html.escape(spans[0]["trace"])} ({total / 1e6:.0f} ms, {len(spans)} spans)</text>']
    x = 10
    for service, colour in COLOURS.items():
        out.append(f'<rect x="{x}" y="34" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 18}" y="45">{service}</text>')
        x += 180
    for tick in range(0, 11):
        tx = left + bar_w * tick / 10
        out.append(f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{height - 50}" stroke="#eee"/>'
                   f'<text x="{tx:.1f}" y="{height - 36}" text-anchor="middle" fill="#888">'
                   f'{total * tick / 10 / 1e6:.0f} ms</text>')
    for i, (depth, s) in enumerate(rows):
        y = top + i * row_h
        colour = COLOURS.get(s["service"], "#777")
        x0 = left + bar_w * (s["start"] - t0) / total
        w = max(bar_w * (s["end"] - s["start"]) / total, 1.5)
        out.append(f'<text x="{10 + depth * 14}" y="{y + 14}">{html.escape(label(s))[:60 - depth * 2]}</text>')
        out.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" fill="{colour}" rx="2"/>')
        out.append(f'<text x="{x0 + w + 4:.1f}" y="{y + 14}" fill="#444">{(s["end"] - s["start"]) / 1e6:.1f} ms</text>')
    links = sorted({l for s in spans for l in s["links"]})
    note = f"links to: {', '.join(links)}" if links else "no links (a first attempt continues its create's trace)"
    out.append(f'<text x="10" y="{height - 12}" fill="#666">{html.escape(note)}</text>')
    out.append("</svg>")
    print("\n".join(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--port", type=int, default=4318)
    c.add_argument("--out", required=True)
    r = sub.add_parser("render")
    r.add_argument("spans")
    r.add_argument("--trace")
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.port, args.out)
    else:
        render(args.spans, args.trace)


if __name__ == "__main__":
    main()
