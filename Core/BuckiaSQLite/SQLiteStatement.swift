import BuckiaCore
import CSQLite
import Foundation

/// A prepared statement: compiled once, bound and stepped many times.
///
/// Not `Sendable`: it belongs to its connection, which belongs to one task or actor.
public final class SQLiteStatement {
    let handle: OpaquePointer
    unowned let connection: SQLiteConnection
    /// The SQL text, for error messages.
    public let sql: String
    var inUse = false

    init(connection: SQLiteConnection, sql: String) throws {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else {
            throw connection.error(status, operation: "prepare", sql: sql)
        }
        self.handle = statement
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `values` to the parameters `?1…?n`, replacing earlier bindings.
    public func bind(_ values: [SQLiteValue]) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw BuckiaError(
                .invalidConfiguration, "The statement takes \(expected) parameters but \(values.count) were bound.",
                operation: "bind", path: sql)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(handle, index)
            case .integer(let number): status = sqlite3_bind_int64(handle, index, number)
            case .real(let number): status = sqlite3_bind_double(handle, index, number)
            case .text(let text):
                // From the string's own bytes, with their length: passing the `String` made a
                // NUL-terminated copy of it for every value bound (7 % of a first sync's user time).
                var text = text
                status = text.withUTF8 { bytes in
                    // A null pointer would bind NULL; empty text is bound as empty text.
                    guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_text(handle, index, "", 0, SQLiteStatement.transient) }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text64(handle, index, $0, sqlite3_uint64(bytes.count), SQLiteStatement.transient, UInt8(SQLITE_UTF8))
                    }
                }
            case .blob(let data):
                if data.isEmpty {
                    // A nil base address would bind NULL; an empty blob is a zero-length blob.
                    status = sqlite3_bind_zeroblob(handle, index, 0)
                } else {
                    status = data.withUnsafeBytes { sqlite3_bind_blob64(handle, index, $0.baseAddress, sqlite3_uint64($0.count), SQLiteStatement.transient) }
                }
            }
            guard status == SQLITE_OK else { throw connection.error(status, operation: "bind", sql: sql) }
        }
    }

    /// Binds parameter `index` (from 1) to column `column` of `row`, a row of another
    /// statement, as SQLite holds the value (`sqlite3_bind_value`): every storage class kept,
    /// no Swift value made. For copying rows between databases.
    public func bind(_ index: Int, column: Int, of row: SQLiteRow) throws {
        let status = sqlite3_bind_value(handle, Int32(index), sqlite3_column_value(row.statement.handle, Int32(column)))
        guard status == SQLITE_OK else { throw connection.error(status, operation: "bind", sql: sql) }
    }

    /// Runs the statement to its end with the values bound so far, then resets it (keeping
    /// the bindings until the next bind).
    public func run() throws {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Advances to the next row; false when the statement is done.
    public func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let status:
            sqlite3_reset(handle)
            throw connection.error(status, operation: "step", sql: sql)
        }
    }

    /// Returns the statement to its initial state, keeping it compiled.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// The current row's columns.
    public var row: SQLiteRow { SQLiteRow(statement: self) }

    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// The columns of the row a statement is on. Valid only until the statement steps again.
public struct SQLiteRow {
    let statement: SQLiteStatement

    /// The number of columns.
    public var count: Int { Int(sqlite3_column_count(statement.handle)) }

    /// Whether column `index` (from 0) is NULL.
    public func isNull(_ index: Int) -> Bool {
        sqlite3_column_type(statement.handle, Int32(index)) == SQLITE_NULL
    }

    /// Column `index` as an integer (NULL reads as 0).
    public func int64(_ index: Int) -> Int64 { sqlite3_column_int64(statement.handle, Int32(index)) }

    /// Column `index` as a floating-point number (NULL reads as 0).
    public func double(_ index: Int) -> Double { sqlite3_column_double(statement.handle, Int32(index)) }

    /// Column `index` as text, or nil when NULL.
    public func string(_ index: Int) -> String? {
        guard let text = sqlite3_column_text(statement.handle, Int32(index)) else { return nil }
        let count = Int(sqlite3_column_bytes(statement.handle, Int32(index)))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes; nil when NULL, empty for a zero-length blob.
    public func data(_ index: Int) -> Data? {
        let column = Int32(index)
        if sqlite3_column_type(statement.handle, column) == SQLITE_NULL { return nil }
        guard let bytes = sqlite3_column_blob(statement.handle, column) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(statement.handle, column)))
    }

    /// Runs `body` with column `index`'s bytes where SQLite holds them (text as UTF-8, a blob
    /// as is; empty for NULL), without copying: to hash or check them before, or instead of,
    /// making a `String` or `Data`. The bytes are valid only inside `body`.
    public func withBytes<Result>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        let column = Int32(index)
        // sqlite3_column_bytes after sqlite3_column_blob: the order SQLite documents as safe.
        let start = sqlite3_column_blob(statement.handle, column)
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        return try body(UnsafeRawBufferPointer(start: start, count: start == nil ? 0 : count))
    }

    /// Column `index`'s bytes where SQLite holds them (text as UTF-8, a blob as is; empty
    /// for NULL), valid until the statement steps on or is reset. Not generic, unlike
    /// ``withBytes(_:_:)``: a reader of many rows across modules pays no unspecialised call a
    /// column (460 instructions each, reading a sync state store).
    package func unsafeBytes(_ index: Int) -> UnsafeBufferPointer<UInt8> {
        let column = Int32(index)
        // sqlite3_column_bytes after sqlite3_column_blob: the order SQLite documents as safe.
        let start = sqlite3_column_blob(statement.handle, column)
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        guard let start, count > 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: count)
    }

    /// SQLite's storage classes.
    public enum StorageClass: Sendable {
        case null, integer, real, text, blob
    }

    /// The storage class of column `index`'s value.
    public func storageClass(_ index: Int) -> StorageClass {
        switch sqlite3_column_type(statement.handle, Int32(index)) {
        case SQLITE_INTEGER: .integer
        case SQLITE_FLOAT: .real
        case SQLITE_TEXT: .text
        case SQLITE_BLOB: .blob
        default: .null
        }
    }

    /// Column `index` as a ``SQLiteValue``.
    public func value(_ index: Int) -> SQLiteValue {
        switch sqlite3_column_type(statement.handle, Int32(index)) {
        case SQLITE_INTEGER: .integer(int64(index))
        case SQLITE_FLOAT: .real(double(index))
        case SQLITE_TEXT: string(index).map(SQLiteValue.text) ?? .null
        case SQLITE_BLOB: .blob(data(index) ?? Data())
        default: .null
        }
    }
}
