import BuckiaCore
import BuckiaSecurity
import BuckiaSQLite
import CSQLite
import Foundation

/// Records what the app changes through one connection, with SQLite's session extension, and
/// turns it into a diff file: the third way to make a diff, beside explicit changes and two
/// database files.
///
/// Start a recorder on the connection the app writes through, let the app work, then call
/// ``writeDiff(to:sender:id:createdAt:)``: every row inserted or updated since (in the tables
/// recorded) is sent as it is now, every row deleted as its key. Tables without a primary key
/// are not recorded (SQLite's sessions skip them).
///
/// The session extension is an optional part of SQLite: Debian's and Homebrew's builds have it,
/// Apple's system SQLite does not. It is looked up when the process runs, so Buckia links
/// everywhere; ``isAvailable`` says whether this process's SQLite has it.
public final class ChangeRecorder {
    /// Whether this process's SQLite has the session extension.
    public static var isAvailable: Bool { SessionAPI.shared != nil }

    let connection: SQLiteConnection
    private let api: SessionAPI
    private var session: UnsafeMutableRawPointer?

    /// Starts recording the changes made through `connection` to `tables` (every table when nil).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/unsupported`` when SQLite has no session extension.
    public init(recording connection: SQLiteConnection, tables: [String]? = nil) throws {
        guard let api = SessionAPI.shared else {
            throw BuckiaError(
                .unsupported, "This process's SQLite has no session extension (SQLITE_ENABLE_SESSION); make diffs from explicit changes or from two database files instead.",
                operation: "record changes")
        }
        self.connection = connection
        self.api = api
        var session: UnsafeMutableRawPointer?
        let status = buckia_session_create(api.functions, connection.handle, "main", &session)
        guard status == SQLITE_OK, let session else { throw BuckiaError(.io, "SQLite could not start a session (error \(status)).", operation: "record changes") }
        self.session = session
        for table in tables ?? [] {
            try DiffRules.checkName(table, what: "table")
        }
        if let tables {
            for table in tables {
                let attached = buckia_session_attach(api.functions, session, table)
                guard attached == SQLITE_OK else { throw BuckiaError(.io, "SQLite could not record the table \(table) (error \(attached)).", operation: "record changes") }
            }
        } else {
            let attached = buckia_session_attach(api.functions, session, nil)
            guard attached == SQLITE_OK else { throw BuckiaError(.io, "SQLite could not record every table (error \(attached)).", operation: "record changes") }
        }
    }

    deinit {
        if let session { buckia_session_delete(api.functions, session) }
    }

    /// The keys of the rows changed so far, by table, in the order SQLite reports them.
    func changedKeys() throws -> [(table: String, upserts: [[SQLiteValue]], deletes: [[SQLiteValue]])] {
        guard let session else { return [] }
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
        var tables: [(table: String, upserts: [[SQLiteValue]], deletes: [[SQLiteValue]])] = []
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
                    return Self.value(value)
                }
            }
            let table = String(cString: name)
            if tables.last?.table != table { tables.append((table, [], [])) }
            switch operation {
            case SQLITE_INSERT: tables[tables.count - 1].upserts.append(values(new: true))
            case SQLITE_UPDATE: tables[tables.count - 1].upserts.append(values(new: false))
            case SQLITE_DELETE: tables[tables.count - 1].deletes.append(values(new: false))
            default: break
            }
        }
        return tables
    }

    static func value(_ value: OpaquePointer) -> SQLiteValue {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            guard let text = sqlite3_value_text(value) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value))), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: Int(sqlite3_value_bytes(value))))
        default: return .null
        }
    }

    /// Writes the diff of what changed since recording began into `directory`: rows inserted or
    /// updated as they are now, rows deleted as their keys.
    ///
    /// - Returns: The diff file, or nil when nothing changed.
    public func writeDiff(to directory: URL, sender: String, id: KSUID, createdAt: Date = Date(), signingKey: UserTokenSigningKey? = nil) throws -> URL? {
        let changed = try changedKeys().filter { !($0.upserts.isEmpty && $0.deletes.isEmpty) }
        guard !changed.isEmpty else { return nil }
        let writer = try DiffWriter(directory: directory, sender: sender, id: id, createdAt: createdAt, signingKey: signingKey)
        for table in changed {
            // Plain tables only: a virtual table's shadow storage changes with it and is not sent.
            guard try LocalTable.kind(of: table.table, in: connection) == "table" else { continue }
            let definition = try TableDefinition.read(table.table, from: connection)
            let key = definition.primaryKey
            // SQLite reports a key's values in column order; the format wants key order
            // (`PRIMARY KEY (b, a)` sends b first).
            let columnOrder = try connection.query("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY cid", [.text(definition.name)]) { $0.string(0) ?? "" }
            let reorder = key.compactMap { column in columnOrder.firstIndex { $0.lowercased() == column.name.lowercased() } }
            guard reorder.count == key.count else { continue }
            func inKeyOrder(_ values: [SQLiteValue]) -> [SQLiteValue] { reorder.map { values[$0] } }
            let names = definition.columns.map { DiffRules.quoted($0.name) }
            let select = "SELECT \(names.joined(separator: ", ")) FROM \(DiffRules.quoted(definition.name)) WHERE "
                + key.enumerated().map { "\(DiffRules.quoted($1.name)) IS ?\($0 + 1)" }.joined(separator: " AND ")
            let id = try writer.addTable(definition)
            for values in table.upserts where values.count == key.count {
                // A row inserted and then deleted is not in the changeset; one updated and then
                // deleted is a delete. What is left is here now.
                for row in try connection.query(select, inKeyOrder(values), { row in (0..<names.count).map { row.value($0) } }) {
                    try writer.upsert(row, into: id)
                }
            }
            for values in table.deletes where values.count == key.count { try writer.delete(inKeyOrder(values), from: id) }
        }
        return try writer.finish()
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
