import BuckiaCore
import Foundation

/// A provider over a directory of the local file system.
///
/// Each key is a file under the root, its `/`-separated segments becoming folders. Writes go
/// to a temporary file under `<root>/.buckia/tmp` and are renamed into place, so a reader
/// sees the old bytes or the new ones, never a mix. Transfers stream through a 1 MiB buffer.
/// Modification times are kept on upload and restored on download; checksums are computed
/// on demand. An uploaded file's object gets the file's permission bits less the umask (never
/// setuid, setgid or sticky), as `cp` gives a new file; an object written from memory is 0644
/// less the umask.
///
/// Keys that would leave the root are refused: `..` segments never get this far (see
/// ``ObjectKey``), and a symbolic link inside the root that points outside it is refused
/// with ``BuckiaError/Code/invalidPath``. The first segment `.buckia` is reserved.
///
/// Entity tags name the version (inode, time, size), so conditional reads and writes work;
/// conditional writes are serialised by a lock file under `.buckia`. Names in the folder that
/// cannot be keys (not UTF-8, symbolic links) are listed as unaddressable, never skipped.
///
/// Content types, content headers and user metadata are kept in extended attributes
/// (`user.<name>`, as rclone's local backend keeps them: ``ObjectAttributes``).
///
/// Options: `root` (required, `~` expands), `fsync` (`true` by default: sync each file and
/// its folder, for durability against power loss), `metadata` (`true` by default: keep
/// metadata in extended attributes; `false` on a file system without them, and the provider
/// then declares neither ``BuckiaCore/Capability/userMetadata`` nor
/// ``BuckiaCore/Capability/contentHeaders``).
public struct LocalProvider: StorageProviderPlugin {
    public static let providerType: ProviderType = .local

    /// The folder objects live under, with symbolic links resolved.
    public let root: URL
    let rootPath: String
    let durable: Bool
    /// Whether content types, content headers and metadata are kept (``ObjectAttributes``).
    let keepsMetadata: Bool
    /// Where copies and syncs run: the context's pool when built from one, else the process's.
    var pool: BlockingPool?

    public let capabilities: ProviderCapabilities

    static func capabilities(keepsMetadata: Bool) -> ProviderCapabilities {
        var features: Set<Capability> = [
            .readWithRange, .listStartAfter, .pagedListing, .publicURL, .streamingTransfers,
            .preservesModificationTime, .persistent, .serverSideCopy, .conditionalWrite, .conditionalRead,
            .verifiesKnownChecksums, .setModificationTime, .move, .resumableListing, .localFiles,
            .streamingUploads, .folders, .partUploads, .partSelections, .conditionalCompletion,
        ]
        if keepsMetadata { features.formUnion([.userMetadata, .contentHeaders]) }
        return ProviderCapabilities(
            features: features, checksums: [.md5: .read, .sha1: .read, .sha256: .read], listedFields: [.modificationDate, .etag],
            modificationTimePrecision: .microseconds(1), maxListPageSize: 1000)
    }

    /// The folder name reserved at the root for temporary files.
    public static let reservedName = ".buckia"

    /// The options this provider reads.
    public static let knownOptions: Set<String>? = ["root", "fsync", "metadata"]

    public init(context: ProviderContext) throws {
        try self.init(configuration: context.configuration, environment: context.environment)
        pool = try context.resources.blockingPool
    }

    /// Creates a provider from a configuration's `root`, `fsync` and `metadata` options; a leading `~`
    /// in `root` is `environment`'s `HOME` (the user's home as the shell sees it).
    public init(configuration: BuckiaConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try configuration.checkOptions(known: LocalProvider.knownOptions ?? [])
        let root = try Self.configuredRoot(configuration, environment: environment)
        let fsync = configuration.options["fsync"] ?? "true"
        guard let durable = Bool(fsync) else {
            throw BuckiaError(.invalidConfiguration, "The local provider's fsync option must be true or false.", path: "options.fsync")
        }
        guard let keepsMetadata = Bool(configuration.options["metadata"] ?? "true") else {
            throw BuckiaError(.invalidConfiguration, "The local provider's metadata option must be true or false.", path: "options.metadata")
        }
        // A configured remote's root is created by the first write, not by opening it: `ls`
        // of a remote whose folder is missing lists nothing and leaves nothing behind.
        try self.init(root: URL(fileURLWithPath: root, isDirectory: true), durable: durable, createRoot: false, keepsMetadata: keepsMetadata)
    }

