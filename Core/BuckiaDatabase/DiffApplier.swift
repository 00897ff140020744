import BuckiaCore
import BuckiaSecurity
import BuckiaSQLite
import Foundation

/// What to do when an incoming row's key is already in the local table with other values.
public enum RowConflictPolicy: Sendable {
    /// The incoming row replaces the local one (the default).
    case incomingWins
    /// The local row stays; only rows the local table lacks are inserted.
    case keepLocal
    /// `resolve` decides, row by row.
    case resolve(@Sendable (RowConflict) throws -> RowConflictResolution)
}

/// A row that exists on both sides with different values, as ``RowConflictPolicy/resolve(_:)``
/// sees it: the diff's columns only.
public struct RowConflict: Sendable {
    /// The table.
    public var table: String
    /// The local row.
    public var local: [String: SQLiteValue]
    /// The incoming row.
    public var incoming: [String: SQLiteValue]
}

/// How a conflict is resolved.
public enum RowConflictResolution: Sendable {
    /// Take the incoming row.
    case incoming
    /// Keep the local row.
    case local
    /// Write these values (columns it leaves out take the incoming values; the key cannot change).
    case merged([String: SQLiteValue])
}

/// A diff file that was applied to the database (or found already applied).
public struct AppliedChange: Hashable, Sendable {
    /// The change's id.
    public var id: KSUID
    /// Who sent it.
    public var sender: String
    /// The SHA-256 of its content.
    public var payloadSHA256: String
    /// When it was made.
    public var createdAt: Date
    /// When it was applied.
    public var appliedAt: Date
    /// Rows inserted or replaced (or kept local by the conflict policy).
    public var upserted: Int
    /// Keys deleted (whether or not the row existed).
    public var deleted: Int
    /// Tables the diff created.
    public var tablesCreated: [String]
    /// Columns the diff added, as `table.column`.
    public var columnsAdded: [String]
    /// Whether it had been applied before, so this time nothing changed.
    public var wasAlreadyApplied: Bool
    /// The file it came from, when it came from one.
    public var file: URL? = nil
    /// Diffs the database had already applied that are newer than this one (a later KSUID),
    /// oldest first. Applied after them, this one may have put older values over theirs; empty
    /// when diffs arrived in order.
    public var newerApplied: [KSUID] = []
    /// When ``newerApplied`` is not empty, rows this diff replaced or deleted that the database
    /// already held — the rows whose newer values it may have overwritten — at most
    /// ``DiffApplier/reportedRowLimit`` of them; ``overwrittenCount`` counts them all.
    public var overwritten: [RowReference] = []
    /// How many rows ``overwritten`` stands for.
    public var overwrittenCount = 0
}

/// One row of a table, named by its primary key.
public struct RowReference: Hashable, Sendable {
    /// The table.
    public var table: String
    /// The primary key's values, in key order.
    public var key: [SQLiteValue]
}

/// How a diff is applied.
public struct ApplyOptions: Sendable {
    /// The conflict policy of tables ``policies`` does not name.
    public var defaultPolicy: RowConflictPolicy
    /// Conflict policies by table name.
    public var policies: [String: RowConflictPolicy]
    /// What a diff file may ask for.
    public var limits: DiffLimits
    /// Whose diffs are applied: checked before anything else (``SenderVerification``). A
    /// database that takes diffs from other users wants ``SenderVerification/signed(by:accepting:)``;
    /// the default, ``SenderVerification/unverified``, suits one user's own devices only.
    public var senders: SenderVerification
    /// This user's keys that sealed diffs (``SealedDiff``) are opened with, the current one and
    /// any rotated ones still in use.
    public var recipientKeys: [DiffRecipientPrivateKey]

    /// Creates options.
    public init(
        defaultPolicy: RowConflictPolicy = .incomingWins, policies: [String: RowConflictPolicy] = [:], limits: DiffLimits = DiffLimits(),
        senders: SenderVerification = .unverified, recipientKeys: [DiffRecipientPrivateKey] = []
    ) {
        self.recipientKeys = recipientKeys
        self.defaultPolicy = defaultPolicy
        self.policies = policies
        self.limits = limits
        self.senders = senders
    }

