import BuckiaCore
import BuckiaSQLite
import Foundation

/// One column of a table, as a diff file declares it: data, never SQL text.
public struct ColumnDefinition: Hashable, Sendable {
    /// The column's name: a plain identifier (letters, digits, `_`; not starting with a digit).
    public var name: String
    /// The declared type (`INTEGER`, `TEXT`, `VARCHAR(20)`, …; empty for none). Only its
    /// affinity matters when a table exists on both sides.
    public var declaredType: String
    /// Whether the column refuses NULL.
    public var notNull: Bool
    /// The literal default: nil for none, `.null` for `DEFAULT NULL`.
    public var defaultValue: SQLiteValue?
    /// 0 for a column outside the primary key; 1, 2, … for its place in the key.
    public var primaryKeyPosition: Int

    /// Describes a column.
    public init(_ name: String, type declaredType: String = "", notNull: Bool = false, default defaultValue: SQLiteValue? = nil, primaryKey primaryKeyPosition: Int = 0) {
        self.name = name
        self.declaredType = declaredType
        self.notNull = notNull
        self.defaultValue = defaultValue
        self.primaryKeyPosition = primaryKeyPosition
    }

    /// SQLite's type affinity for ``declaredType``, by the rules of its documentation (§3.1 of
    /// "Datatypes In SQLite"): what decides whether two declarations conflict.
    public var affinity: Affinity { Affinity(declaredType: declaredType) }

    /// A column affinity.
    public enum Affinity: String, Sendable {
        case integer = "INTEGER", text = "TEXT", blob = "BLOB", real = "REAL", numeric = "NUMERIC"

        /// The affinity SQLite gives a column declared `declaredType`.
        public init(declaredType: String) {
            let type = declaredType.uppercased()
            if type.contains("INT") {
                self = .integer
            } else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") {
                self = .text
            } else if type.contains("BLOB") || type.trimmingCharacters(in: .whitespaces).isEmpty {
                self = .blob
            } else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") {
                self = .real
            } else {
                self = .numeric
            }
        }
    }
}

/// A table's definition as a diff file carries it: the columns the diff's rows hold, in order.
public struct TableDefinition: Hashable, Sendable {
    /// The table's name: a plain identifier, not `sqlite_…` and not `buckia_…`.
    public var name: String
    /// The columns, in the order of the diff's rows.
    public var columns: [ColumnDefinition]

    /// Describes a table.
    public init(_ name: String, columns: [ColumnDefinition]) {
        self.name = name
        self.columns = columns
    }

    /// The primary key's columns, in key order.
    public var primaryKey: [ColumnDefinition] {
        columns.filter { $0.primaryKeyPosition > 0 }.sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }
    }

    /// Reads the definition of `table` from a database, with the columns named in `only` (all
    /// of them when nil), in the table's order.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` when there is no such table.
    public static func read(_ table: String, from connection: SQLiteConnection, only: Set<String>? = nil) throws -> TableDefinition {
        try DiffRules.checkName(table, what: "table")
        guard let kind = try LocalTable.kind(of: table, in: connection) else {
            throw BuckiaError(.notFound, "The database has no table \(table).", operation: "read table definition", path: connection.path)
        }
        guard kind == "table" else {
            throw BuckiaError(.unsupported, "\(table) is a \(kind) table, not a plain one; a diff carries plain tables only.", operation: "read table definition", path: connection.path)
        }
        let wanted = only.map { Set($0.map { $0.lowercased() }) }
        // Generated columns are computed by each side, never sent; a default goes with its
        // column when it is a literal (an expression stays the sender's).
        let columns = try LocalTable.columns(of: table, in: connection).filter { !$0.isGenerated }.map { column in
            var definition = column.definition
            definition.defaultValue = column.defaultSQL.flatMap(DiffRules.parseLiteral)
            return definition
        }
        return TableDefinition(table, columns: columns.filter { wanted?.contains($0.name.lowercased()) ?? true })
    }
}

/// A column of a table in the local database, with what `PRAGMA table_xinfo` says beyond the
/// definition.
struct LocalColumn {
    var definition: ColumnDefinition
    /// A generated (or hidden) column: it cannot be written.
    var isGenerated: Bool
    /// Whether the column has a default.
    var hasDefault: Bool { defaultSQL != nil }
    /// The default as SQL text, as the local schema has it (trusted: it is the app's own).
    var defaultSQL: String?
}

enum LocalTable {
    /// The columns of `table` (empty when it does not exist).
    static func columns(of table: String, in connection: SQLiteConnection) throws -> [LocalColumn] {
        try connection.query("SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?)", [.text(table)]) { row in
            LocalColumn(
                definition: ColumnDefinition(
                    row.string(0) ?? "", type: row.string(1) ?? "", notNull: row.int64(2) != 0, default: nil, primaryKey: Int(clamping: row.int64(4))),
                isGenerated: row.int64(5) != 0, defaultSQL: row.string(3))
        }
    }

    /// What kind of table `name` is in the main database, as `pragma_table_list` says:
    /// `table`, `view`, `virtual`, `shadow` (a virtual table's storage, written only by the
    /// virtual table itself), or nil when there is none.
    static func kind(of name: String, in connection: SQLiteConnection) throws -> String? {
        try connection.query("SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = ? COLLATE NOCASE", [.text(name)]) { $0.string(0) ?? "" }.first
    }

    /// What the local schema has under `name` (any case): nil, or its type and SQL text.
    static func object(named name: String, in connection: SQLiteConnection) throws -> (type: String, sql: String)? {
        try connection.query("SELECT type, coalesce(sql, '') FROM sqlite_schema WHERE name = ? COLLATE NOCASE", [.text(name)]) {
            (type: $0.string(0) ?? "", sql: $0.string(1) ?? "")
        }.first
    }
}
