#!/usr/bin/env python3
"""Regenerates the hostile and broken diff corpus: python3 make_corpus.py (from this folder).

Each case is a folder holding one diff file named <KSUID>.sqlite (the WAL case a -wal beside
it); expected.json maps each case to the DiffProblem it must be refused with. Every case
starts from a well-formed diff written by Docs/Examples/diff/make_diff.py and breaks one
thing. DiffCorpusTests applies base/ to a database, then each case, and checks the error and
that the database file is byte for byte as it was.
"""
import hashlib
import json
import os
import shutil
import sqlite3
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Docs", "Examples", "diff"))
import make_diff  # noqa: E402
from make_diff import NO_DEFAULT, RECORDINGS  # noqa: E402

CREATED = 1_790_000_000
CASES = {}
MARKER = "MARKER-4a7f-flip-here"


def ident(name, seconds=CREATED):
    return make_diff.ksuid(seconds, hashlib.sha256(name.encode()).digest()[:16])


def recordings(**overrides):
    table = {"name": "recordings", "columns": RECORDINGS,
             "upserts": [(10, MARKER, "u1", 1.5, b"\x00\x01"), (11, "second", None, 2.0, None)],
             "deletes": [(12,)]}
    table.update(overrides)
    return table


def case(name, expected, tables=None, seconds=CREATED, ksuid=None, sender="u1"):
    """Writes a well-formed diff into <name>/ and returns its path, for the case to break."""
    folder = os.path.join(HERE, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    path = make_diff.write_diff(folder, sender, tables or [recordings()], ident=ksuid or ident(name, seconds), created_at=seconds)
    CASES[name] = expected
    return path


def edit(path, sql, rehash=True, writable_schema=False):
    db = sqlite3.connect(path)
    if writable_schema:
        db.execute("PRAGMA writable_schema = ON")
    db.executescript(sql)
    if rehash:
        db.execute("UPDATE buckia_manifest SET payload_sha256 = ?", (make_diff.payload_sha256(db),))
    db.commit()
    db.close()


def patch(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def rewrite(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    for entry in os.listdir(HERE):
        if os.path.isdir(os.path.join(HERE, entry)):
            shutil.rmtree(os.path.join(HERE, entry))
    # The diff applied first: it makes buckia_applied_changes exist, so the cases below meet a
    # database that has applied something, and duplicate_ksuid has something to collide with.
    base = case("base", None)
    del CASES["base"]

    # Not SQLite, or not whole.
    p = case("not_sqlite", "notSQLite"); rewrite(p, b"this is a text file, not a database\n" * 100)
    p = case("empty_file", "notSQLite"); rewrite(p, b"")
    p = case("png_named_sqlite", "notSQLite"); rewrite(p, b"\x89PNG\r\n\x1a\n" + bytes(4088))
    p = case("truncated_in_header", "truncated"); rewrite(p, read(p)[:50])
    p = case("truncated_in_first_page", "truncated"); rewrite(p, read(p)[:1000])
    p = case("truncated_at_half", "truncated"); data = read(p); rewrite(p, data[:len(data) // 2])
    p = case("truncated_by_one_byte", "truncated"); rewrite(p, read(p)[:-1])
    p = case("huge_claimed_size", "tooLarge"); patch(p, 28, struct.pack(">I", 0x3FFFFFFF))
    p = case("claims_more_pages", "truncated"); data = read(p); patch(p, 28, struct.pack(">I", len(data) // 4096 + 5))
    p = case("trailing_bytes", "damaged"); rewrite(p, read(p) + bytes(4096))
    p = case("page_size_not_a_power_of_two", "damaged"); patch(p, 16, struct.pack(">H", 1000))
    p = case("flipped_byte_in_payload", "payloadHashMismatch")
    data = bytearray(read(p)); at = data.index(MARKER.encode()); data[at] ^= 0x01; rewrite(p, bytes(data))
    p = case("flipped_page_type", "damaged")
    db = sqlite3.connect(p); root = db.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'buckia_upsert_1'").fetchone()[0]; db.close()
    patch(p, (root - 1) * 4096, b"\x07")
    # WAL mode, with the -wal beside it (copied before the last connection checkpoints it).
    folder = os.path.join(HERE, "wal_mode"); os.makedirs(folder)
    name = ident("wal_mode") + ".sqlite"
    source = os.path.join(HERE, "base", os.listdir(os.path.join(HERE, "base"))[0])
    scratch = os.path.join(folder, "scratch.sqlite"); shutil.copy(source, scratch)
    db = sqlite3.connect(scratch); db.execute("PRAGMA journal_mode = WAL"); db.execute("UPDATE buckia_upsert_1 SET c1 = 'changed in the wal'"); db.commit()
    shutil.copy(scratch, os.path.join(folder, name)); shutil.copy(scratch + "-wal", os.path.join(folder, name + "-wal"))
    db.close()
    for leftover in (scratch, scratch + "-wal", scratch + "-shm"):
        if os.path.exists(leftover): os.unlink(leftover)
    CASES["wal_mode"] = "walMode"
    # UTF-16: the same diff written by a connection set to UTF-16.
    folder = os.path.join(HERE, "utf16_encoding"); os.makedirs(folder)
    p = os.path.join(folder, ident("utf16_encoding") + ".sqlite")
    db = sqlite3.connect(p); db.execute("PRAGMA encoding = 'UTF-16le'"); db.execute("CREATE TABLE t (x)"); db.commit(); db.close()
    CASES["utf16_encoding"] = "notUTF8"

    # Schema objects the format does not have.
    p = case("schema_text_with_trailing_statement", "schemaTextWithTrailingStatement")
    edit(p, "UPDATE sqlite_schema SET sql = sql || '; DROP TABLE recordings' WHERE name = 'buckia_delete_1';", writable_schema=True)
    p = case("trigger", "unexpectedObject")
    edit(p, "CREATE TRIGGER t AFTER INSERT ON buckia_upsert_1 BEGIN DELETE FROM buckia_delete_1; END;")
    p = case("view", "unexpectedObject"); edit(p, "CREATE VIEW v AS SELECT * FROM buckia_upsert_1;")
    p = case("extra_table", "unexpectedObject"); edit(p, "CREATE TABLE evil (x);")
    p = case("index", "unexpectedObject"); edit(p, "CREATE INDEX i ON buckia_upsert_1 (c1);")
    p = case("manifest_missing", "malformedManifest"); edit(p, "DROP TABLE buckia_manifest;", rehash=False)
    p = case("manifest_two_rows", "malformedManifest"); edit(p, "INSERT INTO buckia_manifest SELECT * FROM buckia_manifest;", rehash=False)
    p = case("manifest_hash_not_hex", "malformedManifest"); edit(p, "UPDATE buckia_manifest SET payload_sha256 = 'not a hash';", rehash=False)
    p = case("manifest_ksuid_not_a_ksuid", "malformedManifest"); edit(p, "UPDATE buckia_manifest SET ksuid = 'hello';", rehash=False)
    p = case("sender_with_control_character", "malformedManifest"); edit(p, "UPDATE buckia_manifest SET sender = 'u1' || char(10) || 'admin';")
    p = case("format_version_2", "unsupportedFormat"); edit(p, "UPDATE buckia_manifest SET format_version = 2;")
    p = case("ksuid_from_2100", "fromTheFuture", seconds=4_102_444_800)
    p = case("duplicate_ksuid_other_content", "duplicateKSUID", tables=[recordings(upserts=[(10, "other content", "u1", 1.5, None)])],
             ksuid=os.path.basename(base)[:-7])
    p = case("file_named_after_another_ksuid", "nameMismatch")
    os.rename(p, os.path.join(os.path.dirname(p), ident("someone else") + ".sqlite"))

    # Names and definitions.
    def columns_with(name, column):
        return [dict(recordings(), name=name)] if column is None else [recordings(columns=column)]
    for label, name in [("table_named_like_buckias_own", "buckia_applied_changes"), ("table_named_sqlite_sequence", "sqlite_sequence"),
                        ("table_named_sqlite_master_mixed_case", "SQLITE_Master"), ("table_name_with_quote_and_statement", 'x"; DROP TABLE recordings; --'),
                        ("table_name_empty", ""), ("table_name_too_long", "t" * 200), ("table_name_with_homoglyph", "rec\u043erdings"),
                        ("table_name_starting_with_digit", "1recordings")]:
        case(label, "forbiddenName", tables=columns_with(name, None))
    for label, column in [("column_name_with_space", "the title"), ("column_name_with_bracket", "title]"), ("column_name_with_nul", "ti\x00tle")]:
        cols = [RECORDINGS[0], (column, "TEXT", False, NO_DEFAULT, 0)]
        case(label, "forbiddenName", tables=[recordings(columns=cols, upserts=[(1, "x")], deletes=[])])
    cols = [RECORDINGS[0], ("title", "TEXT) ; DROP TABLE recordings; --", False, NO_DEFAULT, 0)]
    case("declared_type_with_statement", "forbiddenType", tables=[recordings(columns=cols, upserts=[(1, "x")], deletes=[])])
    for label, declared in [("type_with_check_constraint", "INTEGER CHECK (0)"), ("type_with_not_null", "TEXT NOT NULL"),
                            ("type_with_references", "INTEGER REFERENCES recordings ON DELETE CASCADE")]:
        cols = [RECORDINGS[0], ("flags", declared, False, NO_DEFAULT, 0)]
        case(label, "forbiddenType", tables=[recordings(columns=cols, upserts=[(1, 1)], deletes=[])])
    p = case("created_at_overflows_a_date", "malformedManifest"); edit(p, "UPDATE buckia_manifest SET created_at = 9223372036854775807;")
    p = case("data_table_without_rowid", "rowShapeMismatch")
    edit(p, "DROP TABLE buckia_delete_1; CREATE TABLE buckia_delete_1 (k1 PRIMARY KEY) WITHOUT ROWID; INSERT INTO buckia_delete_1 VALUES (12);", rehash=False)
    cols = [("k", "", True, NO_DEFAULT, 1), ("v", "", False, NO_DEFAULT, 0)]
    case("writes_a_virtual_tables_shadow_table", "notAPlainTable", tables=[{"name": "docs_config", "columns": cols, "upserts": [("version", 99)], "deletes": []}])
    cols = [("id", "INTEGER", True, NO_DEFAULT, 1), ("body", "TEXT", False, NO_DEFAULT, 0)]
    case("null_into_a_local_not_null_column", "rowRejected", tables=[{"name": "notes", "columns": cols, "upserts": [(1, None)], "deletes": []}])
    cols = [("id", "INTEGER", True, NO_DEFAULT, 1), ("title", "TEXT", True, NO_DEFAULT, 0)]
    case("text_into_an_integer_primary_key", "rowRejected", tables=[recordings(columns=cols, upserts=[("not a number", "x")], deletes=[])])
    cols = [RECORDINGS[0], ("title", "TEXT", 7, NO_DEFAULT, 0)]
    p = case("not_null_not_a_boolean", "malformedDefinition", tables=[recordings(columns=cols, upserts=[(1, "x")], deletes=[])])
    p = case("no_primary_key", "malformedDefinition"); edit(p, "UPDATE buckia_columns SET primary_key = 0;", rehash=False)
    cols = [("recording", "INTEGER", True, NO_DEFAULT, 1), ("user", "TEXT", True, NO_DEFAULT, 3)]
    case("key_positions_with_a_gap", "malformedDefinition", tables=[{"name": "shares", "columns": cols, "upserts": [(1, "u2")], "deletes": []}])
    cols = [RECORDINGS[0], ("title", "TEXT", False, NO_DEFAULT, 0), ("Title", "TEXT", False, NO_DEFAULT, 0)]
    case("duplicate_column", "malformedDefinition", tables=[recordings(columns=cols, upserts=[(1, "x", "y")], deletes=[])])
    p = case("columns_of_no_table", "malformedDefinition")
    edit(p, "INSERT INTO buckia_columns VALUES (9, 0, 'x', 'TEXT', 0, 0, NULL, 0);")
    p = case("fewer_columns_than_declared", "rowShapeMismatch")
    edit(p, "DROP TABLE buckia_upsert_1; CREATE TABLE buckia_upsert_1 (c0, c1, c2, c3); INSERT INTO buckia_upsert_1 VALUES (10, 'x', 'u1', 1.0);", rehash=False)
    p = case("more_columns_than_declared", "rowShapeMismatch")
    edit(p, "DROP TABLE buckia_upsert_1; CREATE TABLE buckia_upsert_1 (c0, c1, c2, c3, c4, c5);", rehash=False)
    p = case("delete_table_missing", "rowShapeMismatch"); edit(p, "DROP TABLE buckia_delete_1;", rehash=False)

    # Definitions that conflict with the local schema (DB.schema plus DiffCorpusTests' extras).
    cols = [("id", "INTEGER", True, NO_DEFAULT, 0), ("title", "TEXT", True, NO_DEFAULT, 1)]
    case("moved_primary_key", "primaryKeyChanged", tables=[recordings(columns=cols, upserts=[(1, "x")], deletes=[])])
    cols = [("recording", "INTEGER", True, NO_DEFAULT, 1), ("user", "TEXT", True, NO_DEFAULT, 0)]
    case("shortened_composite_key", "primaryKeyChanged", tables=[{"name": "shares", "columns": cols, "upserts": [(1, "u2")], "deletes": []}])
    cols = [("recording", "INTEGER", True, NO_DEFAULT, 1), ("user", "TEXT", True, NO_DEFAULT, 2), ("device", "TEXT", True, "", 3)]
    case("key_column_added", "primaryKeyChanged", tables=[{"name": "shares", "columns": cols, "upserts": [(1, "u2", "")], "deletes": []}])
    cols = RECORDINGS + [("rating", "INTEGER", True, NO_DEFAULT, 0)]
    case("new_not_null_column_without_default", "notNullWithoutDefault", tables=[recordings(columns=cols, upserts=[(1, "x", None, 1.0, None, 5)], deletes=[])])
    cols = [RECORDINGS[0], ("duration", "TEXT", False, NO_DEFAULT, 0)]
    case("type_conflict", "typeConflict", tables=[recordings(columns=cols, upserts=[(1, "long")], deletes=[])])
    cols = [("id", "INTEGER", True, NO_DEFAULT, 1)]
    case("required_local_column_missing", "missingRequiredColumn", tables=[{"name": "notes", "columns": cols, "upserts": [(1,)], "deletes": []}])
    cols = [("id", "INTEGER", True, NO_DEFAULT, 1), ("title", "TEXT", False, NO_DEFAULT, 0)]
    case("writes_into_a_local_view", "notAPlainTable", tables=[{"name": "recent", "columns": cols, "upserts": [(1, "x")], "deletes": []}])
    cols = [("id", "INTEGER", True, NO_DEFAULT, 1), ("twice", "INTEGER", False, NO_DEFAULT, 0)]
    case("writes_a_generated_column", "notAPlainTable", tables=[{"name": "items", "columns": cols, "upserts": [(1, 4)], "deletes": []}])
    # The second table is fine and the first is refused: nothing of either is applied.
    cols = [RECORDINGS[0], ("duration", "TEXT", False, NO_DEFAULT, 0)]
    case("second_table_fine_first_refused", "typeConflict",
         tables=[recordings(columns=cols, upserts=[(1, "long")], deletes=[]),
                 {"name": "shares", "columns": [("recording", "INTEGER", True, NO_DEFAULT, 1), ("user", "TEXT", True, NO_DEFAULT, 2)], "upserts": [(1, "u9")], "deletes": []}])

    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(dict(sorted(CASES.items())), f, indent=1)
        f.write("\n")
    print(f"{len(CASES)} cases")


if __name__ == "__main__":
    main()
