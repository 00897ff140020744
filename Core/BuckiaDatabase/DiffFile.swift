import BuckiaCore
import BuckiaSQLite
import Foundation

/// What a diff file's manifest says.
public struct DiffManifest: Hashable, Sendable {
    /// The format version (1).
    public var formatVersion: Int64
    /// The change's id, which is also the file's name.
    public var id: KSUID
    /// The user who made it.
    public var sender: String
    /// When it was made, to the second.
    public var createdAt: Date { Date(timeIntervalSince1970: TimeInterval(createdAtSeconds)) }
    /// When it was made, in Unix seconds, as the file holds it.
    public var createdAtSeconds: Int64
    /// SHA-256 of the content, lowercase hex.
    public var payloadSHA256: String
}

/// One table of a diff file: its definition and how many rows it upserts and deletes.
public struct DiffTableSummary: Hashable, Sendable {
    /// The table's definition, as declared in the file.
    public var definition: TableDefinition
    /// Rows to insert or replace.
    public var upserts: Int
    /// Primary keys to delete.
    public var deletes: Int
}

/// A diff file, checked and described without being applied (what `buckia db inspect` shows).
public struct DiffSummary: Hashable, Sendable {
    /// The manifest.
    public var manifest: DiffManifest
    /// The tables, in the order they are applied.
    public var tables: [DiffTableSummary]
    /// The file's size in bytes.
    public var fileSize: Int64
    /// The sender's signature, when the diff is signed (``DiffSignature``).
    public var signature: DiffSignature? = nil
}

/// How much a diff file may ask for, and how far in the future its id may be dated.
public struct DiffLimits: Hashable, Sendable {
    /// The largest file accepted, in bytes (it is read into memory whole). 256 MiB by default.
    public var maximumFileSize: Int64
    /// How far past the reader's clock a KSUID may be dated (the sender's clock may be ahead).
    /// One hour by default. A later one would hold back every later change, so it is refused.
    public var futureTolerance: Duration

    /// Creates limits.
    public init(maximumFileSize: Int64 = 256 << 20, futureTolerance: Duration = .seconds(3600)) {
        self.maximumFileSize = maximumFileSize
        self.futureTolerance = futureTolerance
    }
}

/// A diff file opened for reading, every check passed: the in-memory, read-only, hardened
/// connection the applier reads rows from.
package final class OpenedDiff {
    package let connection: SQLiteConnection
    package let summary: DiffSummary
    /// The data-table id of each of `summary.tables`.
    package let tableIds: [Int64]
    package let url: URL

    init(connection: SQLiteConnection, summary: DiffSummary, tableIds: [Int64], url: URL) {
        self.connection = connection
        self.summary = summary
        self.tableIds = tableIds
        self.url = url
    }
}

extension DiffSummary {
    /// Reads and checks the diff file at `url` without applying it: size, SQLite header,
    /// `quick_check`, the schema objects, the manifest, every table definition, the row shapes
    /// and the content hash.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError`` with a ``DiffProblem`` cause for a file that fails a
    ///   check; file system errors.
    public init(contentsOf url: URL, limits: DiffLimits = DiffLimits(), now: Date = Date()) throws {
        self = try DiffReader.open(url, limits: limits, now: now).summary
    }
}

