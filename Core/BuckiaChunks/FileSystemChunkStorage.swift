import BuckiaCore
import Foundation

/// The checks every retrieval applies to a path before touching storage.
package enum ChunkPath {
    /// The largest chunk a store takes: four times the largest FastCDC chunk.
    package static let maximumChunkSize = 64 << 20
    /// The largest stored chunk a retrieval reads into memory: a maximum-size chunk with room
    /// for every decorator's header, so only a damaged or hostile store exceeds it.
    package static let maximumStoredSize = maximumChunkSize + 4096

    /// Throws ``BuckiaError/Code/invalidPath`` for a path that is empty, absolute, or has an
    /// empty, `.` or `..` component or a NUL: nothing a retrieval is handed may leave its store.
    package static func validate(_ path: String, operation: String) throws {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !path.isEmpty, !path.utf8.contains(0), parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw BuckiaError(
                .invalidPath, "\(String(path.prefix(200)).debugDescription) is not a chunk path: it must be relative, with no empty, \".\" or \"..\" parts.",
                operation: operation, path: String(path.prefix(200)))
        }
    }

    /// The error for stored bytes larger than any chunk.
    package static func tooLarge(_ size: Int64, path: String, operation: String) -> BuckiaError {
        BuckiaError(
            .corrupt, "The stored chunk is \(size) bytes, more than any chunk (\(maximumStoredSize)); the store is damaged or is not a chunk store.",
            operation: operation, path: path)
    }
}

/// Chunk bytes as files under a folder, one file per chunk, each written atomically.
///
/// By default writes are not synced one by one (a file of 1 GiB is some 13,000 chunks);
/// ``synchronize()`` flushes the whole file system once, which ``ChunkedFileStore`` does
/// before it hands out a manifest that refers to them.
public struct FileSystemRetrieval: ChunkStorageRetrieval {
    /// When chunk writes reach stable storage.
    public enum Durability: Sendable, Hashable {
        /// Each chunk, and its folder, synced as it is written.
        case eachChunk
        /// The whole file system synced (`syncfs`) on ``FileSystemRetrieval/synchronize()``:
        /// one flush for a whole file's chunks. The default.
        case onSynchronize
        /// Never synced by Buckia: for caches and scratch stores a crash may lose (and for
        /// tests, where a whole-file-system flush per value would slow every other test).
        case none
    }

    /// The folder chunks live under.
    public let baseURL: URL
    /// When chunk writes reach stable storage.
    public let durability: Durability

    /// The chunk folders this store's writes have swept (shared by its copies): each is swept
    /// of a killed writer's temporaries at the first write into it, once per process.
    private let swept = Locked<Set<String>>([])

    /// Stores chunks under `baseURL`, which is created on the first write.
    public init(baseURL: URL, durability: Durability = .onSynchronize) {
        self.baseURL = baseURL.standardizedFileURL
        self.durability = durability
    }

    /// Removes what a killed writer left in the folder of the chunk at `url` (an unlocked
    /// temporary: a live writer holds its lock), the first time this store writes there. A
    /// `chunk put` killed mid-chunk left such a file in a fan-out folder, and only a listing
    /// of the whole store (`allChunks`) swept them, so a rerun that put the file whole still
    /// left it there (the chunk kill harness).
    private func sweepOnce(_ url: URL) {
        let folder = url.deletingLastPathComponent().path
        guard swept.withLock({ $0.insert(folder).inserted }), let handle = try? DirectoryHandle(path: folder) else { return }
        Temporaries.sweep(handle)
    }

    private var durableWrites: Bool { durability == .eachChunk }

    private func url(_ path: String, operation: String) throws -> URL {
        try ChunkPath.validate(path, operation: operation)
        return baseURL.appendingPathComponent(path, isDirectory: false)
    }

