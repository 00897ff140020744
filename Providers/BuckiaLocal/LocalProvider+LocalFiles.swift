import BuckiaCore
import Foundation

extension LocalProvider {
    /// The object's file under the root, reached without following links, and its description.
    public func fileForReading(_ key: ObjectKey) throws -> (url: URL, file: RemoteFile) {
        let location = try locate(key, create: false, operation: "read")
        let (kind, info) = try location.parent.entry(location.name)
        switch kind {
        case .file:
            // From the path, not `root.appendingPathComponent`: Foundation parsed the whole URL
            // again for each file (11,000 instructions; this is half of that).
            let path = (rootPath.utf8.last == UInt8(ascii: "/") ? rootPath : rootPath + "/") + key.rawValue
            return (URL(fileURLWithPath: path, isDirectory: false), remoteFile(key, info))
        case .symbolicLink:
            throw BuckiaError(
                .invalidPath, "The key names a symbolic link; the local provider does not follow links.", operation: "read",
                path: key.rawValue)
        default:
            throw BuckiaError.notFound(key, operation: "read")
        }
    }

    /// With `fsync` off, one `syncfs` of the root's file system makes every write so far
    /// durable; with it on, each write already was.
    public func synchronize() throws {
        guard !durable else { return }
        let root: DirectoryHandle
        do {
            root = try openRoot(create: false)
        } catch let error as BuckiaError where error.code == .notFound {
            return  // nothing written yet, nothing to make durable
        }
        try root.syncFileSystem()
    }

    /// Removes `.buckia` (its temporaries, a killed writer's included, and its lock file) when
    /// no writer holds the root's shared lock; a root that does not exist has nothing to remove.
    public func removeWorkingFiles() throws {
        let root: DirectoryHandle
        do {
            root = try DirectoryHandle(path: rootPath)
        } catch let error as BuckiaError where error.code == .notFound {
            return
        }
        guard try root.tryExclusiveLock() else { return }  // a writer is at work; it or a later run tidies
        guard try root.entry(LocalProvider.reservedName).kind == .folder else { return }
        let reserved = try root.folder(LocalProvider.reservedName, create: false)
        if try reserved.entry("tmp").kind == .folder {
            let temporary = try reserved.folder("tmp", create: false)
            Temporaries.sweep(temporary)
            reserved.removeFolderIfEmpty("tmp")
        }
        try reserved.removeFile("lock")
        // Anything else in it (put there by hand) keeps the folder.
        root.removeFolderIfEmpty(LocalProvider.reservedName)
    }

    /// Lets `fill` write the file in a private folder under `<root>/.buckia/tmp` (locked, so
    /// no sweep takes it), then renames it into place under the root's lock, where the
    /// condition is checked: the same path every upload takes.
    @discardableResult
    public func receiveFile(at key: ObjectKey, condition: WriteCondition?, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        let root = try openRoot(create: true)
        // Shared with every other writer; excludes only `removeWorkingFiles()`.
        return try await root.withSharedLock { try await receiveFile(at: key, root: root, condition: condition, operation: "download", fill) }
    }

    /// As ``receiveFile(at:condition:_:)``, with the content type, headers and metadata of
    /// `options` set on the file before it is placed (``ObjectAttributes``).
    @discardableResult
    public func receiveFile(at key: ObjectKey, options: UploadOptions, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        try check(UploadOptions(contentType: options.contentType, metadata: options.metadata, contentHeaders: options.contentHeaders), key: key)
        let root = try openRoot(create: true)
        return try await root.withSharedLock {
            try await receiveFile(at: key, root: root, condition: options.condition, attributes: options, operation: "upload", fill)
        }
    }

