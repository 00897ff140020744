#!/usr/bin/env python3
"""A fault-injecting HTTP/1.1 proxy for Buckia's transport and sync tests (standard library only).

Usage: fault_proxy.py --upstream http://127.0.0.1:PORT [--rate 0.10] [--seed N]
                      [--faults KIND,KIND,...] [--stall-seconds 3] [--lifetime 3600]
                      [--dialect s3|b2|bunny] [--slow-pause 0.3]

Listens on 127.0.0.1 on a port the kernel chooses, prints {"endpoint": "http://127.0.0.1:PORT"}
as its first stdout line, and forwards every request to the upstream server. Each request is
hit by one fault with probability `rate`; the kind is drawn uniformly from `faults`:

  503             answers 503 SlowDown (S3's XML), nothing forwarded
  429             answers 429 with Retry-After: 1, nothing forwarded
  drop-before     closes the connection without answering, nothing forwarded
  drop-after      forwards (the server acts on the request), then closes without answering
  headers-only    forwards, sends the status line and headers, closes before the body
  truncate        forwards, sends half of a non-empty body, closes
  corrupt         forwards, flips one byte of an object body (never of an XML or JSON
                  document: HTTP carries no checksum for those, TLS guards them in production)
  corrupt-request flips one byte of a request body that carries Content-MD5, and answers
                  400 BadDigest as S3 does (nothing forwarded)
  stall           forwards, sends the headers and part of the body (or nothing, for an empty
                  body), then sends nothing for --stall-seconds before closing
  garbage         answers bytes that are not HTTP and closes, nothing forwarded
  expired-auth    answers as the server does for an expired authorization, nothing forwarded:
                  S3's 400 ExpiredToken, B2's 401 expired_auth_token, Bunny's 401
  wrong-length    forwards, and answers a non-empty body under a Content-Length one byte short
                  (the whole body follows it), then closes
  slow            forwards, and sends a non-empty body in four pieces, --slow-pause seconds
                  apart: late but whole (a client must wait for it, not abandon it)

The first ten are what a mixed run draws from by default; the last three are for tests that
ask for them. Error answers are in the --dialect's shape (S3's XML by default, B2's or Bunny's
JSON), and carry no body when they answer a HEAD.

A fault that does not apply to a request (no body to corrupt or cut) is not counted in
"faults" and the request is forwarded intact; "drawn" counts every request a fault was drawn
for, applicable or not, so it follows `rate` whatever the mix of requests. `GET
/__proxy__/stats` answers JSON: {"requests": N, "drawn": N, "faults": {KIND: N}, "methods":
{METHOD: N}, "copies": N, "putBodyBytes": N} (never itself faulted; no S3 bucket can be named
`__proxy__`): copies are PUTs with x-amz-copy-source, putBodyBytes the bytes of the other
PUTs' bodies as they came (aws-chunked framing included), and "recent", the last 200 requests as
"METHOD target".

Armed faults, for a test that targets one request: `POST /__proxy__/arm` with
{"kind": KIND, "skip": S, "count": C} lets the next S requests through and hits the C after
them with KIND (a large C: every request from then on); random draws stop meanwhile. `{"kind":
null}` disarms. The stats' "armed" says how many requests the arming saw and how many it
faulted ("applied": a fault that does not apply to its request is not counted).

Held requests, for a harness that must act at a known point of a run: `POST /__proxy__/hold`
with {"after": N, "match": TEXT} counts the PUTs whose target contains TEXT that the upstream
answered 2xx; once N have been answered, every request that arrives next is held: read whole,
never forwarded, and its connection closed when the hold ends. `{"after": null}` ends the hold.
`GET /__proxy__/held?wait=S` answers {"held": N, "passed": N} as soon as a request is held, or
after S seconds (at most 30) with none.

Bounded: at most 128 connections at once (more wait in the listen queue), every socket
operation times out after 60 s, and the proxy exits when its stdin closes, on SIGTERM, or
after --lifetime seconds.
"""
import http.client
import json
import os
import random
import signal
import socket
import socketserver
import sys
import threading
from urllib.parse import urlsplit