    func policy(for table: String) -> RowConflictPolicy {
        policies[table] ?? policies.first(where: { $0.key.lowercased() == table.lowercased() })?.value ?? defaultPolicy
    }
}

/// Applies diff files to a database: checked first, then in one transaction the allowed schema
/// changes, the upserts, the deletes and the record in `buckia_applied_changes`.
package enum DiffApplier {
    package static let appliedTable = "buckia_applied_changes"
    package static let appliedSchema = """
        CREATE TABLE IF NOT EXISTS buckia_applied_changes (ksuid TEXT PRIMARY KEY NOT NULL, payload_sha256 TEXT NOT NULL, sender TEXT NOT NULL, \
        created_at INTEGER NOT NULL, applied_at INTEGER NOT NULL, upserted INTEGER NOT NULL, deleted INTEGER NOT NULL)
        """

    /// How many of the rows an out-of-order diff overwrote ``AppliedChange/overwritten`` lists.
    public static let reportedRowLimit = 20

    /// Applies the diff at `url` to `database`, exactly once.
    package static func apply(_ url: URL, to database: SQLiteConnection, options: ApplyOptions, now: Date) throws -> AppliedChange {
        // The content hash is checked as the rows are applied, in the same transaction: a
        // mismatch rolls everything back, and the rows are read once instead of twice.
        try DiffProblem.applying {
            let diff = try DiffReader.open(url, limits: options.limits, now: now, verifyHash: false, recipientKeys: options.recipientKeys)
            return try applyOpened(diff, to: database, options: options, now: now, hashChecked: false)
        }
    }

    /// The applied record of `id`, if the database has one.
    package static func appliedHash(of id: KSUID, in database: SQLiteConnection) throws -> String? {
        guard try LocalTable.object(named: appliedTable, in: database) != nil else { return nil }
        return try database.query("SELECT payload_sha256 FROM buckia_applied_changes WHERE ksuid = ?", [.text(id.description)]) { $0.string(0) ?? "" }.first
    }

    package static func apply(_ diff: OpenedDiff, to database: SQLiteConnection, options: ApplyOptions, now: Date, hashChecked: Bool = true) throws -> AppliedChange {
        try DiffProblem.applying { try applyOpened(diff, to: database, options: options, now: now, hashChecked: hashChecked) }
    }

    private static func applyOpened(_ diff: OpenedDiff, to database: SQLiteConnection, options: ApplyOptions, now: Date, hashChecked: Bool) throws -> AppliedChange {
        let manifest = diff.summary.manifest
        let path = diff.url.path
        // Who sent it, before anything else: the signature is over the manifest's content hash,
        // which the rows are checked against as they are applied (a mismatch rolls back).
        try options.senders.check(diff.summary, path: path)
        var change = AppliedChange(
            id: manifest.id, sender: manifest.sender, payloadSHA256: manifest.payloadSHA256, createdAt: manifest.createdAt, appliedAt: now,
            upserted: 0, deleted: 0, tablesCreated: [], columnsAdded: [], wasAlreadyApplied: false)
        try database.transaction(.immediate) {
            if let hash = try appliedHash(of: manifest.id, in: database) {
                guard hash == manifest.payloadSHA256 else { throw DiffProblem.duplicateKSUID(manifest.id.description).error(path) }
                change.wasAlreadyApplied = true
                return
            }
            // Every table's plan first, so a refusal comes before any change.
            var plans: [TablePlan] = []
            for (table, id) in zip(diff.summary.tables, diff.tableIds) {
                plans.append(try TablePlan(table, id: id, database: database, path: path))
            }
            try reportOrder(of: diff, plans: plans, database: database, options: options, change: &change)
            var hash = try DiffHash()
            hash.manifest(
                version: manifest.formatVersion, ksuid: manifest.id.description, sender: manifest.sender,
                createdAt: manifest.createdAtSeconds, tables: plans.count)
            do {
                for plan in plans {
                    for statement in plan.schemaChanges { try database.execute(statement) }
                    if plan.creates { change.tablesCreated.append(plan.table.definition.name) }
                    change.columnsAdded += plan.added.map { "\(plan.table.definition.name).\($0)" }
                }
                try applyRows(plans, diff: diff, database: database, options: options, hash: &hash, change: &change)
            } catch let error as BuckiaError where !(error.cause is DiffProblem) {
                throw Self.refusal(error, path: path)
            }
            if !hashChecked, hash.finalize() != manifest.payloadSHA256 { throw DiffProblem.payloadHashMismatch.error(path) }
            try database.execute(appliedSchema)
            try database.run(
                "INSERT INTO buckia_applied_changes VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(manifest.id.description), .text(manifest.payloadSHA256), .text(manifest.sender), .integer(manifest.createdAtSeconds),
                    .integer(DiffRules.seconds(now)), .integer(Int64(change.upserted)), .integer(Int64(change.deleted)),
                ])
        }
        return change
    }

    /// Fills ``AppliedChange/newerApplied`` and, when the database already applied a newer diff,
    /// the rows this one is about to replace or delete: what an older diff applied after a newer
    /// one may overwrite, reported instead of done silently. A read of the keys, before any change.
    static func reportOrder(of diff: OpenedDiff, plans: [TablePlan], database: SQLiteConnection, options: ApplyOptions, change: inout AppliedChange) throws {
        guard try LocalTable.object(named: appliedTable, in: database) != nil else { return }
        change.newerApplied = try database.query("SELECT ksuid FROM buckia_applied_changes WHERE ksuid > ? ORDER BY ksuid", [.text(change.id.description)]) {
            KSUID($0.string(0) ?? "")
        }.compactMap { $0 }
        guard !change.newerApplied.isEmpty else { return }
        for plan in plans where !plan.creates {
            let keepsLocal = if case .keepLocal = options.policy(for: plan.table.definition.name) { true } else { false }
            try plan.existingRows(from: diff.connection, in: database, includingUpserts: !keepsLocal, change: &change)
        }
    }

    /// The rows of every table, in order, hashed as they go.
    static func applyRows(_ plans: [TablePlan], diff: OpenedDiff, database: SQLiteConnection, options: ApplyOptions, hash: inout DiffHash, change: inout AppliedChange) throws {
        for plan in plans {
            hash.table(plan.table.definition)
            change.upserted += try plan.upsert(from: diff.connection, into: database, policy: options.policy(for: plan.table.definition.name), hash: &hash)
            hash.byte(DiffHash.upsertsEnd)
            change.deleted += try plan.delete(from: diff.connection, in: database, hash: &hash)
            hash.byte(DiffHash.deletesEnd)
        }
    }

    /// A failure while rows were applied, as the refusal it is: the local database refusing a
    /// row (a constraint, a datatype, a NULL) or the diff failing to read is the diff's doing;
    /// a lock, a full disk or an I/O error is not, and stays as it is.
    static func refusal(_ error: BuckiaError, path: String) -> BuckiaError {
        guard let result = error.cause as? SQLiteResultCode else { return error }
        switch result.code {
        case 19, 20, 25, 18, 1: return DiffProblem.rowRejected(result.message).error(path)  // CONSTRAINT, MISMATCH, RANGE, TOOBIG, ERROR
        case 11, 26: return DiffProblem.damaged(result.message).error(path)  // CORRUPT, NOTADB
        default: return error
        }
    }
}

