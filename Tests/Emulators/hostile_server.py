#!/usr/bin/env python3
"""A deliberately hostile S3 / B2 / Bunny server for Buckia's bad-input corpus (standard library only).

    eval "$(python3 hostile_server.py SCENARIO [--lifetime SECONDS])"
    trap 'kill $PID' EXIT

Binds 127.0.0.1 on a free port and forks. The parent prints exactly `PORT=<n>; PID=<child pid>`
and exits 0 at once; the child (stdin, stdout and stderr on /dev/null) answers every request
on loopback, one thread per connection, until it is killed or for at most 120 seconds
(`--lifetime` may set it anywhere up to 3600 s: a hang guard, set well above what a loaded
machine takes to reach its requests), then exits by itself. It never opens a
connection of its own: the only host it names in its answers (B2's apiUrl and downloadUrl) is
itself. An unknown scenario prints a message on stderr and `(exit 2)` on stdout, so the eval
fails too. `python3 hostile_server.py --list` prints the scenario names. With HOSTILE_SERVER_LOG=FILE
in its environment the server appends one line per request to FILE ("time METHOD PATH RANGE").

Scenarios. Each answers the calls a client needs before the hostile part normally (B2's
b2_authorize_account and b2_list_buckets, whatever key and bucket name it is given; S3 and
Bunny check no signature or password). Objects not listed below are 404s in the provider's
error format; writes are refused (S3 501 NotImplemented, B2 400 bad_request, Bunny 400).

  scenario             what the server does
  -------------------  ------------------------------------------------------------------------
  s3-ok                ListObjectsV2 lists a.txt (Size 5, ETag = MD5 of "hello"); HEAD/GET a.txt
                       (Range too) give "hello" with that ETag, Last-Modified, x-amz-meta-mtime
  s3-deep-xml          ListObjectsV2: 200, a body nested 70,000 elements deep in ListBucketResult
  s3-huge-size         lists huge.bin <Size>9223372036854775807</Size> and small.txt (5, "hello");
                       HEAD huge.bin says Content-Length 9223372036854775807; ranged GETs give
                       206 zeros (at most 64 MiB each) with Content-Range .../9223372036854775807;
                       a whole GET streams zeros under that Content-Length until the client goes
  s3-negative-size     lists neg.txt <Size>-5</Size>; HEAD/GET neg.txt answer Content-Length: -5
                       (GET then closes the connection without a body)
  s3-endless           every page IsTruncated=true, no objects, NextContinuationToken t1, t2, ...
  s3-repeat-token      every page IsTruncated=true, the same object a.txt, token "same-token"
  s3-bad-xml           ListObjectsV2: 200 whose body is not well-formed XML
  s3-error-control     every request: 403 AccessDenied whose <Message> holds raw ESC sequences
                       (ESC[31m, ESC]0;title BEL), CR and BEL bytes (so the XML itself is not
                       well-formed XML 1.0: a strict parser falls back to the status and body)
  s3-error-control-ref the same as numeric character references (&#27; &#7; &#13;)
  s3-bad-md5           lists and HEADs a.txt as s3-ok (Size 5, ETag = MD5 of "hello"), but every
                       GET of it (Range too) answers "jello": the same length, other bytes
  s3-range-ignored     lists big.bin (2,621,440 bytes of a fixed pattern, i % 251) with its true
                       MD5 ETag; HEAD is right, but every GET ignores Range and answers 200 with
                       the whole body
  b2-ok                b2_list_file_names lists a.txt (contentLength 5, SHA-1 of "hello");
                       GET/HEAD /file/BUCKET/a.txt (Range too) give "hello" with x-bz-* headers
  b2-huge-size         lists huge.bin contentLength 9223372036854775807 (contentSha1 "none")
                       and small.txt (5, "hello"); downloads of huge.bin as for s3-huge-size
  b2-negative-size     lists neg.txt contentLength -5; HEAD/GET of it answer Content-Length: -5
  b2-endless           b2_list_file_names: no files, nextFileName n00000001, n00000002, ... forever
  b2-deep-json         b2_list_file_names: {"files": 100,000 nested arrays, "nextFileName": null}
  b2-error-control     every call after b2_authorize_account (b2_list_buckets included) and
                       every download: 400 {"status":400,"code":"bad_request","message":...} whose
                       message holds ESC[31m, ESC]0;title BEL, CR and BEL (JSON \\u escapes)
  b2-bad-sha1          lists a.txt as b2-ok (contentSha1 = SHA-1 of "hello", HEAD's
                       X-Bz-Content-Sha1 the same), but every GET of it (Range too) sends "jello"
  bunny-ok             GET /ZONE/ lists a.txt (Length 5, Checksum = SHA-256 of "hello");
                       DESCRIBE/GET /ZONE/a.txt (Range too) give it and "hello"
  bunny-dot            every folder listing (GET of any path ending in /) holds a directory
                       named "." (IsDirectory true) and the file a.txt
  bunny-huge-size      lists huge.bin Length 9223372036854775807 (Checksum null) and small.txt;
                       DESCRIBE/GET of huge.bin as for s3-huge-size
  bunny-negative-size  lists neg.txt Length -5; DESCRIBE says -5, GET answers Content-Length: -5
  bunny-deep-json      every folder listing: 200, 100,000 nested arrays
  bunny-error-control  every request: 401 {"HttpCode":401,"Message":...} with the same control
                       characters as b2-error-control (JSON \\u escapes)
  bunny-bad-checksum   lists and DESCRIBEs a.txt as bunny-ok (Checksum = SHA-256 of "hello"), but
                       every GET of it (Range too) sends "jello"
  http-silent          accepts every connection, reads the request and never answers
  http-endless-chunked 200, Cache-Control max-age=60, Transfer-Encoding: chunked and no
                       Content-Length: zeros, 256 KiB a chunk, until the client goes
  http-endless-length  200, max-age=60, Content-Length 1 TiB: zeros until the client goes
  http-partial         206 with Content-Range: bytes 0-4/100 and "hello" to every GET, asked
                       for a range or not
  http-bad-length      200 with Content-Length: 99999999999999999999999, then "hello" and close
  http-304             304 Not Modified to every request, with or without validators

The environment a `buckia` remote X needs against it (give the remote any name without `_`;
a fresh HOME and XDG_* directories keep a user's configuration and ~/.aws files out):

  s3      BUCKIA_REMOTE_X_PROVIDER=s3 BUCKIA_REMOTE_X_BUCKET=bucket
          BUCKIA_REMOTE_X_ENDPOINT=http://127.0.0.1:$PORT
          AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b
          (or BUCKIA_REMOTE_X_CREDENTIAL_ACCESS_KEY_ID / _CREDENTIAL_SECRET_ACCESS_KEY; region
          defaults to us-east-1; a loopback http endpoint needs no ALLOW_HTTP and is path-style)
  b2      BUCKIA_REMOTE_X_PROVIDER=b2 BUCKIA_REMOTE_X_BUCKET=bucket1 (6 to 50 letters/digits/-)
          BUCKIA_REMOTE_X_ENDPOINT=http://127.0.0.1:$PORT
          B2_APPLICATION_KEY_ID=k B2_APPLICATION_KEY=s
          (or BUCKIA_REMOTE_X_CREDENTIAL_APPLICATION_KEY_ID / _CREDENTIAL_APPLICATION_KEY)
  bunny   BUCKIA_REMOTE_X_PROVIDER=bunny BUCKIA_REMOTE_X_BUCKET=zone
          BUCKIA_REMOTE_X_ENDPOINT=http://127.0.0.1:$PORT
          BUCKIA_REMOTE_X_CREDENTIAL_ACCESS_KEY=pw   (or BUNNY_STORAGE_ACCESS_KEY=pw)
  any     BUCKIA_REMOTE_X_MAX_ATTEMPTS=1 (no retries), BUCKIA_REMOTE_X_STALL_TIMEOUT_SECONDS=N,
          BUCKIA_REMOTE_X_CONNECT_TIMEOUT_SECONDS=N

For example:

    eval "$(python3 hostile_server.py s3-endless)"; trap 'kill $PID' EXIT
    BUCKIA_REMOTE_X_PROVIDER=s3 BUCKIA_REMOTE_X_BUCKET=bucket AWS_ACCESS_KEY_ID=a \\
        AWS_SECRET_ACCESS_KEY=b BUCKIA_REMOTE_X_ENDPOINT=http://127.0.0.1:$PORT timeout 20 $B ls x:
"""
import base64
import hashlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

