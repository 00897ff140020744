import BuckiaCore
import BuckiaSecurity
import BuckiaSQLite
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
    public static var isAvailable: Bool { SQLiteSession.isAvailable }

    let connection: SQLiteConnection
    private let session: SQLiteSession

    /// Starts recording the changes made through `connection` to `tables` (every table when nil).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/unsupported`` when SQLite has no session extension.
    public init(recording connection: SQLiteConnection, tables: [String]? = nil) throws {
        for table in tables ?? [] {
            try DiffRules.checkName(table, what: "table")
        }
        self.connection = connection
        self.session = try SQLiteSession(recording: connection, tables: tables)
    }

    /// Writes the diff of what changed since recording began into `directory`: rows inserted or
    /// updated as they are now, rows deleted as their keys.
    ///
    /// - Returns: The diff file, or nil when nothing changed.
    public func writeDiff(to directory: URL, sender: String, id: KSUID, createdAt: Date = Date(), signingKey: UserTokenSigningKey? = nil) throws -> URL? {
        let changed = try session.changedKeys().filter { !($0.upserts.isEmpty && $0.deletes.isEmpty) }
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
