#!/usr/bin/env python3
"""An OAuth 2 / OpenID Connect authorization server for Buckia's tests (standard library only).

Written from RFC 6749 (the token endpoint and its errors), RFC 8628 (the device authorization
grant), RFC 7009 (revocation) and OpenID Connect Discovery 1.0. Access and refresh tokens are
opaque; every token answer also carries an OpenID Connect ID token (RS256, signed with PyJWT by an
RSA key made at start, `iss` the server's base URL, `aud` the client id), whose keys are at
/jwks.

    python3 oauth_emulator.py --client-id ID [--access-ttl SECONDS] [--no-rotate] [--reuse-grace SECONDS] [--interval SECONDS]

Binds 127.0.0.1 on a free port, prints the port as its first stdout line, and exits when its
stdin closes. Everything is in memory.

  GET  /.well-known/openid-configuration   issuer, token, device and revocation endpoints
  POST /device                             RFC 8628 §3.1: device_code, user_code, verification_uri…
  POST /token                              grant_type device_code (§3.4) or refresh_token (RFC 6749 §6)
  POST /revoke                             RFC 7009: the token's whole family stops working
  GET  /userinfo                           200 {"sub"} for a live access token (Bearer), else 401
  GET  /jwks                               the JSON Web Key Set ID tokens are checked with

Refresh tokens rotate (unless --no-rotate): each refresh answers a new one, and the old one is
spent. A spent token presented again within --reuse-grace seconds (default 30) of its first use
still refreshes, as Cognito's RetryGracePeriodSeconds and other servers' grace periods allow, so a
client whose answer was lost can retry; later, it is taken as theft, as RFC 9700 §4.14.2 advises:
the whole family is revoked and the answer is invalid_grant.

Control endpoints, for tests (never counted, never held):

  POST /_emulator/approve      {"user_code": C, "sub": S}: the user approves that device login
  POST /_emulator/deny         {"user_code": C}: the user refuses it (access_denied)
  POST /_emulator/slow-down    {"count": N}: the next N device-code polls answer slow_down
  POST /_emulator/expire-access  every access token expires now
  POST /_emulator/revoke-all   every token stops working (a password change, an admin's revoke)
  POST /_emulator/advance-clock {"seconds": N}: the server's clock moves ahead (device codes expire)
  POST /_emulator/hold         {"grant": "refresh_token"}: token requests of that grant wait until
                               released ({} releases; 60 s at most)
  POST /_emulator/stall        {"seconds": S, "count": N}: the next N token requests wait S seconds
                               (30 at most) before answering
  POST /_emulator/unavailable  {"count": N}: the next N refresh requests are answered 503
                               temporarily_unavailable, changing nothing
  POST /_emulator/rotate-key   {"keep_old": true|false}: a new signing key signs from now on; the
                               old one stays in /jwks unless keep_old is false
  POST /_emulator/id-token     {"sub": S, ...claims}: an ID token signed by the current key, with
                               the usual claims overridden by those given (a hostile claim, an
                               expired exp) and {"alg": A, "kid": K, "key": "new"} for headers
                               and a key no JWKS holds; answers {"id_token": T}
  GET  /_emulator/stats        {"token": {grant: n}, "device": n, "held": n, "polls": n, "jwks": n, "refresh_tokens": [..]}
"""
import argparse
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.offset = 0.0
        self.devices = {}        # device_code -> {"user_code", "expires", "status", "sub"}
        self.access = {}         # access token -> {"sub", "expires", "family", "live"}
        self.refresh = {}        # refresh token -> {"sub", "family", "spent"}
        self.revoked_families = set()
        self.slow_down = 0
        self.stall = (0.0, 0)
        self.unavailable = 0
        self.hold_grant = None
        self.release = threading.Event()
        self.held = 0
        self.counts = {"token": {}, "device": 0, "polls": 0, "jwks": 0}
        self.keys = []           # (kid, private key), newest last; the newest signs
        self.base = None

    def add_key(self):
        self.keys.append(("k%d-%s" % (len(self.keys) + 1, secrets.token_hex(4)), rsa.generate_private_key(public_exponent=65537, key_size=2048)))

    def jwks(self):
        keys = []
        for kid, key in self.keys:
            public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
            public.update({"kid": kid, "use": "sig", "alg": "RS256"})
            keys.append(public)
        return {"keys": keys}

    def id_token(self, sub, claims=None, headers=None, key=None):
        now = int(self.now())
        payload = {"iss": self.base, "sub": sub, "aud": OPTIONS.client_id, "iat": now, "exp": now + OPTIONS.access_ttl, "auth_time": now}
        payload.update(claims or {})
        payload = {name: value for name, value in payload.items() if value is not None}
        kid, signer = self.keys[-1]
        if key is not None:
            signer = key
        header = {"kid": kid}
        header.update(headers or {})
        algorithm = header.pop("alg", "RS256")
        if algorithm == "none":
            return jwt.encode(payload, None, algorithm="none", headers=header)
        return jwt.encode(payload, signer, algorithm=algorithm, headers=header)

    def now(self):
        return time.time() + self.offset