DEFAULT_LIFETIME = 120.0
MAX_LIFETIME = 3600.0
INT64_MAX = 9223372036854775807
RANGE_CAP = 64 * 1024 * 1024   # at most this many bytes in one ranged answer of a huge object
CHUNK = 256 * 1024
ZEROS = bytes(CHUNK)

HELLO = b"hello"
JELLO = b"jello"                # what the bad-checksum scenarios send instead: the same length
BIG_SIZE = 2_621_440            # s3-range-ignored's big.bin: 2.5 MiB, byte i is i % 251
MTIME = 1704067200              # 2024-01-01T00:00:00Z
ISO_DATE = "2024-01-01T00:00:00.000Z"
HTTP_DATE = "Mon, 01 Jan 2024 00:00:00 GMT"
BUNNY_DATE = "2024-01-01T00:00:00.000"

# The control characters the *-error-control scenarios put in the server's message.
HOSTILE_TEXT = ("Access denied \x1b[31mRED\x1b[0m \x1b]0;pwned-title\x07 "
                "carriage\rreturn bell\x07\x07 end")

S3_SCENARIOS = ["s3-ok", "s3-deep-xml", "s3-huge-size", "s3-negative-size", "s3-endless", "s3-repeat-token",
                "s3-bad-xml", "s3-error-control", "s3-error-control-ref", "s3-bad-md5", "s3-range-ignored"]
