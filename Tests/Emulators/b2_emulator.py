#!/usr/bin/env python3
"""A Backblaze B2 native-API emulator for Buckia's tests (Python standard library only).

Written from Backblaze's published B2 API reference, and checked against a real third-party
client (rclone's B2 backend) by the tests. Where rclone or the reference disagree with this
file, this file is wrong.

    python3 b2_emulator.py --key-id ID --key SECRET [--bucket NAME[:allPublic]]...
        [--restricted-key ID:SECRET:BUCKET[:PREFIX]]... [--min-part-size BYTES]
        [--recommended-part-size BYTES] [--retry-after SECONDS]

Binds 127.0.0.1 on a free port, prints the port as its first stdout line, and exits when its
stdin closes (so it never outlives the test process that started it). File contents live in a
temporary folder removed at exit; everything else is in memory.

The API (versions v1 to v4; the authorization answers in the shape of the version asked, and v1
file objects carry `size` beside `contentLength`, as rclone's v1 client reads it):
b2_authorize_account, b2_list_buckets, b2_create_bucket, b2_get_upload_url, b2_upload_file, b2_list_file_names,
b2_list_file_versions, b2_get_file_info, b2_download_file_by_name (GET and HEAD
/file/BUCKET/NAME), b2_download_file_by_id, b2_delete_file_version, b2_hide_file,
b2_copy_file, b2_start_large_file, b2_get_upload_part_url, b2_upload_part, b2_list_parts,
b2_finish_large_file, b2_cancel_large_file, b2_list_unfinished_large_files,
b2_get_download_authorization, b2_create_key and b2_delete_key (restricted keys, with a bucket,
a name prefix, capabilities and an expiry, enforced on every call they make).

Control endpoints, for tests (never faulted, never counted):

  GET  /_emulator/stats          {"requests": {call: n}, "faults": {kind: n}, "authorizations": n,
                                  "sha1_rejections": n, "shared_upload_urls": n, "versions": n}
  GET  /_emulator/await?call=C&count=N   answers once call C has been requested N times (120 s at most)
  POST /_emulator/reset-stats
  POST /_emulator/faults         {"rate": 0.2, "kinds": [...], "seed": 1, "calls": [...]} (rate 0 stops)
  POST /_emulator/hold           {"call": C, "after": N}: requests of C after the N-th wait until a
                                  hold without "call" releases them (120 s at most)
  POST /_emulator/expire-tokens  every account authorization token expires now
  POST /_emulator/advance-clock  {"seconds": N}: the emulator's clock (upload timestamps, token
                                  expiry) moves N seconds ahead; no test waits for time to pass

Fault kinds, each applied before the call does anything unless said otherwise:
  500, 503, 429      that status with B2's error JSON; 503 and 429 carry Retry-After
  expired_auth       401 expired_auth_token, and the token used (account or upload) stops working
  drop               the connection closes without an answer, before the call does anything
                     (for downloads: mid-body)
  drop_after         the call does its work, then the connection closes without the answer (an
                     answer lost on the way: a retry must cope with work already done)
  truncate           downloads only: the headers promise the whole body, half of it arrives
  corrupt            downloads: one byte of the body is flipped; uploads (file and part): one
                     byte of what arrived is flipped before the SHA-1 check, which then fails
                     with 400 bad_request as B2 answers damaged bytes
"""
import argparse
import base64
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, unquote_plus, urlsplit

LOCK = threading.RLock()
# Signalled whenever a request is counted, for /_emulator/await.
COUNTED = threading.Condition(LOCK)
CHUNK = 256 * 1024
DATA_DIR = None
OPTIONS = None

# The emulator's clock: real time plus what the tests advanced it by.
CLOCK_OFFSET = 0.0


def now():
    return time.time() + CLOCK_OFFSET


def millis():
    return int(now() * 1000)