    /// The folder a configuration's `root` names, resolved as a provider made from it resolves
    /// it (a leading `~` from `environment`'s `HOME`, symbolic links followed), without making
    /// one: nothing is created, swept or written. A sync names a local remote by it.
    public static func resolvedRoot(of configuration: BuckiaConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        let root = try configuredRoot(configuration, environment: environment)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isFolder), isFolder.boolValue else {
            return URL(fileURLWithPath: try resolveMissing(root), isDirectory: true)
        }
        return URL(fileURLWithPath: try realPath(root), isDirectory: true)
    }

    /// An existing folder's path with every symbolic link followed.
    private static func realPath(_ path: String) throws -> String {
        guard let resolved = realpath(path, nil) else {
            throw BuckiaError.posix(errno, operation: "resolve root", path: path)
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The `root` option as an absolute path, its leading `~` expanded.
    private static func configuredRoot(_ configuration: BuckiaConfiguration, environment: [String: String]) throws -> String {
        let raw = try configuration.requireOption("root")
        let expanded: String
        if raw == "~" || raw.hasPrefix("~/") {
            guard let home = environment["HOME"], home.hasPrefix("/") else {
                throw BuckiaError(
                    .invalidConfiguration, "The local provider's root \(raw.debugDescription) starts with ~, but HOME is not set to an absolute path.",
                    path: "options.root")
            }
            expanded = home + raw.dropFirst()
        } else {
            expanded = raw
        }
        guard expanded.hasPrefix("/") else {
            throw BuckiaError(
                .invalidConfiguration, "The local provider's root must be an absolute path; it is \(raw.debugDescription).",
                path: "options.root")
        }
        return expanded
    }

    /// Creates a provider over `root`.
    ///
    /// - Parameters:
    ///   - createRoot: Create the folder now if it is missing; otherwise the first write
    ///     creates it, and reads of a missing root find nothing.
    ///   - keepsMetadata: Keep content types, content headers and metadata in extended
    ///     attributes (the `metadata` option).
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` when something other than a folder
    ///   is at `root` (or on the way to it).
    public init(root: URL, durable: Bool = true, createRoot: Bool = true, keepsMetadata: Bool = true) throws {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: root.path, isDirectory: &isFolder), !isFolder.boolValue {
            throw BuckiaError(
                .invalidConfiguration, "The local provider's root \(root.path) is a file, not a folder; point root at a folder.",
                operation: "open root", path: root.path)
        }
        if createRoot || isFolder.boolValue {
            try Self.createRoot(root.path)
            rootPath = try Self.realPath(root.path)
        } else {
            rootPath = try Self.resolveMissing(root.path)
        }
        self.root = URL(fileURLWithPath: rootPath, isDirectory: true)
        self.durable = durable
        self.keepsMetadata = keepsMetadata
        capabilities = Self.capabilities(keepsMetadata: keepsMetadata)
        // Temporaries a killed process left in <root>/.buckia/tmp go now.
        if let temporary = try? DirectoryHandle(path: rootPath).folder(LocalProvider.reservedName, create: false).folder("tmp", create: false) {
            Temporaries.sweep(temporary)
        }
    }

    /// The nearest existing path at or above `url`, the names below it still missing, and
    /// whether what exists there is a folder.
    static func nearestExisting(_ url: URL) -> (folder: URL, missing: [String], isFolder: Bool) {
        var missing: [String] = []
        var existing = url
        var isFolder: ObjCBool = false
        while existing.path != "/", !FileManager.default.fileExists(atPath: existing.path, isDirectory: &isFolder) {
            missing.insert(existing.lastPathComponent, at: 0)
            existing = existing.deletingLastPathComponent()
        }
        return (existing, missing, existing.path == "/" || isFolder.boolValue)
    }

    /// Creates the root folder (and those above it) if it is missing.
    static func createRoot(_ path: String) throws {
        do {
            try LocalFile.createDirectories(path)
        } catch {
            let wrapped = BuckiaError.wrapping(error, operation: "create root", path: path)
            guard wrapped.code != .permissionDenied else { throw wrapped }
            throw BuckiaError(
                .invalidConfiguration, "The local provider's root \(path) cannot be created: \(wrapped.message) A file may be in the way; point root at a folder.",
                operation: "create root", path: path, cause: wrapped)
        }
    }

    /// The real path a missing root will have once created: its nearest existing ancestor
    /// resolved (links and all), followed by the names still missing.
    static func resolveMissing(_ path: String) throws -> String {
        let (existing, missing, isFolder) = nearestExisting(URL(fileURLWithPath: path).standardizedFileURL)
        if existing.path != "/", !isFolder {
            throw BuckiaError(
                .invalidConfiguration, "The local provider's root \(path) lies under \(existing.path), which is a file; point root at a folder.",
                operation: "open root", path: path)
        }
        guard let resolved = realpath(existing.path, nil) else {
            throw BuckiaError.posix(errno, operation: "resolve root", path: path)
        }
        defer { free(resolved) }
        let base = String(cString: resolved)
        return ([base == "/" ? "" : base] + missing).joined(separator: "/")
    }

    /// The root folder's handle; with `create`, the folder is made first when missing (the
    /// first write to a remote whose root did not exist yet).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` when the root is missing and not created.
    func openRoot(create: Bool) throws -> DirectoryHandle {
        do {
            return try DirectoryHandle(path: rootPath)
        } catch let error as BuckiaError where error.code == .notFound && create {
            try Self.createRoot(rootPath)
            return try DirectoryHandle(path: rootPath)
        }
    }

    public func connect() async throws -> Bool {
        try await testConnection().isConnected
    }

    public func testConnection() async throws -> ConnectionStatus {
        let start = ContinuousClock.now
        var info = FileStatus()
        if lstat(rootPath, &info) != 0 && errno == ENOENT {
            // A root no write has created yet works if the first write can create it.
            let parent = Self.nearestExisting(URL(fileURLWithPath: rootPath)).folder
            guard access(parent.path, W_OK | X_OK) == 0 else {
                return ConnectionStatus(isConnected: false, message: "The root folder \(rootPath) does not exist, and \(parent.path) may not be written to create it.")
            }
            return ConnectionStatus(
                isConnected: true, message: "Local folder \(rootPath) does not exist yet; the first write creates it.", latency: ContinuousClock.now - start)
        }
        guard lstat(rootPath, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            return ConnectionStatus(isConnected: false, message: "The root folder \(rootPath) does not exist.")
        }
        guard access(rootPath, R_OK | W_OK | X_OK) == 0 else {
            return ConnectionStatus(isConnected: false, message: "The root folder \(rootPath) is not readable and writable.")
        }
        return ConnectionStatus(isConnected: true, message: "Local folder \(rootPath) is ready.", latency: ContinuousClock.now - start)
    }

    // MARK: Transfers

    /// The copy (and its `fsync`) runs on Buckia's blocking-work threads, never a thread of the
    /// cooperative pool; cancelling the task stops it between chunks, keeping nothing. A file
    /// of at most ``inlineLimit`` bytes, without `fsync`, is copied on the calling task: a few
    /// system calls, as a stat is, where the hop to another thread and back cost more than
    /// the copy (a first sync of small files spent a quarter of its time waking threads).
    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options, key: remotePath)
        if !durable {
            let (source, status) = try openSource(localURL)
            if Int64(status.st_size) <= Int64(Self.inlineLimit) {
                defer { source.closeAfterReading() }
                return try storeFile(source, status, at: remotePath, options: options)
            }
            source.closeAfterReading()
        }
        return try await BlockingWork.run("upload", on: pool) { [self] in
            let (source, status) = try openSource(localURL)
            defer { source.closeAfterReading() }
            return try storeFile(source, status, at: remotePath, options: options)
        }
    }

    /// Opens an upload's source, described by the open's own `fstat`.
    private func openSource(_ localURL: URL) throws -> (LocalFile, stat) {
        do {
            return try LocalFile.openDescribed(localURL)
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: localURL.path)
        }
    }

    func storeFile(_ source: LocalFile, _ status: stat, at remotePath: ObjectKey, options: UploadOptions) throws -> RemoteFile {
        // As cp does without -p: the source's permission bits less the umask, never its
        // setuid, setgid or sticky bit. A private file stays private.
        let modified = options.modificationDate ?? LocalFile.modificationDate(of: status)
        let permissions = status.st_mode & 0o777
        if let cloned = try storeClone(of: source, at: remotePath, modified: modified, permissions: permissions, options: options) { return cloned }
        return try writeObject(remotePath, modified: modified, permissions: permissions, options: options) { output, digests in
            _ = try AtomicFile.pump(from: source, to: output) { digests.update($0) }
        }
    }

    /// Up to ``inlineLimit`` bytes without `fsync` are written on the calling task, as a stat
    /// is; anything longer, or synced, on the blocking-work threads.
    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options, key: remotePath)
        let write: @Sendable () throws -> RemoteFile = { [self] in
            try writeObject(remotePath, modified: options.modificationDate, options: options) { output, digests in
                digests.update(data)
                try output.write(data)
            }
        }
        guard data.count > Self.inlineLimit || durable else { return try write() }
        return try await BlockingWork.run("upload", on: pool, write)
    }

    /// The most bytes a read or write moves on the calling task: a few system calls, as long
    /// as a stat takes. Beyond it, the work goes to ``BlockingWork``.
    static let inlineLimit = 256 << 10

    /// On the blocking-work threads, as ``uploadFile(localURL:remotePath:options:)``.
    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        try await BlockingWork.run("download", on: pool) { [self] in try fetchFile(remotePath, to: localURL, options: options) }
    }

    private func fetchFile(_ remotePath: ObjectKey, to localURL: URL, options: ReadOptions) throws -> DownloadResult {
        let (input, file) = try openObject(remotePath, ifMatch: options.ifMatch, operation: "download")
        defer { input.closeAfterReading() }
        do {
            let range = clamp(options.range, size: file.size)
            let placing = AtomicFile.Options(modificationDate: file.modificationDate, durable: durable)
            if range == nil, try AtomicFile.placeClone(of: input, at: localURL, options: placing) != nil {
                return DownloadResult(file: file, localURL: localURL)
            }
            try AtomicFile.write(
                to: localURL, options: placing
            ) { output in
                if let range {
                    _ = try input.copy(range, to: output)
                } else {
                    _ = try AtomicFile.pump(from: input, to: output)
                }
            }
            return DownloadResult(file: file, localURL: localURL)
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: remotePath.rawValue)
        }
    }

    /// Copies within the root, keeping the modification time, on the blocking-work threads: a
    /// copy-on-write clone where the file system makes one, else the bytes through a
    /// temporary file.
    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try await BlockingWork.run("copy", on: pool) { [self] in
            let (input, file) = try openObject(source, operation: "copy")
            defer { input.closeAfterReading() }
            // A copy keeps the source's content type, headers and metadata, as S3's does.
            var options = UploadOptions()
            if keepsMetadata, let modified = file.modificationDate {
                let stored = try ObjectAttributes.read(input, modified: modified, root: rootPath)
                options = UploadOptions(contentType: stored.contentType, metadata: stored.metadata, contentHeaders: stored.contentHeaders)
            }
            if let cloned = try storeClone(of: input, at: destination, modified: file.modificationDate, permissions: 0o644, options: options) {
                return cloned
            }
            return try writeObject(destination, modified: file.modificationDate, options: options) { output, _ in
                _ = try AtomicFile.pump(from: input, to: output)
            }
        }
    }

    /// Renames the object's file: one `renameat` when both keys' folders exist or can be made.
    @discardableResult
    public func moveFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        let from = try locate(source, create: false, operation: "move", forPruning: true)
        guard try from.parent.entry(from.name).kind == .file else { throw BuckiaError.notFound(source, operation: "move") }
        if source == destination { return try describe(destination, operation: "move") }
        let to = try locate(destination, create: true, operation: "move")
        do {
            try from.parent.move(from.name, to: to.parent, as: to.name)
        } catch {
            throw mapWriteError(error, key: destination, operation: "move")
        }
        if durable { try to.parent.sync() }
        prune(from)
        return try describe(destination, operation: "move")
    }

    @discardableResult
    public func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        let (file, _) = try openObject(remotePath, operation: "setModificationTime")
        defer { try? file.close() }
        do {
            try file.setModificationDate(date)
            // rclone's mtime text, where the object has one, names the new time.
            if keepsMetadata, try ObjectAttributes.value(RcloneMetadata.mtime, of: file, root: rootPath) != nil {
                try ObjectAttributes.update(RcloneMetadata.mtime, to: RcloneMetadata.formatMtime(date), on: file, root: rootPath)
            }
        } catch {
            throw BuckiaError.wrapping(error, operation: "setModificationTime", path: remotePath.rawValue)
        }
        return try describe(remotePath, operation: "setModificationTime")
    }

    /// Reads of up to ``inlineLimit`` bytes run on the calling task; longer ones on the
    /// blocking-work threads (opening the file again there: a descriptor stays with its task).
    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        let (input, file) = try openObject(remotePath, ifMatch: options.ifMatch, operation: "read")
        if (clamp(options.range, size: file.size).map { Int64($0.count) } ?? file.size) <= Int64(Self.inlineLimit) {
            return try read(input, file, remotePath, options)
        }
        input.closeAfterReading()
        return try await BlockingWork.run("read", on: pool) { [self] in
            let (input, file) = try openObject(remotePath, ifMatch: options.ifMatch, operation: "read")
            return try read(input, file, remotePath, options)
        }
    }

    private func read(_ input: LocalFile, _ file: RemoteFile, _ remotePath: ObjectKey, _ options: ReadOptions) throws -> Data {
        defer { input.closeAfterReading() }
        do {
            let range = clamp(options.range, size: file.size) ?? 0..<file.size
            return try input.read(count: Int(range.count), at: range.lowerBound)
        } catch {
            throw BuckiaError.wrapping(error, operation: "read", path: remotePath.rawValue)
        }
    }

    private func clamp(_ range: Range<Int64>?, size: Int64) -> Range<Int64>? {
        guard let range else { return nil }
        let lower = max(0, min(range.lowerBound, size))
        return lower..<max(lower, min(range.upperBound, size))
    }

    /// Removes the object's file, then the folders that leaves empty, as an object store has
    /// no empty folders. Everything happens relative to folders opened without following
    /// links. Uploads recreate a folder a concurrent delete removed.
    public func deleteFile(remotePath: ObjectKey) async throws {
        let location: Location
        do {
            location = try locate(remotePath, create: false, operation: "delete", forPruning: true)
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
        prune(location)
    }

    /// Removes the folders on the way to a removed key that it left empty.
    private func prune(_ location: Location) {
        for (folder, child) in location.chain.reversed() {
            guard folder.removeFolderIfEmpty(child) else { break }
            FolderHandles.current?.forget(folder.child(child))
        }
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        try statNow(remotePath, operation: "stat")
    }

    func statNow(_ key: ObjectKey, operation: String) throws -> RemoteFile? {
        let location: Location
        do {
            location = try locate(key, create: false, operation: operation)
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
        let (kind, info) = try location.parent.entry(location.name)
        switch kind {
        case .file where keepsMetadata:
            // Described from the open file, so the status and the attributes are one version's.
            let file: LocalFile
            do {
                file = try location.parent.openFile(location.name)
            } catch let error as BuckiaError where error.code == .notFound {
                return nil
            } catch let error as BuckiaError where error.code == .permissionDenied {
                // A file this user may not open is still described, as a listing describes
                // it; its attributes, which need it open, are unknown.
                return remoteFile(key, info)
            }
            defer { file.closeAfterReading() }
            return try describe(key, file)
        case .file: return remoteFile(key, info)
        case .symbolicLink:
            throw BuckiaError(
                .invalidPath, "The key names a symbolic link; the local provider does not follow links.",
                operation: operation, path: key.rawValue)
        default: return nil
        }
    }

    public func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        guard let hash = algorithm.hashAlgorithm else { return nil }
        let (input, _) = try openObject(remotePath, operation: "checksum")
        defer { input.closeAfterReading() }
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

    func remoteFile(_ key: ObjectKey, _ info: FileStatus) -> RemoteFile {
        RemoteFile(
            path: key, size: Int64(info.st_size), modificationDate: LocalFile.modificationDate(of: info),
            etag: LocalProvider.etag(info))
    }

    func describe(_ key: ObjectKey, operation: String) throws -> RemoteFile {
        guard let file = try statNow(key, operation: operation) else {
            throw BuckiaError.notFound(key, operation: operation)
        }
        return file
    }
}

/// The C `stat` structure; inside ``LocalProvider`` the name `stat` means the provider's method.
typealias FileStatus = stat
