import BuckiaCore
import Foundation

/// What storing one file did.
public struct ChunkStoreStatistics: Hashable, Sendable, Codable {
    /// Chunks in the file.
    public var chunks: Int = 0
    /// Chunks written because the store did not hold them.
    public var chunksWritten: Int = 0
    /// Chunks the store already held (or that repeat within the file).
    public var chunksReused: Int = 0
    /// The file's size.
    public var bytes: Int64 = 0
    /// Bytes of the chunks written, before any transform.
    public var newBytes: Int64 = 0
    /// Bytes of the chunks reused: what deduplication saved writing.
    public var reusedBytes: Int64 = 0

    /// Creates empty statistics.
    public init() {}

    /// Bytes deduplication saved writing (``reusedBytes``).
    public var bytesSaved: Int64 { reusedBytes }

    mutating func add(_ other: ChunkStoreStatistics) {
        chunks += other.chunks
        chunksWritten += other.chunksWritten
        chunksReused += other.chunksReused
        bytes += other.bytes
        newBytes += other.newBytes
        reusedBytes += other.reusedBytes
    }
}

/// A file stored as chunks: its manifest and what storing it did.
public struct ChunkedFile: Sendable {
    /// The recipe to restore the file.
    public var manifest: ChunkManifest
    /// What storing it wrote and reused.
    public var statistics: ChunkStoreStatistics
}

/// Stores files as content-defined chunks in any chunk store, and restores them from their
/// manifests.
///
/// Storing streams the file through one FastCDC buffer and a bounded batch of chunks, hashing
/// and writing on other tasks while the next batch is cut: memory stays near
/// `2 × (batchBytes + maximum chunk size)` and the chunker's buffer (about 10 MiB by default) whatever the file's size. A chunk the store
/// already holds is not written again, so storing a changed file writes only what changed.
///
/// ```swift
/// let files = ChunkedFileStore(storage: ComposableFileSystemChunkStorage(baseURL: store))
/// let stored = try await files.store(fileAt: photo)
/// try await files.restore(stored.manifest, to: copy)
/// ```
public struct ChunkedFileStore: Sendable {
    /// Where the chunks go.
    public let storage: any ChunkStorageComposable
    /// How files are cut.
    public let chunker: FastCDC
    /// What chunks are addressed by.
    public let hashAlgorithm: HashAlgorithm
    /// How many chunks are hashed, checked or written at once.
    public let concurrency: Int
    /// How many bytes of chunks one batch holds.
    public let batchBytes: Int

    /// Stores files in `storage`.
    public init(
        storage: any ChunkStorageComposable, chunker: FastCDC = .standard, hashAlgorithm: HashAlgorithm = .sha256, concurrency: Int = 8,
        batchBytes: Int = 4 << 20
    ) {
        self.storage = storage
        self.chunker = chunker
        self.hashAlgorithm = hashAlgorithm
        self.concurrency = max(1, concurrency)
        self.batchBytes = max(1, batchBytes)
    }

    /// Stores the file at `url`.
    public func store(fileAt url: URL, contentType: String? = nil) async throws -> ChunkedFile {
        let file = try FileReader(url)
        return try await store(FastCDCReader(chunker: chunker, file: file), contentType: contentType)
    }

    /// Stores `data` as a file.
    public func store(_ data: Data, contentType: String? = nil) async throws -> ChunkedFile {
        try await store(FastCDCReader(chunker: chunker, data: data), contentType: contentType)
    }

    /// Stores `data` without making its chunks durable: for a caller that stores many and then
    /// calls the retrieval's `synchronize()` once, before anything refers to them.
    package func storeUnsynchronized(_ data: Data) async throws -> ChunkedFile {
        try await store(FastCDCReader(chunker: chunker, data: data), contentType: nil, synchronize: false)
    }

    private struct BatchResult: Sendable {
        var references: [ChunkReference]
        var statistics: ChunkStoreStatistics
        var written: [ChunkIdentifier]
    }

    private func store(_ reader: FastCDCReader, contentType: String?, synchronize: Bool = true) async throws -> ChunkedFile {
        try ChunkIdentifier.checkSupported(hashAlgorithm)
        var references: [ChunkReference] = []
        var statistics = ChunkStoreStatistics()
        // Chunks known to be in the store: written or found during this call.
        var known = Set<ChunkIdentifier>()
        func merge(_ result: BatchResult) {
            references += result.references
            statistics.add(result.statistics)
            known.formUnion(result.references.map(\.id))
        }
        try await withThrowingTaskGroup(of: BatchResult.self) { group in
            var inFlight = false
            while true {
                try Task.checkCancellation()
                var batch: [Data] = []
                var bytes = 0
                while bytes < batchBytes, let chunk = try reader.next() {
                    batch.append(chunk)
                    bytes += chunk.count
                }
                if batch.isEmpty { break }
                // One batch is processed while the next is cut; the second waits for the first.
                if inFlight, let result = try await group.next() { merge(result) }
                let snapshot = known
                group.addTask { try await self.process(batch, known: snapshot, contentType: contentType) }
                inFlight = true
            }
            while let result = try await group.next() { merge(result) }
        }
        // Every chunk durable before the manifest that refers to them exists.
        if synchronize { try await storage.retrieval.synchronize() }
        let manifest = ChunkManifest(chunks: references, chunker: chunker, hashAlgorithm: hashAlgorithm, contentType: contentType)
        return ChunkedFile(manifest: manifest, statistics: statistics)
    }