MIXED = ("503", "429", "drop-before", "drop-after", "headers-only", "truncate", "corrupt",
         "corrupt-request", "stall", "garbage")
KINDS = MIXED + ("expired-auth", "wrong-length", "slow")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
              "upgrade", "proxy-authorization", "proxy-authenticate"}
SLOTS = threading.BoundedSemaphore(128)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.drawn = 0
        self.faults = {}
        self.methods = {}
        self.copies = 0
        self.put_body_bytes = 0
        self.recent = []
        self.armed = {"seen": 0, "applied": 0}

    def request(self, method, target, body, lookup):
        with self.lock:
            self.requests += 1
            self.recent.append("%s %s" % (method, target))
            del self.recent[:-200]
            self.methods[method] = self.methods.get(method, 0) + 1
            if method == "PUT" and "x-amz-copy-source" in lookup:
                self.copies += 1
            elif method == "PUT":
                self.put_body_bytes += len(body)

    def draw(self):
        with self.lock:
            self.drawn += 1

    def fault(self, kind):
        with self.lock:
            self.faults[kind] = self.faults.get(kind, 0) + 1
            if Config.arming is not None:
                self.armed["applied"] += 1

    def snapshot(self):
        with self.lock:
            return {"requests": self.requests, "drawn": self.drawn, "faults": dict(self.faults),
                    "methods": dict(self.methods), "copies": self.copies, "putBodyBytes": self.put_body_bytes,
                    "recent": list(self.recent), "armed": dict(self.armed)}


class Config:
    upstream_host = "127.0.0.1"
    upstream_port = 80
    rate = 0.1
    kinds = MIXED
    stall_seconds = 3.0
    slow_pause = 0.3
    dialect = "s3"
    random = random.Random(0)
    random_lock = threading.Lock()
    stats = Stats()
    # {"kind": KIND, "skip": S, "count": C} while armed, else None.
    arming = None
    # {"after": N, "match": TEXT, "passed": N, "held": N} while holding, else None; its
    # condition is notified when a request is held, a match passes, or the hold ends.
    hold = None
    hold_changed = threading.Condition()

    @classmethod
    def start_hold(cls, order):
        with cls.hold_changed:
            after = order.get("after")
            cls.hold = None if after is None else {"after": max(int(after), 0), "match": str(order.get("match", "")),
                                                   "passed": 0, "held": 0}
            cls.hold_changed.notify_all()

    @classmethod
    def hold_here(cls):
        """Holds the calling request while the hold that applies to it lasts; True if it was held."""
        with cls.hold_changed:
            hold = cls.hold
            if hold is None or hold["passed"] < hold["after"]:
                return False
            hold["held"] += 1
            cls.hold_changed.notify_all()
            cls.hold_changed.wait_for(lambda: cls.hold is not hold)
            return True

    @classmethod
    def passed(cls, method, target, status):
        with cls.hold_changed:
            hold = cls.hold
            if hold is not None and method == "PUT" and hold["match"] in target and 200 <= status < 300:
                hold["passed"] += 1
                cls.hold_changed.notify_all()

    @classmethod
    def wait_held(cls, seconds):
        with cls.hold_changed:
            cls.hold_changed.wait_for(lambda: cls.hold is None or cls.hold["held"] > 0, timeout=min(max(seconds, 0.0), 30.0))
            hold = cls.hold or {"held": 0, "passed": 0}
            return {"held": hold["held"], "passed": hold["passed"]}

    @classmethod
    def draw(cls):
        with cls.random_lock:
            if cls.arming is not None:
                arming = cls.arming
                with cls.stats.lock:
                    cls.stats.armed["seen"] += 1
                if arming["skip"] > 0:
                    arming["skip"] -= 1
                    return None
                if arming["count"] <= 0:
                    return None
                arming["count"] -= 1
                return arming["kind"]
            if cls.random.random() >= cls.rate:
                return None
            return cls.random.choice(cls.kinds)

    @classmethod
    def arm(cls, order):
        with cls.random_lock:
            kind = order.get("kind")
            if kind is None:
                cls.arming = None
                return
            if kind not in KINDS:
                raise ValueError("unknown fault kind %r" % kind)
            cls.arming = {"kind": kind, "skip": max(int(order.get("skip", 0)), 0), "count": max(int(order.get("count", 1)), 0)}
            with cls.stats.lock:
                cls.stats.armed = {"seen": 0, "applied": 0}