/// What applying one table takes: the schema changes the allow-list permits, and the SQL.
struct TablePlan {
    let table: DiffTableSummary
    let id: Int64
    var creates = false
    var added: [String] = []
    var schemaChanges: [String] = []

    init(_ table: DiffTableSummary, id: Int64, database: SQLiteConnection, path: String) throws {
        self.table = table
        self.id = id
        let definition = table.definition
        let name = definition.name
        if try LocalTable.object(named: name, in: database) != nil {
            // Not a view, an index, a virtual table, or a virtual table's shadow storage (an
            // FTS5 `_config` row written from outside breaks every later query of it).
            guard try LocalTable.kind(of: name, in: database) == "table" else { throw DiffProblem.notAPlainTable(name).error(path) }
            let local = try LocalTable.columns(of: name, in: database)
            let localKey = local.map(\.definition).filter { $0.primaryKeyPosition > 0 }.sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map { $0.name.lowercased() }
            guard localKey == definition.primaryKey.map({ $0.name.lowercased() }) else { throw DiffProblem.primaryKeyChanged(table: name).error(path) }
            for column in definition.columns {
                if let existing = local.first(where: { $0.definition.name.lowercased() == column.name.lowercased() }) {
                    guard !existing.isGenerated else { throw DiffProblem.notAPlainTable("\(name).\(column.name)").error(path) }
                    guard existing.definition.affinity == column.affinity else {
                        throw DiffProblem.typeConflict(table: name, column: column.name, local: existing.definition.affinity.rawValue, incoming: column.affinity.rawValue).error(path)
                    }
                } else {
                    guard column.primaryKeyPosition == 0 else { throw DiffProblem.primaryKeyChanged(table: name).error(path) }
                    guard !column.notNull || (column.defaultValue != nil && column.defaultValue != .null) else {
                        throw DiffProblem.notNullWithoutDefault(table: name, column: column.name).error(path)
                    }
                    schemaChanges.append("ALTER TABLE \(DiffRules.quoted(name)) ADD COLUMN \(Self.columnSQL(column))")
                    added.append(column.name)
                }
            }
            if table.upserts > 0 {
                let given = Set(definition.columns.map { $0.name.lowercased() })
                for column in local where !given.contains(column.definition.name.lowercased()) && column.definition.notNull && !column.hasDefault && !column.isGenerated {
                    throw DiffProblem.missingRequiredColumn(table: name, column: column.definition.name).error(path)
                }
            }
        } else {
            let key = definition.primaryKey.map { DiffRules.quoted($0.name) }.joined(separator: ", ")
            let columns = definition.columns.map(Self.columnSQL).joined(separator: ", ")
            schemaChanges.append("CREATE TABLE \(DiffRules.quoted(name)) (\(columns), PRIMARY KEY (\(key)))")
            creates = true
        }
    }

