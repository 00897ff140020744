#!/usr/bin/env python3
"""Writes a Buckia diff file with nothing but Python's standard library (sqlite3, hashlib).

This is the reference for servers that send changes to Buckia users in any language: it
follows Docs/Database.md step by step, and the Buckia test suite runs it and applies what it
writes. Usage as a script:

    python3 make_diff.py OUTPUT_FOLDER SENDER

writes an example diff (two recordings shared, one deleted) into OUTPUT_FOLDER and prints its
path. As a module, call write_diff().

    python3 make_diff.py OUTPUT_FOLDER SENDER --sign KEY_ID

also signs it (Docs/Database.md, "Signed diffs") with a new Ed25519 key from PyNaCl (any
Ed25519 library does), and prints the key's public JWK on a second line: what the sender
publishes at keys/<SENDER>.jwk, inside {"keys": [...]}.
"""
import base64
import hashlib
import os
import secrets
import sqlite3
import struct
import sys
import time

FORMAT_VERSION = 1
KSUID_EPOCH = 1_400_000_000
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
NO_DEFAULT = object()


def ksuid(unix_seconds=None, payload=None):
    """A KSUID: 4 bytes of seconds since 2014-05-13 16:53:20 UTC, 16 random bytes, base 62."""
    seconds = int(time.time() if unix_seconds is None else unix_seconds) - KSUID_EPOCH
    number = int.from_bytes(struct.pack(">I", seconds) + (payload or secrets.token_bytes(16)), "big")
    digits = ""
    while number:
        number, digit = divmod(number, 62)
        digits = BASE62[digit] + digits
    return digits.rjust(27, "0")


def _integer(n):
    return struct.pack(">Q", n & 0xFFFFFFFFFFFFFFFF)


def _value(v):
    """One value of the canonical encoding the manifest's SHA-256 is taken over."""
    if v is None:
        return b"\x00"
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return b"\x01" + _integer(v)
    if isinstance(v, float):
        return b"\x02" + struct.pack(">d", v)
    if isinstance(v, str):
        data = v.encode("utf-8")
        return b"\x03" + _integer(len(data)) + data
    data = bytes(v)
    return b"\x04" + _integer(len(data)) + data


def payload_sha256(db):
    """SHA-256 of everything in the diff but the hash itself, in the canonical encoding."""
    h = hashlib.sha256()
    version, ident, sender, created = db.execute(
        "SELECT format_version, ksuid, sender, created_at FROM buckia_manifest").fetchone()
    for v in (version, ident, sender, created):
        h.update(_value(v))
    tables = db.execute("SELECT id, name FROM buckia_tables ORDER BY id").fetchall()
    h.update(_integer(len(tables)))
    for table_id, name in tables:
        columns = db.execute(
            "SELECT name, declared_type, not_null, has_default, default_value, primary_key"
            " FROM buckia_columns WHERE table_id = ? ORDER BY position", (table_id,)).fetchall()
        h.update(_value(name))
        h.update(_integer(len(columns)))
        for column in columns:
            for v in column:
                h.update(_value(v))
        names = ", ".join(f"c{i}" for i in range(len(columns)))
        for row in db.execute(f"SELECT {names} FROM buckia_upsert_{table_id} ORDER BY rowid"):
            h.update(b"\x10")
            for v in row:
                h.update(_value(v))
        h.update(b"\x11")
        keys = sum(1 for c in columns if c[5] > 0)
        names = ", ".join(f"k{i}" for i in range(1, keys + 1))
        for row in db.execute(f"SELECT {names} FROM buckia_delete_{table_id} ORDER BY rowid"):
            h.update(b"\x20")
            for v in row:
                h.update(_value(v))
        h.update(b"\x21")
    return h.hexdigest()


def signature_message(key_id, payload):
    """The bytes a diff's signature is over: the key id and the payload's SHA-256 (hex)."""
    return f"buckia-diff-signature/v1\n{key_id}\n{payload}".encode()


