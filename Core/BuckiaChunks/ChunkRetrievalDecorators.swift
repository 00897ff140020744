import BuckiaCore
import Foundation

/// The small binary headers decorators put before the bytes they pass down, so stored bytes
/// say how they were made and a reader never guesses.
enum ChunkEnvelope {
    static let compressed: [UInt8] = [0x42, 0x4B, 0x5A]  // "BKZ"
    static let encrypted: [UInt8] = [0x42, 0x4B, 0x45]  // "BKE"
    static let verified: [UInt8] = [0x42, 0x4B, 0x56]  // "BKV"

    static func hasMagic(_ data: Data, _ magic: [UInt8]) -> Bool {
        data.count >= magic.count && data.prefix(magic.count).elementsEqual(magic)
    }

    static func uint64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    static func readUInt64(_ data: Data, at offset: Int) -> UInt64 {
        let start = data.startIndex + offset
        return (0..<8).reduce(UInt64(0)) { $0 | UInt64(data[start + $1]) << (8 * UInt64($1)) }
    }

    static func damaged(_ what: String, path: String, operation: String = "read chunk") -> BuckiaError {
        BuckiaError(.corrupt, "The stored chunk is damaged: \(what). Restore it from another copy or store the file again.", operation: operation, path: path)
    }
}

/// A retrieval that wraps another and changes only some of what passes through: existence,
/// deletes, metadata and synchronization go straight to ``wrapped`` unless it says otherwise.
///
/// Conform a decorator of your own to it and write only the operations you change. A decorator
/// that changes the bytes it passes down must name itself in the metadata it passes on
/// (`metadata?.adding("my-transform")`): ``VerifiedRetrieval`` beneath it takes bytes with no
/// transform named, and of the chunk's size, to be the chunk itself.
public protocol ChunkRetrievalDecorator: ChunkStorageRetrieval {
    /// The retrieval this one wraps.
    var wrapped: any ChunkStorageRetrieval { get }
}

extension ChunkRetrievalDecorator {
    public func chunkExists(at path: String) async throws -> Bool { try await wrapped.chunkExists(at: path) }
    public func deleteChunk(at path: String) async throws { try await wrapped.deleteChunk(at: path) }
    public func readMetadata(at path: String) async throws -> ChunkMetadata? { try await wrapped.readMetadata(at: path) }
    public func synchronize() async throws { try await wrapped.synchronize() }
}

/// Compresses chunk bytes with zlib on the way down, and keeps them as they are when
/// compressing does not make them smaller (already-compressed media, encrypted bytes); the
/// stored header records which, and the size to expect back.
public struct CompressedRetrieval: ChunkRetrievalDecorator {
    public let wrapped: any ChunkStorageRetrieval
    private let level: Int32
    private let sampling: Bool

    /// How many leading bytes are deflated first, to judge whether the rest is worth it.
    public static let sampleSize = 8192

    /// The decorator's name in ``ChunkMetadata/transforms`` when it compressed.
    public static let transformName = "zlib"
    /// The name when it stored the bytes as they were.
    public static let storedTransformName = "stored"
    private static let headerSize = 12

    /// Wraps `wrapped`.
    ///
    /// - Parameters:
    ///   - level: zlib's level, 0 (store) to 9 (smallest); -1 is zlib's default.
    ///   - sampling: Deflate the first ``sampleSize`` bytes of a larger chunk at level 1 first,
    ///     and keep the chunk as it is when they do not shrink by 1/32: media, archives and
    ///     ciphertext then cost one small deflate, not a whole one (borg's `auto` mode works
    ///     the same way). A chunk whose start is incompressible and whose rest is not is
    ///     stored as it is.
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for another level.
    public init(wrapped: any ChunkStorageRetrieval, level: Int32 = -1, sampling: Bool = true) throws {
        guard (-1...9).contains(level) else {
            throw BuckiaError(.invalidConfiguration, "The compression level is \(level); use 0 to 9, or -1 for zlib's default.", path: "compression-level")
        }
        self.wrapped = wrapped
        self.level = level
        self.sampling = sampling
    }

    /// Whether deflating `data` looks worth it: its start shrinks by at least 1/32 at level 1.
    private func worthCompressing(_ data: Data) throws -> Bool {
        guard sampling, data.count > 2 * Self.sampleSize else { return true }
        let sample = data.prefix(Self.sampleSize)
        return try Zlib.compress(Data(sample), format: .zlib, level: 1).count < sample.count - sample.count / 32
    }

