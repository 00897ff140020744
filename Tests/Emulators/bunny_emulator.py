#!/usr/bin/env python3
"""A Bunny.net Edge Storage API emulator for Buckia's tests (Python standard library only).

Written from Bunny's published Storage API reference and its official SDKs' behaviour (the
TypeScript SDK's tests run against a real zone). Where Bunny and this file disagree, this file
is wrong.

    python3 bunny_emulator.py --zone NAME --password PW [--read-only-password RO] [--retry-after S]
        [--latency-ms MS]

Binds 127.0.0.1 on a free port, prints the port as its first stdout line, and exits when its
stdin closes. File contents live in a temporary folder removed at exit. `--latency-ms` delays
every answer by that much, as a network's round trip would (for benchmarks of concurrency).

The API, under /{zone}/ with the `AccessKey` header (the zone password; the read-only password
may GET and DESCRIBE only):

  PUT /{zone}/{path}            stores the body (201 {"HttpCode":201,"Message":"File uploaded."});
                                with a `Checksum` header (SHA-256 hex, either case) a body that
                                does not match is refused with 400 and nothing is stored; a
                                path ending in / creates an empty directory. Parent directories
                                appear as they are needed.
  GET /{zone}/{path}            the file (Range: bytes=a-b gives 206); 404 when missing
  GET /{zone}/{dir}/            the directory's entries as a JSON array of Bunny's objects
                                (directories first, then files, each in case-insensitive name
                                order: clients must sort for themselves); [] when missing
  DESCRIBE /{zone}/{path}       one object's JSON (the official SDKs' metadata call)
  DELETE /{zone}/{path}         deletes a file, or a directory *and everything in it* (with or
                                without the trailing slash, as Bunny documents); 404 when missing

Control endpoints (never faulted, never counted) as in the B2 emulator: GET /_emulator/stats,
POST /_emulator/reset-stats, POST /_emulator/faults {"rate", "kinds", "seed", "calls"},
GET /_emulator/await?call=C&count=N. Calls are named by method: put, get, list, describe, delete.
Fault kinds: 500, 503, 429 (with Retry-After), drop (before any work; downloads: mid-body),
drop_after (the work done, the answer lost), truncate and corrupt (download bodies), and
corrupt_upload (one byte of an upload flipped on arrival: a Checksum header catches it, without
one the damaged bytes are stored, as Bunny would).
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

LOCK = threading.RLock()
COUNTED = threading.Condition(LOCK)
CHUNK = 256 * 1024
DATA_DIR = None
OPTIONS = None
FILES = {}          # path (no leading slash, no zone) -> record
DIRECTORIES = set()  # directory paths ending in "/" ("" is the root)
STATS = {"requests": {}, "faults": {}, "checksum_rejections": 0}
FAULTS = {"rate": 0.0, "kinds": [], "calls": None}
RNG = random.Random(0)
ZONE_ID = 424242
USER_ID = str(uuid.UUID(int=7))


def stamp(seconds):
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03d" % int((seconds % 1) * 1000)


def parents(path):
    parts = path.split("/")[:-1]
    return ["/".join(parts[:index]) + "/" for index in range(1, len(parts) + 1)]


def object_json(path, record=None):
    directory = record is None
    name = path.rstrip("/").split("/")[-1]
    parent = path.rstrip("/")[: -len(name)] if name else ""
    now = time.time()
    return {
        "Guid": record["guid"] if record else str(uuid.uuid5(uuid.NAMESPACE_URL, path)),
        "StorageZoneName": OPTIONS.zone,
        "Path": "/%s/%s" % (OPTIONS.zone, parent),
        "ObjectName": name,
        "Length": 0 if directory else record["length"],
        "LastChanged": stamp(record["changed"] if record else now),
        "ServerId": 0 if directory else 146,
        "ArrayNumber": 0,
        "IsDirectory": directory,
        "UserId": USER_ID,
        "ContentType": "" if directory else record["content_type"],
        "DateCreated": stamp(record["created"] if record else now),
        "StorageZoneId": ZONE_ID,
        "Checksum": None if directory else record["sha256"].upper(),
        "ReplicatedZones": "",
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self.dispatch()

    do_PUT = do_DELETE = do_HEAD = do_POST = do_DESCRIBE = do_GET

    def send_json(self, status, value, headers=None):
        if self.drop_answer and 200 <= status < 300:
            return self.drop()
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, header in (headers or {}).items():
            self.send_header(name, header)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, message, headers=None):
        left = self.body_left()
        if 0 < left <= 1_048_576:
            self.discard_body()
        elif left > 0:
            self.close_connection = True
        self.send_json(status, {"HttpCode": status, "Message": message}, headers)

    def drop(self):
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(2)
        except OSError:
            pass

    def body_left(self):
        try:
            return int(self.headers.get("Content-Length") or 0) - self.body_read
        except ValueError:
            return 0

    def discard_body(self):
        left = self.body_left()
        while left > 0:
            chunk = self.rfile.read(min(CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            self.body_read += len(chunk)

    def dispatch(self):
        self.body_read = 0
        self.drop_answer = False
        url = urlsplit(self.path)
        if url.path.startswith("/_emulator/"):
            return self.control(url.path.split("/")[2], {k: v[-1] for k, v in parse_qs(url.query).items()})
        parts = url.path.split("/", 2)
        if len(parts) < 2 or parts[1] != OPTIONS.zone:
            return self.error(401, "Unauthorized")
        path = unquote(parts[2]) if len(parts) > 2 else ""
        method = self.command
        call = {"PUT": "put", "DELETE": "delete", "DESCRIBE": "describe"}.get(method, "list" if path.endswith("/") or path == "" else "get")
        if method not in ("PUT", "DELETE", "DESCRIBE", "GET", "HEAD"):
            return self.error(405, "Method Not Allowed")
        with LOCK:
            STATS["requests"][call] = STATS["requests"].get(call, 0) + 1
            COUNTED.notify_all()
            fault = self.choose_fault(call)
        if OPTIONS.latency_ms > 0:
            time.sleep(OPTIONS.latency_ms / 1000)
        if fault == "drop":
            return self.drop()
        if fault in ("500", "503", "429"):
            headers = {"Retry-After": str(OPTIONS.retry_after)} if fault != "500" else None
            return self.error(int(fault), {"500": "Internal Server Error", "503": "Service Unavailable", "429": "Too Many Requests"}[fault], headers)
        self.drop_answer = fault == "drop_after"
        key = self.headers.get("AccessKey", "")
        writable = key == OPTIONS.password
        if not writable and not (key == OPTIONS.read_only_password and method in ("GET", "HEAD", "DESCRIBE") and OPTIONS.read_only_password):
            return self.error(401, "Unauthorized")
        if ".." in path.split("/") or path.startswith("/") or "//" in path:
            return self.error(400, "Bad Request")
        try:
            if method == "PUT":
                return self.put(path, fault)
            if method == "DELETE":
                return self.delete(path)
            if method == "DESCRIBE":
                return self.describe(path)
            if call == "list":
                return self.list(path)
            return self.get(path, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def choose_fault(self, call):
        if FAULTS["rate"] <= 0 or not FAULTS["kinds"]:
            return None
        if FAULTS["calls"] is not None and call not in FAULTS["calls"]:
            return None
        if RNG.random() >= FAULTS["rate"]:
            return None
        kinds = [k for k in FAULTS["kinds"] if (k not in ("truncate", "corrupt") or call == "get")
                 and (k != "corrupt_upload" or call == "put") and (k != "drop_after" or call != "get")]
        if not kinds:
            return None
        kind = RNG.choice(kinds)
        STATS["faults"][kind] = STATS["faults"].get(kind, 0) + 1
        return kind

    def control(self, name, query):
        global FAULTS, RNG
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        if name == "await":
            wanted = int(query.get("count", "1"))
            with COUNTED:
                COUNTED.wait_for(lambda: STATS["requests"].get(query.get("call", ""), 0) >= wanted, timeout=120)
                count = STATS["requests"].get(query.get("call", ""), 0)
            return self.send_json(200, {"count": count})
        with LOCK:
            if name == "stats":
                stats = dict(STATS)
                stats["files"] = len(FILES)
                return self.send_json(200, stats)
            if name == "reset-stats":
                STATS.update({"requests": {}, "faults": {}, "checksum_rejections": 0})
            elif name == "faults":
                FAULTS = {"rate": float(body.get("rate", 0)), "kinds": list(body.get("kinds", [])), "calls": body.get("calls")}
                RNG = random.Random(body.get("seed", 0))
            else:
                return self.send_json(404, {"error": "no such control %s" % name})
        self.send_json(200, {"ok": True})

    # The calls

    def put(self, path, fault):
        if path.endswith("/"):
            self.discard_body()
            with LOCK:
                if path[:-1] in FILES:
                    return self.error(400, "A file exists at this path")
                DIRECTORIES.add(path)
                DIRECTORIES.update(parents(path))
            return self.send_json(201, {"HttpCode": 201, "Message": "Directory created."})
        try:
            length = int(self.headers.get("Content-Length"))
        except (TypeError, ValueError):
            return self.error(400, "Content-Length is required")
        declared = (self.headers.get("Checksum") or "").lower()
        fd, temporary = tempfile.mkstemp(dir=DATA_DIR, prefix="incoming-")
        sha256 = hashlib.sha256()
        received = 0
        flip = length // 2 if fault == "corrupt_upload" and length > 0 else -1
        try:
            with os.fdopen(fd, "wb") as out:
                while received < length:
                    chunk = self.rfile.read(min(CHUNK, length - received))
                    if not chunk:
                        raise ConnectionResetError("the client closed the connection mid-body")
                    if received <= flip < received + len(chunk):
                        index = flip - received
                        chunk = chunk[:index] + bytes([chunk[index] ^ 0x01]) + chunk[index + 1:]
                    out.write(chunk)
                    sha256.update(chunk)
                    received += len(chunk)
                    self.body_read += len(chunk)
        except BaseException:
            os.unlink(temporary)
            raise
        if declared and declared != sha256.hexdigest():
            os.unlink(temporary)
            with LOCK:
                STATS["checksum_rejections"] += 1
            return self.error(400, "Checksum and file contents mismatched")
        with LOCK:
            if path + "/" in DIRECTORIES:
                os.unlink(temporary)
                return self.error(400, "A directory exists at this path")
            now = time.time()
            old = FILES.get(path)
            record = {"guid": old["guid"] if old else str(uuid.uuid4()), "length": received, "sha256": sha256.hexdigest(),
                      "content_type": self.headers.get("Override-Content-Type") or self.headers.get("Content-Type") or "application/octet-stream",
                      "created": old["created"] if old else now, "changed": now, "blob": os.path.join(DATA_DIR, uuid.uuid4().hex)}
            os.replace(temporary, record["blob"])
            if old:
                os.unlink(old["blob"])
            FILES[path] = record
            DIRECTORIES.update(parents(path))
        self.send_json(201, {"HttpCode": 201, "Message": "File uploaded."})

    def get(self, path, fault):
        with LOCK:
            record = FILES.get(path)
        if record is None:
            return self.error(404, "Object Not Found")
        size = record["length"]
        start, end, status = 0, size, 200
        header = self.headers.get("Range")
        if header and header.startswith("bytes=") and "," not in header:
            first, _, last = header[6:].partition("-")
            try:
                start = int(first) if first else max(0, size - int(last))
                end = min(size, int(last) + 1) if first and last else size
            except ValueError:
                return self.error(400, "Bad Range")
            if start >= size or end <= start:
                return self.error(416, "Range Not Satisfiable", {"Content-Range": "bytes */%d" % size})
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", record["content_type"])
        self.send_header("Content-Length", str(end - start))
        self.send_header("Last-Modified", datetime.fromtimestamp(record["changed"], timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT"))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, size))
        self.end_headers()
        if self.command == "HEAD":
            return
        limit = end - start if fault not in ("drop", "truncate") else (end - start) // 2
        flip = (end - start) // 2 if fault == "corrupt" and end > start else -1
        sent = 0
        with open(record["blob"], "rb") as data:
            data.seek(start)
            while sent < limit:
                chunk = data.read(min(CHUNK, limit - sent))
                if not chunk:
                    break
                if sent <= flip < sent + len(chunk):
                    index = flip - sent
                    chunk = chunk[:index] + bytes([chunk[index] ^ 0x01]) + chunk[index + 1:]
                self.wfile.write(chunk)
                sent += len(chunk)
        if fault in ("drop", "truncate"):
            self.drop()

    def list(self, path):
        with LOCK:
            folders = sorted({d[len(path):].split("/")[0] for d in DIRECTORIES if d.startswith(path) and d != path}, key=str.lower)
            files = sorted({p[len(path):] for p in FILES if p.startswith(path) and "/" not in p[len(path):]}, key=str.lower)
            entries = [object_json(path + name + "/") for name in folders if name]
            entries += [object_json(path + name, FILES[path + name]) for name in files]
        self.send_json(200, entries)

    def describe(self, path):
        with LOCK:
            record = FILES.get(path.rstrip("/")) if not path.endswith("/") else None
            directory = (path if path.endswith("/") else path + "/") in DIRECTORIES
        if record:
            return self.send_json(200, object_json(path, record))
        if directory:
            return self.send_json(200, object_json(path if path.endswith("/") else path + "/"))
        self.error(404, "Object Not Found")

    def delete(self, path):
        with LOCK:
            folder = path if path.endswith("/") else path + "/"
            if not path.endswith("/") and path in FILES:
                os.unlink(FILES.pop(path)["blob"])
            elif folder in DIRECTORIES:
                # A directory goes with everything in it, trailing slash or not.
                for name in [p for p in FILES if p.startswith(folder)]:
                    os.unlink(FILES.pop(name)["blob"])
                for name in [d for d in DIRECTORIES if d.startswith(folder)]:
                    DIRECTORIES.discard(name)
            else:
                return self.error(404, "Object Not Found")
        self.send_json(200, {"HttpCode": 200, "Message": "File deleted successfuly."})


def exit_when_stdin_closes():
    try:
        while sys.stdin.buffer.read(1024):
            pass
    except OSError:
        pass
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    os._exit(0)


def main():
    global DATA_DIR, OPTIONS
    parser = argparse.ArgumentParser(description="A Bunny.net Edge Storage emulator for tests.")
    parser.add_argument("--zone", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--read-only-password", default="")
    parser.add_argument("--retry-after", type=int, default=1)
    parser.add_argument("--latency-ms", type=float, default=0)
    OPTIONS = parser.parse_args()
    DATA_DIR = tempfile.mkdtemp(prefix="bunny-emulator-")
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