B2_SCENARIOS = ["b2-ok", "b2-huge-size", "b2-negative-size", "b2-endless", "b2-deep-json", "b2-error-control",
                "b2-bad-sha1"]
BUNNY_SCENARIOS = ["bunny-ok", "bunny-dot", "bunny-huge-size", "bunny-negative-size", "bunny-deep-json",
                   "bunny-error-control", "bunny-bad-checksum"]
HTTP_SCENARIOS = ["http-silent", "http-endless-chunked", "http-endless-length", "http-partial", "http-bad-length",
                  "http-304", "http-status"]
SCENARIOS = S3_SCENARIOS + B2_SCENARIOS + BUNNY_SCENARIOS + HTTP_SCENARIOS

SCENARIO = None
# HOSTILE_SERVER_LOG=FILE: one line per request ("time METHOD PATH RANGE"), for debugging a case.
REQUEST_LOG = os.environ.get("HOSTILE_SERVER_LOG")
COUNTER_LOCK = threading.Lock()
COUNTER = [0]


def next_number():
    with COUNTER_LOCK:
        COUNTER[0] += 1
        return COUNTER[0]


class Obj:
    """An object the server describes: `data` is its bytes, or None for `size` zero bytes.
    Its sizes and checksums describe `data`; a GET sends `served` (`data` unless given)."""

    def __init__(self, name, size, data=None, served=None):
        self.name, self.size, self.data = name, size, data
        self.served = data if served is None else served
        if data is not None:
            self.md5 = hashlib.md5(data).hexdigest()
            self.sha1 = hashlib.sha1(data).hexdigest()
            self.sha256 = hashlib.sha256(data).hexdigest()
        else:
            self.md5 = self.sha1 = self.sha256 = None
        self.file_id = "4_zhostile0bucket_f" + hashlib.sha1(name.encode()).hexdigest()[:24]

    @property
    def s3_etag(self):
        # A huge object's ETag is a multipart one (not an MD5), so nothing checks its body.
        return '"%s"' % (self.md5 if self.md5 else "0123456789abcdef0123456789abcdef-1000")


def objects():
    """The objects of the current scenario, by name."""
    provider, _, kind = SCENARIO.partition("-")
    if kind in ("ok", "repeat-token", "dot"):
        found = [Obj("a.txt", 5, HELLO)]
    elif kind in ("bad-md5", "bad-sha1", "bad-checksum"):
        found = [Obj("a.txt", 5, HELLO, served=JELLO)]
    elif kind == "range-ignored":
        found = [Obj("big.bin", BIG_SIZE, big_pattern())]
    elif kind == "huge-size":
        found = [Obj("huge.bin", INT64_MAX), Obj("small.txt", 5, HELLO)]
    elif kind == "negative-size":
        found = [Obj("neg.txt", -5)]
    else:
        found = []
    return {item.name: item for item in found}


BIG_PATTERN = []


