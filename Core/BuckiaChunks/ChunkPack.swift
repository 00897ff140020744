import BuckiaCore
import Foundation

/// What a pack export or import moved.
public struct ChunkPackSummary: Hashable, Sendable, Codable {
    /// How many chunks the pack holds.
    public var chunkCount: Int
    /// Their bytes, before any transform.
    public var chunkBytes: Int64
    /// The pack file's size.
    public var packBytes: Int64
}

/// One file holding a set of chunks, to move them between stores or machines.
///
/// The format (version 1), all integers little-endian:
///
///     "BUCKIAPK" 0x01 0x00 0x00 0x00
///     per chunk: 0x01, algorithm (1 SHA-256, 2 SHA-1), digest, UInt32 length, bytes
///     end:       0x00, UInt64 chunk count, SHA-256 of every byte before it
///
/// Chunks are kept as their plain bytes, so a pack opens in any store whatever its decorators.
/// Every chunk is checked against its digest and the whole file against the trailer before
/// anything is stored: a truncated or altered pack stores nothing.
public enum ChunkPack {
    static let magic: [UInt8] = Array("BUCKIAPK".utf8) + [1, 0, 0, 0]

    static func code(_ algorithm: HashAlgorithm) -> UInt8 { algorithm == .sha1 ? 2 : 1 }
    static func algorithm(_ code: UInt8) -> HashAlgorithm? { code == 1 ? .sha256 : code == 2 ? .sha1 : nil }