    /// Refuses a folder between the store's base and the chunk at `path` that is a symbolic
    /// link: a link planted as a fan-out folder would send writes outside the store (the disk
    /// engine refuses the same). One `lstat` per folder level the organization makes.
    private func checkFolders(of path: String, operation: String) throws {
        var walked = baseURL
        for segment in path.split(separator: "/").dropLast() {
            walked.appendPathComponent(String(segment), isDirectory: true)
            var info = stat()
            guard lstat(walked.path, &info) == 0 else { return }  // missing: created as a folder
            if (info.st_mode & S_IFMT) == S_IFLNK {
                throw BuckiaError(
                    .invalidPath, "The chunk folder \(walked.path) is a symbolic link; chunks are never written through a link out of the store. Remove the link.",
                    operation: operation, path: walked.path)
            }
        }
    }

    public func readChunk(at path: String) async throws -> Data? {
        let url = try url(path, operation: "read chunk")
        let reader: FileReader
        do {
            reader = try FileReader(url)
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        } catch let error as BuckiaError where error.code == .invalidPath {
            // A folder, device or FIFO where a chunk belongs: the store is damaged.
            throw BuckiaError(.corrupt, "The chunk at \(url.path) is not a regular file; the store is damaged.", operation: "read chunk", path: url.path, cause: error)
        }
        let size = try reader.size()
        guard size <= ChunkPath.maximumStoredSize else { throw ChunkPath.tooLarge(size, path: path, operation: "read chunk") }
        guard size > Self.inlineLimit else { return try reader.read(0..<size) }
        return try await BlockingWork.run("read chunk") { try reader.read(0..<size) }
    }

    /// The most bytes a chunk's read or write moves on the calling task (a few system calls);
    /// a larger chunk, or any synced write, goes to Buckia's blocking-work threads.
    static let inlineLimit: Int64 = 256 << 10

    public func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws {
        let url = try url(path, operation: "write chunk")
        try checkFolders(of: path, operation: "write chunk")
        sweepOnce(url)
        guard durableWrites || Int64(data.count) > Self.inlineLimit else { return try write(data, to: url) }
        let durable = durableWrites
        try await BlockingWork.run("write chunk") { try Self.write(data, to: url, durable: durable) }
    }

    private func write(_ data: Data, to url: URL) throws { try Self.write(data, to: url, durable: durableWrites) }

    private static func write(_ data: Data, to url: URL, durable durableWrites: Bool) throws {
        // A temporary beside the chunk, renamed over it: readers see the old bytes or the new.
        // It is locked from the moment it has a name until it has been renamed (the descriptor
        // stays open across the rename), so a sweep takes only a killed writer's. (Not
        // AtomicFile: its process-wide registry and extra calls cost more than a small chunk's
        // write.)
        let folder = url.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(Temporaries.makeName(), isDirectory: false)
        let file: LocalFile
        do {
            file = try LocalFile.createLockedTemporary(temporary)
        } catch let error as BuckiaError where error.code == .notFound {
            // The chunk's folder does not exist yet: the first chunk with this prefix.
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            file = try LocalFile.createLockedTemporary(temporary)
        }
        do {
            try file.write(data)
            if durableWrites { try file.sync() }
            guard rename(temporary.path, url.path) == 0 else { throw BuckiaError.posix(errno, operation: "write chunk", path: url.path) }
            try file.close()
        } catch {
            try? file.close()
            unlink(temporary.path)
            throw error
        }
        if durableWrites { try DirectoryHandle(path: folder.path).sync() }
    }

    public func chunkExists(at path: String) async throws -> Bool {
        let url = try url(path, operation: "check chunk")
        var info = stat()
        if lstat(url.path, &info) == 0 { return (info.st_mode & S_IFMT) == S_IFREG }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw BuckiaError.posix(errno, operation: "check chunk", path: url.path)
    }

    public func deleteChunk(at path: String) async throws {
        let url = try url(path, operation: "delete chunk")
        if unlink(url.path) != 0, errno != ENOENT, errno != ENOTDIR {
            throw BuckiaError.posix(errno, operation: "delete chunk", path: url.path)
        }
    }