class Closed(Exception):
    """The client went away or sent something that is not a request."""


def read_line(stream):
    line = stream.readline(65537)
    if not line:
        raise Closed()
    if len(line) > 65536:
        raise Closed()
    return line


def read_request(stream, out):
    """Reads one request: (method, target, headers as a list of pairs, body bytes)."""
    line = read_line(stream)
    while line in (b"\r\n", b"\n"):
        line = read_line(stream)
    parts = line.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3:
        raise Closed()
    method, target, _ = parts
    headers = []
    for _ in range(200):
        line = read_line(stream)
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    else:
        raise Closed()
    lookup = {k.lower(): v for k, v in headers}
    if lookup.get("expect", "").lower() == "100-continue":
        out.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        out.flush()
        headers = [(k, v) for k, v in headers if k.lower() != "expect"]
    if lookup.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int(read_line(stream).split(b";")[0].strip(), 16)
            if size == 0:
                while read_line(stream) not in (b"\r\n", b"\n"):
                    pass
                break
            body += stream.read(size)
            read_line(stream)
        body = bytes(body)
        headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
        headers.append(("Content-Length", str(len(body))))
    else:
        length = int(lookup.get("content-length", "0") or "0")
        body = stream.read(length) if length else b""
        if len(body) != length:
            raise Closed()
    return method, target, headers, body


def response_bytes(status, reason, headers, body):
    """The head and body of a response; `headers` may carry a HEAD answer's own Content-Length."""
    head = ["HTTP/1.1 %d %s" % (status, reason)]
    head += ["%s: %s" % (k, v) for k, v in headers]
    if not any(k.lower() == "content-length" for k, _ in headers):
        head.append("Content-Length: %d" % len(body))
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1"), body


def error_answer(method, status, reason, code, message, extra=()):
    """An error in the dialect's shape: S3's XML, B2's or Bunny's JSON; no body for a HEAD."""
    if Config.dialect == "b2":
        body = json.dumps({"status": status, "code": code, "message": message}).encode()
        kind = "application/json"
    elif Config.dialect == "bunny":
        body = json.dumps({"HttpCode": status, "Message": message}).encode()
        kind = "application/json"
    else:
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message>"
                "<RequestId>fault-proxy</RequestId></Error>" % (code, message)).encode()
        kind = "application/xml"
    head, body = response_bytes(status, reason, [("Content-Type", kind)] + list(extra), body)
    return head, (b"" if method == "HEAD" else body)


# The answer each dialect gives to an expired authorization: (status, reason, code, message).
EXPIRED = {
    "s3": (400, "Bad Request", "ExpiredToken", "The provided token has expired."),
    "b2": (401, "Unauthorized", "expired_auth_token", "Authorization token has expired"),
    "bunny": (401, "Unauthorized", "Unauthorized", "Unauthorized"),
}


