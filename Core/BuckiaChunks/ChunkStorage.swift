import BuckiaCore
import Foundation

/// Reads and writes chunk bytes at paths an organization made: the layer decorators wrap.
///
/// A missing chunk reads as nil; anything else that goes wrong throws. (FileSystemKit's
/// `chunkExists` answers false on failure; here it throws, so an unreachable store is never
/// mistaken for an empty one and its chunks written again.)
public protocol ChunkStorageRetrieval: Sendable {
    /// The bytes stored at `path`, or nil when there are none.
    func readChunk(at path: String) async throws -> Data?
    /// Stores `data` at `path`, replacing what is there, atomically: a reader sees the old
    /// bytes or the new, never part of them.
    func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws
    /// Whether bytes are stored at `path`.
    func chunkExists(at path: String) async throws -> Bool
    /// Removes the bytes at `path`; removing a missing chunk succeeds.
    func deleteChunk(at path: String) async throws
    /// The metadata written with the chunk at `path`, when the store keeps it.
    func readMetadata(at path: String) async throws -> ChunkMetadata?
    /// Makes every chunk written so far durable, before something that refers to them
    /// (a manifest) is written.
    func synchronize() async throws
}

extension ChunkStorageRetrieval {
    public func readMetadata(at path: String) async throws -> ChunkMetadata? { nil }
    public func synchronize() async throws {}
}

/// Answers which chunks a store holds, faster than reading them.
public protocol ChunkStorageExistence: Sendable {
    /// Whether the store holds `identifier`.
    func chunkExists(identifier: ChunkIdentifier) async throws -> Bool
    /// For each of `identifiers`, whether the store holds it.
    func chunkExists(identifiers: [ChunkIdentifier]) async throws -> [ChunkIdentifier: Bool]
}

/// Lists every chunk a store holds: what garbage collection and `buckia chunk` checks need.
public protocol ChunkStorageEnumeration: Sendable {
    /// Every chunk in the store, in no particular order; paths the organization did not make
    /// (temporary files, strangers) are skipped.
    func allChunks() async throws -> [ChunkIdentifier]
}

/// Writes a set of chunks to one pack file, to move them between stores.
public protocol ChunkStorageExport: Sendable {
    /// Writes `identifiers` to a pack at `url`, atomically.
    func exportChunks(_ identifiers: [ChunkIdentifier], to url: URL) async throws -> ChunkPackSummary
}

/// Reads a pack file into a store.
public protocol ChunkStorageImport: Sendable {
    /// Checks the whole pack, then stores every chunk in it; a damaged pack stores nothing.
    func importChunks(from url: URL) async throws -> ChunkPackSummary
}

/// Hands out addresses others can fetch a chunk's stored bytes from.
public protocol ChunkStorageSharing: Sendable {
    /// A URL that serves the chunk's stored bytes until `expires` has passed (or for good,
    /// where the store only has public URLs).
    func sharedURL(for identifier: ChunkIdentifier, expires: Duration) async throws -> URL
}

/// A chunk store assembled from parts: where chunks go, how their bytes move, and the optional
/// extras. Reading, writing and existence by identifier come with it.
///
/// ```swift
/// let storage = ComposableFileSystemChunkStorage(baseURL: folder)
/// let identifier = try await storage.storeChunk(data)
/// let bytes = try await storage.readChunk(identifier)
/// ```
public protocol ChunkStorageComposable: Sendable {
    /// Where each chunk lives.
    var organization: any ChunkStorageOrganization { get }
    /// How chunk bytes are read and written, decorators included.
    var retrieval: any ChunkStorageRetrieval { get }
    /// A faster way to learn which chunks exist; nil asks ``retrieval`` one path at a time.
    var existence: (any ChunkStorageExistence)? { get }
    /// Pack export; nil when the store offers none.
    var export: (any ChunkStorageExport)? { get }
    /// Pack import; nil when the store offers none.
    var `import`: (any ChunkStorageImport)? { get }
    /// Shared URLs; nil when the store has no way to serve a chunk.
    var sharing: (any ChunkStorageSharing)? { get }
    /// A listing of every chunk; nil when the store cannot list.
    var enumeration: (any ChunkStorageEnumeration)? { get }
}

extension ChunkStorageComposable {
    public var existence: (any ChunkStorageExistence)? { nil }
    public var sharing: (any ChunkStorageSharing)? { nil }
    public var enumeration: (any ChunkStorageEnumeration)? { nil }
    public var export: (any ChunkStorageExport)? { ChunkPackTransfer(storage: self) }
    public var `import`: (any ChunkStorageImport)? { ChunkPackTransfer(storage: self) }

