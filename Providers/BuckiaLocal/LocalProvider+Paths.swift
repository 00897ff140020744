import BuckiaCore
import Foundation

extension LocalProvider {
    /// Where a key lives: its parent folder, reached without following links, and (for
    /// pruning) the chain of folders walked.
    struct Location {
        let rootPath: String
        /// The root's handle when the walk opened it.
        let openedRoot: DirectoryHandle?
        let parent: DirectoryHandle
        let name: String
        /// Each folder on the way with the name of its child, root first, for pruning; empty
        /// when the parent was opened in one step.
        let chain: [(folder: DirectoryHandle, child: String)]
        /// The folder's path when `parent` is held for a batch (``BuckiaCore/FolderHandles``),
        /// to let go of if it turns out to be gone.
        var heldAs: String? = nil

        /// The root folder's handle: the walk's, or opened now.
        func root() throws -> DirectoryHandle {
            try openedRoot ?? DirectoryHandle(path: rootPath)
        }
    }

    /// Opens the folder `key` is in, creating the folders on the way when `create` is set.
    ///
    /// Where the kernel can (``BuckiaCore/DirectoryHandle/openWithoutLinks(_:)``), an existing
    /// folder opens in one system call that refuses a link anywhere on the way; otherwise, and
    /// when a folder is missing, a link or a file is in the way, or `forPruning` asks for the
    /// chain, the folders are walked one at a time from the root, which makes what is missing
    /// and says exactly what is wrong. A first sync of 10,000 files in nested folders spent
    /// four system calls a file on the walk.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` when a folder is missing (and not
    ///   created) or a file is in the way of a read; ``BuckiaCore/BuckiaError/Code/invalidPath``
    ///   when a folder on the way is a symbolic link or the key uses the reserved name;
    ///   ``BuckiaCore/BuckiaError/Code/alreadyExists`` when a file is in the way of a write.
    ///
    /// With `held`, a folder other than the root is taken from (and kept in) that batch's
    /// open folders rather than looked up again.
    func locate(_ key: ObjectKey, create: Bool, operation: String, forPruning: Bool = false, held: FolderHandles? = nil) throws -> Location {
        // Split at the first and last `/`, not into an array of segments: a sync locates every
        // file it copies twice, once on each side.
        let raw = key.rawValue
        let slash = UInt8(ascii: "/")
        let first = raw.utf8.firstIndex(of: slash).map { raw[..<$0] } ?? raw[...]
        if first.utf8.elementsEqual(LocalProvider.reservedName.utf8) {
            throw BuckiaError(
                .invalidPath, "The first segment \(LocalProvider.reservedName) is reserved by the local provider for temporary files.",
                operation: operation, path: key.rawValue)
        }
        let last = raw.utf8.lastIndex(of: slash)
        let name = last.map { String(raw[raw.utf8.index(after: $0)...]) } ?? raw
        if !forPruning {
            let folders = last.map { raw[..<$0] } ?? ""
            let path = folders.isEmpty ? rootPath : (rootPath.utf8.last == slash ? rootPath : rootPath + "/") + folders
            do {
                // The root is never held: writers lock its handle, and a lock belongs to a handle.
                if let held, !folders.isEmpty {
                    if let parent = try held.folder(path, open: { try DirectoryHandle.openWithoutLinks(path) }) {
                        return Location(rootPath: rootPath, openedRoot: nil, parent: parent, name: name, chain: [], heldAs: path)
                    }
                } else if let parent = try DirectoryHandle.openWithoutLinks(path) {
                    return Location(rootPath: rootPath, openedRoot: folders.isEmpty ? parent : nil, parent: parent, name: name, chain: [])
                }
            } catch {
                // A folder missing, a link or a file on the way: the walk below makes what is
                // missing or reports exactly what is wrong.
            }
        }
        let root: DirectoryHandle
        do {
            root = try openRoot(create: create)
        } catch let error as BuckiaError where error.code == .notFound {
            throw BuckiaError.notFound(key, operation: operation)
        }
        var current = root
        var chain: [(folder: DirectoryHandle, child: String)] = []
        do {
            for segment in key.segments.dropLast().map(String.init) {
                let next = try current.folder(segment, create: create)
                chain.append((current, segment))
                current = next
            }
        } catch let error as BuckiaError {
            throw keyError(error, key: key, operation: operation, writing: create)
        }
        // A folder the walk reached (and perhaps made), no link on the way, is held as one
        // opened in a single step would be.
        if let held, !forPruning, let (folder, child) = chain.last {
            let path = folder.child(child)
            let parent = held.folder(path) { current } ?? current
            return Location(rootPath: rootPath, openedRoot: root, parent: parent, name: name, chain: chain, heldAs: path)
        }
        return Location(rootPath: rootPath, openedRoot: root, parent: current, name: name, chain: chain)
    }

