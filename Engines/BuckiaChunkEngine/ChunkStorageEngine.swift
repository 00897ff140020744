import BuckiaChunks
import BuckiaCore
import Foundation

/// Opens the engine that keeps a chunk engine's key → manifest map in `folder`; `durable` is
/// the chunk engine's `fsync` (flush each write, or leave it to the file system).
///
/// The chunk engine names no other engine: whoever assembles it chooses the index. The
/// umbrella module `Buckia` chooses a disk engine, so `import Buckia` code passes none.
public typealias ChunkIndexOpener = @Sendable (_ folder: URL, _ durable: Bool) throws -> any StorageEngine

/// A key-value engine whose values are stored as content-defined chunks: values that share
/// content share chunks, and an overwritten value writes only what changed.
///
/// Each key maps to a ``ChunkManifest`` kept in an index engine (a disk engine when opened
/// through the umbrella module `Buckia` or its ``BuckiaCore/EngineRegistry``);
/// the chunks live in any ``ChunkStorageComposable`` store: a local folder, or S3, B2, Bunny
/// through ``ProviderChunkStorage``.
///
/// Options when opened from an ``EngineConfiguration`` (type `chunk`, a `directory`):
///
/// | option | values | default |
/// |---|---|---|
/// | `organization` | `git`, `git:1`…`git:4`, `flat` | `git` (depth 1) |
/// | `average-chunk-size` | 256 to 4194304 | 65536 |
/// | `compression` | `zlib`, `none` | `none` |
/// | `encryption-key-env` | the name of a variable holding 64 hex digits | none |
/// | `verify` | `true`, `false` | `true` |
/// | `fsync` | `true` (one file-system flush per value, the index synced), `false` | `true` |
///
/// Removing a value removes its manifest; its chunks stay, for other values may share them,
/// until ``collectGarbage()`` removes the ones nothing refers to.
public actor ChunkStorageEngine: StorageEngine {
    public static let engineType: EngineType = .chunk

    /// The options a configuration may set.
    public static let knownOptions: Set<String> = ["organization", "average-chunk-size", "compression", "encryption-key-env", "verify", "fsync"]

    /// The chunk store values go to.
    public nonisolated let chunks: any ChunkStorageComposable
    private let index: any StorageEngine
    private let files: ChunkedFileStore
    private var writesInFlight = 0
    /// Whether ``collectGarbage()`` is running; writes wait for it.
    private var collecting = false
    private var waitingWriters: [CheckedContinuation<Void, Never>] = []

    public nonisolated var capabilities: Set<EngineCapability> { [.persistent] }

    /// An engine over `chunks`, keeping its key → manifest map in `index`.
    public init(chunks: any ChunkStorageComposable, index: any StorageEngine, chunker: FastCDC = .standard) {
        self.chunks = chunks
        self.index = index
        files = ChunkedFileStore(storage: chunks, chunker: chunker)
    }

    /// An engine in `directory`: chunks under `chunks/`, the index `openIndex` opens under `index/`.
    public init(
        directory: URL, organization: any ChunkStorageOrganization = GitStyleOrganization(), chunker: FastCDC = .standard,
        durability: FileSystemRetrieval.Durability = .onSynchronize,
        decorate: (any ChunkStorageRetrieval) throws -> any ChunkStorageRetrieval = { $0 }, index openIndex: ChunkIndexOpener
    ) throws {
        let store = try ComposableFileSystemChunkStorage(
            baseURL: directory.appendingPathComponent("chunks", isDirectory: true), organization: organization, durability: durability
        ).decorated(decorate)
        let index = try openIndex(directory.appendingPathComponent("index", isDirectory: true), durability != .none)
        self.init(chunks: store, index: index, chunker: chunker)
    }

    /// Opens the engine a configuration describes (see the type's documentation for options),
    /// reading the key variable from `environment` and keeping the index `openIndex` opens.
    ///
    /// The chunk folder records its compression and key the first time
    /// (``ChunkStoreSettings``); opening it again with others fails rather than mix chunks
    /// that one stack cannot read.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming an unknown option, a bad
    ///   value, a missing key variable or options other than the folder's;
    ///   ``BuckiaError/Code/unauthorized`` for another key. The key never appears in a message.
    public init(configuration: EngineConfiguration, environment: [String: String], index openIndex: ChunkIndexOpener) async throws {
        let options = configuration.options
        if let unknown = options.keys.sorted().first(where: { !Self.knownOptions.contains($0) }) {
            throw BuckiaError(
                .invalidConfiguration, "The chunk engine has no option \(unknown.debugDescription); it knows \(Self.knownOptions.sorted().joined(separator: ", ")).",
                path: "options.\(unknown)")
        }
        let directory = try configuration.requireDirectory()
        let organization = try options["organization"].map { try ChunkOrganizations.parse($0) } ?? GitStyleOrganization()
        var chunker = FastCDC.standard
        if let raw = options["average-chunk-size"] {
            guard let size = Int(raw) else {
                throw BuckiaError(.invalidConfiguration, "average-chunk-size must be a number of bytes; it is \(raw.debugDescription).", path: "options.average-chunk-size")
            }
            chunker = try FastCDC(averageSize: size)
        }
        let compress: Bool
        switch options["compression"]?.lowercased() {
        case nil, "none": compress = false
        case "zlib": compress = true
        case let other?:
            throw BuckiaError(.invalidConfiguration, "compression must be zlib or none; it is \(other.debugDescription).", path: "options.compression")
        }
        var key: [UInt8]?
        if let variable = options["encryption-key-env"] {
            guard let value = environment[variable], !value.isEmpty else {
                throw BuckiaError(
                    .invalidConfiguration, "encryption-key-env names \(variable), which is not set; set it to the 64 hex digits of the key.",
                    path: "options.encryption-key-env")
            }
            key = try EncryptedRetrieval.key(hex: value)
        }
        let flag: (String) throws -> Bool = { name in
            guard let raw = options[name] else { return true }
            guard let value = Bool(raw.lowercased()) else {
                throw BuckiaError(.invalidConfiguration, "\(name) must be true or false; it is \(raw.debugDescription).", path: "options.\(name)")
            }
            return value
        }
        let verify = try flag("verify")
        let durability: FileSystemRetrieval.Durability = try flag("fsync") ? .onSynchronize : .none
        let transforms = (compress ? [CompressedRetrieval.transformName] : []) + (key != nil ? [EncryptedRetrieval.transformName] : [])
        try await ChunkStoreSettings(transforms: transforms, keyCheck: key.map(EncryptedRetrieval.keyCheck(for:)))
            .establish(in: FileSystemRetrieval(baseURL: directory.appendingPathComponent("chunks", isDirectory: true)))
        try self.init(directory: directory, organization: organization, chunker: chunker, durability: durability, decorate: { base in
            var retrieval = base
            if let key { retrieval = try EncryptedRetrieval(wrapped: retrieval, key: key) }
            if compress { retrieval = try CompressedRetrieval(wrapped: retrieval) }
            if verify { retrieval = VerifiedRetrieval(wrapped: retrieval, organization: organization) }
            return retrieval
        }, index: openIndex)
    }

    private func manifest(_ key: CacheKey) async throws -> ChunkManifest? {
        guard let data = try await index.read(key: key) else { return nil }
        do {
            return try ChunkManifest.decode(data)
        } catch let error as BuckiaError {
            throw BuckiaError(.corrupt, "The manifest of \(key.value.prefix(64).debugDescription) is damaged: \(error.message)", operation: "read", path: key.value)
        }
    }

    /// How many writes are waiting for a collection to finish (for tests).
    package var waitingWriterCount: Int { waitingWriters.count }

    /// Waits while garbage is collected, then counts a write in.
    private func beginWrite() async {
        while collecting { await withCheckedContinuation { waitingWriters.append($0) } }
        writesInFlight += 1
    }

    public func write(_ data: Data, key: CacheKey) async throws {
        try key.validate()
        await beginWrite()
        defer { writesInFlight -= 1 }
        let stored = try await files.store(data)
        try await index.write(try stored.manifest.encoded(), key: key)
    }

    public func write(_ dataAndKeys: [(key: CacheKey, data: Data)]) async throws {
        for (key, _) in dataAndKeys { try key.validate() }
        await beginWrite()
        defer { writesInFlight -= 1 }
        var manifests: [(key: CacheKey, data: Data)] = []
        for (key, data) in dataAndKeys { manifests.append((key, try await files.storeUnsynchronized(data).manifest.encoded())) }
        // Every value's chunks made durable at once, before any key points at them; the index
        // writes the manifests as one batch.
        try await chunks.retrieval.synchronize()
        try await index.write(manifests)
    }

    public func read(key: CacheKey) async throws -> Data? {
        try key.validate()
        guard let manifest = try await manifest(key) else { return nil }
        return try await files.data(for: manifest)
    }

    public func readDataAndKeys(keys: [CacheKey]) async throws -> [(key: CacheKey, data: Data)] {
        var result: [(key: CacheKey, data: Data)] = []
        for key in keys {
            if let data = try await read(key: key) { result.append((key, data)) }
        }
        return result
    }

    public func readAllDataAndKeys() async throws -> [(key: CacheKey, data: Data)] {
        try await readDataAndKeys(keys: try await index.allKeys())
    }

    public func remove(key: CacheKey) async throws {
        try key.validate()
        try await index.remove(key: key)
    }

    public func remove(keys: [CacheKey]) async throws {
        for key in keys { try key.validate() }
        try await index.remove(keys: keys)
    }

    public func removeAllData() async throws { try await index.removeAllData() }

    public func keyExists(_ key: CacheKey) async throws -> Bool {
        try key.validate()
        return try await index.keyExists(key)
    }

    public func keyCount() async throws -> Int { try await index.keyCount() }
    public func allKeys() async throws -> [CacheKey] { try await index.allKeys() }
    public func createdAt(key: CacheKey) async throws -> Date? { try await index.createdAt(key: key) }
    public func updatedAt(key: CacheKey) async throws -> Date? { try await index.updatedAt(key: key) }

    /// Removes every chunk no stored value refers to, and returns how many it removed.
    ///
    /// Writes through this engine wait until it has finished; it refuses to start while one is
    /// in progress. Other engines or processes writing to the same chunk store are not seen:
    /// collect when nothing else writes there.
    ///
    /// - Throws: ``BuckiaError/Code/conditionNotMatch`` while this engine is writing;
    ///   ``BuckiaError/Code/unsupported`` when the chunk store cannot list its chunks.
    @discardableResult
    public func collectGarbage() async throws -> Int {
        guard let enumeration = chunks.enumeration else {
            throw BuckiaError(.unsupported, "This chunk store cannot list its chunks, so unreferenced ones cannot be found.", operation: "collect garbage")
        }
        guard writesInFlight == 0, !collecting else {
            throw BuckiaError(.conditionNotMatch, "A write or another collection is in progress; collect garbage when it has finished.", operation: "collect garbage")
        }
        // From here until the end no write starts: its chunks could otherwise be reused while
        // they are being removed, or its manifest missed.
        collecting = true
        defer {
            collecting = false
            let waiting = waitingWriters
            waitingWriters.removeAll()
            for writer in waiting { writer.resume() }
        }
        var referenced = Set<ChunkIdentifier>()
        for key in try await index.allKeys() {
            if let manifest = try await manifest(key) { referenced.formUnion(manifest.uniqueChunks) }
        }
        var removed = 0
        for identifier in try await enumeration.allChunks() where !referenced.contains(identifier) {
            try await chunks.deleteChunk(identifier)
            removed += 1
        }
        return removed
    }

    /// The manifest stored for `key`, for tools that show how a value is stored.
    public func manifest(for key: CacheKey) async throws -> ChunkManifest? {
        try key.validate()
        return try await manifest(key)
    }
}