class B2Error(Exception):
    def __init__(self, status, code, message, headers=None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


class State:
    def __init__(self):
        self.account_id = "emulated0001"
        self.keys = {}            # key id -> {"secret", "bucket_id", "prefix", "capabilities"}
        self.tokens = {}          # account token -> {"key_id", "expires"}
        self.buckets = {}         # bucket id -> {"name", "type"}
        self.versions = {}        # bucket id -> list of file versions (dicts), any order
        self.by_id = {}           # file id -> version dict (uploaded, hidden or unfinished)
        self.upload_urls = {}     # upload id -> {"token", "bucket_id" | "file_id", "busy"}
        self.parts = {}           # large file id -> {part number: part dict}
        self.download_tokens = {}  # token -> {"bucket_id", "prefix", "expires"}
        self.counter = 0
        self.stats = {}
        self.faults = {"rate": 0.0, "kinds": [], "calls": None}
        self.hold = None
        self.rng = random.Random(0)
        self.reset_stats()

    def reset_stats(self):
        self.stats = {"requests": {}, "faults": {}, "authorizations": 0, "sha1_rejections": 0,
                      "shared_upload_urls": 0}

    def next_id(self, prefix):
        self.counter += 1
        return "%s%016x%08d" % (prefix, uuid.uuid4().int & (2 ** 64 - 1), self.counter)


STATE = State()

ALL_CAPABILITIES = ["listKeys", "writeKeys", "deleteKeys", "listBuckets", "listAllBucketNames", "readBuckets",
                    "writeBuckets", "deleteBuckets", "readBucketRetentions", "writeBucketRetentions",
                    "readBucketEncryption", "writeBucketEncryption", "listFiles", "readFiles", "shareFiles",
                    "writeFiles", "deleteFiles", "readFileLegalHolds", "writeFileLegalHolds",
                    "readFileRetentions", "writeFileRetentions", "bypassGovernance"]


# MARK: - File names and headers

def check_file_name(name):
    """B2's file-name rules as its current documentation states them: UTF-8, at most 1024
    bytes, no code points below 32 and no DEL. (Older documents also forbade a leading or
    trailing '/' and '//'; the current ones do not, so neither does the emulator.)"""
    encoded = name.encode("utf-8", "surrogatepass")
    if not name:
        raise B2Error(400, "bad_request", "File names must not be empty")
    if len(encoded) > 1024:
        raise B2Error(400, "bad_request", "File names must not exceed 1024 bytes")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise B2Error(400, "bad_request", "File names must not contain characters below 32 or DEL")
    try:
        encoded.decode("utf-8")
    except UnicodeDecodeError:
        raise B2Error(400, "bad_request", "File names must be valid UTF-8")


def file_json(version, with_action=True):
    out = {
        "accountId": STATE.account_id,
        "action": version["action"],
        "bucketId": version["bucket_id"],
        "contentLength": version["size"],
        "contentSha1": version["sha1"],
        "contentMd5": version.get("md5"),
        "contentType": version["content_type"],
        "fileId": version["file_id"],
        "fileInfo": version["info"],
        "fileName": version["name"],
        "fileRetention": {"isClientAuthorizedToRead": True, "value": None},
        "legalHold": {"isClientAuthorizedToRead": True, "value": None},
        "serverSideEncryption": {"algorithm": None, "mode": None},
        "uploadTimestamp": version["timestamp"],
    }
    if not with_action:
        del out["action"]
    return out


def add_v1_sizes(value):
    """Version 1 named a file's length `size`; rclone's v1 client still reads that name."""
    if isinstance(value, dict):
        if "contentLength" in value and "fileName" in value:
            value["size"] = value["contentLength"]
        for item in value.values():
            add_v1_sizes(item)
    elif isinstance(value, list):
        for item in value:
            add_v1_sizes(item)


def folder_json(name, bucket_id):
    return {"accountId": STATE.account_id, "action": "folder", "bucketId": bucket_id, "contentLength": 0,
            "contentSha1": None, "contentMd5": None, "contentType": None, "fileId": None, "fileInfo": {},
            "fileName": name, "uploadTimestamp": 0}


def blob_path(file_id):
    return os.path.join(DATA_DIR, file_id)


def info_from_headers(headers):
    info = {}
    for name, value in headers.items():
        if name.lower().startswith("x-bz-info-"):
            # Header names are case-insensitive; B2 keeps file info names in lowercase.
            info[name[len("x-bz-info-"):].lower()] = unquote_plus(value)
    check_info(info)
    return info


def check_info(info, name=""):
    """File info names: at most 50 bytes, lowercase (B2 lowercases them), `b2-` reserved; the
    file name and the info together at most 7000 bytes."""
    total = len(name.encode())
    for key, value in info.items():
        if len(key.encode()) > 50 or not key:
            raise B2Error(400, "bad_request", "File info names must be 1 to 50 bytes: %s" % key)
        if key.startswith("b2-") and key not in ("b2-content-disposition", "b2-content-language", "b2-expires",
                                                  "b2-cache-control", "b2-content-encoding"):
            raise B2Error(400, "bad_request", "File info names starting with b2- are reserved: %s" % key)
        total += len(key.encode()) + len(str(value).encode())
    if total > 7000:
        raise B2Error(400, "bad_request", "The file name and file info exceed 7000 bytes")


# MARK: - Authorization

def account_for(token):
    """The key an account authorization token belongs to, or an error as B2 words it."""
    with LOCK:
        entry = STATE.tokens.get(token)
        if entry is None:
            raise B2Error(401, "bad_auth_token", "Invalid authorization token")
        if entry["expires"] <= now():
            raise B2Error(401, "expired_auth_token", "Authorization token has expired")
        key = STATE.keys.get(entry["key_id"])
        if key is None or (key.get("expires") is not None and key["expires"] <= now()):
            raise B2Error(401, "bad_auth_token", "The application key behind this token has expired or was deleted")
        return key


def require(key, capability, bucket_id=None, name=None):
    if capability not in key["capabilities"]:
        raise B2Error(401, "unauthorized", "The application key does not allow %s" % capability)
    if bucket_id is not None and key["bucket_id"] is not None and key["bucket_id"] != bucket_id:
        raise B2Error(401, "unauthorized", "The application key is restricted to another bucket")
    if name is not None and key["prefix"] and not name.startswith(key["prefix"]):
        raise B2Error(401, "unauthorized", "The application key is restricted to names starting with %s" % key["prefix"])


def bucket(bucket_id):
    with LOCK:
        found = STATE.buckets.get(bucket_id)
    if found is None:
        raise B2Error(400, "invalid_bucket_id", "Invalid bucketId: %s" % bucket_id)
    return found


def bucket_by_name(name):
    with LOCK:
        for bucket_id, found in STATE.buckets.items():
            if found["name"] == name:
                return bucket_id, found
    raise B2Error(404, "not_found", "Bucket %s does not exist" % name)


# MARK: - Versions

def latest(bucket_id, name):
    """The newest version of `name` (uploaded or hidden), or None."""
    newest = None
    for version in STATE.versions.get(bucket_id, []):
        if version["name"] == name and version["action"] in ("upload", "hide"):
            if newest is None or (version["timestamp"], version["seq"]) > (newest["timestamp"], newest["seq"]):
                newest = version
    return newest


def visible(bucket_id):
    """The latest uploaded version of every name, sorted by name (code points sort as UTF-8)."""
    newest = {}
    for version in STATE.versions.get(bucket_id, []):
        if version["action"] not in ("upload", "hide"):
            continue
        old = newest.get(version["name"])
        if old is None or (version["timestamp"], version["seq"]) > (old["timestamp"], old["seq"]):
            newest[version["name"]] = version
    return sorted((v for v in newest.values() if v["action"] == "upload"), key=lambda v: v["name"])


def add_version(bucket_id, name, size, sha1, content_type, info, action="upload", file_id=None, md5=None):
    with LOCK:
        version = {
            "bucket_id": bucket_id, "name": name, "size": size, "sha1": sha1, "md5": md5,
            "content_type": content_type, "info": info, "action": action,
            "file_id": file_id or STATE.next_id("4_z%s_f" % bucket_id[:8]),
            "timestamp": millis(), "seq": STATE.counter,
        }
        STATE.counter += 1
        STATE.versions.setdefault(bucket_id, []).append(version)
        STATE.by_id[version["file_id"]] = version
        return version


# MARK: - The handler

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self.dispatch()

    do_POST = do_HEAD = do_PUT = do_DELETE = do_GET

    # Responses

    def send_json(self, status, value, headers=None):
        if getattr(self, "drop_answer", False) and 200 <= status < 300:
            self.drop()
            return
        if getattr(self, "api_version", "v3") == "v1":
            add_v1_sizes(value)
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=0, no-cache, no-store")
        for name, header in (headers or {}).items():
            self.send_header(name, header)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_error_json(self, error):
        # A request body the handler never read would be taken for the next request on this
        # connection: drain a small one, close the connection after a large one.
        left = self.body_left()
        if 0 < left <= 1_048_576:
            self.discard_body()
        elif left > 0:
            self.close_connection = True
        self.send_json(error.status, {"status": error.status, "code": error.code, "message": error.message}, error.headers)
        if left > 1_048_576:
            self.drop()

    def body_left(self):
        try:
            return int(self.headers.get("Content-Length") or 0) - self.body_read
        except ValueError:
            return 0

    def drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    # Requests

    def read_json(self):
        length = max(0, self.body_left())
        raw = self.rfile.read(length) if length else b""
        self.body_read += len(raw)
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except ValueError:
            raise B2Error(400, "bad_request", "The request body is not valid JSON")
        if not isinstance(value, dict):
            raise B2Error(400, "bad_request", "The request body must be a JSON object")
        return value

    def discard_body(self):
        length = self.body_left()
        while length > 0:
            chunk = self.rfile.read(min(CHUNK, length))
            if not chunk:
                break
            length -= len(chunk)
            self.body_read += len(chunk)

    def account(self):
        return account_for(self.headers.get("Authorization", ""))

    def dispatch(self):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = url.path.split("/")
        if url.path.startswith("/_emulator/"):
            return self.control(parts[2], query)
        self.api_version = "v3"
        self.body_read = 0
        self.drop_answer = False
        if len(parts) >= 3 and parts[1] == "file":
            call = "b2_download_file_by_name"
        elif len(parts) >= 4 and parts[1] == "b2api" and parts[2] in ("v1", "v2", "v3", "v4"):
            call = parts[3]
            self.api_version = parts[2]
        else:
            self.discard_body()
            return self.send_error_json(B2Error(404, "not_found", "No such API: %s" % url.path))
        with LOCK:
            STATE.stats["requests"][call] = STATE.stats["requests"].get(call, 0) + 1
            number = STATE.stats["requests"][call]
            COUNTED.notify_all()
            # A held call waits, from its `after`-th request on, until released (120 s at most).
            if STATE.hold and STATE.hold["call"] == call and number > STATE.hold["after"]:
                COUNTED.wait_for(lambda: not STATE.hold, timeout=120)
            fault = self.choose_fault(call)
        try:
            if fault in ("500", "503", "429", "expired_auth", "drop"):
                return self.inject(fault, call)
            self.drop_answer = fault == "drop_after"
            handler = getattr(self, "call_" + call, None)
            if handler is None:
                self.discard_body()
                raise B2Error(404, "not_found", "No such API: %s" % call)
            return handler(parts, query, parts[2] if parts[1] == "b2api" else "v3", fault)
        except B2Error as error:
            return self.send_error_json(error)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def base_url(self):
        """Where clients reach this server: the loopback address they asked for (a proxy's, when
        a test puts one in front), else the emulator's own."""
        host = self.headers.get("Host", "")
        name, _, port = host.partition(":")
        if name == "127.0.0.1" and port.isdigit():
            return "http://" + host
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def choose_fault(self, call):
        faults = STATE.faults
        if faults["rate"] <= 0 or not faults["kinds"]:
            return None
        if faults["calls"] is not None and call not in faults["calls"]:
            return None
        if STATE.rng.random() >= faults["rate"]:
            return None
        kinds = [k for k in faults["kinds"] if self.fault_applies(k, call)]
        if not kinds:
            return None
        kind = STATE.rng.choice(kinds)
        STATE.stats["faults"][kind] = STATE.stats["faults"].get(kind, 0) + 1
        return kind

    @staticmethod
    def fault_applies(kind, call):
        downloads = ("b2_download_file_by_name", "b2_download_file_by_id")
        if kind == "truncate":
            return call in downloads
        if kind == "corrupt":
            return call in downloads or call in ("b2_upload_file", "b2_upload_part")
        if kind == "expired_auth":
            return call != "b2_authorize_account"
        if kind == "drop_after":
            return call not in downloads
        return True

    def inject(self, fault, call):
        if fault == "drop":
            self.drop()
            return
        self.discard_body()
        retry = {"Retry-After": str(OPTIONS.retry_after)}
        if fault == "500":
            raise B2Error(500, "internal_error", "An internal error occurred (injected)")
        if fault == "503":
            raise B2Error(503, "service_unavailable", "Service temporarily unavailable (injected)", retry)
        if fault == "429":
            raise B2Error(429, "too_many_requests", "Too many requests (injected)", retry)
        # expired_auth: the token used stops working, as an expired one would.
        token = self.headers.get("Authorization", "")
        with LOCK:
            if token in STATE.tokens:
                STATE.tokens[token]["expires"] = now() - 1
            for upload in STATE.upload_urls.values():
                if upload["token"] == token:
                    upload["expired"] = True
        raise B2Error(401, "expired_auth_token", "Authorization token has expired (injected)")

    # MARK: Control

    def control(self, name, query):
        global CLOCK_OFFSET
        self.body_read = 0
        body = self.read_json() if self.command == "POST" else {}
        if name == "await":
            # Answers once `call` has been requested `count` times (at most 120 s): a test
            # waits on the event itself instead of polling for it.
            wanted = int(query.get("count", "1"))
            with COUNTED:
                COUNTED.wait_for(lambda: STATE.stats["requests"].get(query.get("call", ""), 0) >= wanted, timeout=120)
                count = STATE.stats["requests"].get(query.get("call", ""), 0)
            return self.send_json(200, {"count": count})
        with LOCK:
            if name == "stats":
                stats = dict(STATE.stats)
                stats["versions"] = sum(len(v) for v in STATE.versions.values())
                return self.send_json(200, stats)
            if name == "reset-stats":
                STATE.reset_stats()
            elif name == "faults":
                STATE.faults = {"rate": float(body.get("rate", 0)), "kinds": list(body.get("kinds", [])),
                                "calls": body.get("calls")}
                STATE.rng = random.Random(body.get("seed", 0))
            elif name == "hold":
                STATE.hold = {"call": body["call"], "after": int(body.get("after", 0))} if body.get("call") else None
                COUNTED.notify_all()
            elif name == "expire-tokens":
                for entry in STATE.tokens.values():
                    entry["expires"] = now() - 1
            elif name == "advance-clock":
                CLOCK_OFFSET += float(body.get("seconds", 0))
            else:
                return self.send_json(404, {"error": "no such control %s" % name})
        self.send_json(200, {"ok": True})

    # MARK: Account

    def call_b2_authorize_account(self, parts, query, version, fault):
        self.discard_body()
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            raise B2Error(401, "bad_auth_token", "Basic authorization with the application key id and key is required")
        try:
            key_id, secret = base64.b64decode(header[6:]).decode().split(":", 1)
        except (ValueError, UnicodeDecodeError):
            raise B2Error(401, "bad_auth_token", "Malformed Basic authorization")
        with LOCK:
            key = STATE.keys.get(key_id)
            if key is None or key["secret"] != secret:
                raise B2Error(401, "unauthorized", "Invalid application key id or key")
            if key.get("expires") is not None and key["expires"] <= now():
                raise B2Error(401, "unauthorized", "The application key has expired")
            token = "4_" + uuid.uuid4().hex + uuid.uuid4().hex
            STATE.tokens[token] = {"key_id": key_id, "expires": now() + OPTIONS.auth_lifetime}
            STATE.stats["authorizations"] += 1
            bucket_name = STATE.buckets[key["bucket_id"]]["name"] if key["bucket_id"] else None
        base = self.base_url()
        allowed = {"bucketId": key["bucket_id"], "bucketName": bucket_name, "capabilities": key["capabilities"],
                   "namePrefix": key["prefix"] or None}
        if version == "v4":
            buckets = [{"id": key["bucket_id"], "name": bucket_name}] if key["bucket_id"] else None
            storage = {"absoluteMinimumPartSize": OPTIONS.min_part_size, "apiUrl": base, "downloadUrl": base,
                       "recommendedPartSize": OPTIONS.recommended_part_size, "s3ApiUrl": base,
                       "allowed": {"buckets": buckets, "capabilities": key["capabilities"],
                                   "namePrefix": key["prefix"] or None}}
            body = {"accountId": STATE.account_id, "apiInfo": {"storageApi": storage}, "authorizationToken": token,
                    "applicationKeyExpirationTimestamp": None}
        elif version == "v3":
            storage = dict(allowed)
            storage.update({"absoluteMinimumPartSize": OPTIONS.min_part_size, "apiUrl": base, "downloadUrl": base,
                            "infoType": "storageApi", "recommendedPartSize": OPTIONS.recommended_part_size,
                            "s3ApiUrl": base})
            body = {"accountId": STATE.account_id, "apiInfo": {"storageApi": storage}, "authorizationToken": token,
                    "applicationKeyExpirationTimestamp": None}
        else:
            body = {"accountId": STATE.account_id, "allowed": allowed, "apiUrl": base, "authorizationToken": token,
                    "downloadUrl": base, "recommendedPartSize": OPTIONS.recommended_part_size,
                    "absoluteMinimumPartSize": OPTIONS.min_part_size, "minimumPartSize": OPTIONS.recommended_part_size,
                    "s3ApiUrl": base}
        self.send_json(200, body)

    def call_b2_create_key(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        require(key, "writeKeys")
        if body.get("accountId") != STATE.account_id:
            raise B2Error(400, "bad_request", "accountId is required and must be the account's")
        name = body.get("keyName")
        if not isinstance(name, str) or not 1 <= len(name) <= 100 or not all(c.isascii() and (c.isalnum() or c == "-") for c in name):
            raise B2Error(400, "bad_request", "keyName must be 1 to 100 letters, numbers and '-'")
        capabilities = body.get("capabilities")
        if not isinstance(capabilities, list) or not capabilities or any(c not in ALL_CAPABILITIES for c in capabilities):
            raise B2Error(400, "bad_request", "capabilities must be a non-empty list of known capabilities")
        bucket_id = body.get("bucketId")
        prefix = body.get("namePrefix")
        if prefix is not None and bucket_id is None:
            raise B2Error(400, "bad_request", "namePrefix needs bucketId")
        if bucket_id is not None:
            bucket(bucket_id)
            if any(c in ("listKeys", "writeKeys", "deleteKeys", "writeBuckets", "deleteBuckets") for c in capabilities):
                raise B2Error(400, "bad_request", "a key restricted to a bucket cannot have account capabilities")
        if key["bucket_id"] is not None or key["prefix"]:
            raise B2Error(401, "unauthorized", "a restricted key cannot create keys")
        duration = body.get("validDurationInSeconds")
        if duration is not None and (not isinstance(duration, int) or not 1 <= duration < 1000 * 86400):
            raise B2Error(400, "bad_request", "validDurationInSeconds must be a positive integer under 1000 days")
        key_id = "005" + uuid.uuid4().hex[:21]
        secret = "K005" + uuid.uuid4().hex + uuid.uuid4().hex[:3]
        expires = now() + duration if duration is not None else None
        with LOCK:
            STATE.keys[key_id] = {"secret": secret, "bucket_id": bucket_id, "prefix": prefix or "",
                                  "capabilities": list(capabilities), "expires": expires, "name": name}
        self.send_json(200, {"accountId": STATE.account_id, "applicationKeyId": key_id, "applicationKey": secret,
                             "keyName": name, "capabilities": capabilities, "bucketId": bucket_id, "namePrefix": prefix,
                             "expirationTimestamp": int(expires * 1000) if expires is not None else None, "options": ["s3"]})

    def call_b2_delete_key(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        require(key, "deleteKeys")
        with LOCK:
            found = STATE.keys.pop(body.get("applicationKeyId"), None)
            if found is None:
                raise B2Error(400, "bad_request", "no such application key")
            for token, entry in list(STATE.tokens.items()):
                if entry["key_id"] == body.get("applicationKeyId"):
                    del STATE.tokens[token]
        self.send_json(200, {"accountId": STATE.account_id, "applicationKeyId": body.get("applicationKeyId"),
                             "keyName": found.get("name", ""), "capabilities": found["capabilities"],
                             "bucketId": found["bucket_id"], "namePrefix": found["prefix"] or None,
                             "expirationTimestamp": None, "options": ["s3"]})

    def call_b2_list_buckets(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        if body.get("accountId") != STATE.account_id:
            raise B2Error(400, "bad_request", "accountId is required and must be the account's")
        require(key, "listBuckets")
        out = []
        with LOCK:
            for bucket_id, found in sorted(STATE.buckets.items()):
                if key["bucket_id"] is not None and bucket_id != key["bucket_id"]:
                    continue
                if body.get("bucketId") not in (None, bucket_id) or body.get("bucketName") not in (None, found["name"]):
                    continue
                out.append({"accountId": STATE.account_id, "bucketId": bucket_id, "bucketName": found["name"],
                            "bucketType": found["type"], "bucketInfo": {}, "corsRules": [], "lifecycleRules": [],
                            "options": [], "revision": 1})
        self.send_json(200, {"buckets": out})

    def call_b2_create_bucket(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        require(key, "writeBuckets")
        name = body.get("bucketName") or ""
        if body.get("bucketType") not in ("allPrivate", "allPublic"):
            raise B2Error(400, "bad_request", "bucketType must be allPrivate or allPublic")
        with LOCK:
            if any(found["name"] == name for found in STATE.buckets.values()):
                raise B2Error(400, "duplicate_bucket_name", "Bucket name is already in use.")
            bucket_id = uuid.uuid4().hex[:24]
            STATE.buckets[bucket_id] = {"name": name, "type": body["bucketType"]}
        self.send_json(200, {"accountId": STATE.account_id, "bucketId": bucket_id, "bucketName": name,
                             "bucketType": body["bucketType"], "bucketInfo": {}, "corsRules": [], "lifecycleRules": [],
                             "options": [], "revision": 1})

    # MARK: Uploads

    def call_b2_get_upload_url(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        bucket(body.get("bucketId"))
        require(key, "writeFiles", body.get("bucketId"))
        return self.new_upload_url("b2_upload_file", {"bucket_id": body["bucketId"], "prefix": key["prefix"]},
                                   {"bucketId": body["bucketId"]}, version)

    def call_b2_get_upload_part_url(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        with LOCK:
            large = STATE.by_id.get(body.get("fileId"))
        if large is None or large["action"] != "start":
            raise B2Error(400, "bad_request", "No active upload for: %s" % body.get("fileId"))
        require(key, "writeFiles", large["bucket_id"], large["name"])
        return self.new_upload_url("b2_upload_part", {"file_id": large["file_id"]}, {"fileId": large["file_id"]}, version)

    def new_upload_url(self, call, target, answer, version):
        upload_id = uuid.uuid4().hex
        token = "4_upload_" + uuid.uuid4().hex
        with LOCK:
            STATE.upload_urls[upload_id] = dict(target, token=token, busy=False, expired=False)
        answer = dict(answer)
        answer["uploadUrl"] = "%s/b2api/%s/%s/%s" % (self.base_url(), version, call, upload_id)
        answer["authorizationToken"] = token
        self.send_json(200, answer)

    def claim_upload_url(self, parts):
        """The upload URL's record, marked busy; B2 lets one upload at a time use an upload URL."""
        upload_id = parts[4] if len(parts) > 4 else ""
        with LOCK:
            upload = STATE.upload_urls.get(upload_id)
            if upload is None or upload["token"] != self.headers.get("Authorization", ""):
                raise B2Error(401, "bad_auth_token", "Invalid upload authorization token")
            if upload["expired"]:
                raise B2Error(401, "expired_auth_token", "Upload authorization token has expired")
            if upload["busy"]:
                STATE.stats["shared_upload_urls"] += 1
                raise B2Error(400, "auth_token_limit", "The upload authorization token is in use by another upload")
            upload["busy"] = True
            return upload

    def receive(self, corrupt):
        """Reads the body to a temporary file; returns (path, size, sha1 hex, md5 hex, the SHA-1 the
        client declared)."""
        try:
            length = int(self.headers.get("Content-Length"))
        except (TypeError, ValueError):
            raise B2Error(400, "bad_request", "Content-Length is required")
        declared = (self.headers.get("X-Bz-Content-Sha1") or "").lower()
        if not declared:
            raise B2Error(400, "bad_request", "X-Bz-Content-Sha1 is required")
        at_end = declared == "hex_digits_at_end"
        data_length = length - 40 if at_end else length
        if data_length < 0:
            raise B2Error(400, "bad_request", "Content-Length is too short for hex_digits_at_end")
        fd, path = tempfile.mkstemp(dir=DATA_DIR, prefix="incoming-")
        sha1, md5 = hashlib.sha1(), hashlib.md5()
        received = 0
        flip_at = data_length // 2 if corrupt and data_length > 0 else -1
        try:
            with os.fdopen(fd, "wb") as out:
                while received < data_length:
                    chunk = self.rfile.read(min(CHUNK, data_length - received))
                    if not chunk:
                        raise ConnectionResetError("the client closed the connection mid-body")
                    if received <= flip_at < received + len(chunk):
                        index = flip_at - received
                        chunk = chunk[:index] + bytes([chunk[index] ^ 0x01]) + chunk[index + 1:]
                    out.write(chunk)
                    sha1.update(chunk)
                    md5.update(chunk)
                    received += len(chunk)
                    self.body_read += len(chunk)
            if at_end:
                declared = self.rfile.read(40).decode("ascii", "replace").lower()
                self.body_read += 40
        except BaseException:
            os.unlink(path)
            raise
        return path, data_length, sha1.hexdigest(), md5.hexdigest(), declared

    def check_sha1(self, path, actual, declared):
        if declared != "do_not_verify" and declared != actual:
            os.unlink(path)
            with LOCK:
                STATE.stats["sha1_rejections"] += 1
            raise B2Error(400, "bad_request", "Sha1 did not match data received")

    def call_b2_upload_file(self, parts, query, version, fault):
        upload = self.claim_upload_url(parts)
        try:
            raw_name = self.headers.get("X-Bz-File-Name")
            if raw_name is None:
                self.discard_body()
                raise B2Error(400, "bad_request", "X-Bz-File-Name is required")
            try:
                name = unquote_plus(raw_name, errors="strict")
            except UnicodeDecodeError:
                self.discard_body()
                raise B2Error(400, "bad_request", "X-Bz-File-Name is not percent-encoded UTF-8")
            try:
                check_file_name(name)
                info = info_from_headers(self.headers)
            except B2Error:
                self.discard_body()
                raise
            with LOCK:
                key_ok = upload["bucket_id"] in STATE.buckets
            if not key_ok:
                self.discard_body()
                raise B2Error(400, "bad_request", "Invalid bucketId")
            if upload.get("prefix") and not name.startswith(upload["prefix"]):
                self.discard_body()
                raise B2Error(401, "unauthorized", "The application key is restricted to names starting with %s" % upload["prefix"])
            path, size, sha1, md5, declared = self.receive(fault == "corrupt")
            self.check_sha1(path, sha1, declared)
            content_type = self.headers.get("Content-Type") or "application/octet-stream"
            if content_type == "b2/x-auto":
                content_type = "application/octet-stream"
            version_record = add_version(upload["bucket_id"], name, size, sha1, content_type, info, md5=md5)
            os.replace(path, blob_path(version_record["file_id"]))
        finally:
            # Free before answering: the client may hand the URL to its next upload as soon
            # as it has the answer.
            with LOCK:
                upload["busy"] = False
        self.send_json(200, file_json(version_record))

    def call_b2_start_large_file(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        bucket(body.get("bucketId"))
        name = body.get("fileName") or ""
        check_file_name(name)
        require(key, "writeFiles", body["bucketId"], name)
        info = body.get("fileInfo") or {}
        if not isinstance(info, dict):
            raise B2Error(400, "bad_request", "fileInfo must be an object")
        info = {str(k).lower(): str(v) for k, v in info.items()}
        check_info(info, name)
        record = add_version(body["bucketId"], name, 0, "none", body.get("contentType") or "application/octet-stream",
                             info, action="start")
        with LOCK:
            STATE.parts[record["file_id"]] = {}
        self.send_json(200, file_json(record))

    def call_b2_upload_part(self, parts, query, version, fault):
        upload = self.claim_upload_url(parts)
        try:
            try:
                number = int(self.headers.get("X-Bz-Part-Number"))
            except (TypeError, ValueError):
                self.discard_body()
                raise B2Error(400, "bad_request", "X-Bz-Part-Number is required")
            if not 1 <= number <= 10000:
                self.discard_body()
                raise B2Error(400, "bad_request", "Part numbers must be from 1 to 10000")
            with LOCK:
                large = STATE.by_id.get(upload["file_id"])
            if large is None or large["action"] != "start":
                self.discard_body()
                raise B2Error(400, "bad_request", "No active upload for: %s" % upload["file_id"])
            path, size, sha1, md5, declared = self.receive(fault == "corrupt")
            self.check_sha1(path, sha1, declared)
            part_path = blob_path("%s.part%05d" % (large["file_id"], number))
            os.replace(path, part_path)
            part = {"fileId": large["file_id"], "partNumber": number, "contentLength": size, "contentSha1": sha1,
                    "contentMd5": md5, "serverSideEncryption": {"algorithm": None, "mode": None},
                    "uploadTimestamp": millis()}
            with LOCK:
                if large["file_id"] in STATE.parts:
                    STATE.parts[large["file_id"]][number] = part
        finally:
            with LOCK:
                upload["busy"] = False
        self.send_json(200, part)

    def large_file(self, body, key):
        with LOCK:
            large = STATE.by_id.get(body.get("fileId"))
        if large is None or large["action"] != "start":
            raise B2Error(400, "bad_request", "No active upload for: %s" % body.get("fileId"))
        require(key, "writeFiles", large["bucket_id"], large["name"])
        return large

    def call_b2_list_parts(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        large = self.large_file(body, key)
        start = int(body.get("startPartNumber") or 1)
        count = int(body.get("maxPartCount") or 100)
        if not 1 <= count <= 1000:
            raise B2Error(400, "bad_request", "maxPartCount must be from 1 to 1000")
        with LOCK:
            numbers = sorted(n for n in STATE.parts.get(large["file_id"], {}) if n >= start)
            page = [STATE.parts[large["file_id"]][n] for n in numbers[:count]]
        following = numbers[count] if len(numbers) > count else None
        self.send_json(200, {"parts": page, "nextPartNumber": following})

    def call_b2_finish_large_file(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        large = self.large_file(body, key)
        sha1s = body.get("partSha1Array")
        if not isinstance(sha1s, list) or not sha1s:
            raise B2Error(400, "bad_request", "partSha1Array is required")
        with LOCK:
            uploaded = dict(STATE.parts.get(large["file_id"], {}))
        if len(sha1s) < 2:
            raise B2Error(400, "bad_request", "large files must have at least 2 parts")
        for number, sha1 in enumerate(sha1s, start=1):
            part = uploaded.get(number)
            if part is None:
                raise B2Error(400, "missing_part", "Part number %d has not been uploaded" % number)
            if part["contentSha1"] != str(sha1).lower():
                raise B2Error(400, "part_sha1_mismatch", "Sha1 mismatch for part %d" % number)
            if number < len(sha1s) and part["contentLength"] < OPTIONS.min_part_size:
                raise B2Error(400, "bad_request", "Part number %d is smaller than the minimum part size" % number)
        if len(uploaded) != len(sha1s):
            raise B2Error(400, "bad_request", "More parts were uploaded than partSha1Array names")
        target = blob_path(large["file_id"])
        size = 0
        with open(target + ".assembling", "wb") as out:
            for number in range(1, len(sha1s) + 1):
                part_path = blob_path("%s.part%05d" % (large["file_id"], number))
                with open(part_path, "rb") as source:
                    shutil.copyfileobj(source, out, CHUNK)
                size += uploaded[number]["contentLength"]
        os.replace(target + ".assembling", target)
        for number in range(1, len(sha1s) + 1):
            os.unlink(blob_path("%s.part%05d" % (large["file_id"], number)))
        with LOCK:
            large.update({"action": "upload", "size": size, "timestamp": millis(), "seq": STATE.counter})
            STATE.counter += 1
            STATE.parts.pop(large["file_id"], None)
        self.send_json(200, file_json(large))

    def call_b2_cancel_large_file(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        large = self.large_file(body, key)
        with LOCK:
            numbers = list(STATE.parts.pop(large["file_id"], {}))
            STATE.versions[large["bucket_id"]].remove(large)
            del STATE.by_id[large["file_id"]]
        for number in numbers:
            try:
                os.unlink(blob_path("%s.part%05d" % (large["file_id"], number)))
            except FileNotFoundError:
                pass
        self.send_json(200, {"accountId": STATE.account_id, "bucketId": large["bucket_id"],
                             "fileId": large["file_id"], "fileName": large["name"]})

    def call_b2_list_unfinished_large_files(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        bucket(body.get("bucketId"))
        require(key, "listFiles", body["bucketId"])
        prefix = body.get("namePrefix") or ""
        count = int(body.get("maxFileCount") or 100)
        start = body.get("startFileId")
        with LOCK:
            unfinished = sorted((v for v in STATE.versions.get(body["bucketId"], [])
                                 if v["action"] == "start" and v["name"].startswith(prefix)),
                                key=lambda v: (v["name"], v["file_id"]))
        if start:
            ids = [v["file_id"] for v in unfinished]
            if start not in ids:
                raise B2Error(400, "invalid_file_id", "Invalid startFileId: %s" % start)
            unfinished = unfinished[ids.index(start):]
        page = unfinished[:count]
        following = unfinished[count]["file_id"] if len(unfinished) > count else None
        self.send_json(200, {"files": [file_json(v) for v in page], "nextFileId": following})

    # MARK: Listing and information

    def call_b2_list_file_names(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        bucket(body.get("bucketId"))
        require(key, "listFiles", body["bucketId"])
        prefix = body.get("prefix") or ""
        if key["prefix"] and not prefix.startswith(key["prefix"]):
            raise B2Error(401, "unauthorized", "The application key is restricted to names starting with %s" % key["prefix"])
        start = body.get("startFileName") or ""
        delimiter = body.get("delimiter")
        count = int(body.get("maxFileCount") or 100)
        if not 1 <= count <= 10000:
            raise B2Error(400, "bad_request", "maxFileCount must be from 1 to 10000")
        if delimiter is not None and delimiter != "/":
            raise B2Error(400, "bad_request", "delimiter must be /")
        with LOCK:
            names = [v for v in visible(body["bucketId"]) if v["name"].startswith(prefix) and v["name"] >= start]
        out = []
        following = None
        for version_record in names:
            name = version_record["name"]
            if delimiter:
                rest = name[len(prefix):]
                cut = rest.find(delimiter)
                if cut >= 0:
                    folder = prefix + rest[:cut + 1]
                    if out and out[-1]["fileName"] == folder:
                        continue
                    if folder < start:
                        continue
                    if len(out) == count:
                        following = folder
                        break
                    out.append(folder_json(folder, body["bucketId"]))
                    continue
            if len(out) == count:
                following = name
                break
            out.append(file_json(version_record))
        self.send_json(200, {"files": out, "nextFileName": following})

    def call_b2_list_file_versions(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        bucket(body.get("bucketId"))
        require(key, "listFiles", body["bucketId"])
        prefix = body.get("prefix") or ""
        start_name = body.get("startFileName") or ""
        start_id = body.get("startFileId")
        count = int(body.get("maxFileCount") or 100)
        if not 1 <= count <= 10000:
            raise B2Error(400, "bad_request", "maxFileCount must be from 1 to 10000")
        if start_id and not start_name:
            raise B2Error(400, "bad_request", "startFileId needs startFileName")
        with LOCK:
            everything = sorted((v for v in STATE.versions.get(body["bucketId"], [])
                                 if v["name"].startswith(prefix) and v["name"] >= start_name),
                                key=lambda v: (v["name"], -v["timestamp"], -v["seq"]))
        if start_id:
            ids = [(v["name"], v["file_id"]) for v in everything]
            if (start_name, start_id) not in ids:
                raise B2Error(400, "invalid_file_id", "Invalid startFileId: %s" % start_id)
            everything = everything[ids.index((start_name, start_id)):]
        page = everything[:count]
        following = everything[count] if len(everything) > count else None
        self.send_json(200, {"files": [file_json(v) for v in page],
                             "nextFileName": following["name"] if following else None,
                             "nextFileId": following["file_id"] if following else None})

    def call_b2_get_file_info(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        with LOCK:
            found = STATE.by_id.get(body.get("fileId"))
        if found is None or found["action"] == "start":
            raise B2Error(404, "not_found", "File not present: %s" % body.get("fileId"))
        require(key, "readFiles", found["bucket_id"], found["name"])
        self.send_json(200, file_json(found))

    # MARK: Deleting, hiding, copying

    def call_b2_delete_file_version(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        with LOCK:
            found = STATE.by_id.get(body.get("fileId"))
            if found is None or found["name"] != body.get("fileName"):
                raise B2Error(400, "file_not_present", "File not present: %s %s" % (body.get("fileName"), body.get("fileId")))
            require(key, "deleteFiles", found["bucket_id"], found["name"])
            # Deleting an unfinished large file cancels it.
            STATE.versions[found["bucket_id"]].remove(found)
            del STATE.by_id[found["file_id"]]
            for number in STATE.parts.pop(found["file_id"], {}):
                try:
                    os.unlink(blob_path("%s.part%05d" % (found["file_id"], number)))
                except FileNotFoundError:
                    pass
        try:
            os.unlink(blob_path(found["file_id"]))
        except FileNotFoundError:
            pass
        self.send_json(200, {"fileId": found["file_id"], "fileName": found["name"]})

    def call_b2_hide_file(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        bucket(body.get("bucketId"))
        name = body.get("fileName") or ""
        require(key, "writeFiles", body["bucketId"], name)
        with LOCK:
            current = latest(body["bucketId"], name)
        if current is None or current["action"] != "upload":
            raise B2Error(400, "already_hidden" if current else "no_such_file", "File not present: %s" % name)
        record = add_version(body["bucketId"], name, 0, None, None, {}, action="hide")
        self.send_json(200, file_json(record))

    def call_b2_copy_file(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        with LOCK:
            source = STATE.by_id.get(body.get("sourceFileId"))
        if source is None or source["action"] != "upload":
            raise B2Error(400, "bad_request", "Source file not present: %s" % body.get("sourceFileId"))
        require(key, "readFiles", source["bucket_id"], source["name"])
        destination_bucket = body.get("destinationBucketId") or source["bucket_id"]
        bucket(destination_bucket)
        name = body.get("fileName") or ""
        check_file_name(name)
        require(key, "writeFiles", destination_bucket, name)
        directive = body.get("metadataDirective") or "COPY"
        if directive == "COPY":
            if "contentType" in body or "fileInfo" in body:
                raise B2Error(400, "bad_request", "contentType and fileInfo must not be given with metadataDirective COPY")
            content_type, info = source["content_type"], dict(source["info"])
        elif directive == "REPLACE":
            if "contentType" not in body:
                raise B2Error(400, "bad_request", "contentType is required with metadataDirective REPLACE")
            content_type = body["contentType"]
            info = {str(k).lower(): str(v) for k, v in (body.get("fileInfo") or {}).items()}
            check_info(info, name)
        else:
            raise B2Error(400, "bad_request", "metadataDirective must be COPY or REPLACE")
        start, end = 0, source["size"]
        if body.get("range"):
            start, end = parse_range(body["range"], source["size"])
        sha1, md5 = hashlib.sha1(), hashlib.md5()
        fd, path = tempfile.mkstemp(dir=DATA_DIR, prefix="copy-")
        with os.fdopen(fd, "wb") as out, open(blob_path(source["file_id"]), "rb") as data:
            data.seek(start)
            left = end - start
            while left > 0:
                chunk = data.read(min(CHUNK, left))
                if not chunk:
                    break
                out.write(chunk)
                sha1.update(chunk)
                md5.update(chunk)
                left -= len(chunk)
        whole = start == 0 and end == source["size"]
        sha1_hex = source["sha1"] if whole and source["sha1"] == "none" else sha1.hexdigest()
        record = add_version(destination_bucket, name, end - start, sha1_hex, content_type, info, md5=md5.hexdigest())
        os.replace(path, blob_path(record["file_id"]))
        self.send_json(200, file_json(record))

    # MARK: Downloads

    def call_b2_get_download_authorization(self, parts, query, version, fault):
        body = self.read_json()
        key = self.account()
        bucket(body.get("bucketId"))
        prefix = body.get("fileNamePrefix")
        if prefix is None:
            raise B2Error(400, "bad_request", "fileNamePrefix is required")
        require(key, "shareFiles", body["bucketId"], prefix if key["prefix"] else None)
        try:
            duration = int(body.get("validDurationInSeconds"))
        except (TypeError, ValueError):
            raise B2Error(400, "bad_request", "validDurationInSeconds is required")
        if not 1 <= duration <= 604800:
            raise B2Error(400, "bad_request", "validDurationInSeconds must be from 1 to 604800")
        token = "3_" + uuid.uuid4().hex
        with LOCK:
            STATE.download_tokens[token] = {"bucket_id": body["bucketId"], "prefix": prefix, "expires": now() + duration}
        self.send_json(200, {"bucketId": body["bucketId"], "fileNamePrefix": prefix, "authorizationToken": token})

    def download_authorized(self, bucket_id, found_bucket, name, query):
        if found_bucket["type"] == "allPublic":
            return
        token = self.headers.get("Authorization") or query.get("Authorization") or ""
        with LOCK:
            grant = STATE.download_tokens.get(token)
        if grant is not None:
            if grant["expires"] <= now():
                raise B2Error(401, "expired_auth_token", "Download authorization has expired")
            if grant["bucket_id"] != bucket_id or not name.startswith(grant["prefix"]):
                raise B2Error(401, "unauthorized", "The download authorization does not cover this file")
            return
        key = account_for(token)
        require(key, "readFiles", bucket_id, name)

    def call_b2_download_file_by_name(self, parts, query, version, fault):
        self.discard_body()
        bucket_name = unquote(parts[2])
        name = unquote("/".join(parts[3:]))
        bucket_id, found_bucket = bucket_by_name(bucket_name)
        self.download_authorized(bucket_id, found_bucket, name, query)
        with LOCK:
            current = latest(bucket_id, name)
        if current is None or current["action"] != "upload":
            raise B2Error(404, "not_found", "File with such name does not exist.")
        self.send_file(current, fault)

    def call_b2_download_file_by_id(self, parts, query, version, fault):
        self.discard_body()
        with LOCK:
            found = STATE.by_id.get(query.get("fileId"))
        if found is None or found["action"] != "upload":
            raise B2Error(404, "not_found", "File not present: %s" % query.get("fileId"))
        self.download_authorized(found["bucket_id"], STATE.buckets[found["bucket_id"]], found["name"], query)
        self.send_file(found, fault)

    def send_file(self, found, fault):
        size = found["size"]
        start, end, status = 0, size, 200
        header = self.headers.get("Range")
        if header:
            start, end = parse_range(header, size)
            status = 206
        headers = {
            "Content-Type": found["content_type"], "Content-Length": str(end - start), "Accept-Ranges": "bytes",
            "x-bz-file-name": quote(found["name"], safe="/"), "x-bz-file-id": found["file_id"],
            "x-bz-content-sha1": found["sha1"], "X-Bz-Upload-Timestamp": str(found["timestamp"]),
            "Cache-Control": "max-age=0",
        }
        if status == 206:
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, end - 1, size)
        for name, value in found["info"].items():
            headers["x-bz-info-" + name] = quote(str(value), safe="")
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        limit = end - start
        if fault in ("drop", "truncate"):
            limit = (end - start) // 2
        flip_at = (end - start) // 2 if fault == "corrupt" and end > start else -1
        sent = 0
        with open(blob_path(found["file_id"]), "rb") as data:
            data.seek(start)
            while sent < limit:
                chunk = data.read(min(CHUNK, limit - sent))
                if not chunk:
                    break
                if sent <= flip_at < sent + len(chunk):
                    index = flip_at - sent
                    chunk = chunk[:index] + bytes([chunk[index] ^ 0x01]) + chunk[index + 1:]
                self.wfile.write(chunk)
                sent += len(chunk)
        if fault in ("drop", "truncate"):
            self.wfile.flush()
            self.drop()


def parse_range(header, size):
    """bytes=a-b, bytes=a- or bytes=-n, as B2 takes it; an unsatisfiable range is 416."""
    if not header.startswith("bytes=") or "," in header:
        raise B2Error(400, "bad_request", "Invalid range: %s" % header)
    first, _, last = header[6:].partition("-")
    try:
        if first == "":
            count = int(last)
            start, end = max(0, size - count), size
        else:
            start = int(first)
            end = min(size, int(last) + 1) if last else size
    except ValueError:
        raise B2Error(400, "bad_request", "Invalid range: %s" % header)
    if start >= size or end <= start:
        raise B2Error(416, "range_not_satisfiable", "The range %s is not satisfiable for %d bytes" % (header, size))
    return start, end


# MARK: - Startup

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
    parser = argparse.ArgumentParser(description="A Backblaze B2 native-API emulator for tests.")
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--bucket", action="append", default=[], help="NAME or NAME:allPublic")
    parser.add_argument("--restricted-key", action="append", default=[], help="ID:SECRET:BUCKET[:PREFIX]")
    parser.add_argument("--min-part-size", type=int, default=5_000_000)
    parser.add_argument("--recommended-part-size", type=int, default=100_000_000)
    parser.add_argument("--auth-lifetime", type=float, default=86400)
    parser.add_argument("--retry-after", type=int, default=1)
    parser.add_argument("--port", type=int, default=0)
    OPTIONS = parser.parse_args()
    DATA_DIR = tempfile.mkdtemp(prefix="b2-emulator-")

    STATE.keys[OPTIONS.key_id] = {"secret": OPTIONS.key, "bucket_id": None, "prefix": "",
                                  "capabilities": list(ALL_CAPABILITIES)}
    for spec in OPTIONS.bucket or ["buckia-test"]:
        name, _, kind = spec.partition(":")
        bucket_id = uuid.uuid4().hex[:24]
        STATE.buckets[bucket_id] = {"name": name, "type": kind or "allPrivate"}
    for spec in OPTIONS.restricted_key:
        key_id, secret, bucket_name, prefix = (spec.split(":", 3) + [""])[:4]
        bucket_id, _ = bucket_by_name(bucket_name)
        STATE.keys[key_id] = {"secret": secret, "bucket_id": bucket_id, "prefix": prefix,
                              "capabilities": ["listBuckets", "listFiles", "readFiles", "shareFiles", "writeFiles",
                                               "deleteFiles"]}

    # A listen backlog for many concurrent clients (the default, 5, refuses connections under load).
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", OPTIONS.port), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