    /// The folder temporary files are written in before they are renamed into place.
    func temporaryFolder(_ root: DirectoryHandle) throws -> DirectoryHandle {
        try root.folder(LocalProvider.reservedName, create: true).folder("tmp", create: true)
    }

    /// Restates a folder-walk error in terms of the key.
    func keyError(_ error: BuckiaError, key: ObjectKey, operation: String, writing: Bool) -> BuckiaError {
        switch error.code {
        case .notFound:
            return BuckiaError.notFound(key, operation: operation)
        case .alreadyExists where !writing:
            return BuckiaError.notFound(key, operation: operation)
        case .alreadyExists:
            return BuckiaError(
                .alreadyExists, "An object exists where this key needs a folder; the local file system cannot hold both.",
                operation: operation, path: key.rawValue, cause: error.cause)
        case .invalidPath:
            return BuckiaError(
                .invalidPath, "The key passes through a symbolic link; the local provider does not follow links, so nothing outside its root can be reached.",
                operation: operation, path: key.rawValue)
        default:
            var copy = error
            copy.operation = operation
            return copy
        }
    }

    /// Opens the object's file for reading and describes it from the open descriptor, so
    /// what is read is the version described (and, with `ifMatch`, the version asked for).
    func openObject(_ key: ObjectKey, ifMatch: String? = nil, operation: String) throws -> (LocalFile, RemoteFile) {
        let location = try locate(key, create: false, operation: operation)
        let file: LocalFile
        do {
            file = try location.parent.openFile(location.name)
        } catch let error as BuckiaError {
            throw keyError(error, key: key, operation: operation, writing: false)
        }
        let described = remoteFile(key, try file.statRecord())
        if let ifMatch, described.etag != ifMatch {
            try? file.close()
            throw BuckiaError.conditionNotMatch(key, operation: operation, "The object has changed since the entity tag was read.")
        }
        return (file, described)
    }

    /// Writes an object atomically: a temporary file under `.buckia/tmp`, hashed on the way
    /// when the caller gave checksums, synced, then renamed into the folder walked to without
    /// links. The rename happens under the root's lock file, where the write condition is
    /// checked, so conditional writers never interleave. A folder removed by a concurrent
    /// delete between the walk and the rename is walked to (and created) again.
    ///
    /// - Parameter permissions: The new object's mode bits, less the umask.
    func writeObject(
        _ key: ObjectKey, modified: Date?, permissions: mode_t = 0o644, options: UploadOptions,
        _ body: (LocalFile, DigestSet) throws -> Void
    ) throws -> RemoteFile {
        let held = FolderHandles.current
        var location = try locate(key, create: true, operation: "upload", held: held)
        // A new file (If-None-Match, as every file of a first sync is written) is written with
        // no name in its own folder and named in place by one `linkat` that fails if anything
        // is there: no temporary name, no lock, nothing under `.buckia`, nothing for a sweep if
        // the writer dies.
        if case .ifNoneMatch = options.condition {
            let unnamed: LocalFile?
            do {
                unnamed = try location.parent.createUnnamedFile(permissions: permissions)
            } catch where location.heldAs != nil {
                // The held folder may have been removed since it was opened (no file can be
                // made in it then; ext4 says EPERM): look it up (and make it) again, and let
                // that lookup report what is really wrong.
                if let path = location.heldAs { held?.forget(path) }
                location = try locate(key, create: true, operation: "upload")
                unnamed = try location.parent.createUnnamedFile(permissions: permissions)
            }
            if let file = unnamed { return try writeNew(key, file, at: location, modified: modified, options: options, body) }
        }
        // Shared with every other writer of a temporary; excludes only `removeWorkingFiles()`,
        // which removes `.buckia` when no writer holds this.
        let root = try location.root()
        return try root.withSharedLock {
            try writeTemporary(key, at: location, root: root, modified: modified, permissions: permissions, options: options, body)
        }
    }