def base64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def write_diff(folder, sender, tables, ident=None, created_at=None, key_id=None, sign=None):
    """Writes <folder>/<KSUID>.sqlite and returns its path.

    tables: a list of dicts, in the order they are to be applied:
      name     the table's name (a plain identifier, not sqlite_* or buckia_*)
      columns  a list of (name, declared_type, not_null, default, primary_key_position);
               default is NO_DEFAULT for none, None for DEFAULT NULL, else a literal;
               primary_key_position is 0 outside the key, 1, 2, ... inside it
      upserts  rows to insert or replace: tuples of values in column order
      deletes  keys to delete: tuples of the key's values in key order
    key_id, sign: to sign the diff, the signing key's id and a function from the message's
      bytes to its 64-byte Ed25519 signature
    """
    created_at = int(time.time()) if created_at is None else created_at
    ident = ident or ksuid(created_at)
    final = os.path.join(folder, ident + ".sqlite")
    temporary = final + ".tmp"
    db = sqlite3.connect(temporary)
    db.execute("PRAGMA journal_mode = DELETE")  # one file, never WAL
    db.executescript("""
        CREATE TABLE buckia_manifest (format_version INTEGER NOT NULL, ksuid TEXT NOT NULL,
            sender TEXT NOT NULL, created_at INTEGER NOT NULL, payload_sha256 TEXT NOT NULL);
        CREATE TABLE buckia_tables (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE buckia_columns (table_id INTEGER NOT NULL, position INTEGER NOT NULL,
            name TEXT NOT NULL, declared_type TEXT NOT NULL, not_null INTEGER NOT NULL,
            has_default INTEGER NOT NULL, default_value, primary_key INTEGER NOT NULL,
            PRIMARY KEY (table_id, position));
    """)
    for table_id, table in enumerate(tables, start=1):
        db.execute("INSERT INTO buckia_tables VALUES (?, ?)", (table_id, table["name"]))
        for position, (name, declared, not_null, default, key) in enumerate(table["columns"]):
            has_default = default is not NO_DEFAULT
            db.execute("INSERT INTO buckia_columns VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (table_id, position, name, declared, int(not_null), int(has_default),
                        default if has_default else None, key))
        width = len(table["columns"])
        keys = sum(1 for c in table["columns"] if c[4] > 0)
        db.execute(f"CREATE TABLE buckia_upsert_{table_id} ({', '.join(f'c{i}' for i in range(width))})")
        db.execute(f"CREATE TABLE buckia_delete_{table_id} ({', '.join(f'k{i}' for i in range(1, keys + 1))})")
        db.executemany(f"INSERT INTO buckia_upsert_{table_id} VALUES ({', '.join('?' * width)})",
                       table.get("upserts", []))
        db.executemany(f"INSERT INTO buckia_delete_{table_id} VALUES ({', '.join('?' * keys)})",
                       table.get("deletes", []))
    db.execute("INSERT INTO buckia_manifest VALUES (?, ?, ?, ?, '')",
               (FORMAT_VERSION, ident, sender, created_at))
    payload = payload_sha256(db)
    db.execute("UPDATE buckia_manifest SET payload_sha256 = ?", (payload,))
    if sign is not None:
        db.execute("CREATE TABLE buckia_signature (key_id TEXT NOT NULL, signature TEXT NOT NULL)")
        db.execute("INSERT INTO buckia_signature VALUES (?, ?)",
                   (key_id, base64url(sign(signature_message(key_id, payload)))))
    db.commit()
    db.close()
    with open(temporary, "rb") as f:
        os.fsync(f.fileno())
    os.link(temporary, final)  # never over an existing file
    os.unlink(temporary)
    return final


RECORDINGS = [
    ("id", "INTEGER", True, NO_DEFAULT, 1),
    ("title", "TEXT", True, "", 0),
    ("owner", "TEXT", False, None, 0),
    ("duration", "REAL", False, NO_DEFAULT, 0),
    ("thumbnail", "BLOB", False, NO_DEFAULT, 0),
]

if __name__ == "__main__":
    if len(sys.argv) not in (3, 5) or (len(sys.argv) == 5 and sys.argv[3] != "--sign"):
        sys.exit("usage: make_diff.py OUTPUT_FOLDER SENDER [--sign KEY_ID]")
    key_id = sign = public_jwk = None
    if len(sys.argv) == 5:
        import json
        import nacl.signing  # PyNaCl: pip install pynacl
        key = nacl.signing.SigningKey.generate()
        key_id = sys.argv[4]
        sign = lambda message: key.sign(message).signature  # noqa: E731
        public_jwk = json.dumps({"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "kid": key_id,
                                 "x": base64url(bytes(key.verify_key))})
    print(write_diff(sys.argv[1], sys.argv[2], [{
        "name": "recordings",
        "columns": RECORDINGS,
        "upserts": [(1, "Morning take", "u1", 61.5, b"\x89PNG"), (2, "Évening – take ’2’", None, 3.0, None)],
        "deletes": [(3,)],
    }], key_id=key_id, sign=sign))
    if public_jwk:
        print(public_jwk)
