"""The signed-callback endpoint the benchmarks stand up in place of the
service: answers every callback 200 and records when each job's arrived.
Shared by bench W (worker.py), M (manifest_cost.py) and R (rebuild.py)."""

import http.server
import json
import threading
import time


class Callbacks:
    """Answers every callback 200 and records when each job's arrived."""

    def __init__(self):
        self.arrived = {}
        arrived = self.arrived

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                arrived[body["pageImportId"]] = (time.monotonic(), body)
                reply = b'{"status":"completed","replayed":false}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhooks/page-imports"

    def wait(self, ids, limit_s=300):
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and not all(i in self.arrived for i in ids):
            time.sleep(0.02)
        missing = [i for i in ids if i not in self.arrived]
        if missing:
            raise SystemExit(f"no callback for {len(missing)} jobs")

    def arrival(self, pid, limit_s):
        """`(monotonic time, body)` of `pid`'s callback, or None if none came
        within `limit_s`."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and pid not in self.arrived:
            time.sleep(0.05)
        return self.arrived.get(pid)