    /// Writes an object through a named temporary under `.buckia/tmp`, renamed into place.
    private func writeTemporary(
        _ key: ObjectKey, at located: Location, root: DirectoryHandle, modified: Date?, permissions: mode_t, options: UploadOptions,
        _ body: (LocalFile, DigestSet) throws -> Void
    ) throws -> RemoteFile {
        var location = located
        let reserved = try root.folder(LocalProvider.reservedName, create: true)
        let temporary = try reserved.folder("tmp", create: true)
        let (name, file) = try temporary.createTemporaryFile(permissions: permissions)
        defer { Temporaries.unregister(file.path) }
        let written: FileStatus
        do {
            try fill(file, key: key, modified: modified, options: options, body)
            // The file stays open, and so locked, until it is in place: a sweep by another
            // process must not take it in between.
            try underWriteLock(reserved, condition: options.condition) {
                try placing(key, at: &location, operation: "upload") { try place(name, from: temporary, at: $0, key: key, condition: options.condition) }
            }
            // What is stored, described from the open file once in place (the rename changed
            // its status-change time), so it is this version whatever comes next.
            written = try file.statRecord()
            try file.close()
            if durable { try location.parent.sync() }
        } catch {
            try? file.close()
            _ = try? temporary.removeFile(name)
            if let error = error as? BuckiaError, error.code == .conditionNotMatch || error.code == .checksumMismatch { throw error }
            throw mapWriteError(error, key: key, operation: "upload")
        }
        return remoteFile(key, written, storing: options)
    }

    /// Writes `file` (unnamed, in `located`'s folder) through `body` and names it at `located`.
    private func writeNew(
        _ key: ObjectKey, _ file: LocalFile, at located: Location, modified: Date?, options: UploadOptions,
        _ body: (LocalFile, DigestSet) throws -> Void
    ) throws -> RemoteFile {
        var location = located
        let written: FileStatus
        do {
            try fill(file, key: key, modified: modified, options: options, body)
            try placing(key, at: &location, operation: "upload") { location in
                do {
                    try file.linkUnnamed(into: location.parent, as: location.name)
                } catch let error as BuckiaError where error.code == .alreadyExists {
                    throw BuckiaError.conditionNotMatch(key, operation: "upload", "An object already exists at this key.")
                }
            }
            written = try file.statRecord()
            try file.close()
            if durable { try location.parent.sync() }
        } catch {
            // Unnamed, the file goes with its descriptor; the write's own error is the one to report.
            do { try file.close() } catch {}
            if let error = error as? BuckiaError, error.code == .conditionNotMatch || error.code == .checksumMismatch { throw error }
            throw mapWriteError(error, key: key, operation: "upload")
        }
        return remoteFile(key, written, storing: options)
    }