def big_pattern():
    """s3-range-ignored's big.bin: BIG_SIZE bytes, byte i being i % 251 (made once)."""
    with COUNTER_LOCK:
        if not BIG_PATTERN:
            BIG_PATTERN.append((bytes(range(251)) * (BIG_SIZE // 251 + 1))[:BIG_SIZE])
        return BIG_PATTERN[0]


def parse_range(header, size):
    """(start, end inclusive) for a `bytes=` header, None for no usable range, or "416"."""
    match = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", header or "")
    if not match or (not match.group(1) and not match.group(2)):
        return None
    if match.group(1):
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else size - 1
    else:
        start, end = max(0, size - int(match.group(2))), size - 1
    if start >= size or end < start:
        return "416"
    return start, min(end, size - 1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "Hostile/1.0"
    sys_version = ""
    disable_nagle_algorithm = True
    timeout = 60

    def log_message(self, format, *args):
        pass

    def version_string(self):
        return self.server_version

    def do_GET(self):
        if REQUEST_LOG:
            with COUNTER_LOCK:
                with open(REQUEST_LOG, "a") as log:
                    log.write("%.3f %s %s %s\n" % (time.time(), self.command, self.path, self.headers.get("Range") or "-"))
        try:
            self.body = self.read_body()
            provider = SCENARIO.split("-", 1)[0]
            getattr(self, "serve_" + provider)()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            self.close_connection = True

    do_HEAD = do_POST = do_PUT = do_DELETE = do_DESCRIBE = do_PATCH = do_OPTIONS = do_GET

    # MARK: Plumbing

    def read_body(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if length > 16 * 1024 * 1024:
            self.close_connection = True   # never read a large upload; the answer closes the connection
            return b""
        return self.rfile.read(length) if length > 0 else b""

    def send(self, status, body=b"", content_type=None, headers=None, length=None):
        if isinstance(body, str):
            body = body.encode("utf-8", "surrogateescape")
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def send_object(self, obj, headers, range_header_allowed=True):
        """HEAD or GET of `obj`: its bytes (or zeros), a ranged part of them, or a bad length."""
        if obj.size < 0:
            # A length no HTTP message can have: said, and then the connection closes.
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(obj.size))
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            return
        wanted = parse_range(self.headers.get("Range"), obj.size) if range_header_allowed else None
        if wanted == "416":
            return self.send(416, b"", headers={"Content-Range": "bytes */%d" % obj.size})
        status, start, end = 200, 0, obj.size - 1
        extra = dict(headers)
        extra["Accept-Ranges"] = "bytes"
        if wanted is not None:
            status, (start, end) = 206, wanted
            end = min(end, start + RANGE_CAP - 1)
            extra["Content-Range"] = "bytes %d-%d/%d" % (start, end, obj.size)
        length = end - start + 1
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if obj.data is not None else "application/octet-stream")
        self.send_header("Content-Length", str(length))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        if obj.data is not None:
            self.wfile.write(obj.served[start:end + 1])
            return
        # Zeros, until the length is sent or the client goes (a huge object: until it goes).
        left = length
        while left > 0:
            piece = ZEROS if left >= CHUNK else ZEROS[:left]
            self.wfile.write(piece)
            left -= len(piece)

    # MARK: S3

    def serve_s3(self):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        bucket, _, raw_key = url.path.lstrip("/").partition("/")
        key = unquote(raw_key)
        if SCENARIO.startswith("s3-error-control"):
            return self.s3_error(403, "AccessDenied", HOSTILE_TEXT, raw=SCENARIO == "s3-error-control")
        if self.command not in ("GET", "HEAD"):
            return self.s3_error(501, "NotImplemented", "The hostile server is read-only.")
        if not key:
            if self.command == "GET" and "list-type" in query:
                return self.s3_list(bucket, query)
            return self.s3_error(501, "NotImplemented", "The hostile server answers ListObjectsV2 only.")
        obj = objects().get(key)
        if obj is None:
            return self.s3_error(404, "NoSuchKey", "The specified key does not exist.", key=key)
        headers = {"ETag": obj.s3_etag, "Last-Modified": HTTP_DATE, "x-amz-meta-mtime": str(MTIME)}
        if obj.md5:
            headers["x-amz-meta-md5chksum"] = base64.b64encode(bytes.fromhex(obj.md5)).decode()
        # s3-range-ignored: every GET answers 200 with the whole body, whatever Range asked for.
        self.send_object(obj, headers, range_header_allowed=SCENARIO != "s3-range-ignored")

    def s3_error(self, status, code, message, key=None, raw=True):
        if raw:
            text = message
        else:
            text = "".join("&#%d;" % ord(c) if ord(c) < 32 else c for c in message)
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>%s'
                "<RequestId>HOSTILE0001</RequestId><HostId>hostile</HostId></Error>"
                % (code, text, "<Key>%s</Key>" % key if key else ""))
        self.send(status, body, "application/xml")

    def s3_list(self, bucket, query):
        encoded = query.get("encoding-type") == "url"
        prefix = query.get("prefix", "")
        head = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>%s</Name><Prefix>%s</Prefix>'
                "<MaxKeys>%s</MaxKeys>%s"
                % (xml_text(bucket), xml_text(prefix), xml_text(query.get("max-keys", "1000")),
                   "<EncodingType>url</EncodingType>" if encoded else ""))
        if "continuation-token" in query:
            head += "<ContinuationToken>%s</ContinuationToken>" % xml_text(query["continuation-token"])
        if SCENARIO == "s3-deep-xml":
            depth = 70_000
            body = head + "<a>" * depth + "</a>" * depth + "<KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>"
            return self.send(200, body, "application/xml")
        if SCENARIO == "s3-bad-xml":
            body = (head + "<KeyCount>1</KeyCount><IsTruncated>false</IsTruncated><Contents><Key>a.txt</Key>"
                    "<Size>5</Size><ETag>&undefined;</ETag></Content><Contents <Key>b.txt</Size>\x00"
                    "</ListBucketResult></Extra>")
            return self.send(200, body, "application/xml")
        listed = list(objects().values())
        if SCENARIO not in ("s3-repeat-token",):
            start_after = query.get("start-after", "")
            listed = [o for o in listed if o.name.startswith(prefix) and o.name > start_after]
        contents = "".join(
            "<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>%s</ETag><Size>%d</Size>"
            "<StorageClass>STANDARD</StorageClass></Contents>"
            % (quote(o.name, safe="/") if encoded else xml_text(o.name), ISO_DATE, xml_text(o.s3_etag), o.size)
            for o in sorted(listed, key=lambda o: o.name))
        if SCENARIO == "s3-endless":
            tail = ("<KeyCount>0</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>t%d</NextContinuationToken>"
                    % next_number())
            contents = ""
        elif SCENARIO == "s3-repeat-token":
            tail = "<KeyCount>1</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>same-token</NextContinuationToken>"
        else:
            tail = "<KeyCount>%d</KeyCount><IsTruncated>false</IsTruncated>" % len(listed)
        self.send(200, head + tail + contents + "</ListBucketResult>", "application/xml")

    # MARK: B2

    def serve_b2(self):
        url = urlsplit(self.path)
        parts = url.path.split("/")
        if len(parts) >= 4 and parts[1] == "b2api":
            call = parts[3]
            if call == "b2_authorize_account":
                return self.b2_authorize()
            if SCENARIO == "b2-error-control":
                return self.b2_error(400, "bad_request", HOSTILE_TEXT)
            if call == "b2_list_buckets":
                return self.b2_list_buckets()
            if call == "b2_list_file_names":
                return self.b2_list_file_names()
            return self.b2_error(400, "bad_request", "The hostile server does not answer %s." % call)
        if len(parts) >= 4 and parts[1] == "file":
            if SCENARIO == "b2-error-control":
                return self.b2_error(400, "bad_request", HOSTILE_TEXT)
            if self.command not in ("GET", "HEAD"):
                return self.b2_error(405, "method_not_allowed", "Only GET and HEAD download files.")
            name = unquote("/".join(parts[3:]))
            obj = objects().get(name)
            if obj is None:
                return self.b2_error(404, "not_found", "File with such name does not exist.")
            headers = {"x-bz-file-name": quote(name, safe="/"), "x-bz-file-id": obj.file_id,
                       "x-bz-content-sha1": obj.sha1 or "none", "X-Bz-Upload-Timestamp": str(MTIME * 1000),
                       "x-bz-info-src_last_modified_millis": str(MTIME * 1000), "Cache-Control": "max-age=0"}
            return self.send_object(obj, headers)
        self.b2_error(404, "not_found", "No such API: %s" % url.path)

    def b2_error(self, status, code, message):
        self.send(status, json.dumps({"status": status, "code": code, "message": message}), "application/json;charset=utf-8")

    def b2_json(self, value):
        self.send(200, json.dumps(value), "application/json;charset=utf-8")

    def b2_authorize(self):
        base = "http://127.0.0.1:%d" % self.server.server_address[1]
        storage = {"absoluteMinimumPartSize": 5_000_000, "apiUrl": base, "downloadUrl": base, "infoType": "storageApi",
                   "recommendedPartSize": 100_000_000, "s3ApiUrl": base, "bucketId": None, "bucketName": None,
                   "capabilities": ["listBuckets", "listFiles", "readFiles"], "namePrefix": None}
        self.b2_json({"accountId": "hostile0001", "apiInfo": {"storageApi": storage},
                      "authorizationToken": "4_hostile0token", "applicationKeyExpirationTimestamp": None})

    def b2_request(self):
        try:
            value = json.loads(self.body or b"{}")
            return value if isinstance(value, dict) else {}
        except ValueError:
            return {}

    def b2_list_buckets(self):
        name = self.b2_request().get("bucketName") or "hostile-bucket"
        self.b2_json({"buckets": [{"accountId": "hostile0001", "bucketId": "hostile0bucket", "bucketName": name,
                                   "bucketType": "allPrivate", "bucketInfo": {}, "corsRules": [], "lifecycleRules": [],
                                   "options": [], "revision": 1}]})

    def b2_list_file_names(self):
        request = self.b2_request()
        if SCENARIO == "b2-deep-json":
            depth = 100_000
            return self.send(200, '{"files": ' + "[" * depth + "]" * depth + ', "nextFileName": null}',
                             "application/json;charset=utf-8")
        if SCENARIO == "b2-endless":
            return self.b2_json({"files": [], "nextFileName": "n%08d" % next_number()})
        prefix = request.get("prefix") or ""
        start = request.get("startFileName") or ""
        files = [{"accountId": "hostile0001", "action": "upload", "bucketId": "hostile0bucket", "contentLength": o.size,
                  "contentMd5": o.md5, "contentSha1": o.sha1 or "none", "contentType": "text/plain", "fileId": o.file_id,
                  "fileInfo": {"src_last_modified_millis": str(MTIME * 1000)}, "fileName": o.name,
                  "uploadTimestamp": MTIME * 1000}
                 for o in sorted(objects().values(), key=lambda o: o.name) if o.name.startswith(prefix) and o.name >= start]
        self.b2_json({"files": files, "nextFileName": None})

    # MARK: Plain HTTP origins (buckia fetch, login)

    def serve_http(self):
        if SCENARIO == "http-silent":
            # Reads until the client goes (or the server's lifetime ends it), answering nothing.
            self.connection.settimeout(None)
            while self.connection.recv(65536):
                pass
            self.close_connection = True
            return
        if SCENARIO in ("http-endless-chunked", "http-endless-length"):
            self.send_response(200)
            self.send_header("Cache-Control", "max-age=60")
            if SCENARIO == "http-endless-chunked":
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(1 << 40))
            self.end_headers()
            frame = (b"%x\r\n" % CHUNK) + ZEROS + b"\r\n" if SCENARIO == "http-endless-chunked" else ZEROS
            while True:
                self.wfile.write(frame)
        if SCENARIO == "http-partial":
            return self.send(206, HELLO, headers={"Content-Range": "bytes 0-4/100", "Cache-Control": "max-age=60"})
        if SCENARIO == "http-bad-length":
            self.close_connection = True
            return self.send(200, HELLO, headers={"Cache-Control": "max-age=60"}, length="99999999999999999999999")
        if SCENARIO == "http-304":
            return self.send(304, b"", headers={"Cache-Control": "max-age=60"}, length=0)
        if SCENARIO == "http-status":
            # The status the path's first segment names (/301/x, /401/x): a redirect names a
            # Location, a 401 a challenge.
            first = urlsplit(self.path).path.lstrip("/").partition("/")[0]
            status = int(first) if first.isdigit() and 300 <= int(first) <= 599 else 404
            headers = {"Location": "http://127.0.0.1:1/moved"} if 300 <= status < 400 else {}
            if status == 401:
                headers["WWW-Authenticate"] = 'Basic realm="hostile"'
            return self.send(status, b"", headers=headers, length=0)

    # MARK: Bunny

    def serve_bunny(self):
        url = urlsplit(self.path)
        zone, _, raw_path = url.path.lstrip("/").partition("/")
        path = unquote(raw_path)
        if SCENARIO == "bunny-error-control":
            return self.bunny_error(401, HOSTILE_TEXT)
        if self.command == "GET" and (path == "" or path.endswith("/")):
            return self.bunny_list(zone, path)
        if self.command not in ("GET", "HEAD", "DESCRIBE"):
            return self.bunny_error(400, "The hostile server is read-only.")
        obj = objects().get(path)
        if obj is None and SCENARIO == "bunny-dot":
            obj = objects().get(path.rsplit("/", 1)[-1])   # a.txt is in every folder, ./ included
        if obj is None:
            return self.bunny_error(404, "Object Not Found")
        if self.command == "DESCRIBE":
            folder = path[:len(path) - len(obj.name)]
            return self.send(200, json.dumps(self.bunny_object(zone, folder, obj)), "application/json")
        headers = {"Last-Modified": HTTP_DATE}
        if obj.sha256:
            headers["ETag"] = '"%s"' % obj.sha256
        self.send_object(obj, headers)

    def bunny_error(self, status, message):
        self.send(status, json.dumps({"HttpCode": status, "Message": message}), "application/json")

    def bunny_object(self, zone, folder, obj=None, directory_name=None):
        """Bunny's description of `obj` (or of the directory `directory_name`) in `folder` ("" or ending in /)."""
        name = directory_name if obj is None else obj.name
        return {"Guid": "00000000-0000-0000-0000-%012d" % (int(hashlib.md5(name.encode()).hexdigest(), 16) % 10 ** 12),
                "StorageZoneName": zone, "Path": "/%s/%s" % (zone, folder), "ObjectName": name,
                "Length": 0 if obj is None else obj.size, "LastChanged": BUNNY_DATE, "ServerId": 0 if obj is None else 146,
                "ArrayNumber": 0, "IsDirectory": obj is None, "UserId": "00000000-0000-0000-0000-000000000007",
                "ContentType": "" if obj is None else "text/plain", "DateCreated": BUNNY_DATE, "StorageZoneId": 424242,
                "Checksum": None if obj is None or obj.sha256 is None else obj.sha256.upper(), "ReplicatedZones": ""}

    def bunny_list(self, zone, folder):
        if SCENARIO == "bunny-deep-json":
            depth = 100_000
            return self.send(200, "[" * depth + "]" * depth, "application/json")
        entries = []
        if SCENARIO == "bunny-dot":
            entries.append(self.bunny_object(zone, folder, directory_name="."))
            entries += [self.bunny_object(zone, folder, o) for o in objects().values()]
        elif folder == "":
            entries += [self.bunny_object(zone, "", o) for o in sorted(objects().values(), key=lambda o: o.name)]
        self.send(200, json.dumps(entries), "application/json")