class Handler(socketserver.StreamRequestHandler):
    timeout = 60

    def setup(self):
        SLOTS.acquire()
        super().setup()
        self.upstream = None

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        if self.upstream is not None:
            self.upstream.close()
        SLOTS.release()

    def handle(self):
        try:
            while True:
                method, target, headers, body = read_request(self.rfile, self.wfile)
                if not self.serve(method, target, headers, body):
                    return
        except (Closed, OSError, ValueError, http.client.HTTPException):
            return

    def send(self, head, body=b""):
        self.wfile.write(head)
        if body:
            self.wfile.write(body)
        self.wfile.flush()

    def forward(self, method, target, headers, body):
        """Sends the request upstream; returns (status, reason, headers, body)."""
        if self.upstream is None:
            self.upstream = http.client.HTTPConnection(Config.upstream_host, Config.upstream_port, timeout=60)
        outgoing = {k: v for k, v in headers if k.lower() not in HOP_BY_HOP}
        try:
            self.upstream.request(method, target, body=body if body or method in ("PUT", "POST") else None,
                                  headers=outgoing)
            response = self.upstream.getresponse()
            data = response.read() if method != "HEAD" else b""
        except (OSError, http.client.HTTPException):
            self.upstream.close()
            self.upstream = None
            raise
        kept = [(k, v) for k, v in response.getheaders()
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"]
        if method == "HEAD":
            length = response.getheader("Content-Length")
            kept.append(("Content-Length", length or "0"))
        return response.status, response.reason, kept, data

    def serve(self, method, target, headers, body):
        """Serves one request; returns False when the connection must close."""
        if target.startswith("/__proxy__/stats"):
            head, data = response_bytes(200, "OK", [("Content-Type", "application/json")],
                                        json.dumps(Config.stats.snapshot()).encode())
            self.send(head, data)
            return True
        if target.startswith("/__proxy__/arm") and method == "POST":
            try:
                Config.arm(json.loads(body or b"{}"))
            except (ValueError, TypeError, AttributeError) as error:
                self.send(*response_bytes(400, "Bad Request", [("Content-Type", "text/plain")], str(error).encode()))
                return True
            self.send(*response_bytes(204, "No Content", [], b""))
            return True
        if target.startswith("/__proxy__/hold") and method == "POST":
            try:
                Config.start_hold(json.loads(body or b"{}"))
            except (ValueError, TypeError, AttributeError) as error:
                self.send(*response_bytes(400, "Bad Request", [("Content-Type", "text/plain")], str(error).encode()))
                return True
            self.send(*response_bytes(204, "No Content", [], b""))
            return True
        if target.startswith("/__proxy__/held"):
            wait = target.partition("wait=")[2].partition("&")[0]
            try:
                seconds = float(wait or "0")
            except ValueError:
                seconds = 0.0
            self.send(*response_bytes(200, "OK", [("Content-Type", "application/json")], json.dumps(Config.wait_held(seconds)).encode()))
            return True
        lookup = {k.lower(): v for k, v in headers}
        Config.stats.request(method, target, body, lookup)
        if Config.hold_here():
            return False
        kind = Config.draw()
        if kind is not None:
            Config.stats.draw()
        if kind == "corrupt-request" and not (body and "content-md5" in lookup):
            kind = None
        if kind == "503":
            Config.stats.fault(kind)
            self.send(*error_answer(method, 503, "Service Unavailable", "SlowDown" if Config.dialect == "s3" else "service_unavailable",
                                    "Please reduce your request rate."))
            return True
        if kind == "429":
            Config.stats.fault(kind)
            self.send(*error_answer(method, 429, "Too Many Requests", "TooManyRequests" if Config.dialect == "s3" else "too_many_requests",
                                    "Slow down.", [("Retry-After", "1")]))
            return True
        if kind == "expired-auth":
            Config.stats.fault(kind)
            self.send(*error_answer(method, *EXPIRED[Config.dialect]))
            return True
        if kind == "drop-before":
            Config.stats.fault(kind)
            return False
        if kind == "garbage":
            Config.stats.fault(kind)
            self.send(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
            return False
        if kind == "corrupt-request":
            Config.stats.fault(kind)
            self.send(*error_answer(method, 400, "Bad Request", "BadDigest",
                                    "The Content-MD5 you specified did not match what we received."))
            return True
        status, reason, kept, data = self.forward(method, target, headers, body)
        Config.passed(method, target, status)
        content_type = next((v for k, v in kept if k.lower() == "content-type"), "")
        is_document = "xml" in content_type or "json" in content_type
        if kind == "drop-after":
            Config.stats.fault(kind)
            return False
        if kind == "headers-only" and method != "HEAD" and data:
            Config.stats.fault(kind)
            head, _ = response_bytes(status, reason, kept, data)
            self.send(head)
            return False
        if kind == "truncate" and method != "HEAD" and len(data) > 1:
            Config.stats.fault(kind)
            head, _ = response_bytes(status, reason, kept, data)
            self.send(head, data[: len(data) // 2])
            return False
        if kind == "corrupt" and method == "GET" and 200 <= status < 300 and data and not is_document:
            Config.stats.fault(kind)
            with Config.random_lock:
                index = Config.random.randrange(len(data))
            damaged = bytearray(data)
            damaged[index] ^= 0x5A
            self.send(*response_bytes(status, reason, kept, bytes(damaged)))
            return True
        if kind == "wrong-length" and method != "HEAD" and len(data) > 1:
            Config.stats.fault(kind)
            short = [(k, v) for k, v in kept if k.lower() != "content-length"] + [("Content-Length", str(len(data) - 1))]
            head, _ = response_bytes(status, reason, short, data)
            self.send(head, data)
            return False
        if kind == "slow" and method != "HEAD" and len(data) > 1:
            Config.stats.fault(kind)
            head, _ = response_bytes(status, reason, kept, data)
            self.send(head)
            step = (len(data) + 3) // 4
            for start in range(0, len(data), step):
                threading.Event().wait(Config.slow_pause)
                self.send(data[start:start + step])
            return True
        if kind == "stall":
            Config.stats.fault(kind)
            head, _ = response_bytes(status, reason, kept, data)
            if method != "HEAD" and data:
                self.send(head, data[: len(data) // 2])
            threading.Event().wait(Config.stall_seconds)
            return False
        self.send(*response_bytes(status, reason, kept, data))
        return True


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


def main():
    args = sys.argv[1:]

    def option(name, default):
        if name in args:
            index = args.index(name)
            if index + 1 < len(args):
                return args[index + 1]
        return default

    upstream = urlsplit(option("--upstream", ""))
    if upstream.scheme != "http" or upstream.hostname != "127.0.0.1" or not upstream.port:
        sys.stdout.write(json.dumps({"error": "--upstream must be http://127.0.0.1:PORT"}) + "\n")
        sys.stdout.flush()
        os._exit(2)
    Config.upstream_host, Config.upstream_port = upstream.hostname, upstream.port
    Config.rate = min(max(float(option("--rate", "0.1")), 0.0), 1.0)
    Config.random = random.Random(int(option("--seed", "0")))
    kinds = tuple(k for k in option("--faults", ",".join(MIXED)).split(",") if k)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        sys.stdout.write(json.dumps({"error": "unknown fault kinds %s; known: %s" % (unknown, ",".join(KINDS))}) + "\n")
        sys.stdout.flush()
        os._exit(2)
    Config.kinds = kinds
    Config.stall_seconds = min(float(option("--stall-seconds", "3")), 30.0)
    Config.slow_pause = min(float(option("--slow-pause", "0.3")), 5.0)
    Config.dialect = option("--dialect", "s3")
    if Config.dialect not in EXPIRED:
        sys.stdout.write(json.dumps({"error": "--dialect must be s3, b2 or bunny"}) + "\n")
        sys.stdout.flush()
        os._exit(2)
    lifetime = float(option("--lifetime", "3600"))

    server = Server(("127.0.0.1", 0), Handler)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdout.write(json.dumps({"endpoint": "http://127.0.0.1:%d" % server.server_address[1]}) + "\n")
    sys.stdout.flush()

    def watch_stdin():
        while sys.stdin.buffer.read(4096):
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    threading.Event().wait(lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()
