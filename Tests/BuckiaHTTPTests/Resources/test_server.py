#!/usr/bin/env python3
"""A tiny HTTP server for BuckiaHTTP's tests (standard library only).

Binds 127.0.0.1 on a free port, prints the port as its first stdout line, and serves:

  /echo?set_cookie=&delay=  any method: reads the body in chunks and returns JSON with the
                            method, body length, sha256, path, query, request headers and the
                            client's port (one per connection); `set_cookie=1` sets a cookie,
                            `delay=S` waits S seconds (at most 2) first.
  /status/<code>?id=&fail=&retry_after=&echo_secrets=
                            responds <code>; with `fail=N`, only the first N requests for `id`
                            get <code> and later ones get 200 with JSON {attempts, length, sha256}
                            of the last body. `retry_after` adds that header.
                            `echo_secrets=1` puts the request's Authorization header and query
                            string in the body, as S3 does in SignatureDoesNotMatch.
  /count/<id>               how many requests /status, /drop and /slow saw for <id>.
  /await/<id>?count=N       answers once /count/<id> reaches N (at most 600 s), with the count:
                            a test waits on the event itself instead of polling for it.
  /download?size=N          N deterministic bytes (byte i is PATTERN[i % 251]), streamed.
  /slow?delay=S&id=         waits S seconds (at most 300) before answering 200; once the answer
                            is written, /count/<id>.answered is 1.
  /drop?id=&fail=N          closes the connection without answering (first N times), then 200.
  /redirect                 302 to /echo.
  /notfound                 404 with an XML error body.

The server exits when its stdin closes, so it never outlives the test process.
"""
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

COUNTS = {}
COUNTS_LOCK = threading.Condition()
PATTERN = bytes((i * 7 + 3) % 251 for i in range(251))
CHUNK = 64 * 1024


def hit(key):
    """Counts a request for a test-chosen id and returns the new count."""
    with COUNTS_LOCK:
        COUNTS[key] = COUNTS.get(key, 0) + 1
        COUNTS_LOCK.notify_all()
        return COUNTS[key]


def pattern_bytes(offset, length):
    start = offset % len(PATTERN)
    repeats = (start + length) // len(PATTERN) + 1
    return (PATTERN * repeats)[start:start + length]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self.route()

    do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = do_GET

    def route(self):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        length, sha256 = self.read_body()
        name = parts[0]
        if name == "echo":
            # `port` is the client's port: one value per connection. `set_cookie=1` sets a
            # cookie, which a client must never send back.
            extra = {"Set-Cookie": "session=leak; Path=/"} if query.get("set_cookie") else {}
            if "delay" in query:
                time.sleep(min(float(query["delay"]), 2.0))
            self.reply_json(200, {
                "method": self.command, "length": length, "sha256": sha256,
                "path": url.path, "query": url.query, "port": self.client_address[1],
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }, extra)
        elif name == "status":
            self.status(int(parts[1]), query, length, sha256)
        elif name == "count":
            with COUNTS_LOCK:
                count = COUNTS.get(parts[1], 0)
            self.reply_json(200, {"count": count})
        elif name == "await":
            wanted = int(query.get("count", "1"))
            with COUNTS_LOCK:
                COUNTS_LOCK.wait_for(lambda: COUNTS.get(parts[1], 0) >= wanted, timeout=600)
                count = COUNTS.get(parts[1], 0)
            self.reply_json(200, {"count": count})
        elif name == "download":
            self.download(int(query.get("size", "0")))
        elif name == "slow":
            key = query.get("id", "slow")
            hit(key)
            time.sleep(min(float(query.get("delay", "1")), 300.0))
            self.reply_json(200, {"slept": True})
            hit(key + ".answered")
        elif name == "drop":
            if hit(query.get("id", "drop")) <= int(query.get("fail", "1000000")):
                self.close_connection = True
                return
            self.reply_json(200, {"dropped": False})
        elif name == "truncate":
            # Promises 3000 bytes, sends 100 and closes: a body cut short.
            if hit(query.get("id", "truncate")) <= int(query.get("fail", "1000000")):
                self.send_response(200)
                self.send_header("Content-Length", "3000")
                self.end_headers()
                self.wfile.write(b"x" * 100)
                self.wfile.flush()
                self.close_connection = True
                return
            self.reply_json(200, {"truncated": False})
        elif name == "stall":
            # Headers and half the body, then nothing for `stall` seconds (at most 10) before
            # closing, on the first `fail` hits; whole afterwards.
            if hit(query.get("id", "stall")) <= int(query.get("fail", "1000000")):
                self.send_response(200)
                self.send_header("Content-Length", "2000")
                self.end_headers()
                self.wfile.write(b"s" * 1000)
                self.wfile.flush()
                time.sleep(min(float(query.get("stall", "10")), 10.0))
                self.close_connection = True
                return
            self.reply(200, b"s" * 2000)
        elif name == "silent":
            # Reads the request and never answers (for at most 10 seconds).
            time.sleep(min(float(query.get("stall", "10")), 10.0))
            self.close_connection = True
        elif name == "garbage":
            # Answers like another protocol's server would.
            self.wfile.write(b"SSH-2.0-OpenSSH_9.2\r\n")
            self.wfile.flush()
            self.close_connection = True
        elif name == "redirect":
            self.reply(302, b"moved", {"Location": "/echo"})
        elif name == "notfound":
            error = b"<Error><Code>NoSuchKey</Code><Message>The key does not exist.</Message></Error>"
            self.reply(404, error, {"Content-Type": "application/xml"})
        else:
            self.reply(400, b"unknown route")

    def read_body(self):
        """Hashes the request body in chunks, so large uploads need little memory."""
        remaining = int(self.headers.get("Content-Length") or 0)
        digest, total = hashlib.sha256(), 0
        while remaining > 0:
            chunk = self.rfile.read(min(CHUNK, remaining))
            if not chunk:
                break
            digest.update(chunk)
            total += len(chunk)
            remaining -= len(chunk)
        return total, digest.hexdigest()

    def status(self, code, query, length, sha256):
        count = hit(query.get("id", "status"))
        if count > int(query.get("fail", "1000000")):
            self.reply_json(200, {"attempts": count, "length": length, "sha256": sha256})
            return
        headers = {}
        if "retry_after" in query:
            headers["Retry-After"] = query["retry_after"]
        if query.get("echo_secrets") == "1":
            body = "<Error><Code>SignatureDoesNotMatch</Code><Authorization>%s</Authorization><Query>%s</Query></Error>" % (
                self.headers.get("Authorization", ""), urlsplit(self.path).query)
        else:
            body = "<Error><Code>Status%d</Code><Message>status %d</Message></Error>" % (code, code)
        self.reply(code, body.encode(), headers)

    def download(self, size):
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if self.command == "HEAD":
            return
        offset = 0
        while offset < size:
            length = min(CHUNK, size - offset)
            self.wfile.write(pattern_bytes(offset, length))
            offset += length

    def reply_json(self, code, value, extra=None):
        self.reply(code, json.dumps(value).encode(), {"Content-Type": "application/json", **(extra or {})})

    def reply(self, code, body, headers=None):
        self.send_response(code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def exit_when_stdin_closes():
    sys.stdin.buffer.read()
    os._exit(0)


class Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: parallel tests opening connections at once
    # overflow it, and the kernel resets or drops the surplus.
    request_queue_size = 256


def main():
    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
