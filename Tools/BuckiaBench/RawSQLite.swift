#if os(macOS) || os(Linux)
import CSQLite
import BuckiaCore
import Foundation

/// The limit for the sqlite engine: the same schema and statements through the C API, with
/// the bytes copied into Swift values as any caller needs them.
enum RawSQLite {
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    static func run(items: [(key: CacheKey, data: Data)], folder: URL) throws -> [String: Double] {
        let path = folder.appendingPathComponent("raw.sqlite3").path
        var times: [String: Double] = [:]
        var db = try open(path)
        try exec(db, """
            PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
            CREATE TABLE buckia_kv (key TEXT PRIMARY KEY NOT NULL, data BLOB NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL)
            """)
        times["batch write"] = try Stopwatch.seconds {
            try exec(db, "BEGIN IMMEDIATE")
            let insert = try prepare(db, """
                INSERT INTO buckia_kv (key, data, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
                ON CONFLICT (key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                """)
            let now = Date().timeIntervalSince1970
            for (key, data) in items {
                sqlite3_bind_text(insert, 1, key.value, -1, transient)
                _ = data.withUnsafeBytes { sqlite3_bind_blob(insert, 2, $0.baseAddress, Int32($0.count), transient) }
                sqlite3_bind_double(insert, 3, now)
                guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchFailure("raw insert failed") }
                sqlite3_reset(insert)
            }
            sqlite3_finalize(insert)
            try exec(db, "COMMIT")
        }
        times["read all"] = try Stopwatch.seconds {
            var rows: [(String, Data)] = []
            try each(db, "SELECT key, data FROM buckia_kv ORDER BY key") { statement in
                rows.append((text(statement, 0), blob(statement, 1)))
            }
            guard rows.count == items.count else { throw BenchFailure("raw read all is short") }
        }
        times["point reads"] = try Stopwatch.seconds {
            let select = try prepare(db, "SELECT data FROM buckia_kv WHERE key = ?1")
            for (key, _) in items {
                sqlite3_bind_text(select, 1, key.value, -1, transient)
                guard sqlite3_step(select) == SQLITE_ROW, !blob(select, 0).isEmpty else { throw BenchFailure("raw point read failed") }
                sqlite3_reset(select)
            }
            sqlite3_finalize(select)
        }
        times["allKeys"] = try Stopwatch.seconds {
            var keys: [String] = []
            try each(db, "SELECT key FROM buckia_kv ORDER BY key") { keys.append(text($0, 0)) }
            guard keys.count == items.count else { throw BenchFailure("raw keys are short") }
        }
        sqlite3_close_v2(db)
        times["open + 1 read"] = try Stopwatch.seconds {
            db = try open(path)
            try exec(db, "PRAGMA journal_mode = WAL")
            let select = try prepare(db, "SELECT data FROM buckia_kv WHERE key = ?1")
            sqlite3_bind_text(select, 1, items[items.count / 2].key.value, -1, transient)
            guard sqlite3_step(select) == SQLITE_ROW else { throw BenchFailure("raw reopen read failed") }
            sqlite3_finalize(select)
        }
        sqlite3_close_v2(db)
        return times
    }

    private static func open(_ path: String) throws -> OpaquePointer {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db else {
            throw BenchFailure("raw open failed")
        }
        return db
    }

    private static func exec(_ db: OpaquePointer, _ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchFailure("raw exec failed: \(sql)") }
    }

    private static func prepare(_ db: OpaquePointer, _ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw BenchFailure("raw prepare failed") }
        return statement
    }

    private static func each(_ db: OpaquePointer, _ sql: String, _ body: (OpaquePointer) -> Void) throws {
        let statement = try prepare(db, sql)
        while sqlite3_step(statement) == SQLITE_ROW { body(statement) }
        sqlite3_finalize(statement)
    }

    private static func text(_ statement: OpaquePointer, _ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
    }

    private static func blob(_ statement: OpaquePointer, _ column: Int32) -> Data {
        guard let pointer = sqlite3_column_blob(statement, column) else { return Data() }
        return Data(bytes: pointer, count: Int(sqlite3_column_bytes(statement, column)))
    }
}
#endif
