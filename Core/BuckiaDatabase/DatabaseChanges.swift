import BuckiaCore
import BuckiaSecurity
import BuckiaSQLite
import Foundation

/// Changes to send to another user, stated explicitly: rows to insert or replace, keys to
/// delete. The typed form of the seed's `createDatabaseDiff(for changes: [String: Any])`.
///
/// Column types and keys come from the sender's database when it has the table, or from a
/// definition given with ``define(_:)``. Every upsert row of one table names the same columns
/// (the primary key's among them); a receiver's other columns keep their values.
///
/// ```swift
/// var changes = DatabaseChanges()
/// changes.upsert(["id": 7, "title": "Shared take", "owner": "u1"], into: "recordings")
/// changes.delete(["id": 3], from: "recordings")
/// ```
public struct DatabaseChanges: Sendable {
    struct Table: Sendable {
        var name: String
        var definition: TableDefinition?
        var upserts: [[String: SQLiteValue]] = []
        var deletes: [[String: SQLiteValue]] = []
    }
    private(set) var tables: [Table] = []

    /// No changes yet.
    public init() {}

    /// Whether there is nothing to send.
    public var isEmpty: Bool { tables.allSatisfy { $0.upserts.isEmpty && $0.deletes.isEmpty } }

    private mutating func index(of table: String) -> Int {
        if let index = tables.firstIndex(where: { $0.name.lowercased() == table.lowercased() }) { return index }
        tables.append(Table(name: table))
        return tables.count - 1
    }

    /// Inserts `row` into `table` at the receiver, replacing the row with the same key.
    public mutating func upsert(_ row: [String: SQLiteValue], into table: String) {
        tables[index(of: table)].upserts.append(row)
    }

    /// Deletes the row with `key` (every primary-key column, by name) from `table`.
    public mutating func delete(_ key: [String: SQLiteValue], from table: String) {
        tables[index(of: table)].deletes.append(key)
    }

    /// Declares a table the sender's database does not have (or overrides its definition).
    public mutating func define(_ definition: TableDefinition) {
        tables[index(of: definition.name)].definition = definition
    }

    /// Writes the diff file for these changes into `directory`.
    func write(to directory: URL, sender: String, id: KSUID, createdAt: Date, database: SQLiteConnection?, signingKey: UserTokenSigningKey? = nil) throws -> URL {
        let writer = try DiffWriter(directory: directory, sender: sender, id: id, createdAt: createdAt, signingKey: signingKey)
        for table in tables where !(table.upserts.isEmpty && table.deletes.isEmpty) {
            try DiffRules.checkName(table.name, what: "table")
            let full: TableDefinition
            if let definition = table.definition {
                full = definition
            } else if let database {
                full = try TableDefinition.read(table.name, from: database)
            } else {
                throw BuckiaError(.invalidConfiguration, "The table \(table.name) needs a definition: define(_:) it, or create the diff from a database that has it.", operation: "create diff")
            }
            let key = full.primaryKey.map(\.name)
            guard !key.isEmpty else {
                throw BuckiaError(.invalidConfiguration, "The table \(table.name) has no primary key, so a receiver cannot match its rows.", operation: "create diff")
            }
            func lookup(_ row: [String: SQLiteValue], _ column: String) -> SQLiteValue? {
                row[column] ?? row.first(where: { $0.key.lowercased() == column.lowercased() })?.value
            }
            // The columns the rows name, in the table's order; every row names the same ones.
            let named = Set((table.upserts.first ?? [:]).keys.map { $0.lowercased() })
            for row in table.upserts where Set(row.keys.map { $0.lowercased() }) != named {
                throw BuckiaError(.invalidConfiguration, "The rows to upsert into \(table.name) name different columns; give every row the same ones.", operation: "create diff")
            }
            let unknown = named.subtracting(full.columns.map { $0.name.lowercased() })
            guard unknown.isEmpty else {
                throw BuckiaError(.invalidConfiguration, "The table \(table.name) has no column \(unknown.sorted().joined(separator: ", ")).", operation: "create diff")
            }
            var columns = full.columns.filter { named.contains($0.name.lowercased()) || $0.primaryKeyPosition > 0 }
            if table.upserts.isEmpty { columns = full.primaryKey }
            for column in full.primaryKey where !table.upserts.isEmpty && !named.contains(column.name.lowercased()) {
                throw BuckiaError(.invalidConfiguration, "The rows to upsert into \(table.name) lack the key column \(column.name).", operation: "create diff")
            }
            let id = try writer.addTable(TableDefinition(full.name, columns: columns))
            for row in table.upserts { try writer.upsert(columns.map { lookup(row, $0.name) ?? .null }, into: id) }
            for row in table.deletes {
                guard row.count == key.count, let values = Optional(key.compactMap({ lookup(row, $0) })), values.count == key.count else {
                    throw BuckiaError(.invalidConfiguration, "A key to delete from \(table.name) must name exactly its key columns (\(key.joined(separator: ", "))).", operation: "create diff")
                }
                try writer.delete(values, from: id)
            }
        }
        return try writer.finish()
    }
}