    public func readChunk(at path: String) async throws -> Data? {
        guard let stored = try await wrapped.readChunk(at: path) else { return nil }
        guard stored.count >= Self.headerSize, ChunkEnvelope.hasMagic(stored, ChunkEnvelope.compressed) else {
            throw ChunkEnvelope.damaged("it has no compression header (was it written without compression?)", path: path)
        }
        let kind = stored[stored.startIndex + 3]
        let size = ChunkEnvelope.readUInt64(stored, at: 4)
        let payload = stored.dropFirst(Self.headerSize)
        guard size <= UInt64(ChunkPath.maximumStoredSize) else { throw ChunkPath.tooLarge(Int64(clamping: size), path: path, operation: "read chunk") }
        switch kind {
        case 0:
            guard UInt64(payload.count) == size else { throw ChunkEnvelope.damaged("it holds \(payload.count) bytes where its header says \(size)", path: path) }
            return Data(payload)
        case 1:
            let plain: Data
            do {
                plain = try Zlib.decompress(Data(payload), format: .zlib, maximumOutput: Int64(size))
            } catch let error as BuckiaError {
                throw BuckiaError(.corrupt, "The stored chunk is damaged: its compressed bytes do not inflate (\(error.message)).", operation: "read chunk", path: path, cause: error)
            }
            guard UInt64(plain.count) == size else { throw ChunkEnvelope.damaged("it inflates to \(plain.count) bytes where its header says \(size)", path: path) }
            return plain
        default:
            throw ChunkEnvelope.damaged("its compression header names an unknown kind \(kind)", path: path)
        }
    }

    public func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws {
        let compressed = try worthCompressing(data) ? try Zlib.compress(data, format: .zlib, level: level) : nil
        let useCompressed = compressed.map { $0.count < data.count } ?? false
        var stored = Data(ChunkEnvelope.compressed + [useCompressed ? 1 : 0] + ChunkEnvelope.uint64(UInt64(data.count)))
        stored.append(useCompressed ? compressed ?? data : data)
        let transform = useCompressed ? Self.transformName : Self.storedTransformName
        try await wrapped.writeChunk(stored, at: path, metadata: metadata?.adding(transform))
    }
}

/// Encrypts chunk bytes with AES-256-GCM, a random nonce per write, the chunk's path
/// authenticated with them: a flipped bit, a chunk moved to another address or a wrong key is
/// an error, never other bytes.
///
/// The header carries a key check (the first 8 bytes of HMAC-SHA-256 of a fixed label under
/// the key), so a wrong key is told apart from damage: ``BuckiaError/Code/unauthorized`` for
/// the one, ``BuckiaError/Code/corrupt`` for the other.
public struct EncryptedRetrieval: ChunkRetrievalDecorator {
    public let wrapped: any ChunkStorageRetrieval
    private let key: [UInt8]
    private let keyCheckBytes: [UInt8]

    /// The decorator's name in ``ChunkMetadata/transforms``.
    public static let transformName = "aes-256-gcm"
    private static let headerSize = 12

    /// Wraps `wrapped`, encrypting under `key`.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` unless `key` is 32 bytes.
    public init(wrapped: any ChunkStorageRetrieval, key: [UInt8]) throws {
        guard key.count == AESGCM.keyByteCount else {
            throw BuckiaError(
                .invalidConfiguration, "A chunk encryption key is \(AESGCM.keyByteCount) bytes (64 hex digits); this one is \(key.count) bytes.",
                path: "encryption-key")
        }
        self.wrapped = wrapped
        self.key = key
        keyCheckBytes = Self.keyCheckBytes(for: key)
    }

    /// Parses a key written as 64 hexadecimal digits.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for anything else; the message
    ///   never repeats the text.
    public static func key(hex: String) throws -> [UInt8] {
        guard let bytes = Hex.decode(hex.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == AESGCM.keyByteCount else {
            throw BuckiaError(.invalidConfiguration, "A chunk encryption key is written as 64 hexadecimal digits (32 bytes).", path: "encryption-key")
        }
        return bytes
    }

    private static func keyCheckBytes(for key: [UInt8]) -> [UInt8] {
        Array(HMAC.sha256(key: key, message: Data("buckia chunk key check".utf8)).bytes.prefix(8))
    }

    /// The key's check value in hex: the first 8 bytes of HMAC-SHA-256 of a fixed label under
    /// the key. It tells keys apart and reveals nothing else about them.
    public static func keyCheck(for key: [UInt8]) -> String { Hex.encode(keyCheckBytes(for: key)) }

    private func header() -> [UInt8] { ChunkEnvelope.encrypted + [1] + keyCheckBytes }

    public func readChunk(at path: String) async throws -> Data? {
        guard let stored = try await wrapped.readChunk(at: path) else { return nil }
        let minimum = Self.headerSize + AESGCM.nonceByteCount + AESGCM.tagByteCount
        guard stored.count >= minimum, ChunkEnvelope.hasMagic(stored, ChunkEnvelope.encrypted) else {
            throw ChunkEnvelope.damaged("it has no encryption header (was it written without encryption?)", path: path)
        }
        let bytes = [UInt8](stored)
        guard bytes[3] == 1 else { throw ChunkEnvelope.damaged("its encryption header has unknown version \(bytes[3])", path: path) }
        guard HMAC.constantTimeEquals(Array(bytes[4..<12]), keyCheckBytes) else {
            throw BuckiaError(
                .unauthorized, "The chunk was encrypted with a different key; use the key it was stored with.", operation: "decrypt chunk", path: path)
        }
        let nonce = Array(bytes[12..<(12 + AESGCM.nonceByteCount)])
        let ciphertext = Array(bytes[(12 + AESGCM.nonceByteCount)..<(bytes.count - AESGCM.tagByteCount)])
        let tag = Array(bytes[(bytes.count - AESGCM.tagByteCount)...])
        do {
            return try AESGCM.open(AESGCM.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag), key: key, authenticating: header() + Array(path.utf8))
        } catch let error as BuckiaError where error.code == .corrupt {
            throw BuckiaError(
                .corrupt, "The encrypted chunk failed authentication: its bytes were altered or it was moved from another address.",
                operation: "decrypt chunk", path: path, cause: error)
        }
    }