    /// Stores `data` under `identifier`.
    ///
    /// - Throws: ``BuckiaError/Code/checksumMismatch`` when `data` does not hash to
    ///   `identifier` (storing it would put wrong bytes at that address), or the store's error.
    public func writeChunk(_ data: Data, identifier: ChunkIdentifier, metadata: ChunkMetadata? = nil) async throws {
        try identifier.verify(data, operation: "write chunk")
        try await writeVerifiedChunk(data, identifier: identifier, metadata: metadata)
    }

    /// Stores `data` under its own identifier and returns it.
    @discardableResult
    public func storeChunk(_ data: Data, algorithm: HashAlgorithm = .sha256, contentType: String? = nil) async throws -> ChunkIdentifier {
        let identifier = try ChunkIdentifier.of(data, algorithm: algorithm)
        try await writeVerifiedChunk(data, identifier: identifier, metadata: ChunkMetadata(size: data.count, hashAlgorithm: algorithm, contentType: contentType))
        return identifier
    }

    /// Writes bytes the caller has already hashed to `identifier`.
    package func writeVerifiedChunk(_ data: Data, identifier: ChunkIdentifier, metadata: ChunkMetadata?) async throws {
        guard data.count <= ChunkPath.maximumChunkSize else {
            throw BuckiaError(
                .invalidConfiguration, "The chunk is \(data.count) bytes; a chunk store takes chunks of at most \(ChunkPath.maximumChunkSize) (64 MiB). Cut it smaller.",
                operation: "write chunk", path: identifier.id)
        }
        let metadata = metadata ?? ChunkMetadata(size: data.count, hashAlgorithm: identifier.algorithm)
        try await retrieval.writeChunk(data, at: organization.storagePath(for: identifier), metadata: metadata)
    }

    /// The chunk's bytes, or nil when the store does not hold it.
    public func readChunk(_ identifier: ChunkIdentifier) async throws -> Data? {
        try await retrieval.readChunk(at: organization.storagePath(for: identifier))
    }

    /// The metadata written with the chunk, when the store keeps it.
    public func readMetadata(_ identifier: ChunkIdentifier) async throws -> ChunkMetadata? {
        try await retrieval.readMetadata(at: organization.storagePath(for: identifier))
    }

    /// Whether the store holds `identifier`.
    public func chunkExists(_ identifier: ChunkIdentifier) async throws -> Bool {
        if let existence { return try await existence.chunkExists(identifier: identifier) }
        return try await retrieval.chunkExists(at: organization.storagePath(for: identifier))
    }

    /// For each of `identifiers`, whether the store holds it, in one batch where the store can.
    public func chunkExists(_ identifiers: [ChunkIdentifier]) async throws -> [ChunkIdentifier: Bool] {
        if let existence { return try await existence.chunkExists(identifiers: identifiers) }
        let unique = Array(Set(identifiers))
        let found = Locked<[ChunkIdentifier: Bool]>([:])
        let retrieval = retrieval
        let organization = organization
        try await forEachConcurrently(unique, width: 8) { identifier in
            let exists = try await retrieval.chunkExists(at: organization.storagePath(for: identifier))
            found.withLock { $0[identifier] = exists }
        }
        return found.withLock { $0 }
    }

    /// Removes the chunk; removing a missing chunk succeeds.
    public func deleteChunk(_ identifier: ChunkIdentifier) async throws {
        try await retrieval.deleteChunk(at: organization.storagePath(for: identifier))
    }

    /// This store with its retrieval wrapped by `decorate`: the way to add compression,
    /// encryption, caching or verification.
    ///
    /// ```swift
    /// let sealed = storage.decorated { CompressedRetrieval(wrapped: $0) }
    ///     .decorated { try EncryptedRetrieval(wrapped: $0, key: key) }
    /// ```
    public func decorated(_ decorate: (any ChunkStorageRetrieval) throws -> any ChunkStorageRetrieval) rethrows -> ComposedChunkStorage {
        ComposedChunkStorage(
            organization: organization, retrieval: try decorate(retrieval), existence: existence, sharing: sharing, enumeration: enumeration)
    }
}

/// A chunk store built from parts: the type ``ChunkStorageComposable/decorated(_:)`` returns,
/// and the one to assemble a store of your own from.
public struct ComposedChunkStorage: ChunkStorageComposable {
    public let organization: any ChunkStorageOrganization
    public let retrieval: any ChunkStorageRetrieval
    public let existence: (any ChunkStorageExistence)?
    public let sharing: (any ChunkStorageSharing)?
    public let enumeration: (any ChunkStorageEnumeration)?

    /// Assembles a store.
    public init(
        organization: any ChunkStorageOrganization, retrieval: any ChunkStorageRetrieval, existence: (any ChunkStorageExistence)? = nil,
        sharing: (any ChunkStorageSharing)? = nil, enumeration: (any ChunkStorageEnumeration)? = nil
    ) {
        self.organization = organization
        self.retrieval = retrieval
        self.existence = existence
        self.sharing = sharing
        self.enumeration = enumeration
    }
}
