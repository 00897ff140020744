import BuckiaCore
import BuckiaSQLite
import Foundation

/// The constants of the diff file format (Docs/Database.md describes it for writers in any
/// language).
package enum DiffFormat {
    /// The format version this Buckia writes and reads.
    package static let version: Int64 = 1
    /// The file name extension.
    package static let fileExtension = "sqlite"

    package static let manifestTable = "buckia_manifest"
    package static let tablesTable = "buckia_tables"
    package static let columnsTable = "buckia_columns"
    package static func upsertTable(_ id: Int64) -> String { "buckia_upsert_\(id)" }
    package static func deleteTable(_ id: Int64) -> String { "buckia_delete_\(id)" }

    /// The schema of a new diff file's fixed tables.
    package static let schema = """
        CREATE TABLE buckia_manifest (format_version INTEGER NOT NULL, ksuid TEXT NOT NULL, sender TEXT NOT NULL, created_at INTEGER NOT NULL, payload_sha256 TEXT NOT NULL);
        CREATE TABLE buckia_tables (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE buckia_columns (table_id INTEGER NOT NULL, position INTEGER NOT NULL, name TEXT NOT NULL, declared_type TEXT NOT NULL, not_null INTEGER NOT NULL, has_default INTEGER NOT NULL, default_value, primary_key INTEGER NOT NULL, PRIMARY KEY (table_id, position));
        """

    /// The data tables of table `id`: one column per definition column (`c0`, `c1`, …) for
    /// upserts, one per key column (`k1`, `k2`, …) for deletes; no declared types, so every
    /// value keeps its storage class.
    package static func dataSchema(id: Int64, columns: Int, keyColumns: Int) -> String {
        let upsert = (0..<columns).map { "c\($0)" }.joined(separator: ", ")
        let delete = (1...max(keyColumns, 1)).map { "k\($0)" }.joined(separator: ", ")
        return "CREATE TABLE \(upsertTable(id)) (\(upsert)); CREATE TABLE \(deleteTable(id)) (\(delete));"
    }
}