    /// A column's definition as SQL, from checked parts only: a plain name, a plain type, a
    /// literal default.
    static func columnSQL(_ column: ColumnDefinition) -> String {
        var sql = DiffRules.quoted(column.name)
        if !column.declaredType.isEmpty { sql += " " + column.declaredType }
        if column.notNull { sql += " NOT NULL" }
        if let value = column.defaultValue, let literal = DiffRules.literal(value) { sql += " DEFAULT " + literal }
        return sql
    }

    func upsert(from diff: SQLiteConnection, into database: SQLiteConnection, policy: RowConflictPolicy, hash: inout DiffHash) throws -> Int {
        let definition = table.definition
        let table = DiffRules.quoted(definition.name)
        let names = definition.columns.map { DiffRules.quoted($0.name) }
        let keyNames = definition.primaryKey.map { DiffRules.quoted($0.name) }
        let others = definition.columns.filter { $0.primaryKeyPosition == 0 }.map { DiffRules.quoted($0.name) }
        let insert = "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(DiffWriter.placeholders(names.count)))"
        let replace = others.isEmpty
            ? insert + " ON CONFLICT DO NOTHING"
            : insert + " ON CONFLICT (\(keyNames.joined(separator: ", "))) DO UPDATE SET " + others.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        let keyPositions = definition.primaryKey.compactMap { column in definition.columns.firstIndex(of: column) }
        let select = "SELECT \(names.joined(separator: ", ")) FROM \(table) WHERE " + keyNames.enumerated().map { "\($1) IS ?\($0 + 1)" }.joined(separator: " AND ")
        var count = 0
        let source = DiffHash.upsertQuery(id, columns: names.count)
        if case .incomingWins = policy {
            // The common case, row for row into one prepared statement, values bound as the
            // diff holds them: within a small factor of raw SQLite (Docs/Benchmarks.md).
            return try Self.copyRows(diff, source, columns: names.count, into: database, replace, marker: DiffHash.upsertRow, hash: &hash)
        }
        try diff.forEachRow(source) { row in
            hash.row(row, count: names.count, marker: DiffHash.upsertRow)
            let values = (0..<names.count).map { row.value($0) }
            switch policy {
            case .incomingWins:
                try database.run(replace, values)
            case .keepLocal:
                try database.run(insert + " ON CONFLICT DO NOTHING", values)
            case .resolve(let resolve):
                let local = try database.query(select, keyPositions.map { values[$0] }) { row in (0..<names.count).map { row.value($0) } }.first
                if let local, local != values {
                    let names = definition.columns.map(\.name)
                    let conflict = RowConflict(
                        table: definition.name, local: Dictionary(uniqueKeysWithValues: zip(names, local)), incoming: Dictionary(uniqueKeysWithValues: zip(names, values)))
                    switch try resolve(conflict) {
                    case .incoming: try database.run(replace, values)
                    case .local: break
                    case .merged(let merged):
                        let written = definition.columns.enumerated().map { index, column in
                            column.primaryKeyPosition > 0 ? values[index] : merged[column.name] ?? values[index]
                        }
                        try database.run(replace, written)
                    }
                } else if local == nil {
                    try database.run(insert, values)
                }
            }
            count += 1
            return true
        }
        return count
    }

