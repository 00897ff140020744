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
            .preservesModificationTime, .persistent,
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
        let destination = try resolve(remotePath, for: .write)
        do {
            let source = try LocalFile.openForReading(localURL)
            defer { try? source.close() }
            let modified = try options.modificationDate ?? source.status().modificationDate
            try AtomicFile.write(to: destination, options: writeOptions(modified)) { output in
                _ = try AtomicFile.pump(from: source, to: output)
            }
        } catch {
            throw mapWriteError(error, key: remotePath, operation: "upload")
        }
        return try describe(remotePath, at: destination, operation: "upload")
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        let destination = try resolve(remotePath, for: .write)
        do {
            try AtomicFile.write(to: destination, options: writeOptions(options.modificationDate)) { try $0.write(data) }
        } catch {
            throw mapWriteError(error, key: remotePath, operation: "upload")
        }
        return try describe(remotePath, at: destination, operation: "upload")
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL) async throws -> DownloadResult {
        let source = try resolve(remotePath, for: .read)
        do {
            let input = try LocalFile.openForReading(source)
            defer { try? input.close() }
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

    public func readData(remotePath: ObjectKey, range: Range<Int64>?) async throws -> Data {
        let source = try resolve(remotePath, for: .read)
        do {
            let input = try LocalFile.openForReading(source)
            defer { try? input.close() }
            let size = try input.status().size
            let lower = max(0, min(range?.lowerBound ?? 0, size))
            let upper = max(lower, min(range?.upperBound ?? size, size))
            return try input.read(count: Int(upper - lower), at: lower)
        } catch {
            throw BuckiaError.wrapping(error, operation: "read", path: remotePath.rawValue)
        }
    }

    public func deleteFile(remotePath: ObjectKey) async throws {
        let path = try resolve(remotePath, for: .delete).path
        if unlink(path) != 0 {
            switch errno {
            case ENOENT, ENOTDIR: return
            case EISDIR: return  // a folder is not an object
            case EPERM where isDirectory(path): return  // Linux reports EISDIR, macOS EPERM
            default: throw BuckiaError.posix(errno, operation: "delete", path: remotePath.rawValue)
            }
        }
        removeEmptyFolders(above: path)
    }

    /// Removes folders the delete left empty, up to the root, as an object store has no
    /// empty folders. Stops at the first folder that is not empty; uploads recreate folders
    /// they find missing (see ``AtomicFile/Options/createParentDirectories``).
    private func removeEmptyFolders(above path: String) {
        var folder = (path as NSString).deletingLastPathComponent
        while folder.count > rootPath.count, folder.hasPrefix(rootPath + "/"), rmdir(folder) == 0 {
            folder = (folder as NSString).deletingLastPathComponent
        }
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        let path: URL
        do {
            path = try resolve(remotePath, for: .read)
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
        var info = FileStatus()
        guard statFollowingLinks(path.path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw BuckiaError.posix(errno, operation: "stat", path: remotePath.rawValue)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return remoteFile(remotePath.rawValue, info)
    }

    public func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        guard let hash = algorithm.hashAlgorithm else { return nil }
        let path = try resolve(remotePath, for: .read)
        do {
            return try Hashing.digests(ofFile: path, [hash])[hash]?.hex
        } catch {
            throw BuckiaError.wrapping(error, operation: "checksum", path: remotePath.rawValue)
        }
    }

    public func getPublicURL(remotePath: ObjectKey) throws -> URL {
        root.appendingPathComponent(remotePath.rawValue, isDirectory: false)
    }

    // MARK: Helpers

    func writeOptions(_ modified: Date?) -> AtomicFile.Options {
        AtomicFile.Options(
            temporaryDirectory: root.appendingPathComponent("\(LocalProvider.reservedName)/tmp", isDirectory: true),
            modificationDate: modified, durable: durable, createParentDirectories: true)
    }

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

    private func describe(_ key: ObjectKey, at url: URL, operation: String) throws -> RemoteFile {
        var info = FileStatus()
        guard statFollowingLinks(url.path, &info) == 0 else {
            throw BuckiaError.posix(errno, operation: operation, path: key.rawValue)
        }
        return remoteFile(key.rawValue, info)
    }

    private func isDirectory(_ path: String) -> Bool {
        var info = FileStatus()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    private func mapWriteError(_ error: any Error, key: ObjectKey, operation: String) -> BuckiaError {
        let wrapped = BuckiaError.wrapping(error, operation: operation, path: key.rawValue)
        guard let cause = wrapped.cause as? POSIXErrorNumber else { return wrapped }
        switch cause.rawValue {
        case EISDIR:
            return BuckiaError(
                .alreadyExists, "A folder exists where this object would go; the local file system cannot hold both.",
                operation: operation, path: key.rawValue, cause: cause)
        case ENOTDIR, EEXIST:
            return BuckiaError(
                .alreadyExists, "An object exists where this key needs a folder; the local file system cannot hold both.",
                operation: operation, path: key.rawValue, cause: cause)
        default:
            return wrapped
        }
    }
}

/// The C `stat` structure; inside ``LocalProvider`` the name `stat` means the provider's method.
typealias FileStatus = stat

/// Follows symbolic links, like stat(2).
func statFollowingLinks(_ path: String, _ info: inout FileStatus) -> Int32 { stat(path, &info) }
