import BuckiaCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A provider over a directory of the local file system.
///
/// Each key is a file under the root, its `/`-separated segments becoming folders. Writes go
/// to a temporary file under `<root>/.buckia/tmp` and are renamed into place, so a reader
/// sees the old bytes or the new ones, never a mix. Transfers stream through a 1 MiB buffer.
/// Modification times are kept on upload and restored on download; checksums are computed
/// on demand.
///
/// Keys that would leave the root are refused: `..` segments never get this far (see
/// ``ObjectKey``), and a symbolic link inside the root that points outside it is refused
/// with ``BuckiaError/Code/invalidPath``. The first segment `.buckia` is reserved.
///
/// Options: `root` (required, `~` expands), `fsync` (`true` by default: sync each file and
/// its folder, for durability against power loss).
public struct LocalProvider: StorageProviderPlugin {
    public static let providerType: ProviderType = .local

    /// The folder objects live under, with symbolic links resolved.
    public let root: URL
    let rootPath: String
    let durable: Bool

    public let capabilities = ProviderCapabilities(
        features: [
            .readWithRange, .listStartAfter, .pagedListing, .publicURL, .streamingTransfers,
            .preservesModificationTime, .persistent, .serverSideCopy,
        ],
        checksums: [.md5, .sha1, .sha256], maxListPageSize: 1000)

    /// The folder name reserved at the root for temporary files.
    public static let reservedName = ".buckia"

    public init(configuration: BuckiaConfiguration) throws {
        let raw = try configuration.requireOption("root")
        let expanded = (raw as NSString).expandingTildeInPath
        guard expanded.hasPrefix("/") else {
            throw BuckiaError(
                .invalidConfiguration, "The local provider's root must be an absolute path; it is \(raw.debugDescription).",
                path: "options.root")
        }
        let fsync = configuration.options["fsync"] ?? "true"
        guard let durable = Bool(fsync) else {
            throw BuckiaError(.invalidConfiguration, "The local provider's fsync option must be true or false.", path: "options.fsync")
        }
        try self.init(root: URL(fileURLWithPath: expanded, isDirectory: true), durable: durable)
    }

    /// Creates a provider over `root`, creating the folder if needed.
    public init(root: URL, durable: Bool = true) throws {
        do {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        } catch {
            throw BuckiaError.wrapping(error, operation: "create root", path: root.path)
        }
        guard let resolved = realpath(root.path, nil) else {
            throw BuckiaError.posix(errno, operation: "resolve root", path: root.path)
        }
        rootPath = String(cString: resolved)
        free(resolved)
        self.root = URL(fileURLWithPath: rootPath, isDirectory: true)
        self.durable = durable
    }

    public func connect() async throws -> Bool {
        try await testConnection().isConnected
    }

    public func testConnection() async throws -> ConnectionStatus {
        let start = ContinuousClock.now
        var info = FileStatus()
        guard lstat(rootPath, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            return ConnectionStatus(isConnected: false, message: "The root folder \(rootPath) does not exist.")
        }
        guard access(rootPath, R_OK | W_OK | X_OK) == 0 else {
            return ConnectionStatus(isConnected: false, message: "The root folder \(rootPath) is not readable and writable.")
        }
        return ConnectionStatus(isConnected: true, message: "Local folder \(rootPath) is ready.", latency: ContinuousClock.now - start)
    }