def xml_text(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def fail(message):
    sys.stderr.write("hostile_server.py: %s\n" % message)
    sys.stdout.write("(exit 2)\n")
    sys.exit(2)


def main():
    global SCENARIO
    arguments = sys.argv[1:]
    if arguments == ["--list"]:
        print("\n".join(SCENARIOS))
        return
    lifetime = DEFAULT_LIFETIME
    if len(arguments) == 3 and arguments[1] == "--lifetime":
        try:
            lifetime = min(MAX_LIFETIME, max(0.1, float(arguments[2])))
        except ValueError:
            fail("--lifetime needs a number of seconds")
        arguments = arguments[:1]
    if len(arguments) != 1 or arguments[0] not in SCENARIOS:
        fail("usage: eval \"$(python3 hostile_server.py SCENARIO [--lifetime SECONDS])\"; scenarios: %s"
             % " ".join(SCENARIOS))
    SCENARIO = arguments[0]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        child = os.fork()
    except OSError as error:
        fail("cannot fork: %s" % error)
    if child:
        sys.stdout.write("PORT=%d; PID=%d\n" % (port, child))
        sys.stdout.flush()
        os._exit(0)
    # The child: let go of the caller's pipes at once, so `$(...)` ends with the parent.
    null = os.open(os.devnull, os.O_RDWR)
    for descriptor in (0, 1, 2):
        os.dup2(null, descriptor)
    if null > 2:
        os.close(null)
    # Every other inherited descriptor too (a harness's pipes), keeping only the listening socket.
    listening = server.socket.fileno()
    os.closerange(3, listening)
    os.closerange(listening + 1, 65536)
    deadline = time.monotonic() + lifetime

    def expire():
        while time.monotonic() < deadline:
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        os._exit(0)

    threading.Thread(target=expire, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.25)
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