/// The names and types a diff may declare, and the literal defaults it may carry.
package enum DiffRules {
    /// The longest identifier accepted.
    static let maximumNameLength = 128

    /// Whether `name` is a plain identifier: ASCII letters, digits and `_`, not starting with a
    /// digit, at most 128 characters.
    package static func isPlainIdentifier(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= maximumNameLength, !(48...57).contains(first) else { return false }
        return bytes.allSatisfy { (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 95 }
    }

    /// Whether `name` is reserved: SQLite's `sqlite_…` and Buckia's own `buckia_…`, in any case.
    package static func isReserved(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.hasPrefix("sqlite_") || lower.hasPrefix("buckia_")
    }

    /// Refuses a name that is not a plain, unreserved identifier.
    package static func checkName(_ name: String, what: String) throws {
        guard isPlainIdentifier(name), !isReserved(name) else {
            throw BuckiaError(
                .invalidConfiguration, "The \(what) name \(name.debugDescription) is not a plain identifier, or is reserved for SQLite or Buckia.",
                cause: DiffProblem.forbiddenName(name))
        }
    }

    /// Whether `type` is a plain declared type: words of letters, digits and `_`, optionally
    /// followed by one or two numbers in parentheses (`VARCHAR(20)`, `DECIMAL(10, 2)`).
    ///
    /// No word may be an SQL keyword: `INTEGER CHECK (0)`, `TEXT NOT NULL` or `INT REFERENCES t
    /// ON DELETE CASCADE` have the shape of a type and would add a constraint to the column
    /// Buckia creates (SQLite's own keyword list decides, `sqlite3_keyword_check`).
    package static func isPlainType(_ type: String) -> Bool {
        if type.isEmpty { return true }
        guard type.utf8.count <= 64, type.wholeMatch(of: #/[A-Za-z_][A-Za-z0-9_]*( [A-Za-z_][A-Za-z0-9_]*)*( ?\( *[0-9]+ *(, *[0-9]+ *)?\))?/#) != nil else {
            return false
        }
        let words = type.prefix { $0 != "(" }.split(separator: " ")
        return words.allSatisfy { word in
            !SQLiteConnection.isKeyword(String(word))
        }
    }

    /// Unix seconds of `date`, rounded down; a date no `Int64` holds is clamped (never a trap).
    package static func seconds(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970
        guard value.isFinite else { return 0 }
        return Int64(min(max(value, -1e15), 1e15).rounded(.down))
    }

    /// An identifier in double quotes, for SQL Buckia writes (only ever called on names that
    /// passed ``isPlainIdentifier(_:)``).
    package static func quoted(_ name: String) -> String { "\"\(name)\"" }

    /// A literal default as SQL text, or nil when it cannot be one (a NaN or infinite real, text
    /// with a NUL).
    package static func literal(_ value: SQLiteValue) -> String? {
        switch value {
        case .null: return "NULL"
        case .integer(let number): return String(number)
        case .real(let number):
            guard number.isFinite else { return nil }
            // Enough digits to read back the same double, and always a real (never an integer).
            let text = "\(number)"
            return text.contains(".") || text.contains("e") ? text : text + ".0"
        case .text(let text):
            guard !text.utf8.contains(0) else { return nil }
            return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): return "X'" + Hex.encode(Array(data)) + "'"
        }
    }

    /// The value of a default written as a plain literal (`0`, `-1.5`, `'it''s'`, `X'AB'`,
    /// `NULL`), or nil for anything else (an expression, `CURRENT_TIMESTAMP`).
    package static func parseLiteral(_ sql: String) -> SQLiteValue? {
        let text = sql.trimmingCharacters(in: .whitespaces)
        if text.uppercased() == "NULL" { return .null }
        if let integer = Int64(text) { return .integer(integer) }
        if text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let real = Double(text), real.isFinite { return .real(real) }
        if text.count >= 2, text.hasPrefix("'"), text.hasSuffix("'") {
            let inner = text.dropFirst().dropLast()
            // Every quote inside is doubled, or this is not one literal ('a' || 'b').
            guard inner.replacingOccurrences(of: "''", with: "").firstIndex(of: "'") == nil else { return nil }
            return .text(inner.replacingOccurrences(of: "''", with: "'"))
        }
        if text.count >= 3, text.uppercased().hasPrefix("X'"), text.hasSuffix("'"), let bytes = Hex.decode(String(text.dropFirst(2).dropLast())) {
            return .blob(Data(bytes))
        }
        return nil
    }

    /// Checks a definition on its own: names, types, defaults, key positions, duplicates.
    package static func check(_ definition: TableDefinition) throws {
        try checkName(definition.name, what: "table")
        func malformed(_ detail: String) -> BuckiaError {
            BuckiaError(.invalidConfiguration, "The definition of \(definition.name) is malformed: \(detail).", cause: DiffProblem.malformedDefinition(detail))
        }
        guard !definition.columns.isEmpty, definition.columns.count <= 2000 else { throw malformed("it has \(definition.columns.count) columns") }
        var seen = Set<String>()
        for column in definition.columns {
            try checkName(column.name, what: "column")
            guard seen.insert(column.name.lowercased()).inserted else { throw malformed("the column \(column.name) appears twice") }
            guard isPlainType(column.declaredType) else {
                throw BuckiaError(.invalidConfiguration, "The declared type \(column.declaredType.debugDescription) of \(definition.name).\(column.name) is not a plain type name.", cause: DiffProblem.forbiddenType(column.declaredType))
            }
            if let value = column.defaultValue, literal(value) == nil { throw malformed("the default of \(column.name) is not a literal SQLite can hold") }
            guard column.primaryKeyPosition >= 0 else { throw malformed("\(column.name) has key position \(column.primaryKeyPosition)") }
        }
        let positions = definition.primaryKey.map(\.primaryKeyPosition)
        guard !positions.isEmpty else { throw malformed("it has no primary key, so its rows cannot be matched") }
        guard positions == Array(1...positions.count) else { throw malformed("its key positions are \(positions), not 1 to \(positions.count)") }
    }
}
