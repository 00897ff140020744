/// A name that is a string on the wire and a type in code.
///
/// Provider types, engine types, capabilities and checksum algorithms all share this shape:
/// built-ins are static constants, and a third party declares its own with a string literal
/// without touching Buckia (`extension ProviderType { static let ftp: Self = "ftp" }`).
public protocol StringIdentifier: RawRepresentable, Hashable, Comparable, Codable, Sendable,
    ExpressibleByStringLiteral, CustomStringConvertible where RawValue == String
{
    init(rawValue: String)
}

extension StringIdentifier {
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The name a storage provider registers under, and that configurations select it by.
public struct ProviderType: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Bunny Edge Storage.
    public static let bunny: ProviderType = "bunny"
    /// Backblaze B2, native API.
    public static let b2: ProviderType = "b2"
    /// Amazon S3 and every S3-compatible store.
    public static let s3: ProviderType = "s3"
    /// A directory on the local file system.
    public static let local: ProviderType = "local"
    /// A process-local store, the executable specification of the provider contract.
    public static let memory: ProviderType = "memory"
}

/// The name a key-value storage engine registers under.
public struct EngineType: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// One file per key.
    public static let disk: EngineType = "disk"
    /// One SQLite database.
    public static let sqlite: EngineType = "sqlite"
    /// Content-addressed chunks.
    public static let chunk: EngineType = "chunk"
    /// A process-local dictionary, the executable specification of the engine contract.
    public static let memory: EngineType = "memory"
}

/// A checksum algorithm a backend can report or compute.
public struct ChecksumAlgorithm: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let md5: ChecksumAlgorithm = "md5"
    public static let sha1: ChecksumAlgorithm = "sha1"
    public static let sha256: ChecksumAlgorithm = "sha256"
    public static let crc32c: ChecksumAlgorithm = "crc32c"

    /// The hash function that computes this checksum locally, when Buckia has one.
    public var hashAlgorithm: HashAlgorithm? { HashAlgorithm(rawValue: rawValue) }
}