    public func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws {
        let header = header()
        let box = try AESGCM.seal(data, key: key, authenticating: header + Array(path.utf8))
        var stored = Data(header)
        stored.append(box.combined)
        try await wrapped.writeChunk(stored, at: path, metadata: metadata?.adding(Self.transformName))
    }
}

/// Re-hashes chunk bytes on every read and throws ``BuckiaError/Code/checksumMismatch``
/// rather than return bytes that are not the chunk.
///
/// Outermost (or with only caching above it), it checks the bytes against the identifier in
/// the path, and stores them as they are. Beneath a transform, where the bytes it sees are
/// compressed or encrypted, it keeps their SHA-256 in a header and checks that instead: it
/// works in any position.
///
/// It detects damage, not forgery: anyone who can write to the store can write a header that
/// matches. Against a store that may lie on purpose, encrypt (``EncryptedRetrieval``
/// authenticates every chunk under the key), and read files through ``ChunkedFileStore``,
/// which checks every chunk against its identifier whatever the stack.
public struct VerifiedRetrieval: ChunkRetrievalDecorator {
    public let wrapped: any ChunkStorageRetrieval
    private let organization: any ChunkStorageOrganization

    /// The decorator's name in ``ChunkMetadata/transforms`` when it added a header.
    public static let transformName = "sha256-envelope"
    private static let headerSize = 36

    /// Wraps `wrapped`; `organization` turns a path back into the identifier to check.
    public init(wrapped: any ChunkStorageRetrieval, organization: any ChunkStorageOrganization) {
        self.wrapped = wrapped
        self.organization = organization
    }

    public func readChunk(at path: String) async throws -> Data? {
        guard let stored = try await wrapped.readChunk(at: path) else { return nil }
        if let identifier = organization.identifier(from: path), identifier.matches(stored) { return stored }
        if stored.count >= Self.headerSize, ChunkEnvelope.hasMagic(stored, ChunkEnvelope.verified), stored[stored.startIndex + 3] == 1 {
            let payload = stored.dropFirst(Self.headerSize)
            if Hashing.sha256(payload).bytes.elementsEqual(stored.dropFirst(4).prefix(32)) { return Data(payload) }
        }
        throw BuckiaError(
            .checksumMismatch,
            "The stored chunk's bytes do not match its checksum: it is damaged. Restore it from another copy or store the file again.",
            operation: "read chunk", path: path)
    }

    public func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws {
        // Bytes no transform has touched, that the layer above already hashed to this
        // address, are the chunk itself; anything else gets a header.
        let untouched = metadata.map { $0.transforms.isEmpty && $0.size == data.count } ?? false
        if untouched || (organization.identifier(from: path)?.matches(data) ?? false) {
            try await wrapped.writeChunk(data, at: path, metadata: metadata)
            return
        }
        var stored = Data(ChunkEnvelope.verified + [1])
        stored.append(contentsOf: Hashing.sha256(data).bytes)
        stored.append(data)
        try await wrapped.writeChunk(stored, at: path, metadata: metadata?.adding(Self.transformName))
    }
}

/// Keeps recently read and written chunks in memory, up to a number of bytes, evicting the
/// least recently used; safe to share between tasks.
///
/// It caches the bytes at its own layer: above encryption it holds plaintext, below it
/// ciphertext. (FileSystemKit's example caches without bound and holds its lock across the
/// read it awaits; this one never holds its lock across a suspension.)
public struct CachedRetrieval: ChunkRetrievalDecorator {
    public let wrapped: any ChunkStorageRetrieval
    private let cache: ChunkCache