    /// Writes an object's bytes into `file` through `body`, checks them against the known
    /// checksums, dates the file and, when durable, syncs it.
    private func fill(_ file: LocalFile, key: ObjectKey, modified: Date?, options: UploadOptions, _ body: (LocalFile, DigestSet) throws -> Void) throws {
        let digests = try DigestSet(options.knownChecksums.keys.compactMap(\.hashAlgorithm))
        try body(file, digests)
        try DigestSet.check(digests.finalize(), against: options.knownChecksums, key: key)
        try storeAttributes(options, modified: modified, on: file)
        if let modified { try file.setModificationDate(modified) }
        if durable { try file.sync() }
    }

    /// Sets an upload's content type, headers and metadata on its new file (``ObjectAttributes``).
    func storeAttributes(_ options: UploadOptions, modified: Date?, on file: LocalFile) throws {
        guard keepsMetadata else { return }
        let entries = ObjectAttributes.entries(options, modified: modified, md5: options.knownChecksums[.md5])
        if !entries.isEmpty { try ObjectAttributes.write(entries, to: file, root: rootPath) }
    }

    /// Runs `place` at `location`; when a concurrent delete pruned a folder on the way
    /// (`ENOENT`), walks (and creates) the folders again and retries, up to four times.
    func placing(_ key: ObjectKey, at location: inout Location, operation: String, _ place: (Location) throws -> Void) throws {
        var attempts = 0
        while true {
            do {
                try place(location)
                return
            } catch let error as BuckiaError where (error.cause as? POSIXErrorNumber)?.rawValue == ENOENT && attempts < 4 {
                attempts += 1
                if let path = location.heldAs { FolderHandles.current?.forget(path) }
                location = try locate(key, create: true, operation: operation)
            }
        }
    }

    /// Runs `body` (a file's placing) under the root's writer lock where its condition needs
    /// one: an If-Match check and the move after it must not interleave with another writer,
    /// nor an unconditional replace with such a check. A new file placed under If-None-Match
    /// is a single `linkat`, which fails if anything is there, so it takes no lock (a first
    /// sync writes every file that way: the open, lock and close were three system calls a
    /// file).
    func underWriteLock<T>(_ reserved: @autoclosure () throws -> DirectoryHandle, condition: WriteCondition?, _ body: () throws -> T) throws -> T {
        if case .ifNoneMatch = condition { return try body() }
        return try reserved().withExclusiveLock(on: "lock", body)
    }

    /// Moves the temporary file into place if the condition holds.
    func place(_ name: String, from temporary: DirectoryHandle, at location: Location, key: ObjectKey, condition: WriteCondition?) throws {
        switch condition {
        case .none:
            try temporary.move(name, to: location.parent, as: location.name)
        case .ifNoneMatch:
            do {
                try temporary.link(name, to: location.parent, as: location.name)
            } catch let error as BuckiaError where error.code == .alreadyExists {
                throw BuckiaError.conditionNotMatch(key, operation: "upload", "An object already exists at this key.")
            }
            _ = try temporary.removeFile(name)
        case .ifMatch(let etag):
            let (kind, info) = try location.parent.entry(location.name)
            guard kind == .file else {
                throw BuckiaError.conditionNotMatch(key, operation: "upload", "No object exists at this key.")
            }
            guard LocalProvider.etag(info) == etag else {
                throw BuckiaError.conditionNotMatch(key, operation: "upload", "The object has changed since the entity tag was read.")
            }
            try temporary.move(name, to: location.parent, as: location.name)
        }
    }

    func mapWriteError(_ error: any Error, key: ObjectKey, operation: String) -> BuckiaError {
        let wrapped = BuckiaError.wrapping(error, operation: operation, path: key.rawValue)
        guard let cause = wrapped.cause as? POSIXErrorNumber, [EISDIR, ENOTDIR, EEXIST, ENOTEMPTY].contains(cause.rawValue) else {
            return wrapped
        }
        return BuckiaError(
            .alreadyExists, "A folder exists where this object would go; the local file system cannot hold both.",
            operation: operation, path: key.rawValue, cause: cause)
    }
}
