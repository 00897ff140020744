import BuckiaCore
import CSQLite
import Foundation

/// SQLite's session extension on one connection: it notes the key of every row changed through
/// that connection, so the changes can be sent elsewhere (BuckiaDatabase's `ChangeRecorder`
/// turns them into a diff file).
///
/// The extension is an optional part of SQLite: Debian's and Homebrew's builds have it, Apple's
/// system SQLite does not. Its functions are looked up when the process runs, so Buckia links
/// everywhere; ``isAvailable`` says whether this process's SQLite has them. Like its
/// connection, a session belongs to one task at a time.
package final class SQLiteSession {
    /// The rows of one table changed since the session began, by their primary key's values
    /// in column order: inserted or updated rows (as they were before the update) and deleted
    /// rows.
    package struct ChangedTable {
        package var table: String
        package var upserts: [[SQLiteValue]] = []
        package var deletes: [[SQLiteValue]] = []
    }

    /// Whether this process's SQLite has the session extension.
    package static var isAvailable: Bool { SessionAPI.shared != nil }

    private let api: SessionAPI
    private let session: UnsafeMutableRawPointer
    /// Kept so the connection outlives the session SQLite ties to it.
    private let connection: SQLiteConnection

    /// Starts noting the changes made through `connection` to `tables` (every table when nil).
    /// Tables without a primary key are not noted (SQLite's sessions skip them).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/unsupported`` when SQLite has no session
    ///   extension, ``BuckiaCore/BuckiaError/Code/io`` when SQLite refuses a table.
    package init(recording connection: SQLiteConnection, tables: [String]?) throws {
        guard let api = SessionAPI.shared else {
            throw BuckiaError(
                .unsupported, "This process's SQLite has no session extension (SQLITE_ENABLE_SESSION); make diffs from explicit changes or from two database files instead.",
                operation: "record changes")
        }
        var session: UnsafeMutableRawPointer?
        let status = buckia_session_create(api.functions, connection.handle, "main", &session)
        guard status == SQLITE_OK, let session else { throw BuckiaError(.io, "SQLite could not start a session (error \(status)).", operation: "record changes") }
        self.api = api
        self.session = session
        self.connection = connection
        let targets: [String?] = tables.map { names in names.map { Optional($0) } } ?? [nil]
        for table in targets {
            let attached = buckia_session_attach(api.functions, session, table)
            guard attached == SQLITE_OK else {
                throw BuckiaError(.io, "SQLite could not record \(table.map { "the table \($0)" } ?? "every table") (error \(attached)).", operation: "record changes")
            }
        }
    }

    deinit { buckia_session_delete(api.functions, session) }

    /// The keys of the rows changed so far, by table, in the order SQLite reports them. An
    /// update is listed with the key the row had before it.
    package func changedKeys() throws -> [ChangedTable] {
        var size: Int32 = 0
        var buffer: UnsafeMutableRawPointer?
        let status = buckia_session_changeset(api.functions, session, &size, &buffer)
        defer { sqlite3_free(buffer) }
        guard status == SQLITE_OK else { throw BuckiaError(.io, "SQLite could not produce the changeset (error \(status)).", operation: "record changes") }
        guard size > 0, let buffer else { return [] }
        var iterator: UnsafeMutableRawPointer?
        guard buckia_changeset_start(api.functions, &iterator, size, buffer) == SQLITE_OK, let iterator else {
            throw BuckiaError(.io, "SQLite could not read the changeset.", operation: "record changes")
        }
        defer { _ = buckia_changeset_finalize(api.functions, iterator) }
        var tables: [ChangedTable] = []
        while buckia_changeset_next(api.functions, iterator) == SQLITE_ROW {
            var name: UnsafePointer<CChar>?
            var columns: Int32 = 0, operation: Int32 = 0, indirect: Int32 = 0
            guard buckia_changeset_op(api.functions, iterator, &name, &columns, &operation, &indirect) == SQLITE_OK, let name else { continue }
            var flags: UnsafeMutablePointer<UInt8>?
            var count: Int32 = 0
            guard buckia_changeset_pk(api.functions, iterator, &flags, &count) == SQLITE_OK, let flags else { continue }
            let keyColumns = (0..<Int(count)).filter { flags[$0] != 0 }
            func values(new: Bool) -> [SQLiteValue] {
                keyColumns.map { column in
                    var value: OpaquePointer?
                    guard buckia_changeset_value(api.functions, iterator, Int32(column), new ? 1 : 0, &value) == SQLITE_OK, let value else { return .null }
                    return SQLiteValue(value)
                }
            }
            let table = String(cString: name)
            if tables.last?.table != table { tables.append(ChangedTable(table: table)) }
            switch operation {
            case SQLITE_INSERT: tables[tables.count - 1].upserts.append(values(new: true))
            case SQLITE_UPDATE: tables[tables.count - 1].upserts.append(values(new: false))
            case SQLITE_DELETE: tables[tables.count - 1].deletes.append(values(new: false))
            default: break
            }
        }
        return tables
    }
}

extension SQLiteValue {
    /// The value an `sqlite3_value` holds.
    init(_ value: OpaquePointer) {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: self = .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: self = .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            guard let text = sqlite3_value_text(value) else { self = .text(""); return }
            self = .text(String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else { self = .blob(Data()); return }
            self = .blob(Data(bytes: bytes, count: Int(sqlite3_value_bytes(value))))
        default: self = .null
        }
    }
}

extension SQLiteConnection {
    /// Whether `word` is one of SQLite's keywords (`CHECK`, `REFERENCES`, `NOT`, …), by SQLite's
    /// own list.
    package static func isKeyword(_ word: String) -> Bool {
        sqlite3_keyword_check(word, Int32(clamping: word.utf8.count)) != 0
    }
}

/// SQLite's session functions, found when the process runs.
final class SessionAPI: Sendable {
    let functions: buckia_session_api

    private init(_ functions: buckia_session_api) { self.functions = functions }

    static let shared: SessionAPI? = {
        var functions = buckia_session_api()
        return buckia_load_session_api(&functions) == 1 ? SessionAPI(functions) : nil
    }()
}