    public func synchronize() async throws {
        guard durability == .onSynchronize, FileManager.default.fileExists(atPath: baseURL.path) else { return }
        try DirectoryHandle(path: baseURL.path).syncFileSystem()
    }
}

/// Existence by `stat`: as fast as a local file system answers, batch or not.
public struct FileSystemExistence: ChunkStorageExistence {
    private let organization: any ChunkStorageOrganization
    private let retrieval: FileSystemRetrieval

    /// Checks chunks laid out by `organization` under `baseURL`.
    public init(organization: any ChunkStorageOrganization, baseURL: URL) {
        self.organization = organization
        retrieval = FileSystemRetrieval(baseURL: baseURL)
    }

    public func chunkExists(identifier: ChunkIdentifier) async throws -> Bool {
        try await retrieval.chunkExists(at: organization.storagePath(for: identifier))
    }

    public func chunkExists(identifiers: [ChunkIdentifier]) async throws -> [ChunkIdentifier: Bool] {
        var result: [ChunkIdentifier: Bool] = [:]
        for identifier in identifiers where result[identifier] == nil {
            result[identifier] = try await chunkExists(identifier: identifier)
        }
        return result
    }
}

/// Every chunk under a folder, found by walking it.
public struct FileSystemEnumeration: ChunkStorageEnumeration {
    private let organization: any ChunkStorageOrganization
    private let baseURL: URL

    /// Lists chunks laid out by `organization` under `baseURL`.
    public init(organization: any ChunkStorageOrganization, baseURL: URL) {
        self.organization = organization
        self.baseURL = baseURL.standardizedFileURL
    }

    public func allChunks() async throws -> [ChunkIdentifier] {
        var found: [ChunkIdentifier] = []
        var folders = [""]
        while let folder = folders.popLast() {
            let handle: DirectoryHandle
            do {
                handle = try DirectoryHandle(path: folder.isEmpty ? baseURL.path : baseURL.path + "/" + folder)
            } catch let error as BuckiaError where error.code == .notFound {
                continue
            }
            // Temporaries a killed writer left (unlocked: a live writer holds its lock) go now.
            Temporaries.sweep(handle)
            for (name, kind) in try handle.names() {
                let path = folder.isEmpty ? name : folder + "/" + name
                switch kind {
                case .folder: folders.append(path)
                case .file: if let identifier = organization.identifier(from: path) { found.append(identifier) }
                default: break
                }
            }
        }
        return found
    }
}

/// A chunk store in a local folder: the default implementation, Git-style unless told.
///
/// ```swift
/// let storage = ComposableFileSystemChunkStorage(baseURL: folder)
/// let flat = ComposableFileSystemChunkStorage(baseURL: folder, organization: FlatOrganization())
/// ```
public struct ComposableFileSystemChunkStorage: ChunkStorageComposable {
    public let organization: any ChunkStorageOrganization
    public let retrieval: any ChunkStorageRetrieval
    public let existence: (any ChunkStorageExistence)?
    public let enumeration: (any ChunkStorageEnumeration)?
    /// The folder chunks live under.
    public let baseURL: URL

    /// A store under `baseURL` laid out by `organization`.
    ///
    /// - Parameter durability: When chunk writes reach stable storage (one file-system flush
    ///   per stored file by default).
    public init(
        baseURL: URL, organization: any ChunkStorageOrganization = GitStyleOrganization(), durability: FileSystemRetrieval.Durability = .onSynchronize
    ) {
        self.baseURL = baseURL
        self.organization = organization
        retrieval = FileSystemRetrieval(baseURL: baseURL, durability: durability)
        existence = FileSystemExistence(organization: organization, baseURL: baseURL)
        enumeration = FileSystemEnumeration(organization: organization, baseURL: baseURL)
    }
}
