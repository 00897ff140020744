import BuckiaCore
import Foundation

/// One chunk of a file: its identifier and length.
public struct ChunkReference: Hashable, Sendable, Codable {
    /// The chunk's identifier.
    public var id: ChunkIdentifier
    /// The chunk's length in bytes.
    public var size: Int

    /// Creates a reference.
    public init(id: ChunkIdentifier, size: Int) {
        self.id = id
        self.size = size
    }
}

/// The recipe for a file stored as chunks: which chunks, in what order, cut how.
///
/// A manifest is the file's identity in a chunk store; restoring it reads each chunk, checks
/// it against its identifier and writes the file. It is JSON, so other tools can read it:
///
///     {"format":"buckia-chunk-manifest","version":1,"size":…,"hashAlgorithm":"sha256",
///      "chunker":{"algorithm":"fastcdc-2020","averageSize":65536,…},"chunks":[{"id":"…","size":…},…]}
public struct ChunkManifest: Hashable, Sendable, Codable {
    /// The format name every manifest carries.
    public static let formatName = "buckia-chunk-manifest"
    /// The largest manifest file read: about 8 million chunks' worth.
    public static let maximumEncodedSize = 1 << 30

    /// Always ``formatName``.
    public var format: String
    /// The format version, 1.
    public var version: Int
    /// The file's size: the sum of the chunks' sizes.
    public var size: Int64
    /// The algorithm every chunk's identifier was made with.
    public var hashAlgorithm: HashAlgorithm
    /// How the file was cut.
    public var chunker: ChunkerDescription
    /// The media type of the file, when known.
    public var contentType: String?
    /// When the file was stored.
    public var created: Date
    /// The chunks, in file order.
    public var chunks: [ChunkReference]
    /// The decorators the chunks were written through, outermost first (`zlib`,
    /// `aes-256-gcm`), as the tool that made the manifest recorded them, so a reader can build
    /// the same stack; nil when not recorded.
    public var transforms: [String]?

    /// Creates a manifest.
    public init(chunks: [ChunkReference], chunker: FastCDC, hashAlgorithm: HashAlgorithm = .sha256, contentType: String? = nil, created: Date = Date()) {
        format = Self.formatName
        version = 1
        size = chunks.reduce(0) { $0 + Int64($1.size) }
        self.hashAlgorithm = hashAlgorithm
        self.chunker = ChunkerDescription(fastCDC: chunker)
        self.contentType = contentType
        self.created = created
        self.chunks = chunks
    }

    /// The distinct chunks the file needs.
    public var uniqueChunks: Set<ChunkIdentifier> { Set(chunks.map(\.id)) }

    /// Checks what decoding cannot: the format, the version, and that the sizes add up.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` naming the first inconsistency.
    public func validate() throws {
        func corrupt(_ what: String) -> BuckiaError {
            BuckiaError(.corrupt, "The chunk manifest is damaged: \(what).", operation: "read manifest")
        }
        guard format == Self.formatName else { throw corrupt("its format is \(format.debugDescription), not \(Self.formatName.debugDescription)") }
        guard version == 1 else { throw corrupt("it is version \(version); this Buckia reads version 1") }
        guard chunker.algorithm == "fastcdc-2020" else { throw corrupt("it was cut by \(chunker.algorithm.debugDescription), which this Buckia does not know") }
        do {
            _ = try FastCDC(averageSize: chunker.averageSize, minimumSize: chunker.minimumSize, maximumSize: chunker.maximumSize, normalization: chunker.normalization)
        } catch let error as BuckiaError {
            throw corrupt("its chunker settings are impossible (\(error.message))")
        }
        var total: Int64 = 0
        for (index, chunk) in chunks.enumerated() {
            guard chunk.size > 0, chunk.size <= chunker.maximumSize else {
                throw corrupt("chunk \(index) is \(chunk.size) bytes, outside 1...\(chunker.maximumSize)")
            }
            guard chunk.id.algorithm == hashAlgorithm else { throw corrupt("chunk \(index) is addressed by \(chunk.id.algorithm), not \(hashAlgorithm)") }
            total += Int64(chunk.size)
        }
        guard total == size else { throw corrupt("its chunks add up to \(total) bytes, not the \(size) it declares") }
    }

    /// The manifest as JSON.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }

    /// Reads and checks a manifest.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` for anything that is not a whole, consistent
    ///   manifest.
    public static func decode(_ data: Data) throws -> ChunkManifest {
        guard data.count <= maximumEncodedSize else {
            throw BuckiaError(.corrupt, "The chunk manifest is \(data.count) bytes, more than any manifest.", operation: "read manifest")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let manifest: ChunkManifest
        do {
            manifest = try JSONValidation.decode(ChunkManifest.self, from: data, what: "The chunk manifest", decoder: decoder)
        } catch {
            throw BuckiaError(.corrupt, "This is not a readable chunk manifest: \(Self.describe(error)).", operation: "read manifest", cause: BuckiaError.wrapping(error))
        }
        try manifest.validate()
        return manifest
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): context.debugDescription
        case DecodingError.keyNotFound(let key, _): "the field \(key.stringValue.debugDescription) is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        default: "\(error)"
        }
    }
}

/// How a manifest's file was cut, as the manifest records it.
public struct ChunkerDescription: Hashable, Sendable, Codable {
    /// The algorithm; `fastcdc-2020` is the one Buckia cuts with.
    public var algorithm: String
    /// The minimum chunk size.
    public var minimumSize: Int
    /// The average chunk size the masks aim at.
    public var averageSize: Int
    /// The maximum chunk size.
    public var maximumSize: Int
    /// The normalization level.
    public var normalization: Int

    /// Describes a FastCDC chunker.
    public init(fastCDC: FastCDC) {
        algorithm = "fastcdc-2020"
        minimumSize = fastCDC.minimumSize
        averageSize = fastCDC.averageSize
        maximumSize = fastCDC.maximumSize
        normalization = fastCDC.normalization
    }
}