    /// Writes the stream into a private folder under `<root>/.buckia/tmp` as it arrives,
    /// checking known checksums on the way, then renames the file into place as
    /// ``receiveFile(at:condition:_:)`` does: nothing is held in memory beyond a chunk, and
    /// nothing changes at `remotePath` unless the stream ends normally.
    @discardableResult
    public func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options, key: remotePath)
        let digests = try DigestSet(options.verifyingAlgorithms())
        let progress = TransferProgress.observer
        let root = try openRoot(create: true)
        return try await root.withSharedLock {
            try await receiveFile(at: remotePath, root: root, condition: options.condition, operation: "upload") { url in
                let output = try LocalFile.createExclusive(url)
                for try await chunk in stream {
                    try output.write(chunk)
                    digests.update(chunk)
                    progress?.report(Int64(chunk.count))
                }
                // A stream often ends because its task was cancelled (a pipe's producer killed
                // by the same Ctrl-C): what it handed out is then no whole object.
                if Task.isCancelled {
                    throw BuckiaError(.cancelled, "The upload was cancelled while its stream was read; nothing was stored.", operation: "upload", path: remotePath.rawValue)
                }
                try DigestSet.check(digests.finalize(), against: options.knownChecksums, key: remotePath)
                try storeAttributes(options, modified: options.modificationDate, on: output)
                if let modified = options.modificationDate { try output.setModificationDate(modified) }
                if durable { try await output.syncOffThePool() }
                try output.close()
            }
        }.storing(options, provider: self)
    }

    private func receiveFile(
        at key: ObjectKey, root: DirectoryHandle, condition: WriteCondition?, attributes: UploadOptions? = nil, operation: String,
        _ fill: (URL) async throws -> Void
    ) async throws -> RemoteFile {
        let temporary = try temporaryFolder(root)
        let (stagingName, staging) = try temporary.createTemporaryFolder()
        let stagingPath = staging.path
        defer {
            try? temporary.removeTree(stagingName)
            Temporaries.unregister(stagingPath)
        }
        try await fill(URL(fileURLWithPath: stagingPath, isDirectory: true).appendingPathComponent("file", isDirectory: false))
        guard try staging.entry("file").kind == .file else {
            throw BuckiaError(.io, "The transfer finished without writing the file.", operation: operation, path: key.rawValue)
        }
        // Held open, so the version placed is the one described afterwards.
        let placed = try staging.openFile("file")
        defer { try? placed.close() }
        if let attributes {
            do {
                try storeAttributes(attributes, modified: LocalFile.modificationDate(of: try placed.statRecord()), on: placed)
            } catch {
                throw mapWriteError(error, key: key, operation: operation)
            }
        }
        var location = try locate(key, create: true, operation: operation)
        do {
            try underWriteLock(try root.folder(LocalProvider.reservedName, create: true), condition: condition) {
                try placing(key, at: &location, operation: operation) { try place("file", from: staging, at: $0, key: key, condition: condition) }
            }
        } catch let error as BuckiaError where error.code == .conditionNotMatch {
            throw error
        } catch {
            throw mapWriteError(error, key: key, operation: operation)
        }
        if durable { try location.parent.sync() }
        return remoteFile(key, try placed.statRecord(), storing: attributes ?? UploadOptions())
    }
}

extension LocalProvider: OpenFileStore {
    /// The object's file opened in one `openat2` of its whole path, no link followed; any
    /// failure takes the folder-by-folder way of ``fileForReading(_:)``, for its exact error.
    package func openForReading(_ key: ObjectKey) throws -> (file: LocalFile, status: stat, description: RemoteFile) {
        let raw = key.rawValue
        let slash = UInt8(ascii: "/")
        let first = raw.utf8.firstIndex(of: slash).map { raw[..<$0] } ?? raw[...]
        if !first.utf8.elementsEqual(LocalProvider.reservedName.utf8),
            let (file, status) = LocalFile.openRegularWithoutLinks((rootPath.utf8.last == slash ? rootPath : rootPath + "/") + raw)
        {
            return (file, status, remoteFile(key, status))
        }
        let location = try locate(key, create: false, operation: "read")
        switch try location.parent.entry(location.name).kind {
        case .file:
            let file = try location.parent.openFile(location.name)
            let status = try file.statRecord()
            return (file, status, remoteFile(key, status))
        case .symbolicLink:
            throw BuckiaError(
                .invalidPath, "The key names a symbolic link; the local provider does not follow links.", operation: "read", path: key.rawValue)
        default:
            throw BuckiaError.notFound(key, operation: "read")
        }
    }

    /// As ``uploadFile(localURL:remotePath:options:)`` does inline: up to ``inlineLimit``
    /// bytes, when writes are not synced one by one.
    package func storeInline(_ source: LocalFile, status: stat, at key: ObjectKey, options: UploadOptions) throws -> RemoteFile? {
        guard !durable, Int64(status.st_size) <= Int64(Self.inlineLimit) else { return nil }
        try check(options, key: key)
        return try storeFile(source, status, at: key, options: options)
    }
}