    /// Writes `identifiers` from `storage` into a pack at `url`, atomically.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` naming a chunk the store does not hold;
    ///   ``BuckiaError/Code/checksumMismatch`` when one it holds is damaged.
    public static func export(_ identifiers: [ChunkIdentifier], from storage: some ChunkStorageComposable, to url: URL) async throws -> ChunkPackSummary {
        var seen = Set<ChunkIdentifier>()
        let unique = identifiers.filter { seen.insert($0).inserted }
        // Read first (the store is async), then write the file in one synchronous pass; one
        // chunk is in memory at a time, as the file is built piece by piece.
        try LocalFile.checkReplaceable(url.path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(Temporaries.makeName())
        // Locked while it is written (a sweep of the folder leaves it alone), removed on failure.
        let handle = try LocalFile.createLockedTemporary(temporary)
        var renamed = false
        defer {
            // A failed export: its temporary is removed (the descriptor closes with the handle).
            if !renamed { unlink(temporary.path) }
        }
        let hasher = try DigestHasher(.sha256)
        var total: Int64 = 0
        var packBytes: Int64 = 0
        func emit(_ bytes: some DataProtocol) throws {
            hasher.update(bytes)
            try handle.write(Data(bytes))
            packBytes += Int64(bytes.count)
        }
        try emit(magic)
        for identifier in unique {
            guard let data = try await storage.readChunk(identifier) else {
                throw BuckiaError(.notFound, "The store does not hold chunk \(identifier), so it cannot be exported.", operation: "export chunks", path: identifier.id)
            }
            try identifier.verify(data, operation: "export chunks")
            guard data.count <= ChunkPath.maximumChunkSize else {
                throw BuckiaError(.corrupt, "Chunk \(identifier) is \(data.count) bytes, more than a pack holds (64 MiB).", operation: "export chunks", path: identifier.id)
            }
            guard let digest = Hex.decode(identifier.id) else { continue }
            try emit([1, code(identifier.algorithm)] + digest + ChunkEnvelope.uint64(UInt64(data.count)).prefix(4))
            try emit(data)
            total += Int64(data.count)
        }
        try emit([0] + ChunkEnvelope.uint64(UInt64(unique.count)))
        let trailer = hasher.finalize().bytes
        try handle.write(Data(trailer))
        packBytes += Int64(trailer.count)
        try await handle.syncOffThePool()
        try LocalFile.checkReplaceable(url.path)
        if rename(temporary.path, url.path) != 0 { throw BuckiaError.posix(errno, operation: "export chunks", path: url.path) }
        renamed = true
        try handle.close()
        return ChunkPackSummary(chunkCount: unique.count, chunkBytes: total, packBytes: packBytes)
    }

    /// Checks the pack at `url` whole, then stores its chunks in `storage`.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` for a truncated, altered or foreign file, with
    ///   nothing stored.
    public static func `import`(from url: URL, into storage: some ChunkStorageComposable) async throws -> ChunkPackSummary {
        _ = try await read(url) { _, _ in }
        // Checked whole; now stored chunk by chunk, each checked again as it is written (the
        // file could change between the passes, so nothing unchecked is ever stored).
        return try await read(url) { identifier, data in try await storage.writeChunk(data, identifier: identifier) }
    }

    /// Reads and checks the whole pack, handing each verified chunk to `body`.
    static func read(_ url: URL, _ body: (ChunkIdentifier, Data) async throws -> Void) async throws -> ChunkPackSummary {
        let entries = try PackEntries(url)
        while let (identifier, data) = try entries.next() { try await body(identifier, data) }
        return try entries.finish()
    }

    /// Reads and checks the whole pack at `url` and stores nothing: what an import checks
    /// before it stores a chunk (the `chunk-pack` fuzz target drives it).
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` for a truncated, altered or foreign file.
    package static func check(_ url: URL) throws -> ChunkPackSummary {
        let entries = try PackEntries(url)
        while try entries.next() != nil {}
        return try entries.finish()
    }
}

/// A pack's chunks one at a time, each checked against its digest, then the end checked
/// against the count and the trailer: the one reading of the format, for imports and checks.
final class PackEntries {
    private let reader: PackReader
    private var count = 0
    private var total: Int64 = 0
    private var ended = false

    init(_ url: URL) throws {
        reader = try PackReader(url)
        let header = try reader.bytes(ChunkPack.magic.count, what: "its header")
        guard header == ChunkPack.magic else {
            throw BuckiaError(.corrupt, "\(url.lastPathComponent.debugDescription) is not a Buckia chunk pack (version 1).", operation: "import chunks", path: url.path)
        }
    }

    /// The next chunk, verified; nil at the end mark.
    func next() throws -> (ChunkIdentifier, Data)? {
        guard !ended else { return nil }
        let tag = try reader.bytes(1, what: "an entry")[0]
        if tag == 0 {
            ended = true
            return nil
        }
        guard tag == 1 else { throw reader.corrupt("an entry starts with unknown tag \(tag)") }
        guard let algorithm = ChunkPack.algorithm(try reader.bytes(1, what: "an entry")[0]) else { throw reader.corrupt("an entry names an unknown hash algorithm") }
        let digest = try reader.bytes(algorithm.byteCount, what: "a chunk's digest")
        let lengthBytes = try reader.bytes(4, what: "a chunk's length")
        let length = lengthBytes.enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        guard length <= ChunkPath.maximumChunkSize else { throw reader.corrupt("a chunk claims \(length) bytes, more than any chunk") }
        let data = Data(try reader.bytes(length, what: "a chunk's bytes"))
        let identifier = try ChunkIdentifier(digest: Digest(bytes: digest), algorithm: algorithm)
        guard identifier.matches(data) else { throw reader.corrupt("chunk \(identifier) does not match its digest") }
        count += 1
        total += Int64(length)
        return (identifier, data)
    }

    /// Checks the end: the declared count, the checksum trailer, nothing after it. Call once
    /// ``next()`` has returned nil.
    func finish() throws -> ChunkPackSummary {
        guard ended else { throw reader.corrupt("it was not read to its end mark") }
        let declared = ChunkEnvelope.readUInt64(Data(try reader.bytes(8, what: "the chunk count")), at: 0)
        let expected = reader.digest()
        let trailer = try reader.bytes(32, what: "the checksum trailer", hashing: false)
        guard declared == UInt64(count) else { throw reader.corrupt("it says it holds \(declared) chunks and holds \(count)") }
        guard trailer == expected.bytes else { throw reader.corrupt("its checksum does not match its contents") }
        guard reader.atEnd else { throw reader.corrupt("bytes follow its trailer") }
        return ChunkPackSummary(chunkCount: count, chunkBytes: total, packBytes: reader.offset)
    }
}

/// Sequential reads of a pack with a running SHA-256, failing with a clear message at the end
/// of a truncated file.
final class PackReader {
    private let file: FileReader
    private let size: Int64
    private let hasher: DigestHasher
    private(set) var offset: Int64 = 0
    private let url: URL

    init(_ url: URL) throws {
        file = try FileReader(url)
        size = try file.size()
        hasher = try DigestHasher(.sha256)
        self.url = url
    }

    var atEnd: Bool { offset == size }

    func bytes(_ count: Int, what: String, hashing: Bool = true) throws -> [UInt8] {
        guard Int64(count) <= size - offset else {
            throw BuckiaError(
                .corrupt, "The pack \(url.lastPathComponent.debugDescription) is truncated: it ends at byte \(size) inside \(what). Export it again.",
                operation: "import chunks", path: url.path)
        }
        var buffer = [UInt8](repeating: 0, count: count)
        let read = try buffer.withUnsafeMutableBytes { try file.read(into: $0, at: offset) }
        guard read == count else { throw corrupt("it shrank while being read") }
        offset += Int64(count)
        if hashing { hasher.update(buffer) }
        return buffer
    }

    /// The SHA-256 of everything read so far; call once, before reading the trailer.
    func digest() -> Digest { hasher.finalize() }

    func corrupt(_ what: String) -> BuckiaError {
        BuckiaError(.corrupt, "The pack \(url.lastPathComponent.debugDescription) is damaged: \(what). Export it again.", operation: "import chunks", path: url.path)
    }
}

/// Pack export and import for any composable store: what its `export` and `import` give.
public struct ChunkPackTransfer<Storage: ChunkStorageComposable>: ChunkStorageExport, ChunkStorageImport {
    private let storage: Storage

    /// Moves packs in and out of `storage`.
    public init(storage: Storage) { self.storage = storage }

    public func exportChunks(_ identifiers: [ChunkIdentifier], to url: URL) async throws -> ChunkPackSummary {
        try await ChunkPack.export(identifiers, from: storage, to: url)
    }

    public func importChunks(from url: URL) async throws -> ChunkPackSummary {
        try await ChunkPack.import(from: url, into: storage)
    }
}
