import Foundation

/// A value SQLite stores: the five storage classes.
public enum SQLiteValue: Hashable, Sendable, ExpressibleByIntegerLiteral, ExpressibleByStringLiteral,
    ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(nilLiteral: ()) { self = .null }
}

/// The result code of a failed SQLite call, kept as a ``BuckiaCore/BuckiaError/cause``.
public struct SQLiteResultCode: Error, Sendable, CustomStringConvertible {
    /// The primary result code (`SQLITE_BUSY` is 5, `SQLITE_CORRUPT` 11, …).
    public let code: Int32
    /// The extended result code, which says more (`SQLITE_BUSY_SNAPSHOT`, …).
    public let extendedCode: Int32
    /// SQLite's own message.
    public let message: String

    public var description: String { "SQLite error \(extendedCode): \(message)" }
}