package enum DiffReader {
    /// Opens and checks a diff file (see ``DiffSummary/init(contentsOf:limits:now:)``).
    ///
    /// - Parameter verifyHash: false only for a caller that hashes the rows as it applies them
    ///   and rolls back on a mismatch (``DiffApplier``), so the rows are read once.
    ///
    /// A sealed diff (`<KSUID>.sealed`) is opened with the one of `recipientKeys` it was sealed
    /// to first, and what is inside is read as `<KSUID>.sqlite`.
    package static func open(
        _ url: URL, limits: DiffLimits, now: Date, verifyHash: Bool = true, recipientKeys: [DiffRecipientPrivateKey] = []
    ) throws -> OpenedDiff {
        if url.pathExtension == SealedDiff.fileExtension {
            let bytes = try SealedDiff.open(url, keys: recipientKeys, limits: limits)
            let inner = url.deletingPathExtension().appendingPathExtension(DiffFormat.fileExtension)
            return try open(bytes: bytes, url: inner, limits: limits, now: now, verifyHash: verifyHash)
        }
        return try open(bytes: try readBounded(url, limit: limits.maximumFileSize), url: url, limits: limits, now: now, verifyHash: verifyHash)
    }

    private static func open(bytes: Data, url: URL, limits: DiffLimits, now: Date, verifyHash: Bool) throws -> OpenedDiff {
        let path = url.path
        try checkHeader(bytes, limit: limits.maximumFileSize, path: path)
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection.openUntrusted(bytes, name: path)
        } catch let error as BuckiaError {
            throw DiffProblem.damaged(error.message).error(path)
        }
        do {
            return try read(connection, url: url, size: Int64(bytes.count), now: now, futureTolerance: limits.futureTolerance, verifyHash: verifyHash)
        } catch let error as BuckiaError where !(error.cause is DiffProblem) {
            // SQLite failing to read what passed quick_check: damage in a place it does not look.
            throw DiffProblem.damaged(error.message).error(path)
        }
    }

    /// The file's bytes, refusing one above `limit` before reading it.
    static func readBounded(_ url: URL, limit: Int64) throws -> Data {
        let file: LocalFile
        do {
            file = try LocalFile.openForReading(url)
        } catch let error as BuckiaError where error.code == .notFound {
            throw BuckiaError(.notFound, "There is no diff file at \(url.path.debugDescription); check the path.", operation: "read diff", path: url.path)
        } catch let error as BuckiaError where error.code == .invalidPath {
            // The open named what is there (a link, a folder, a FIFO, …).
            throw BuckiaError(.invalidPath, "The diff file " + error.message, operation: "read diff", path: url.path)
        }
        defer { file.closeAfterReading() }
        let size = try file.status().size
        guard size <= limit else { throw DiffProblem.tooLarge(size: size, limit: limit).error(url.path) }
        let data = try file.read(count: Int(size), at: 0)
        guard data.count == Int(size) else {
            throw BuckiaError(.io, "The diff file changed size while it was read; retry once it is complete.", operation: "read diff", path: url.path)
        }
        return data
    }

    static let magic = Array("SQLite format 3\0".utf8)

    /// Checks the 100-byte header against the file: SQLite's magic, a page size, rollback
    /// journal mode, UTF-8, and a page count that matches the file's length.
    static func checkHeader(_ bytes: Data, limit: Int64, path: String) throws {
        let header = [UInt8](bytes.prefix(100))
        guard header.count >= 16, Array(header[0..<16]) == magic else {
            throw DiffProblem.notSQLite.error(path)
        }
        guard header.count == 100 else { throw DiffProblem.truncated(expected: 100, actual: Int64(bytes.count)).error(path) }
        func u32(_ offset: Int) -> UInt32 { header[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        let rawPageSize = UInt32(header[16]) << 8 | UInt32(header[17])
        let pageSize = Int64(rawPageSize == 1 ? 65536 : rawPageSize)
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { throw DiffProblem.damaged("page size \(pageSize)").error(path) }
        guard header[18] != 2, header[19] != 2 else { throw DiffProblem.walMode.error(path) }
        guard header[18] == 1, header[19] == 1 else { throw DiffProblem.damaged("file format \(header[18]).\(header[19])").error(path) }
        let encoding = u32(56)
        guard encoding == 1 || encoding == 0 else { throw DiffProblem.notUTF8.error(path) }
        let size = Int64(bytes.count)
        let pages = Int64(u32(28))
        if pages > 0, u32(92) == u32(24) {
            let expected = pages * pageSize
            guard expected <= limit else { throw DiffProblem.tooLarge(size: expected, limit: limit).error(path) }
            guard expected <= size else { throw DiffProblem.truncated(expected: expected, actual: size).error(path) }
            guard expected == size else { throw DiffProblem.damaged("\(size - expected) bytes after the last page").error(path) }
        } else {
            guard size % pageSize == 0 else { throw DiffProblem.truncated(expected: (size / pageSize + 1) * pageSize, actual: size).error(path) }
        }
    }

    static func read(_ connection: SQLiteConnection, url: URL, size: Int64, now: Date, futureTolerance: Duration, verifyHash: Bool) throws -> OpenedDiff {
        let path = url.path
        let problems = try connection.quickCheck()
        guard problems.isEmpty else { throw DiffProblem.damaged(problems.prefix(3).joined(separator: "; ")).error(path) }

        // The manifest and the table list, read before the schema check so it knows the data
        // tables' names; nothing here reads a table the format does not define.
        let objects = try connection.query("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema") {
            (type: $0.string(0) ?? "", name: $0.string(1) ?? "", table: $0.string(2) ?? "", sql: $0.string(3) ?? "")
        }
        let fixed = [DiffFormat.manifestTable, DiffFormat.tablesTable, DiffFormat.columnsTable]
        for table in fixed where !objects.contains(where: { $0.type == "table" && $0.name == table }) {
            throw DiffProblem.malformedManifest("the table \(table) is missing").error(path)
        }
        let manifest = try readManifest(connection, path: path)
        let tables = try readTables(connection, path: path)
        var allowed = Set(fixed)
        // The one optional table: a signed diff's signature.
        let signed = objects.contains { $0.type == "table" && $0.name == DiffSignature.table }
        if signed { allowed.insert(DiffSignature.table) }
        for (id, _) in tables {
            allowed.insert(DiffFormat.upsertTable(id))
            allowed.insert(DiffFormat.deleteTable(id))
        }
        for object in objects {
            // An automatic index has no SQL text; a table is a plain CREATE TABLE (not virtual).
            let isAutomaticIndex = object.type == "index" && object.name.hasPrefix("sqlite_autoindex_") && allowed.contains(object.table) && object.sql.isEmpty
            let isTable = object.type == "table" && allowed.contains(object.name) && object.sql.uppercased().hasPrefix("CREATE TABLE")
            guard isTable || isAutomaticIndex else {
                throw DiffProblem.unexpectedObject(type: object.type, name: object.name).error(path)
            }
            guard !object.sql.contains(";") else { throw DiffProblem.schemaTextWithTrailingStatement(object.name).error(path) }
        }
        // Read once every object is known to be a plain table.
        let signature = try DiffSignature.read(connection, present: signed, path: path)

        // The name, the date.
        let stem = url.deletingPathExtension().lastPathComponent
        guard stem == manifest.id.description, url.pathExtension == DiffFormat.fileExtension else {
            throw DiffProblem.nameMismatch(file: url.lastPathComponent, ksuid: manifest.id.description).error(path)
        }
        guard manifest.id.date.timeIntervalSince(now) <= TimeInterval(futureTolerance.components.seconds) else {
            throw DiffProblem.fromTheFuture(manifest.id.description).error(path)
        }

        // Row shapes and counts.
        var summaries: [DiffTableSummary] = []
        for (id, definition) in tables {
            let upsertColumns = try dataColumns(connection, DiffFormat.upsertTable(id))
            let deleteColumns = try dataColumns(connection, DiffFormat.deleteTable(id))
            let keys = definition.primaryKey.count
            guard upsertColumns == (0..<definition.columns.count).map({ "c\($0)" }) else {
                throw DiffProblem.rowShapeMismatch("\(DiffFormat.upsertTable(id)) has the columns \(upsertColumns), not c0 to c\(definition.columns.count - 1)").error(path)
            }
            guard deleteColumns == (1...keys).map({ "k\($0)" }) else {
                throw DiffProblem.rowShapeMismatch("\(DiffFormat.deleteTable(id)) has the columns \(deleteColumns), not k1 to k\(keys)").error(path)
            }
            // Rows are read in rowid order: a WITHOUT ROWID data table has none.
            for data in [DiffFormat.upsertTable(id), DiffFormat.deleteTable(id)] {
                let withoutRowid = try connection.query("SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", [.text(data)]) { $0.int64(0) }.first ?? 0
                guard withoutRowid == 0 else { throw DiffProblem.rowShapeMismatch("\(data) is a WITHOUT ROWID table").error(path) }
            }
            let upserts = try connection.query("SELECT count(*) FROM \(DiffFormat.upsertTable(id))") { Int($0.int64(0)) }.first ?? 0
            let deletes = try connection.query("SELECT count(*) FROM \(DiffFormat.deleteTable(id))") { Int($0.int64(0)) }.first ?? 0
            summaries.append(DiffTableSummary(definition: definition, upserts: upserts, deletes: deletes))
        }

        if verifyHash {
            let hash = try DiffHash.compute(
                connection, manifest: (manifest.formatVersion, manifest.id.description, manifest.sender, manifest.createdAtSeconds),
                tables: tables)
            guard hash == manifest.payloadSHA256 else { throw DiffProblem.payloadHashMismatch.error(path) }
        }
        return OpenedDiff(
            connection: connection, summary: DiffSummary(manifest: manifest, tables: summaries, fileSize: size, signature: signature), tableIds: tables.map(\.id),
            url: url)
    }

    static func readManifest(_ connection: SQLiteConnection, path: String) throws -> DiffManifest {
        let rows = try connection.query("SELECT format_version, ksuid, sender, created_at, payload_sha256 FROM buckia_manifest") { row in
            (row.value(0), row.value(1), row.value(2), row.value(3), row.value(4))
        }
        guard rows.count == 1, let row = rows.first else { throw DiffProblem.malformedManifest("it has \(rows.count) rows, not one").error(path) }
        guard case .integer(let version) = row.0 else { throw DiffProblem.malformedManifest("format_version is not an integer").error(path) }
        guard version == DiffFormat.version else { throw DiffProblem.unsupportedFormat(version).error(path) }
        guard case .text(let text) = row.1, let id = KSUID(text) else { throw DiffProblem.malformedManifest("ksuid is not a KSUID").error(path) }
        guard case .text(let sender) = row.2, !sender.isEmpty, sender.utf8.count <= 256, !sender.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw DiffProblem.malformedManifest("sender is not a user id").error(path)
        }
        // Unix seconds from 1970 to about the year 36812: a time, not a number that would
        // overflow on its way through a Date.
        guard case .integer(let created) = row.3, (0...(1 << 40)).contains(created) else {
            throw DiffProblem.malformedManifest("created_at is not a time in Unix seconds").error(path)
        }
        guard case .text(let sha) = row.4, Hex.isDigest(sha, length: 32) else {
            throw DiffProblem.malformedManifest("payload_sha256 is not 64 lowercase hex digits").error(path)
        }
        return DiffManifest(formatVersion: version, id: id, sender: sender, createdAtSeconds: created, payloadSHA256: sha)
    }

    static func readTables(_ connection: SQLiteConnection, path: String) throws -> [(id: Int64, definition: TableDefinition)] {
        let tables = try connection.query("SELECT id, name FROM buckia_tables ORDER BY id") { (id: $0.value(0), name: $0.value(1)) }
        guard tables.count <= 1000 else { throw DiffProblem.malformedManifest("it lists \(tables.count) tables").error(path) }
        var result: [(id: Int64, definition: TableDefinition)] = []
        var names = Set<String>()
        for table in tables {
            guard case .integer(let id) = table.id, id > 0, case .text(let name) = table.name else {
                throw DiffProblem.malformedManifest("buckia_tables has a row that is not a positive id and a name").error(path)
            }
            guard DiffRules.isPlainIdentifier(name), !DiffRules.isReserved(name) else { throw DiffProblem.forbiddenName(name).error(path) }
            guard names.insert(name.lowercased()).inserted else { throw DiffProblem.malformedDefinition("the table \(name) is listed twice").error(path) }
            var columns: [ColumnDefinition] = []
            var position: Int64 = 0
            try connection.forEachRow(
                "SELECT position, name, declared_type, not_null, has_default, default_value, primary_key FROM buckia_columns WHERE table_id = ? ORDER BY position", [.integer(id)]
            ) { row in
                guard case .integer(let at) = row.value(0), at == position, case .text(let column) = row.value(1), case .text(let type) = row.value(2),
                    case .integer(let notNull) = row.value(3), case .integer(let hasDefault) = row.value(4), case .integer(let key) = row.value(6),
                    (0...1).contains(notNull), (0...1).contains(hasDefault), (0...2000).contains(key)
                else { throw DiffProblem.malformedDefinition("column \(position) of \(name) is not well formed").error(path) }
                // Spelled out: SQLiteValue is nil-literal expressible, so a bare `nil` here would be SQL NULL.
                let defaultValue: SQLiteValue? = hasDefault == 1 ? .some(row.value(5)) : .none
                columns.append(ColumnDefinition(column, type: type, notNull: notNull == 1, default: defaultValue, primaryKey: Int(key)))
                position += 1
                return columns.count <= 2000
            }
            let definition = TableDefinition(name, columns: columns)
            do {
                try DiffRules.check(definition)
            } catch let error as BuckiaError {
                throw (error.cause as? DiffProblem ?? .malformedDefinition(error.message)).error(path)
            }
            result.append((id, definition))
        }
        let strays = try connection.query("SELECT count(*) FROM buckia_columns WHERE table_id NOT IN (SELECT id FROM buckia_tables)") { $0.int64(0) }.first ?? 0
        guard strays == 0 else { throw DiffProblem.malformedDefinition("\(strays) columns belong to no table").error(path) }
        return result
    }

    static func dataColumns(_ connection: SQLiteConnection, _ table: String) throws -> [String] {
        try connection.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]) { $0.string(0) ?? "" }
    }
}
