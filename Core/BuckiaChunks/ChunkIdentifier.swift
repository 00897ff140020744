import BuckiaCore
import Foundation

/// The address of a chunk: the hash of its content, with the algorithm that made it.
///
/// Content addressing is what makes chunks shareable: the same bytes always have the same
/// identifier, so a store keeps them once however many files contain them. The identifier is
/// lowercase hexadecimal of the right length for its algorithm, checked when it is made, so a
/// path built from one can never leave the store (no `/`, no `..`).
public struct ChunkIdentifier: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    /// The digest in lowercase hexadecimal.
    public let id: String
    /// The algorithm that made ``id``.
    public let algorithm: HashAlgorithm

    /// The algorithms a chunk may be addressed by: collision-resistant ones only.
    public static let supportedAlgorithms: [HashAlgorithm] = [.sha256, .sha1]

    /// Wraps a hexadecimal digest.
    ///
    /// - Parameter algorithm: The algorithm that made `id`; nil infers it from the length
    ///   (64 digits SHA-256, 40 SHA-1).
    /// - Throws: ``BuckiaError/Code/invalidPath`` when `id` is not lowercase hexadecimal of the
    ///   algorithm's length, or the algorithm is not collision-resistant.
    public init(id: String, algorithm: HashAlgorithm? = nil) throws {
        let inferred = algorithm ?? ChunkIdentifier.supportedAlgorithms.first { $0.byteCount * 2 == id.utf8.count }
        guard let inferred, ChunkIdentifier.supportedAlgorithms.contains(inferred) else {
            throw BuckiaError(
                .invalidPath,
                "\(String(id.prefix(80)).debugDescription) is not a chunk identifier: use 64 lowercase hex digits (SHA-256) or 40 (SHA-1).",
                operation: "parse chunk identifier")
        }
        guard Hex.isDigest(id, length: inferred.byteCount) else {
            throw BuckiaError(
                .invalidPath,
                "\(String(id.prefix(80)).debugDescription) is not a \(inferred) chunk identifier: it must be \(inferred.byteCount * 2) lowercase hex digits.",
                operation: "parse chunk identifier")
        }
        self.id = id
        self.algorithm = inferred
    }

    /// Wraps a digest made by `algorithm`.
    public init(digest: Digest, algorithm: HashAlgorithm) throws {
        try self.init(id: digest.hex, algorithm: algorithm)
    }

    private init(trusted id: String, algorithm: HashAlgorithm) {
        self.id = id
        self.algorithm = algorithm
    }

    /// The identifier of `content`.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for an algorithm chunks cannot be
    ///   addressed by (MD5, CRC-32C).
    public static func of<Bytes: DataProtocol>(_ content: Bytes, algorithm: HashAlgorithm = .sha256) throws -> ChunkIdentifier {
        try checkSupported(algorithm)
        return ChunkIdentifier(trusted: try Hashing.digest(content, algorithm).hex, algorithm: algorithm)
    }

    /// The identifier of the bytes in `buffer`.
    public static func of(_ buffer: UnsafeRawBufferPointer, algorithm: HashAlgorithm = .sha256) throws -> ChunkIdentifier {
        try checkSupported(algorithm)
        let hasher = try DigestHasher(algorithm)
        hasher.update(buffer)
        return ChunkIdentifier(trusted: hasher.finalize().hex, algorithm: algorithm)
    }

    /// Throws unless `algorithm` may address chunks.
    public static func checkSupported(_ algorithm: HashAlgorithm) throws {
        guard supportedAlgorithms.contains(algorithm) else {
            throw BuckiaError(
                .invalidConfiguration,
                "Chunks cannot be addressed by \(algorithm): it is not collision-resistant. Use sha256 (the default) or sha1.",
                operation: "hash chunk")
        }
    }

    /// Whether `content` is the chunk this identifier names.
    public func matches<Bytes: DataProtocol>(_ content: Bytes) -> Bool {
        (try? Hashing.digest(content, algorithm).hex) == id
    }

    /// Throws ``BuckiaError/Code/checksumMismatch`` unless `content` hashes to this identifier.
    public func verify<Bytes: DataProtocol>(_ content: Bytes, operation: String, path: String? = nil) throws {
        guard matches(content) else {
            throw BuckiaError(
                .checksumMismatch,
                "The chunk's bytes do not hash to its identifier \(id): it is damaged. Restore it from another copy or store the file again.",
                operation: operation, path: path ?? id)
        }
    }

    public var description: String { id }

    public static func < (lhs: ChunkIdentifier, rhs: ChunkIdentifier) -> Bool { lhs.id < rhs.id }

    /// Encoded as the bare hexadecimal digest; the algorithm follows from its length.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(id: text)
        } catch let error as BuckiaError {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(id)
    }
}

/// What is known about a stored chunk besides its bytes.
///
/// Retrievals pass it down as a chunk is written; each transform on the way names itself in
/// ``transforms``, so a reader can tell how the stored bytes were made. Stores that keep
/// metadata (providers with user metadata) return it from
/// ``ChunkStorageRetrieval/readMetadata(at:)``.
public struct ChunkMetadata: Hashable, Sendable, Codable {
    /// The chunk's size in bytes before any transform.
    public var size: Int
    /// The algorithm the chunk's identifier was made with.
    public var hashAlgorithm: HashAlgorithm
    /// The media type of the content the chunk came from, when known.
    public var contentType: String?
    /// The transforms applied, outermost first (`zlib`, `stored`, `aes-256-gcm`, `sha256-envelope`).
    public var transforms: [String]
    /// When the chunk was written.
    public var created: Date

    /// Creates metadata.
    public init(size: Int, hashAlgorithm: HashAlgorithm = .sha256, contentType: String? = nil, transforms: [String] = [], created: Date = Date()) {
        self.size = size
        self.hashAlgorithm = hashAlgorithm
        self.contentType = contentType
        self.transforms = transforms
        self.created = created
    }

    /// This metadata with `transform` appended.
    public func adding(_ transform: String) -> ChunkMetadata {
        var copy = self
        copy.transforms.append(transform)
        return copy
    }
}
