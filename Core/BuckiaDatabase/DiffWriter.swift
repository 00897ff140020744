import BuckiaCore
import BuckiaSecurity
import BuckiaSQLite
import Foundation

/// Writes a diff file: tables, then rows, then ``finish()``, which seals it (manifest with
/// the content hash), syncs it and gives it its `<KSUID>.sqlite` name. Until then it is a
/// temporary in the destination folder, removed if the writer is dropped unfinished.
package final class DiffWriter {
    let connection: SQLiteConnection
    let temporary: URL
    let directory: URL
    let id: KSUID
    let sender: String
    let createdAt: Int64
    /// The sender's key the diff is signed with when it is sealed (``DiffSignature``), if any.
    let signingKey: UserTokenSigningKey?
    private(set) var tables: [(id: Int64, definition: TableDefinition)] = []
    private var finished = false

    /// A diff's sender is a user id of 1 to 256 bytes without control characters.
    package static func check(sender: String) throws {
        guard !sender.isEmpty, sender.utf8.count <= 256, !sender.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw BuckiaError(
                .invalidConfiguration, "The sender \(sender.debugDescription) is not a user id a diff can carry: give 1 to 256 bytes without control characters.",
                operation: "create diff")
        }
    }

    package init(directory: URL, sender: String, id: KSUID, createdAt: Date, signingKey: UserTokenSigningKey? = nil) throws {
        try Self.check(sender: sender)
        if let signingKey, signingKey.algorithm != .edDSA {
            throw BuckiaError(
                .invalidConfiguration, "A diff is signed with an Ed25519 (EdDSA) key, which its recipients can check; \(signingKey.keyId) is \(signingKey.algorithm.rawValue).",
                operation: "create diff")
        }
        self.signingKey = signingKey
        self.directory = directory
        self.id = id
        self.sender = sender
        self.createdAt = DiffRules.seconds(createdAt)
        try LocalFile.createDirectories(directory.path)
        temporary = directory.appendingPathComponent(Temporaries.makeName(), isDirectory: false)
        try Temporaries.register(temporary.path)
        do {
            connection = try SQLiteConnection(path: temporary.path)
            // A private file nobody reads until it is renamed: no journal, no syncs until the end.
            try connection.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
            try connection.execute("BEGIN")
            try connection.execute(DiffFormat.schema)
        } catch {
            Self.remove(temporary)
            throw error
        }
    }

    deinit {
        if !finished { Self.remove(temporary) }
    }

    static func remove(_ url: URL) {
        unlink(url.path)
        Temporaries.unregister(url.path)
    }

    /// Adds a table; its rows follow through ``upsert(_:into:)`` and ``delete(_:from:)``.
    package func addTable(_ definition: TableDefinition) throws -> Int64 {
        try DiffRules.check(definition)
        guard !tables.contains(where: { $0.definition.name.lowercased() == definition.name.lowercased() }) else {
            throw BuckiaError(.invalidConfiguration, "The table \(definition.name) is in the diff twice.", operation: "create diff")
        }
        let id = Int64(tables.count + 1)
        try connection.run("INSERT INTO buckia_tables (id, name) VALUES (?, ?)", [.integer(id), .text(definition.name)])
        for (position, column) in definition.columns.enumerated() {
            try connection.run(
                "INSERT INTO buckia_columns VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .integer(id), .integer(Int64(position)), .text(column.name), .text(column.declaredType), .integer(column.notNull ? 1 : 0),
                    .integer(column.defaultValue == nil ? 0 : 1), column.defaultValue ?? .null, .integer(Int64(column.primaryKeyPosition)),
                ])
        }
        try connection.execute(DiffFormat.dataSchema(id: id, columns: definition.columns.count, keyColumns: definition.primaryKey.count))
        tables.append((id, definition))
        return id
    }

    private func definition(_ table: Int64) throws -> TableDefinition {
        guard table >= 1, table <= Int64(tables.count) else {
            throw BuckiaError(.invalidConfiguration, "The diff has no table \(table).", operation: "create diff")
        }
        return tables[Int(table - 1)].definition
    }

    /// Adds a row to upsert: one value per column of the table's definition, in order.
    package func upsert(_ values: [SQLiteValue], into table: Int64) throws {
        let count = try definition(table).columns.count
        guard values.count == count else {
            throw BuckiaError(.invalidConfiguration, "A row of the diff has \(values.count) values for \(count) columns.", operation: "create diff")
        }
        try connection.run("INSERT INTO \(DiffFormat.upsertTable(table)) VALUES (\(Self.placeholders(count)))", values)
    }

    /// Adds a primary key to delete: its values in key order.
    package func delete(_ key: [SQLiteValue], from table: Int64) throws {
        let count = try definition(table).primaryKey.count
        guard key.count == count else {
            throw BuckiaError(.invalidConfiguration, "A key to delete has \(key.count) values for \(count) key columns.", operation: "create diff")
        }
        try connection.run("INSERT INTO \(DiffFormat.deleteTable(table)) VALUES (\(Self.placeholders(count)))", key)
    }

    static func placeholders(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ", ") }

    /// Seals the file: writes the manifest (and, with a signing key, the signature), commits,
    /// syncs, and links it to `<directory>/<KSUID>.sqlite` (never over an existing file).
    package func finish() throws -> URL {
        let hash = try DiffHash.compute(connection, manifest: (DiffFormat.version, id.description, sender, createdAt), tables: tables)
        try connection.run(
            "INSERT INTO buckia_manifest VALUES (?, ?, ?, ?, ?)",
            [.integer(DiffFormat.version), .text(id.description), .text(sender), .integer(createdAt), .text(hash)])
        if let signingKey {
            let signature = try DiffSignature.sign(payloadSHA256: hash, with: signingKey)
            try connection.execute(DiffSignature.schema)
            try connection.run(
                "INSERT INTO buckia_signature VALUES (?, ?)", [.text(signature.keyId), .text(Base64URL.encode(Data(signature.bytes)))])
        }
        try connection.execute("COMMIT")
        try connection.execute("PRAGMA journal_mode = DELETE")
        let file = try LocalFile.openForReading(temporary)
        defer { file.closeAfterReading() }
        try file.sync()
        let destination = directory.appendingPathComponent("\(id).\(DiffFormat.fileExtension)", isDirectory: false)
        guard link(temporary.path, destination.path) == 0 else {
            throw BuckiaError.posix(errno, operation: "create diff", path: destination.path)
        }
        finished = true
        Self.remove(temporary)
        try DirectoryHandle(path: directory.path).sync()
        return destination
    }
}
