"""Benchmark E: status push over /events against polling with If-None-Match.

Run by `bench/run --only E` inside the throwaway stack. One service process
(release, 1 Tokio worker, as in the other measures); N imports of one tenant
inserted directly; one client per import, all in one asyncio process.

- Events: N open `/events` streams; then C changes per second committed by
  another client (psql: `update page_import set updated_at = clock_timestamp()`,
  a real change of the resource, so its ETag changes, then its `pg_notify`
  after the commit, as another replica's notifier sends it) for D seconds. Measured:
  service RSS per open idle stream, delivery latency (the update written to
  psql → the event read by the client; includes psql's own round trip),
  service CPU per delivered event.
- Polling: the same N clients, each `GET /page-imports/{id}` with
  `If-None-Match` once a second (the freshness polling gives at 1 s), under
  the same changes. Measured: service CPU per second and per answer.
Reports numbers; asserts nothing.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

DB = os.environ["DATABASE_URL"]
HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
TICKS = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[bench E {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def psql(sql):
    return subprocess.run(["psql", "-qAtX", DB, "-c", sql], check=True, capture_output=True, text=True).stdout.strip()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_service(binary, port, streams, stdin=None):
    env = {**os.environ, "LISTEN_ADDR": f"127.0.0.1:{port}", "WEBHOOK_SECRET": SECRET,
           "AUTH_JWKS_URL": f"file://{os.path.dirname(HERE)}/dev/jwks.json",
           "AUTH_ISSUER": "http://127.0.0.1/dev-issuer", "AUTH_AUDIENCE": "page-import-dev",
           "SOURCE_URL_DNS_CHECK": "false", "LOG_FORMAT": "json", "RUST_LOG": "warn",
           "TOKIO_WORKER_THREADS": "1", "EVENTS_MAX_STREAMS": str(streams + 10),
           "DATABASE_MAX_CONNECTIONS": "16"}
    proc = subprocess.Popen([binary, "serve"], env=env, stdin=stdin,
                            stdout=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stderr=None if os.environ.get("CONN_HEAP_TRACE") else subprocess.DEVNULL)
    import urllib.request
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                if r.status == 200:
                    return proc
        except Exception:
            time.sleep(0.05)
    raise SystemExit("service did not start")


def seed(n):
    """One tenant with `n` processing imports; returns their ids."""
    psql("insert into organization (id, name) values (900, 'bench-e') on conflict do nothing")
    psql("insert into project (id, organization_id, name) values (900, 900, 'bench-e') on conflict do nothing")
    psql("insert into organization_member (organization_id, subject) values (900, 'bench-e') on conflict do nothing")
    psql("delete from page_import where project_id = 900")
    psql(f"""insert into page_import (id, organization_id, project_id, source_url, viewport_width, viewport_height,
                                     nonce, created_by, updated_by)
             select 'bench-e-' || g, 900, 900, 'https://example.com/' || g, 1440, 900, md5(g::text), 'bench-e', 'bench-e'
             from generate_series(1, {n}) g""")
    return [f"bench-e-{i}" for i in range(1, n + 1)]


class Changes:
    """Commits `rate` updates per second through one psql session, each
    announced after its commit the way another replica's notifier does
    (`changes::Notifier`: `pg_notify` in a transaction of its own, committed
    without waiting for its WAL flush)."""

    def __init__(self, ids, rate, seconds):
        self.ids, self.rate, self.seconds = ids, rate, seconds
        self.sent = {}

    async def run(self):
        proc = await asyncio.create_subprocess_exec("psql", "-qAtX", DB, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.DEVNULL)
        start = time.monotonic()
        total = int(self.rate * self.seconds)
        for k in range(total):
            due = start + k / self.rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            pid = self.ids[k % len(self.ids)]
            self.sent[pid] = time.monotonic()
            proc.stdin.write(f"update page_import set updated_at = clock_timestamp() where id = '{pid}';\n"
                             f"select set_config('synchronous_commit', 'off', true), pg_notify('page_import_changed', '{pid}');\n"
                             .encode())
            await proc.stdin.drain()
        proc.stdin.close()
        await proc.wait()
        return total


slow = []


def slowest():
    """The 15 slowest deliveries, with when their change was sent: a stall
    of the whole path shows as a run of consecutive changes."""
    t0 = min(t for _, t, _ in slow) if slow else 0
    log("slowest: " + ", ".join(f"{l * 1000:.0f} ms (sent at {t - t0:.2f} s)" for l, t, _ in sorted(slow)[-15:]))


async def open_stream(port, token, pid, latencies, ready, changes):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /page-imports/{pid}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    await writer.drain()
    first = True
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            if line.startswith(b"data:") and line.strip() != b"data:":
                if first:
                    first = False
                    ready.append(pid)
                    continue
                sent = changes.sent.pop(pid, None)
                if sent is not None:
                    latencies.append(time.monotonic() - sent)
                    slow.append((time.monotonic() - sent, sent, pid))
    finally:
        writer.close()


async def get_import(reader, writer, token, pid, etag=None):
    """One `GET /page-imports/{pid}` on an open connection, read to its end:
    its status and ETag."""
    extra = f"If-None-Match: {etag}\r\n" if etag else ""
    writer.write(f"GET /page-imports/{pid} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n{extra}\r\n".encode())
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length = 0
    while True:
        header = await reader.readline()
        if header in (b"\r\n", b""):
            break
        name, _, value = header.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() == "etag":
            etag = value.strip()
    if length:
        await reader.readexactly(length)
    return status, etag


async def idle_connection(port, token, pid, kind, ready, hold):
    """A connection that stays open, of one `kind`: `accepted` (no request
    sent), `keep-alive` (after one GET of the import, read to its end) or
    `stream` (following the import's events, its first event read)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if kind == "keep-alive":
        await get_import(reader, writer, token, pid)
    elif kind == "stream":
        writer.write(f"GET /page-imports/{pid}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
        await writer.drain()
        while not (await reader.readline()).startswith(b"data:"):
            pass
    ready.append(pid)
    await hold.wait()
    writer.close()


def heap(service):
    """The counting service's (`examples/conn_heap`) live heap: bytes, and
    blocks by size."""
    service.stdin.write(b"\n")
    service.stdin.flush()
    return json.loads(service.stdout.readline())


async def per_connection(args, ids, token, kind):
    """RSS (KiB) and live heap (bytes, and blocks by size) per connection of
    one kind, in a fresh counting service process."""
    port = free_port()
    service = start_service(args.heap_bin, port, len(ids), stdin=subprocess.PIPE)
    try:
        await asyncio.sleep(0.5)
        # The process's first request of a kind builds what every later one reuses.
        warm, hold = [], asyncio.Event()
        hold.set()
        if kind != "accepted":
            await idle_connection(port, token, ids[0], kind, warm, hold)
        await asyncio.sleep(0.2)
        rss_before, heap_before = rss_kib(service.pid), heap(service)
        ready, hold = [], asyncio.Event()
        tasks = [asyncio.create_task(idle_connection(port, token, pid, kind, ready, hold)) for pid in ids]
        deadline = time.monotonic() + 60
        while len(ready) < len(ids) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        rss_after, heap_after = rss_kib(service.pid), heap(service)
        hold.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        n = len(ids)
        blocks = {}
        for size in set(heap_before["blocks"]) | set(heap_after["blocks"]):
            diff = heap_after["blocks"].get(size, 0) - heap_before["blocks"].get(size, 0)
            if diff:
                blocks[int(size)] = diff / n
        return {"rss_kib": (rss_after - rss_before) / n,
                "heap_bytes": (heap_after["live_bytes"] - heap_before["live_bytes"]) / n,
                "blocks": blocks}
    finally:
        service.terminate()
        service.wait(timeout=30)


def where_it_goes(kinds):
    """The blocks that make up each kind's live heap, per connection."""
    print("\n### Where an idle connection's heap goes (live blocks per connection, by size)\n")
    print("| block size (bytes) | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    sizes = sorted({s for k in kinds.values() for s, n in k["blocks"].items() if abs(n) >= 0.5},
                   key=lambda s: -max(abs(k["blocks"].get(s, 0)) * s for k in kinds.values()))
    for size in sizes:
        cells = []
        for k in kinds.values():
            n = k["blocks"].get(size, 0)
            cells.append(f"{n:.2f} × = {n * size / 1024:.2f} KiB" if n else "—")
        print(f"| {size} | " + " | ".join(cells) + " |")
    for name, k in kinds.items():
        small = sum(n * s for s, n in k["blocks"].items() if all(abs(kk["blocks"].get(s, 0)) < 0.5 for kk in kinds.values()))
        log(f"{name}: {small / 1024:.2f} KiB per connection in blocks of under 0.5 per connection")


async def poller(port, token, pid, stop, answers):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    etag = None
    while not stop.is_set():
        started = time.monotonic()
        status, etag = await get_import(reader, writer, token, pid, etag)
        answers.append(status)
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    writer.close()


async def where_only(args, ids, token):
    kinds = {kind: await per_connection(args, ids, token, kind) for kind in ("accepted", "keep-alive", "stream")}
    for kind, k in kinds.items():
        print(f"{kind}: RSS {k['rss_kib']:.1f} KiB, live heap {k['heap_bytes'] / 1024:.1f} KiB per connection")
    where_it_goes(kinds)


async def main_async(args):
    n, rate, seconds = (50, 20, 3) if args.smoke else (args.streams, args.rate, args.seconds)
    ids = seed(n)
    if args.where_only:
        token = subprocess.run([args.bin, "dev-token", "--sub", "bench-e"], check=True, capture_output=True,
                               text=True).stdout.strip()
        return await where_only(args, ids, token)
    port = free_port()
    service = start_service(args.bin, port, n)
    token = subprocess.run([args.bin, "dev-token", "--sub", "bench-e"], check=True, capture_output=True,
                           text=True).stdout.strip()
    try:
        await asyncio.sleep(0.5)
        rss_before = rss_kib(service.pid)
        latencies, ready = [], []
        changes = Changes(ids, rate, seconds)
        streams = [asyncio.create_task(open_stream(port, token, pid, latencies, ready, changes)) for pid in ids]
        deadline = time.monotonic() + 60
        while len(ready) < n and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if len(ready) < n:
            raise SystemExit(f"only {len(ready)} of {n} streams opened")
        await asyncio.sleep(1.0)
        rss_streams = rss_kib(service.pid)
        cpu0 = cpu_seconds(service.pid)
        sent = await changes.run()
        await asyncio.sleep(1.0)
        cpu_events = cpu_seconds(service.pid) - cpu0
        for task in streams:
            task.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
        delivered = len(latencies)
        if args.latency_only:
            lat = sorted(latencies) or [float("nan")]
            print(f"delivered {delivered} of {sent}: p50 {lat[len(lat) // 2] * 1000:.1f} ms, "
                  f"p99 {lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms")
            slowest()
            return

        await asyncio.sleep(1.0)
        stop, answers = asyncio.Event(), []
        polling = Changes(ids, rate, seconds)
        pollers = [asyncio.create_task(poller(port, token, pid, stop, answers)) for pid in ids]
        await asyncio.sleep(2.0)  # every client has its first tag
        answers.clear()
        cpu0 = cpu_seconds(service.pid)
        started = time.monotonic()
        await polling.run()
        elapsed = time.monotonic() - started
        cpu_polling = cpu_seconds(service.pid) - cpu0
        stop.set()
        await asyncio.gather(*pollers, return_exceptions=True)
    finally:
        service.terminate()
        service.wait(timeout=30)
    # Where an idle stream's memory goes: the same number of connections of
    # each kind, each kind in a fresh counting process.
    kinds = {kind: await per_connection(args, ids, token, kind) for kind in ("accepted", "keep-alive", "stream")}

    lat = sorted(latencies) or [float("nan")]
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
    changed = sum(1 for s in answers if s == 200)
    print(f"\n## E: status push (/events) vs polling with If-None-Match\n")
    print(f"{n} clients, {rate} changes/s for {seconds} s, one service process (1 Tokio worker).\n")
    print("| | events | polling (GET + If-None-Match, 1/s per client) |")
    print("|---|---|---|")
    print(f"| service RSS per open idle stream | {(rss_streams - rss_before) / n:.1f} KiB | — |")
    for kind, label in (("stream", "per idle stream"), ("accepted", "per connection accepted, no request sent"),
                        ("keep-alive", "per idle keep-alive connection after one GET")):
        print(f"| {label} (fresh counting process): RSS / live heap | {kinds[kind]['rss_kib']:.1f} KiB / "
              f"{kinds[kind]['heap_bytes'] / 1024:.1f} KiB | — |")
    print(f"| changes committed / delivered | {sent} / {delivered} | {changed} of {len(answers)} answers were 200 (the rest 304) |")
    print(f"| delivery latency p50 / p99 (commit → client) | {q(0.5):.1f} / {q(0.99):.1f} ms | ≈ 500 / 990 ms (half / all of the 1 s period) |")
    print(f"| service CPU | {cpu_events / seconds * 1000:.0f} ms/s | {cpu_polling / elapsed * 1000:.0f} ms/s |")
    print(f"| service CPU per delivered change | {cpu_events / max(delivered, 1) * 1e6:.0f} µs | "
          f"{cpu_polling / max(changed, 1) * 1e6:.0f} µs (all {len(answers)} polls counted) |")
    log(f"latencies: n={len(latencies)} max={max(lat) * 1000:.1f} ms")
    slowest()
    where_it_goes(kinds)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--bin", required=True)
    parser.add_argument("--heap-bin", required=True, help="examples/conn_heap: the service under a counting allocator")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--where-only", action="store_true", help="only where an idle connection's memory goes")
    parser.add_argument("--latency-only", action="store_true", help="only the streams' delivery latency")
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
