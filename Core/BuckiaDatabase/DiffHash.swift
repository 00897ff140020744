import BuckiaCore
import BuckiaSQLite
import CSQLite
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

    /// The hash of the diff open in `connection`.
    package static func compute(
        _ connection: SQLiteConnection, manifest: (version: Int64, ksuid: String, sender: String, createdAt: Int64), tables: [(id: Int64, definition: TableDefinition)]
    ) throws -> String {
        var hash = try DiffHash()
        hash.value(.integer(manifest.version))
        hash.value(.text(manifest.ksuid))
        hash.value(.text(manifest.sender))
        hash.value(.integer(manifest.createdAt))
        hash.integer(UInt64(tables.count))
        for (id, definition) in tables {
            hash.value(.text(definition.name))
            hash.integer(UInt64(definition.columns.count))
            for column in definition.columns {
                hash.value(.text(column.name))
                hash.value(.text(column.declaredType))
                hash.value(.integer(column.notNull ? 1 : 0))
                hash.value(.integer(column.defaultValue == nil ? 0 : 1))
                hash.value(column.defaultValue ?? .null)
                hash.value(.integer(Int64(column.primaryKeyPosition)))
            }
            let columns = definition.columns.count
            try connection.forEachRow("SELECT \((0..<columns).map { "c\($0)" }.joined(separator: ", ")) FROM \(DiffFormat.upsertTable(id)) ORDER BY rowid") { row in
                hash.byte(0x10)
                for index in 0..<columns { hash.column(row, index) }
                return true
            }
            hash.byte(0x11)
            let keys = definition.primaryKey.count
            try connection.forEachRow("SELECT \((1...max(keys, 1)).map { "k\($0)" }.joined(separator: ", ")) FROM \(DiffFormat.deleteTable(id)) ORDER BY rowid") { row in
                hash.byte(0x20)
                for index in 0..<keys { hash.column(row, index) }
                return true
            }
            hash.byte(0x21)
        }
        return hash.finalize()
    }
}