    // MARK: Transfers

    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        // The source opens first, so a missing source creates no folders.
        let source: LocalFile
        let modified: Date
        do {
            source = try LocalFile.openForReading(localURL)
            modified = try options.modificationDate ?? source.status().modificationDate
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: localURL.path)
        }
        defer { try? source.close() }
        try writeObject(remotePath, modified: modified) { output in _ = try AtomicFile.pump(from: source, to: output) }
        return try describe(remotePath, operation: "upload")
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try writeObject(remotePath, modified: options.modificationDate) { try $0.write(data) }
        return try describe(remotePath, operation: "upload")
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL) async throws -> DownloadResult {
        let input = try openObject(remotePath, operation: "download")
        defer { try? input.close() }
        do {
            let status = try input.status()
            try AtomicFile.write(
                to: localURL, options: AtomicFile.Options(modificationDate: status.modificationDate, durable: durable)
            ) { output in _ = try AtomicFile.pump(from: input, to: output) }
            let file = RemoteFile(
                path: remotePath.rawValue, size: status.size, modificationDate: status.modificationDate,
                etag: etag(size: status.size, modified: status.modificationDate))
            return DownloadResult(file: file, localURL: localURL)
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: remotePath.rawValue)
        }
    }

    /// Copies within the root through a temporary file, keeping the modification time.
    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        let input = try openObject(source, operation: "copy")
        defer { try? input.close() }
        let modified = try input.status().modificationDate
        try writeObject(destination, modified: modified) { output in _ = try AtomicFile.pump(from: input, to: output) }
        return try describe(destination, operation: "copy")
    }

    public func readData(remotePath: ObjectKey, range: Range<Int64>?) async throws -> Data {
        let input = try openObject(remotePath, operation: "read")
        defer { try? input.close() }
        do {
            let size = try input.status().size
            let lower = max(0, min(range?.lowerBound ?? 0, size))
            let upper = max(lower, min(range?.upperBound ?? size, size))
            return try input.read(count: Int(upper - lower), at: lower)
        } catch {
            throw BuckiaError.wrapping(error, operation: "read", path: remotePath.rawValue)
        }
    }

    /// Removes the object's file, then the folders that leaves empty, as an object store has
    /// no empty folders. Everything happens relative to folders opened without following
    /// links. Uploads recreate a folder a concurrent delete removed.
    public func deleteFile(remotePath: ObjectKey) async throws {
        let location: Location
        do {
            location = try locate(remotePath, create: false, operation: "delete")
        } catch let error as BuckiaError where error.code == .notFound {
            return
        }
        switch try location.parent.entry(location.name).kind {
        case .missing, .folder:
            return  // nothing there, or a folder, which is not an object
        case .symbolicLink:
            throw BuckiaError(
                .invalidPath, "The key names a symbolic link; the local provider neither follows nor removes links.",
                operation: "delete", path: remotePath.rawValue)
        case .file, .other:
            try location.parent.removeFile(location.name)
        }
        for (folder, child) in location.chain.reversed() where !folder.removeFolderIfEmpty(child) { break }
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        try statNow(remotePath, operation: "stat")
    }

    private func statNow(_ key: ObjectKey, operation: String) throws -> RemoteFile? {
        let location: Location
        do {
            location = try locate(key, create: false, operation: operation)
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
        let (kind, info) = try location.parent.entry(location.name)
        switch kind {
        case .file: return remoteFile(key.rawValue, info)
        case .symbolicLink:
            throw BuckiaError(
                .invalidPath, "The key names a symbolic link; the local provider does not follow links.",
                operation: operation, path: key.rawValue)
        default: return nil
        }
    }

    public func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        guard let hash = algorithm.hashAlgorithm else { return nil }
        let input = try openObject(remotePath, operation: "checksum")
        defer { try? input.close() }
        do {
            return try Hashing.digests(of: input, [hash])[hash]?.hex
        } catch {
            throw BuckiaError.wrapping(error, operation: "checksum", path: remotePath.rawValue)
        }
    }

    public func getPublicURL(remotePath: ObjectKey) throws -> URL {
        root.appendingPathComponent(remotePath.rawValue, isDirectory: false)
    }

    // MARK: Helpers

    func etag(size: Int64, modified: Date) -> String {
        let nanoseconds = Int64((modified.timeIntervalSince1970 * 1_000_000_000).rounded())
        return "\"\(String(nanoseconds, radix: 16))-\(String(size, radix: 16))\""
    }

    func remoteFile(_ key: String, _ info: FileStatus) -> RemoteFile {
        let modified = LocalFile.modificationDate(of: info)
        return RemoteFile(
            path: key, size: Int64(info.st_size), modificationDate: modified,
            etag: etag(size: Int64(info.st_size), modified: modified))
    }

    private func describe(_ key: ObjectKey, operation: String) throws -> RemoteFile {
        guard let file = try statNow(key, operation: operation) else {
            throw BuckiaError.notFound(key, operation: operation)
        }
        return file
    }
}

/// The C `stat` structure; inside ``LocalProvider`` the name `stat` means the provider's method.
typealias FileStatus = stat
