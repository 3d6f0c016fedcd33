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


def start_service(binary, port, streams):
    env = {**os.environ, "LISTEN_ADDR": f"127.0.0.1:{port}", "WEBHOOK_SECRET": SECRET,
           "AUTH_JWKS_URL": f"file://{os.path.dirname(HERE)}/dev/jwks.json",
           "AUTH_ISSUER": "http://127.0.0.1/dev-issuer", "AUTH_AUDIENCE": "page-import-dev",
           "SOURCE_URL_DNS_CHECK": "false", "LOG_FORMAT": "json", "RUST_LOG": "warn",
           "TOKIO_WORKER_THREADS": "1", "EVENTS_MAX_STREAMS": str(streams + 10),
           "DATABASE_MAX_CONNECTIONS": "16"}
    proc = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


async def idle_connection(port, token, pid, request, ready, hold):
    """A connection that stays open: with `request`, after one GET of the
    import read to its end (an idle keep-alive connection); without, as
    accepted, no request sent."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if request:
        await get_import(reader, writer, token, pid)
    ready.append(pid)
    await hold.wait()
    writer.close()


async def rss_per_connection(args, ids, token, request):
    """Service RSS per connection of one kind, in a fresh service process."""
    port = free_port()
    service = start_service(args.bin, port, len(ids))
    try:
        await asyncio.sleep(0.5)
        if request:  # the process's first GET builds what every later one reuses
            warm, hold = [], asyncio.Event()
            hold.set()
            await idle_connection(port, token, ids[0], True, warm, hold)
            await asyncio.sleep(0.2)
        before = rss_kib(service.pid)
        ready, hold = [], asyncio.Event()
        tasks = [asyncio.create_task(idle_connection(port, token, pid, request, ready, hold)) for pid in ids]
        deadline = time.monotonic() + 60
        while len(ready) < len(ids) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        after = rss_kib(service.pid)
        hold.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        return (after - before) / len(ids)
    finally:
        service.terminate()
        service.wait(timeout=30)


async def poller(port, token, pid, stop, answers):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    etag = None
    while not stop.is_set():
        started = time.monotonic()
        status, etag = await get_import(reader, writer, token, pid, etag)
        answers.append(status)
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    writer.close()


async def main_async(args):
    n, rate, seconds = (50, 20, 3) if args.smoke else (args.streams, args.rate, args.seconds)
    ids = seed(n)
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
    # Where an idle stream's RSS goes: the same number of connections that
    # carry no stream, each in a fresh process.
    per_accepted = await rss_per_connection(args, ids, token, request=False)
    per_keepalive = await rss_per_connection(args, ids, token, request=True)

    lat = sorted(latencies) or [float("nan")]
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
    changed = sum(1 for s in answers if s == 200)
    print(f"\n## E: status push (/events) vs polling with If-None-Match\n")
    print(f"{n} clients, {rate} changes/s for {seconds} s, one service process (1 Tokio worker).\n")
    print("| | events | polling (GET + If-None-Match, 1/s per client) |")
    print("|---|---|---|")
    print(f"| service RSS per open idle stream | {(rss_streams - rss_before) / n:.1f} KiB | — |")
    print(f"| … per connection accepted, no request sent (fresh process) | {per_accepted:.1f} KiB | — |")
    print(f"| … per idle keep-alive connection after one GET (fresh process) | {per_keepalive:.1f} KiB | — |")
    print(f"| changes committed / delivered | {sent} / {delivered} | {changed} of {len(answers)} answers were 200 (the rest 304) |")
    print(f"| delivery latency p50 / p99 (commit → client) | {q(0.5):.1f} / {q(0.99):.1f} ms | ≈ 500 / 990 ms (half / all of the 1 s period) |")
    print(f"| service CPU | {cpu_events / seconds * 1000:.0f} ms/s | {cpu_polling / elapsed * 1000:.0f} ms/s |")
    print(f"| service CPU per delivered change | {cpu_events / max(delivered, 1) * 1e6:.0f} µs | "
          f"{cpu_polling / max(changed, 1) * 1e6:.0f} µs (all {len(answers)} polls counted) |")
    log(f"latencies: n={len(latencies)} max={max(lat) * 1000:.1f} ms")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--bin", required=True)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