    private func process(_ batch: [Data], known: Set<ChunkIdentifier>, contentType: String?) async throws -> BatchResult {
        let algorithm = hashAlgorithm
        // Hash in parallel, in slices, keeping order.
        let slices = stride(from: 0, to: batch.count, by: max(1, (batch.count + concurrency - 1) / concurrency)).map { $0..<min($0 + max(1, (batch.count + concurrency - 1) / concurrency), batch.count) }
        var identifiers = [ChunkIdentifier?](repeating: nil, count: batch.count)
        try await withThrowingTaskGroup(of: (Range<Int>, [ChunkIdentifier]).self) { group in
            for slice in slices {
                group.addTask { (slice, try slice.map { try ChunkIdentifier.of(batch[$0], algorithm: algorithm) }) }
            }
            for try await (slice, ids) in group {
                for (offset, id) in zip(slice, ids) { identifiers[offset] = id }
            }
        }
        let ids = identifiers.compactMap { $0 }
        var candidates: [ChunkIdentifier] = []
        var seen = known
        for id in ids where seen.insert(id).inserted { candidates.append(id) }
        let present = candidates.isEmpty ? [:] : try await storage.chunkExists(candidates)
        let missing = candidates.filter { present[$0] != true }
        let toWrite = Set(missing)
        var firstIndex: [ChunkIdentifier: Int] = [:]
        for (index, id) in ids.enumerated() where toWrite.contains(id) && firstIndex[id] == nil { firstIndex[id] = index }
        let storage = storage
        let writeIndex = firstIndex
        try await forEachConcurrently(missing, width: concurrency) { id in
            guard let index = writeIndex[id] else { return }
            let data = batch[index]
            try await storage.writeVerifiedChunk(
                data, identifier: id, metadata: ChunkMetadata(size: data.count, hashAlgorithm: algorithm, contentType: contentType))
        }
        var statistics = ChunkStoreStatistics()
        var references: [ChunkReference] = []
        for (index, id) in ids.enumerated() {
            let size = batch[index].count
            references.append(ChunkReference(id: id, size: size))
            statistics.chunks += 1
            statistics.bytes += Int64(size)
            if firstIndex[id] == index {
                statistics.chunksWritten += 1
                statistics.newBytes += Int64(size)
            } else {
                statistics.chunksReused += 1
                statistics.reusedBytes += Int64(size)
            }
        }
        return BatchResult(references: references, statistics: statistics, written: missing)
    }

    /// The chunks `manifest` needs that the store does not hold.
    public func missingChunks(_ manifest: ChunkManifest) async throws -> [ChunkIdentifier] {
        let unique = manifest.uniqueChunks.sorted()
        var missing: [ChunkIdentifier] = []
        for start in stride(from: 0, to: unique.count, by: 1024) {
            let slice = Array(unique[start..<min(start + 1024, unique.count)])
            let present = try await storage.chunkExists(slice)
            missing += slice.filter { present[$0] != true }
        }
        return missing
    }

    /// Writes the file `manifest` describes to `url`, atomically, checking every chunk.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` naming a chunk the store lacks;
    ///   ``BuckiaError/Code/checksumMismatch`` or ``BuckiaError/Code/corrupt`` for a damaged one.
    ///   The destination is untouched on failure.
    public func restore(_ manifest: ChunkManifest, to url: URL) async throws {
        try manifest.validate()
        try LocalFile.checkReplaceable(url.path)
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(Temporaries.makeName())
        let file = try LocalFile.createLockedTemporary(temporary)
        var moved = false
        defer {
            try? file.close()
            if !moved { unlink(temporary.path) }
        }
        try await forEachChunk(of: manifest) { try file.write($0) }
        try await file.syncOffThePool()
        try LocalFile.checkReplaceable(url.path)
        guard rename(temporary.path, url.path) == 0 else { throw BuckiaError.posix(errno, operation: "restore", path: url.path) }
        moved = true
    }

    /// The bytes of the file `manifest` describes, checked chunk by chunk.
    public func data(for manifest: ChunkManifest) async throws -> Data {
        try manifest.validate()
        var data = Data()
        // A manifest is input: reserve no more than a bounded start on what it claims.
        data.reserveCapacity(Int(clamping: min(manifest.size, 64 << 20)))
        try await forEachChunk(of: manifest) { data.append($0) }
        return data
    }

    /// Hands each chunk of `manifest` to `body` in order, reading up to ``concurrency`` ahead.
    public func forEachChunk(of manifest: ChunkManifest, _ body: (Data) throws -> Void) async throws {
        let storage = storage
        @Sendable func read(_ reference: ChunkReference) async throws -> Data {
            guard let data = try await storage.readChunk(reference.id) else {
                throw BuckiaError(
                    .notFound, "The store does not hold chunk \(reference.id), which the file needs; store the file again or import the chunk.",
                    operation: "restore", path: reference.id.id)
            }
            try reference.id.verify(data, operation: "restore")
            guard data.count == reference.size else {
                throw BuckiaError(.corrupt, "Chunk \(reference.id) is \(data.count) bytes where the manifest says \(reference.size).", operation: "restore")
            }
            return data
        }
        // A one-chunk file (most small values) is read in place, without a task group.
        if manifest.chunks.count == 1 {
            try body(try await read(manifest.chunks[0]))
            return
        }
        for start in stride(from: 0, to: manifest.chunks.count, by: concurrency) {
            let window = Array(manifest.chunks[start..<min(start + concurrency, manifest.chunks.count)])
            let chunks = try await withThrowingTaskGroup(of: (Int, Data).self) { group in
                for (offset, reference) in window.enumerated() {
                    group.addTask { (offset, try await read(reference)) }
                }
                var result = [Data](repeating: Data(), count: window.count)
                for try await (offset, data) in group { result[offset] = data }
                return result
            }
            for chunk in chunks { try body(chunk) }
        }
    }
}
