import BuckiaCore
import BuckiaSecurity
import BuckiaSQLite
import Foundation

/// Diffs between two database files, as `sqldiff` makes them: what turns `old` into `new`.
public enum DatabaseComparison {
    /// Writes into `directory` the diff that turns the database `old` into `new`: for every
    /// table of `new`, the rows that are not in `old` exactly as they are (upserts, every
    /// column) and the keys of `old` that `new` no longer has (deletes). Tables Buckia keeps
    /// for itself (`buckia_…`) are left out.
    ///
    /// - Returns: The diff file, or nil when the two hold the same rows.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/unsupported`` for a change the format cannot
    ///   carry: a table without a primary key, a table or column dropped, a key changed.
    public static func diff(
        from old: URL, to new: URL, sender: String, in directory: URL, id: KSUID? = nil, now: Date = Date(), signingKey: UserTokenSigningKey? = nil
    ) throws -> URL? {
        try DatabaseFile.check(old, as: "old database", for: "diff databases")
        try DatabaseFile.check(new, as: "new database", for: "diff databases")
        let connection = try SQLiteConnection(path: new.path, mode: .readOnly)
        let uri = "file:" + PercentEncoding.encode(old.path, keepingSlash: true) + "?mode=ro"
        try connection.run("ATTACH DATABASE ? AS old", [.text(uri)])
        // Plain tables only: not views, virtual tables or their shadow storage, not SQLite's or
        // Buckia's own.
        func tables(_ schema: String) throws -> [String] {
            try connection.query(
                "SELECT name FROM pragma_table_list WHERE schema = ? AND type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'buckia\\_%' ESCAPE '\\' ORDER BY name",
                [.text(schema)]
            ) { $0.string(0) ?? "" }
        }
        func unsupported(_ message: String) -> BuckiaError { BuckiaError(.unsupported, message, operation: "diff databases", path: new.path) }
        let newTables = try tables("main"), oldTables = try tables("old")
        if let dropped = oldTables.first(where: { table in !newTables.contains { $0.lowercased() == table.lowercased() } }) {
            throw unsupported("The table \(dropped) is in the old database but not the new one; a diff cannot drop a table.")
        }
        try checkUncarried(connection, path: new.path)
        let writer = try DiffWriter(directory: directory, sender: sender, id: try id ?? KSUID(date: now), createdAt: now, signingKey: signingKey)
        var rows = 0
        for table in newTables {
            guard DiffRules.isPlainIdentifier(table) else { throw unsupported("The table name \(table.debugDescription) is not a plain identifier a diff can carry.") }
            let definition = try TableDefinition.read(table, from: connection)
            let key = definition.primaryKey
            guard !key.isEmpty else { throw unsupported("The table \(table) has no primary key, so a diff cannot name its rows.") }
            let q = DiffRules.quoted
            let names = definition.columns.map { q($0.name) }
            var common = names
            if oldTables.contains(where: { $0.lowercased() == table.lowercased() }) {
                let before = try connection.query("SELECT name, pk FROM pragma_table_xinfo(?, 'old') WHERE hidden = 0 ORDER BY cid", [.text(table)]) { (name: $0.string(0) ?? "", pk: $0.int64(1)) }
                let oldKey = before.filter { $0.pk > 0 }.sorted { $0.pk < $1.pk }.map { $0.name.lowercased() }
                guard oldKey == key.map({ $0.name.lowercased() }) else { throw unsupported("The primary key of \(table) changed between the two databases.") }
                let newNames = Set(definition.columns.map { $0.name.lowercased() })
                if let gone = before.first(where: { !newNames.contains($0.name.lowercased()) }) {
                    throw unsupported("The column \(table).\(gone.name) is in the old database but not the new one; a diff cannot drop a column.")
                }
                common = before.map { q($0.name) }
            } else {
                common = []
            }
            let keyMatch = key.map { "o.\(q($0.name)) = n.\(q($0.name))" }.joined(separator: " AND ")
            let selected = names.map { "n.\($0)" }.joined(separator: ", ")
            let upserts: String
            var deletes: String?
            if common.isEmpty {
                upserts = "SELECT \(selected) FROM main.\(q(table)) n"
            } else {
                // A row is unchanged when old has it with the same key and every common column
                // the same, and every column new added is NULL.
                let commonSet = Set(common.map { $0.lowercased() })
                // Compared as bytes and storage classes: a NOCASE column's 'bob' → 'Bob', or 1 → 1.0
                // in an untyped one, is a change.
                let unchanged = common.map { "(o.\($0) IS n.\($0) COLLATE BINARY AND typeof(o.\($0)) = typeof(n.\($0)))" } + names.filter { !commonSet.contains($0.lowercased()) }.map { "n.\($0) IS NULL" }
                upserts = "SELECT \(selected) FROM main.\(q(table)) n WHERE NOT EXISTS (SELECT 1 FROM old.\(q(table)) o WHERE \(keyMatch) AND \(unchanged.joined(separator: " AND ")))"
                deletes = "SELECT \(key.map { "o.\(q($0.name))" }.joined(separator: ", ")) FROM old.\(q(table)) o WHERE NOT EXISTS (SELECT 1 FROM main.\(q(table)) n WHERE \(keyMatch))"
            }
            let changed = try connection.query("SELECT EXISTS (\(upserts))" + (deletes.map { " OR EXISTS (\($0))" } ?? "")) { $0.int64(0) != 0 }.first ?? false
            guard changed else { continue }
            let id = try writer.addTable(definition)
            try connection.forEachRow(upserts) { row in
                try writer.upsert((0..<names.count).map { row.value($0) }, into: id)
                return true
            }
            if let deletes {
                try connection.forEachRow(deletes) { row in
                    try writer.delete((0..<key.count).map { row.value($0) }, from: id)
                    return true
                }
            }
            rows += 1
        }
        guard rows > 0 else { return nil }  // the writer's temporary goes with it
        return try writer.finish()
    }

