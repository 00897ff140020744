#!/usr/bin/env python3
"""A scripted origin for the resource cache's tests (standard library only).

Binds 127.0.0.1 on a free port, prints the port, and serves:

  GET /r/<id>   the resource <id>: its bytes are `<id> v<version>` repeated to `size` bytes.
                What it answers is set by PUT /set/<id> (JSON, every field optional):
                  version (1), size (64), cache_control, etag (true: "v<version>"),
                  last_modified (an HTTP date), expires, date, age,
                  cache_control_304 (Cache-Control sent with a 304),
                  status (an error status to answer instead, e.g. 500),
                  delay (seconds before the body, at most 60),
                  stall (seconds to pause halfway through the body, at most 60),
                  gate (true: pause halfway through the body until GET /release/<id>;
                  a hang guard lets it go after 600 s, far beyond any loaded run),
                  gate_at ("start": the gate holds before the first byte of the body,
                  once the headers are sent, instead of halfway),
                  lie (true: Content-Length says 100 more bytes than are sent).
                With If-None-Match matching the ETag, or If-Modified-Since not before
                Last-Modified, it answers 304.
  GET /count/<id>      JSON {"full": n, "not_modified": m, "errors": e}: answers so far.
  GET /release/<id>    lets the bodies held by its gate go on (and any later ones).
  GET /await/<id>?full=N&not_modified=M
                       answers once the counts reach N and M (at most 600 s, a hang guard): a test waits for
                       the event itself.

It exits when its stdin closes, so it never outlives the test process.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

SETTINGS = {}
COUNTS = {}
RELEASED = set()
LOCK = threading.Condition()


def count(resource, kind):
    with LOCK:
        entry = COUNTS.setdefault(resource, {"full": 0, "not_modified": 0, "errors": 0})
        entry[kind] += 1
        LOCK.notify_all()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_response(self, code, message=None):
        # No Date of the wall clock: the tests judge freshness by a clock of their own, and a
        # Date is sent only when a test sets one.
        self.log_request(code)
        self.send_response_only(code, message)

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        path = urlsplit(self.path).path
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b"{}"
        if path.startswith("/set/"):
            with LOCK:
                SETTINGS[path[5:]] = json.loads(body or b"{}")
                RELEASED.discard(path[5:])
            self.send(204)
        else:
            self.send(404)

    def do_GET(self):
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        if path.startswith("/count/"):
            with LOCK:
                entry = dict(COUNTS.get(path[7:], {"full": 0, "not_modified": 0, "errors": 0}))
            self.send(200, json.dumps(entry).encode(), [("Content-Type", "application/json")])
            return
        if path.startswith("/release/"):
            with LOCK:
                RELEASED.add(path[9:])
                LOCK.notify_all()
            self.send(204)
            return
        if path.startswith("/await/"):
            resource = path[7:]
            full = int(query.get("full", ["0"])[0])
            not_modified = int(query.get("not_modified", ["0"])[0])
            deadline = time.monotonic() + 600
            with LOCK:
                while True:
                    entry = COUNTS.get(resource, {"full": 0, "not_modified": 0, "errors": 0})
                    if entry["full"] >= full and entry["not_modified"] >= not_modified:
                        break
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    LOCK.wait(left)
                entry = dict(entry)
            self.send(200, json.dumps(entry).encode(), [("Content-Type", "application/json")])
            return
        if not path.startswith("/r/"):
            self.send(404)
            return
        resource = path[3:].split("?")[0]
        with LOCK:
            settings = dict(SETTINGS.get(resource, {}))
        version = settings.get("version", 1)
        size = settings.get("size", 64)
        etag = '"v%d"' % version if settings.get("etag", True) else None
        headers = []
        for name, key in [("Cache-Control", "cache_control"), ("Last-Modified", "last_modified"), ("Expires", "expires"), ("Date", "date"), ("Age", "age")]:
            if settings.get(key) is not None:
                headers.append((name, str(settings[key])))
        if etag:
            headers.append(("ETag", etag))
        if settings.get("status"):
            count(resource, "errors")
            self.send(int(settings["status"]), b"failing on purpose")
            return
        matches = etag is not None and self.headers.get("If-None-Match") == etag
        since = self.headers.get("If-Modified-Since")
        if not matches and since and settings.get("last_modified") and self.headers.get("If-None-Match") is None:
            matches = since == settings["last_modified"]
        if matches:
            count(resource, "not_modified")
            answer = [(n, v) for n, v in headers if n != "Cache-Control"]
            if settings.get("cache_control_304") is not None:
                answer.append(("Cache-Control", settings["cache_control_304"]))
            elif settings.get("cache_control") is not None:
                answer.append(("Cache-Control", settings["cache_control"]))
            self.send_response(304)
            for name, value in answer:
                self.send_header(name, value)
            self.end_headers()
            return
        count(resource, "full")
        unit = ("%s v%d " % (resource, version)).encode()
        body = (unit * (size // len(unit) + 1))[:size]
        delay = min(float(settings.get("delay", 0)), 60)
        self.send_response(200)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) + (100 if settings.get("lie") else 0)))
        self.end_headers()
        if delay:
            self.wfile.flush()
            time.sleep(delay)
        stall = min(float(settings.get("stall", 0)), 60)
        if stall or settings.get("gate"):
            half = 0 if settings.get("gate_at") == "start" else len(body) // 2
            self.wfile.write(body[:half])
            self.wfile.flush()
            if stall:
                time.sleep(stall)
            else:
                deadline = time.monotonic() + 600
                with LOCK:
                    while resource not in RELEASED and time.monotonic() < deadline:
                        LOCK.wait(deadline - time.monotonic())
            body = body[half:]
        self.wfile.write(body)
        if settings.get("lie"):
            self.wfile.flush()
            self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
