"""P1 of two builds side by side, in one run: `bench/side-by-side` starts the
stack and calls this. With `--reads`, P3's read by id instead, at 8 and at
64 client connections (`--read-connections`).

Each build gets a database of its own in one PostgreSQL cluster (its own
migrations, its own tables) and runs P1's service phase (closed loop, 8
connections, SQS refusing) in turns, the first build alternating, so
neither always inherits the other's checkpoint or autovacuum debt. Prints
each run, then the medians and their ratio.
"""

import argparse
import os
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (reads DATABASE_URL and the AWS variables at import)


def database_url(name):
    base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
    return f"{base}/{name}"


def prepare(name, binary):
    """A database of its own, migrated by `binary`, with the bench's tenant."""
    subprocess.run(["psql", "-qAtX", os.environ["DATABASE_URL"], "-c", f"drop database if exists {name}"],
                   check=True, capture_output=True)
    subprocess.run(["psql", "-qAtX", os.environ["DATABASE_URL"], "-c", f"create database {name}"],
                   check=True, capture_output=True)
    url = database_url(name)
    subprocess.run([binary, "migrate"], env={**os.environ, "DATABASE_URL": url}, check=True,
                   capture_output=True)
    bench.DB = url
    bench.seed_tenant()
    return url


def clear(url):
    """What `bench.clear_outbox` does, in this build's database (each
    schema has only some of these tables and columns, hence one statement
    each: 2549bf5's has no capture queue, an older one kept it in
    `capture_queue`, this one on `page_import_attempt`)."""
    for sql in ["delete from outbox_message", "delete from capture_queue",
                "update page_import_attempt set queued_seq = null where queued_seq is not null", "checkpoint"]:
        subprocess.run(["psql", "-qAtX", url, "-c", sql], capture_output=True)


def side_env(label):
    """The settings given to one side only (`--after-env`)."""
    pairs = bench.ARGS.after_env if label == "after" else []
    return dict(p.split("=", 1) for p in pairs)


def one_run(label, binary, url, token):
    bench.ARGS.bin = binary
    svc = bench.Service(18090, DATABASE_URL=url, AWS_ENDPOINT_URL="http://127.0.0.1:9",
                        DATABASE_MAX_CONNECTIONS=bench.ARGS.connections, **side_env(label))
    meter = bench.CpuMeter(svc.proc.pid)
    r = bench.loadgen("closed", "--url", svc.url + "/page-imports", "--method", "POST", "--body",
                      bench.CREATE_BODY, "--token", token, "--connections", bench.ARGS.connections,
                      "--seconds", bench.ARGS.seconds)
    cpu = meter.per_request(r["ok"])
    svc.stop()
    clear(url)
    print(f"| {label} | {r['rps']:.0f} | {r['failed']} | {cpu['service']:.0f} | {cpu['postgres']:.0f} |", flush=True)
    return r["rps"], cpu


def one_read_run(label, binary, url, token, connections):
    """P3's read by id against `rows` seeded imports, one service per turn
    (8 pool connections, as P1's), each client count in turn on it."""
    bench.ARGS.bin = binary
    svc = bench.Service(18091, DATABASE_URL=url, AWS_ENDPOINT_URL="http://127.0.0.1:9",
                        DATABASE_MAX_CONNECTIONS=bench.ARGS.connections, **side_env(label))
    got = {}
    for conns in connections:
        meter = bench.CpuMeter(svc.proc.pid)
        r = bench.loadgen("closed", "--url", svc.url + "/page-imports/bench-{n}", "--token", token,
                          "--ids", bench.ARGS.rows, "--connections", conns, "--seconds", bench.ARGS.seconds)
        cpu = meter.per_request(r["ok"])
        got[conns] = r["rps"]
        print(f"| {label} | {conns} | {r['rps']:.0f} | {r['failed']} | {cpu['service']:.0f} | {cpu['postgres']:.0f} |",
              flush=True)
    svc.stop()
    return got


def reads(args, sides, token):
    connections = [int(c) for c in args.read_connections.split(",")]
    for label in sides:
        bench.DB = sides[label][1]
        bench.seed_list(args.rows)
    print(f"# P3 read by id side by side ({time.strftime('%Y-%m-%d %H:%M')}, {args.runs} turns of {args.seconds} s, "
          f"{args.rows} rows, {bench.ARGS.connections} pool connections, client connections {args.read_connections})\n")
    print("| build | client connections | req/s | failed | service µs CPU/read | PostgreSQL µs CPU/read |")
    print("|---|---|---|---|---|---|")
    rps = {(label, c): [] for label in sides for c in connections}
    for turn in range(args.runs):
        order = ["before", "after"] if turn % 2 == 0 else ["after", "before"]
        for label in order:
            binary, url = sides[label]
            for conns, got in one_read_run(label, binary, url, token, connections).items():
                rps[(label, conns)].append(got)
    print()
    for conns in connections:
        b, a = bench.median(rps[("before", conns)]), bench.median(rps[("after", conns)])
        print(f"{conns} connections: median before {b:.0f} req/s, after {a:.0f} req/s: after = {a / b:.2f}× before")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True, help="the older page-import binary")
    parser.add_argument("--after", required=True, help="the newer page-import binary")
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--reads", action="store_true", help="P3's read by id instead of P1's create")
    parser.add_argument("--read-connections", default="8,64")
    parser.add_argument("--rows", type=int, default=10000, help="imports seeded for the reads")
    parser.add_argument("--after-env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the after build's service only (repeatable)")
    args = parser.parse_args()
    bench.ARGS = types.SimpleNamespace(bin=args.after, loadgen=args.loadgen, out=args.out, connections=8,
                                       seconds=args.seconds, rows=args.rows, after_env=args.after_env,
                                       service_workers=int(os.environ.get("SERVICE_WORKERS", "1")))
    sides = {"before": (args.before, prepare("p1_before", args.before)),
             "after": (args.after, prepare("p1_after", args.after))}
    token = bench.token()
    if args.reads:
        reads(args, sides, token)
        return
    print(f"# P1 side by side ({time.strftime('%Y-%m-%d %H:%M')}, {args.runs} turns of {args.seconds} s, "
          f"8 connections, SQS refusing)\n")
    print("| build | req/s | failed | service µs CPU/create | PostgreSQL µs CPU/create |")
    print("|---|---|---|---|---|")
    rps = {"before": [], "after": []}
    for turn in range(args.runs):
        order = ["before", "after"] if turn % 2 == 0 else ["after", "before"]
        for label in order:
            binary, url = sides[label]
            got, _ = one_run(label, binary, url, token)
            rps[label].append(got)
    b, a = bench.median(rps["before"]), bench.median(rps["after"])
    print(f"\nmedian before {b:.0f} req/s, after {a:.0f} req/s: after = {a / b:.2f}× before")


if __name__ == "__main__":
    main()