    /// Adds to `change` the rows of this table the diff upserts (unless `includingUpserts` is
    /// false) or deletes that the local table holds now.
    func existingRows(from diff: SQLiteConnection, in database: SQLiteConnection, includingUpserts: Bool, change: inout AppliedChange) throws {
        let definition = table.definition
        let keyNames = definition.primaryKey.map { DiffRules.quoted($0.name) }
        let keyPositions = definition.primaryKey.compactMap { column in definition.columns.firstIndex(of: column) }
        let exists = "SELECT EXISTS (SELECT 1 FROM \(DiffRules.quoted(definition.name)) WHERE "
            + keyNames.enumerated().map { "\($1) IS ?\($0 + 1)" }.joined(separator: " AND ") + ")"
        func look(_ key: [SQLiteValue]) throws {
            guard try database.query(exists, key, { $0.int64(0) != 0 }).first == true else { return }
            change.overwrittenCount += 1
            if change.overwritten.count < DiffApplier.reportedRowLimit { change.overwritten.append(RowReference(table: definition.name, key: key)) }
        }
        if includingUpserts {
            try diff.forEachRow(DiffHash.upsertQuery(id, columns: definition.columns.count)) { row in
                try look(keyPositions.map { row.value($0) })
                return true
            }
        }
        try diff.forEachRow(DiffHash.deleteQuery(id, keys: keyNames.count)) { row in
            try look((0..<keyNames.count).map { row.value($0) })
            return true
        }
    }

    func delete(from diff: SQLiteConnection, in database: SQLiteConnection, hash: inout DiffHash) throws -> Int {
        let definition = table.definition
        let keys = definition.primaryKey.map { DiffRules.quoted($0.name) }
        let statement = "DELETE FROM \(DiffRules.quoted(definition.name)) WHERE " + keys.enumerated().map { "\($1) = ?\($0 + 1)" }.joined(separator: " AND ")
        return try Self.copyRows(diff, DiffHash.deleteQuery(id, keys: keys.count), columns: keys.count, into: database, statement, marker: DiffHash.deleteRow, hash: &hash)
    }

    /// Runs `statement` on `database` once per row of `query` on the diff, its parameters bound
    /// to the row's values as SQLite holds them, hashing each row: the fast path of upserts and
    /// deletes.
    ///
    /// - Returns: The number of rows.
    static func copyRows(
        _ diff: SQLiteConnection, _ query: String, columns: Int, into database: SQLiteConnection, _ statement: String, marker: UInt8, hash: inout DiffHash
    ) throws -> Int {
        var count = 0
        let prepared = try database.prepare(statement)
        defer { prepared.reset() }
        try diff.forEachRow(query) { row in
            hash.row(row, count: columns, marker: marker)
            for index in 0..<columns { try prepared.bind(index + 1, column: index, of: row) }
            try prepared.run()
            count += 1
            return true
        }
        return count
    }
}
