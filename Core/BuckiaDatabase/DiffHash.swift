import BuckiaCore
import BuckiaSQLite
import Foundation

/// The SHA-256 a diff's manifest carries: over a canonical encoding of everything else in the
/// file, so it does not depend on how SQLite laid out the pages (Docs/Database.md gives the
/// encoding for writers in other languages).
///
/// - an integer `n` is 8 bytes, big-endian;
/// - a value is a tag and its bytes: NULL `00`; INTEGER `01` + 8 bytes two's complement;
///   REAL `02` + the 8 bytes of the IEEE 754 double; TEXT `03` + length + UTF-8; BLOB `04` +
///   length + bytes;
/// - the manifest's format version, KSUID, sender and creation time, as values;
/// - the number of tables; then per table in id order: its name, its number of columns, per
///   column its name, declared type, not-null, has-default, default, primary-key position (as
///   values); then `10` before each upsert row (its values in column order) and `11` after
///   the last; then `20` before each delete row (its key values) and `21` after the last.
package struct DiffHash {
    private let hasher: DigestHasher
    private var buffer: [UInt8] = []

    package init() throws { hasher = try DigestHasher(.sha256) }

    private mutating func flushIfFull() {
        if buffer.count >= 1 << 16 {
            hasher.update(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    package mutating func byte(_ value: UInt8) { buffer.append(value) }

    package mutating func integer(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { buffer.append(contentsOf: $0) }
        flushIfFull()
    }

    package mutating func value(_ value: SQLiteValue) {
        switch value {
        case .null: buffer.append(0)
        case .integer(let number):
            buffer.append(1)
            integer(UInt64(bitPattern: number))
        case .real(let number):
            buffer.append(2)
            integer(number.bitPattern)
        case .text(let text):
            buffer.append(3)
            integer(UInt64(text.utf8.count))
            buffer.append(contentsOf: text.utf8)
        case .blob(let data):
            buffer.append(4)
            integer(UInt64(data.count))
            buffer.append(contentsOf: data)
        }
        flushIfFull()
    }

    /// Column `index` of `row`, without making a Swift value of text or blobs.
    package mutating func column(_ row: SQLiteRow, _ index: Int) {
        switch row.storageClass(index) {
        case .text, .blob:
            let tag: UInt8 = row.storageClass(index) == .text ? 3 : 4
            buffer.append(tag)
            row.withBytes(index) { bytes in
                integer(UInt64(bytes.count))
                buffer.append(contentsOf: bytes)
            }
            flushIfFull()
        default: value(row.value(index))
        }
    }

    package mutating func finalize() -> String {
        hasher.update(buffer)
        buffer.removeAll()
        return hasher.finalize().hex
    }

    /// Feeds the manifest's fields and the number of tables: what comes before the first table.
    package mutating func manifest(version: Int64, ksuid: String, sender: String, createdAt: Int64, tables: Int) {
        value(.integer(version))
        value(.text(ksuid))
        value(.text(sender))
        value(.integer(createdAt))
        integer(UInt64(tables))
    }

    /// Feeds a table's name and definition: what comes before its rows.
    package mutating func table(_ definition: TableDefinition) {
        value(.text(definition.name))
        integer(UInt64(definition.columns.count))
        for column in definition.columns {
            value(.text(column.name))
            value(.text(column.declaredType))
            value(.integer(column.notNull ? 1 : 0))
            value(.integer(column.defaultValue == nil ? 0 : 1))
            value(column.defaultValue ?? .null)
            value(.integer(Int64(column.primaryKeyPosition)))
        }
    }

    /// Feeds one row (`marker` then its first `count` columns).
    package mutating func row(_ row: SQLiteRow, count: Int, marker: UInt8) {
        byte(marker)
        for index in 0..<count { column(row, index) }
    }

    static let upsertRow: UInt8 = 0x10, upsertsEnd: UInt8 = 0x11, deleteRow: UInt8 = 0x20, deletesEnd: UInt8 = 0x21

    /// The SELECT that reads table `id`'s upsert rows in order.
    package static func upsertQuery(_ id: Int64, columns: Int) -> String {
        "SELECT \((0..<columns).map { "c\($0)" }.joined(separator: ", ")) FROM \(DiffFormat.upsertTable(id)) ORDER BY rowid"
    }

    /// The SELECT that reads table `id`'s delete rows in order.
    package static func deleteQuery(_ id: Int64, keys: Int) -> String {
        "SELECT \((1...max(keys, 1)).map { "k\($0)" }.joined(separator: ", ")) FROM \(DiffFormat.deleteTable(id)) ORDER BY rowid"
    }

    /// The hash of the diff open in `connection`.
    package static func compute(
        _ connection: SQLiteConnection, manifest: (version: Int64, ksuid: String, sender: String, createdAt: Int64), tables: [(id: Int64, definition: TableDefinition)]
    ) throws -> String {
        var hash = try DiffHash()
        hash.manifest(version: manifest.version, ksuid: manifest.ksuid, sender: manifest.sender, createdAt: manifest.createdAt, tables: tables.count)
        for (id, definition) in tables {
            hash.table(definition)
            let columns = definition.columns.count
            try connection.forEachRow(upsertQuery(id, columns: columns)) { row in
                hash.row(row, count: columns, marker: upsertRow)
                return true
            }
            hash.byte(upsertsEnd)
            let keys = definition.primaryKey.count
            try connection.forEachRow(deleteQuery(id, keys: keys)) { row in
                hash.row(row, count: keys, marker: deleteRow)
                return true
            }
            hash.byte(deletesEnd)
        }
        return hash.finalize()
    }
}