    /// Wraps `wrapped` with a cache of at most `capacityBytes`.
    public init(wrapped: any ChunkStorageRetrieval, capacityBytes: Int = 64 << 20) {
        self.wrapped = wrapped
        cache = ChunkCache(capacity: max(0, capacityBytes))
    }

    /// What the cache holds and has done, for tests and tuning.
    public var statistics: ChunkCache.Statistics { cache.statistics }

    public func readChunk(at path: String) async throws -> Data? {
        if let hit = cache.value(for: path) { return hit }
        guard let data = try await wrapped.readChunk(at: path) else { return nil }
        cache.insert(data, for: path)
        return data
    }

    public func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws {
        cache.remove(path)
        try await wrapped.writeChunk(data, at: path, metadata: metadata)
        cache.insert(data, for: path)
    }

    public func chunkExists(at path: String) async throws -> Bool {
        if cache.value(for: path, touching: false) != nil { return true }
        return try await wrapped.chunkExists(at: path)
    }

    public func deleteChunk(at path: String) async throws {
        cache.remove(path)
        try await wrapped.deleteChunk(at: path)
        cache.remove(path)
    }
}

/// A byte-bounded least-recently-used map from chunk paths to bytes, safe to share.
public final class ChunkCache: Sendable {
    /// What the cache holds and has done.
    public struct Statistics: Hashable, Sendable {
        /// Bytes held.
        public var bytes: Int
        /// Entries held.
        public var count: Int
        /// Reads answered from memory.
        public var hits: Int
        /// Reads that went to the store.
        public var misses: Int
        /// Entries dropped to stay within capacity.
        public var evictions: Int
    }

    private final class Node {
        let key: String
        var value: Data
        var older: Node?
        weak var newer: Node?
        init(key: String, value: Data) {
            self.key = key
            self.value = value
        }
    }

    private struct State {
        var nodes: [String: Node] = [:]
        var newest: Node?
        var oldest: Node?
        var statistics = Statistics(bytes: 0, count: 0, hits: 0, misses: 0, evictions: 0)

        mutating func unlink(_ node: Node) {
            if let newer = node.newer { newer.older = node.older } else { newest = node.older }
            if let older = node.older { older.newer = node.newer } else { oldest = node.newer }
            node.older = nil
            node.newer = nil
        }

        mutating func pushNewest(_ node: Node) {
            node.older = newest
            newest?.newer = node
            newest = node
            if oldest == nil { oldest = node }
        }
    }

    /// The most bytes the cache holds.
    public let capacity: Int
    private let state = Exclusive(State())

    /// A cache of at most `capacity` bytes.
    public init(capacity: Int) { self.capacity = capacity }

    deinit {
        // Unlinks the list one node at a time: releasing the newest node would otherwise
        // release the next inside it, as deep as the cache is long, and overflow the stack.
        state.withLock { state in
            var node = state.newest
            state.newest = nil
            state.oldest = nil
            while let current = node {
                node = current.older
                current.older = nil
            }
        }
    }

    /// The bytes cached for `key`, marking them most recently used when `touching`.
    public func value(for key: String, touching: Bool = true) -> Data? {
        state.withLock { state in
            guard let node = state.nodes[key] else {
                if touching { state.statistics.misses += 1 }
                return nil
            }
            if touching {
                state.statistics.hits += 1
                state.unlink(node)
                state.pushNewest(node)
            }
            return node.value
        }
    }

    /// Caches `value` for `key`, evicting the least recently used entries to make room;
    /// a value larger than the whole cache is not kept.
    public func insert(_ value: Data, for key: String) {
        state.withLock { state in
            if let existing = state.nodes.removeValue(forKey: key) {
                state.unlink(existing)
                state.statistics.bytes -= existing.value.count
                state.statistics.count -= 1
            }
            guard value.count <= capacity else { return }
            while state.statistics.bytes + value.count > capacity, let oldest = state.oldest {
                state.unlink(oldest)
                state.nodes.removeValue(forKey: oldest.key)
                state.statistics.bytes -= oldest.value.count
                state.statistics.count -= 1
                state.statistics.evictions += 1
            }
            let node = Node(key: key, value: value)
            state.nodes[key] = node
            state.pushNewest(node)
            state.statistics.bytes += value.count
            state.statistics.count += 1
        }
    }

    /// Drops `key`.
    public func remove(_ key: String) {
        state.withLock { state in
            guard let node = state.nodes.removeValue(forKey: key) else { return }
            state.unlink(node)
            state.statistics.bytes -= node.value.count
            state.statistics.count -= 1
        }
    }

    /// What the cache holds and has done.
    public var statistics: Statistics { state.withLock { $0.statistics } }
}