    /// Buckia's own bookkeeping in an app's database, which a diff leaves out by design.
    static let ownTables: Set<String> = [DiffApplier.appliedTable, DatabaseManager.refusedTable]

    /// Refuses, by name, a table of the new database (attached with the old one as `old`) that a
    /// diff cannot carry and whose rows differ from the old one's: a virtual table (FTS5, R*Tree,
    /// any module) or a table named like Buckia's own (`buckia_…`) that is not its bookkeeping.
    /// Left out without a word, its changes would be lost.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/unsupported`` naming the table.
    static func checkUncarried(_ connection: SQLiteConnection, path: String) throws {
        let candidates = try connection.query(
            "SELECT name, type FROM pragma_table_list WHERE schema = 'main' AND (type = 'virtual' OR (type = 'table' AND name LIKE 'buckia\\_%' ESCAPE '\\')) ORDER BY name"
        ) { (name: $0.string(0) ?? "", virtual: $0.string(1) == "virtual") }
        let oldNames = Set(try connection.query("SELECT lower(name) FROM pragma_table_list WHERE schema = 'old'") { $0.string(0) ?? "" })
        for table in candidates where !ownTables.contains(table.name.lowercased()) {
            let q = DiffRules.quoted(table.name)
            let compare = oldNames.contains(table.name.lowercased())
                ? "SELECT EXISTS (SELECT * FROM main.\(q) EXCEPT SELECT * FROM old.\(q)) OR EXISTS (SELECT * FROM old.\(q) EXCEPT SELECT * FROM main.\(q))"
                : "SELECT EXISTS (SELECT 1 FROM main.\(q))"
            let changed: Bool
            do {
                changed = try connection.query(compare) { $0.int64(0) != 0 }.first ?? true
            } catch let error as BuckiaError where (error.cause as? SQLiteResultCode)?.code == 1 {
                // SQLITE_ERROR: a module this SQLite lacks, or old and new columns that differ:
                // either way the rows cannot be shown to be the same.
                changed = true
            }
            guard changed else { continue }
            guard table.virtual else {
                throw BuckiaError(
                    .unsupported,
                    "The table \(table.name) changed, but names starting buckia_ are Buckia's own and a diff never carries them; rename the table to carry its rows. No diff was written.",
                    operation: "diff databases", path: path)
            }
            let sql = try connection.query("SELECT sql FROM main.sqlite_schema WHERE name = ?", [.text(table.name)]) { $0.string(0) ?? "" }.first ?? ""
            let module = sql.range(of: "USING ", options: .caseInsensitive).map { range in
                String(sql[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" })
            } ?? ""
            throw BuckiaError(
                .unsupported,
                "The table \(table.name) is a virtual table\(module.isEmpty ? "" : " (\(module))") whose rows changed; a diff carries only plain tables with a primary key, so its changes would be lost. Rebuild it from the tables it indexes where the diff is applied (for FTS5, INSERT INTO \(table.name)(\(table.name)) VALUES ('rebuild')). No diff was written.",
                operation: "diff databases", path: path)
        }
    }
}