STATE = State()
OPTIONS = None


class OAuthError(Exception):
    def __init__(self, status, error, description):
        super().__init__(description)
        self.status, self.error, self.description = status, error, description


def issue_tokens(sub, family):
    """A new access token, and a refresh token (new when rotating or at first issue)."""
    access = "at_" + secrets.token_urlsafe(24)
    STATE.access[access] = {"sub": sub, "expires": STATE.now() + OPTIONS.access_ttl, "family": family}
    answer = {"access_token": access, "token_type": "Bearer", "expires_in": OPTIONS.access_ttl, "scope": "openid offline_access"}
    answer["id_token"] = STATE.id_token(sub)
    refresh = "rt_" + secrets.token_urlsafe(24)
    STATE.refresh[refresh] = {"sub": sub, "family": family, "spent": False}
    answer["refresh_token"] = refresh
    return answer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def send_json(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def form(self):
        if not (self.headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
            raise OAuthError(400, "invalid_request", "the body must be application/x-www-form-urlencoded")
        fields = urllib.parse.parse_qs(self.body().decode(), keep_blank_values=True)
        for name, values in fields.items():
            if len(values) > 1:
                raise OAuthError(400, "invalid_request", "%s is given twice" % name)
        return {name: values[0] for name, values in fields.items()}

    def check_client(self, form):
        if form.get("client_id") != OPTIONS.client_id:
            raise OAuthError(401, "invalid_client", "unknown client")

    def do_GET(self):
        path = urllib.parse.urlparse(self.path).path
        if path == "/.well-known/openid-configuration":
            base = self.base()
            self.send_json(200, {
                "issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
                "device_authorization_endpoint": base + "/device", "revocation_endpoint": base + "/revoke",
                "userinfo_endpoint": base + "/userinfo", "response_types_supported": ["code"],
                "grant_types_supported": ["refresh_token", DEVICE_GRANT], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"], "jwks_uri": base + "/jwks",
            })
        elif path == "/jwks":
            with STATE.lock:
                STATE.counts["jwks"] += 1
                self.send_json(200, STATE.jwks())
        elif path == "/userinfo":
            auth = self.headers.get("Authorization") or ""
            with STATE.lock:
                token = STATE.access.get(auth[7:]) if auth.startswith("Bearer ") else None
                live = token is not None and token["expires"] > STATE.now() and token["family"] not in STATE.revoked_families
            if live:
                self.send_json(200, {"sub": token["sub"]})
            else:
                self.send_json(401, {"error": "invalid_token"}, {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        elif path == "/_emulator/stats":
            with STATE.lock:
                self.send_json(200, dict(STATE.counts, held=STATE.held))
        else:
            self.send_json(404, {"error": "not_found"})

    def do_POST(self):
        path = urllib.parse.urlparse(self.path).path
        try:
            if path.startswith("/_emulator/"):
                return self.control(path[len("/_emulator/"):], json.loads(self.body() or b"{}"))
            if path == "/device":
                form = self.form()
                self.check_client(form)
                with STATE.lock:
                    STATE.counts["device"] += 1
                    device_code = "dc_" + secrets.token_urlsafe(24)
                    user_code = "%04d-%04d" % (secrets.randbelow(10000), secrets.randbelow(10000))
                    STATE.devices[device_code] = {"user_code": user_code, "expires": STATE.now() + 600, "status": "pending", "sub": None}
                base = self.base()
                return self.send_json(200, {
                    "device_code": device_code, "user_code": user_code, "verification_uri": base + "/activate",
                    "verification_uri_complete": base + "/activate?user_code=" + user_code, "expires_in": 600,
                    "interval": OPTIONS.interval,
                })
            if path == "/token":
                return self.token(self.form())
            if path == "/revoke":
                form = self.form()
                self.check_client(form)
                token = form.get("token", "")
                with STATE.lock:
                    record = STATE.refresh.get(token) or STATE.access.get(token)
                    if record:
                        STATE.revoked_families.add(record["family"])
                return self.send_json(200, {})
            self.send_json(404, {"error": "not_found"})
        except OAuthError as error:
            self.send_json(error.status, {"error": error.error, "error_description": error.description})

    def token(self, form):
        grant = form.get("grant_type", "")
        with STATE.lock:
            STATE.counts["token"][grant] = STATE.counts["token"].get(grant, 0) + 1
            stall_seconds, stall_count = STATE.stall
            if stall_count > 0:
                STATE.stall = (stall_seconds, stall_count - 1)
            hold = STATE.hold_grant == grant
            if hold:
                STATE.held += 1
        if stall_count > 0:
            time.sleep(min(stall_seconds, 30))
        if hold:
            STATE.release.wait(60)
        self.check_client(form)
        with STATE.lock:
            if grant == "refresh_token" and STATE.unavailable > 0:
                STATE.unavailable -= 1
                raise OAuthError(503, "temporarily_unavailable", "try again later")
            if grant == DEVICE_GRANT:
                STATE.counts["polls"] += 1
                device = STATE.devices.get(form.get("device_code", ""))
                if device is None:
                    raise OAuthError(400, "invalid_grant", "unknown device code")
                if STATE.slow_down > 0:
                    STATE.slow_down -= 1
                    raise OAuthError(400, "slow_down", "poll less often")
                if device["expires"] <= STATE.now():
                    raise OAuthError(400, "expired_token", "the device code has expired")
                if device["status"] == "denied":
                    raise OAuthError(400, "access_denied", "the user refused")
                if device["status"] != "approved":
                    raise OAuthError(400, "authorization_pending", "the user has not approved yet")
                device["status"] = "used"
                answer = issue_tokens(device["sub"], secrets.token_hex(8))
            elif grant == "refresh_token":
                record = STATE.refresh.get(form.get("refresh_token", ""))
                if record is None or record["family"] in STATE.revoked_families:
                    raise OAuthError(400, "invalid_grant", "the refresh token is not valid")
                if record["spent"] and STATE.now() - record["spent_at"] > OPTIONS.reuse_grace:
                    STATE.revoked_families.add(record["family"])
                    raise OAuthError(400, "invalid_grant", "the refresh token was already used; the login is revoked")
                if OPTIONS.rotate:
                    if not record["spent"]:
                        record["spent"], record["spent_at"] = True, STATE.now()
                    answer = issue_tokens(record["sub"], record["family"])
                else:
                    answer = issue_tokens(record["sub"], record["family"])
                    del STATE.refresh[answer["refresh_token"]]
                    answer["refresh_token"] = form["refresh_token"]
            else:
                raise OAuthError(400, "unsupported_grant_type", "grant_type %r is not supported" % grant)
        self.send_json(200, answer)

    def control(self, name, body):
        with STATE.lock:
            if name in ("approve", "deny"):
                for device in STATE.devices.values():
                    if device["user_code"] == body.get("user_code"):
                        device["status"] = "approved" if name == "approve" else "denied"
                        device["sub"] = body.get("sub", "user")
                        break
                else:
                    return self.send_json(404, {"error": "no such user code"})
            elif name == "slow-down":
                STATE.slow_down = int(body.get("count", 1))
            elif name == "expire-access":
                for token in STATE.access.values():
                    token["expires"] = STATE.now() - 1
            elif name == "revoke-all":
                STATE.revoked_families.update(r["family"] for r in STATE.refresh.values())
                STATE.revoked_families.update(a["family"] for a in STATE.access.values())
            elif name == "advance-clock":
                STATE.offset += float(body.get("seconds", 0))
            elif name == "hold":
                if body.get("grant"):
                    STATE.release.clear()
                    STATE.hold_grant = body["grant"]
                else:
                    STATE.hold_grant = None
                    STATE.release.set()
            elif name == "rotate-key":
                STATE.add_key()
                if body.get("keep_old") is False:
                    STATE.keys = STATE.keys[-1:]
            elif name == "id-token":
                claims = dict(body)
                sub = claims.pop("sub", "user")
                headers = {k: claims.pop(k) for k in ("alg", "kid") if k in claims}
                key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if claims.pop("key", None) == "new" else None
                if headers.get("alg") == "HS256":
                    # The classic confusion: HMAC keyed with the issuer's public key as PEM, which
                    # PyJWT refuses to do, so it is written by hand.
                    import base64, hashlib, hmac
                    from cryptography.hazmat.primitives import serialization
                    def b64(data):
                        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
                    secret = STATE.keys[-1][1].public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
                    now = int(STATE.now())
                    payload = {"iss": STATE.base, "sub": sub, "aud": OPTIONS.client_id, "iat": now, "exp": now + 300}
                    payload.update(claims)
                    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": headers.get("kid", STATE.keys[-1][0])}).encode())
                    signing_input = head + "." + b64(json.dumps(payload).encode())
                    signature = b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())
                    return self.send_json(200, {"id_token": signing_input + "." + signature})
                return self.send_json(200, {"id_token": STATE.id_token(sub, claims, headers, key)})
            elif name == "unavailable":
                STATE.unavailable = int(body.get("count", 1))
            elif name == "stall":
                STATE.stall = (float(body.get("seconds", 1)), int(body.get("count", 1)))
            else:
                return self.send_json(404, {"error": "unknown control"})
        self.send_json(200, {})


def exit_when_stdin_closes():
    try:
        while sys.stdin.buffer.read(1024):
            pass
    except OSError:
        pass
    import os
    os._exit(0)


def main():
    global OPTIONS
    parser = argparse.ArgumentParser(description="An OAuth 2 / OIDC authorization server for tests.")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--access-ttl", type=int, default=300)
    parser.add_argument("--interval", type=int, default=5)
    parser.add_argument("--no-rotate", dest="rotate", action="store_false")
    parser.add_argument("--reuse-grace", type=float, default=30)
    parser.add_argument("--port", type=int, default=0)
    OPTIONS = parser.parse_args()
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", OPTIONS.port), Handler)
    server.daemon_threads = True
    STATE.base = "http://127.0.0.1:%d" % server.server_address[1]
    STATE.add_key()
    print(server.server_address[1], flush=True)
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
