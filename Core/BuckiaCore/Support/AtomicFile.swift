import Foundation

/// Whole-file writes that either happen completely or not at all.
///
/// Bytes go to a temporary file first (in `temporaryDirectory`, which must be on the same file
/// system as the destination, or beside the destination by default); the file is synced,
/// renamed over the destination, and the directory synced. A crash leaves the old file or the
/// new one, never a torn mix, and at worst a stray temporary file.
public enum AtomicFile {
    /// The size of the buffer streaming copies use: memory does not grow with file size.
    public static let copyBufferSize = 1 << 20

    /// Options shared by the write operations.
    public struct Options: Sendable {
        /// Where the temporary file goes; nil means beside the destination.
        public var temporaryDirectory: URL?
        /// The new file's mode bits; nil keeps the mode of the file being replaced, or uses
        /// 0644 (less the umask) for a new one. ``AtomicFile/copy(from:to:options:observe:)``
        /// gives a new file the source's permission bits instead (without setuid, setgid or
        /// sticky, as `cp` does without `-p`).
        public var permissions: mode_t?
        /// The modification time to give the new file; nil keeps the time of writing.
        public var modificationDate: Date?
        /// Whether to `fsync` the file and its directory (durability against power loss).
        public var durable: Bool
        /// Whether to create the destination's folder if it is missing at rename time (a
        /// concurrent delete may have pruned it after the caller created it).
        public var createParentDirectories: Bool

        /// Creates options.
        public init(
            temporaryDirectory: URL? = nil, permissions: mode_t? = nil, modificationDate: Date? = nil, durable: Bool = true,
            createParentDirectories: Bool = false
        ) {
            self.temporaryDirectory = temporaryDirectory
            self.permissions = permissions
            self.modificationDate = modificationDate
            self.durable = durable
            self.createParentDirectories = createParentDirectories
        }
    }

    /// Writes `data` to `url` atomically.
    public static func write(_ data: Data, to url: URL, permissions: mode_t? = nil) throws {
        try write(to: url, options: Options(permissions: permissions)) { file in try file.write(data) }
    }

    /// Writes `data` to `url` atomically, with `options` (a modification time, durability).
    public static func write(_ data: Data, to url: URL, options: Options) throws {
        try write(to: url, options: options) { file in try file.write(data) }
    }

    /// Creates the file through `body`, which writes to a temporary file, then moves it into place.
    ///
    /// If `body` throws, the temporary file is removed and the destination is untouched.
    package static func write(to url: URL, options: Options, _ body: (LocalFile) throws -> Void) throws {
        // Refused before a byte is written; checked again at the rename.
        try LocalFile.checkReplaceable(url.path)
        let directory = options.temporaryDirectory ?? url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(Temporaries.makeName(), isDirectory: false)
        // Locked and registered for its whole life: a sweep leaves it alone while this process
        // lives, and an interrupted process removes it.
        let file: LocalFile
        do {
            file = try Temporaries.create(
                temporary.path, in: AT_FDCWD, folder: directory.path, path: temporary.path, permissions: options.permissions ?? 0o644)
        } catch let error as BuckiaError {
            // The user named the destination, not Buckia's temporary beside it.
            throw BuckiaError(
                error.code, "\(url.path) cannot be written: \(error.message.replacingOccurrences(of: temporary.path, with: directory.path))",
                operation: "write", path: url.path, cause: error.cause)
        }
        defer { Temporaries.unregister(temporary.path) }
        do {
            if options.permissions == nil, let existing = existingPermissions(url) {
                try file.setPermissions(existing)
            }
            try body(file)
            if let date = options.modificationDate { try file.setModificationDate(date) }
            if options.durable { try file.sync() }
            try moveIntoPlace(temporary, url, createParents: options.createParentDirectories)
            try file.close()
        } catch {
            try? file.close()
            unlink(temporary.path)
            throw error
        }
        if options.durable {
            let parent = try LocalFile.openDirectory(url.deletingLastPathComponent().path)
            try parent.sync()
            try parent.close()
        }
    }

    /// Moves `finished`, a complete file this process wrote in a private folder on the same
    /// file system (a download's), over `url`: synced first when `options.durable`, so the
    /// name never points at bytes a power loss could take back, and the folder synced after.
    /// Only `durable` and `createParentDirectories` of `options` apply.
    ///
    /// - Throws: What the file system reports; `finished` then stays where it was.
    package static func place(_ finished: URL, at url: URL, options: Options) throws {
        if options.durable {
            let file = try LocalFile.openForReading(finished)
            do {
                try file.sync()
            } catch {
                // The sync's failure is the one to report; the descriptor goes either way.
                do { try file.close() } catch {}
                throw error
            }
            try file.close()
        }
        try moveIntoPlace(finished, url, createParents: options.createParentDirectories)
        if options.durable {
            let parent = try LocalFile.openDirectory(url.deletingLastPathComponent().path)
            try parent.sync()
            try parent.close()
        }
    }

    /// The mode of the file at `url`, or nil when there is none.
    private static func existingPermissions(_ url: URL) -> mode_t? {
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return info.st_mode & 0o7777
    }

    private static func moveIntoPlace(_ temporary: URL, _ url: URL, createParents: Bool) throws {
        try LocalFile.checkReplaceable(url.path)
        var attempts = 0
        while rename(temporary.path, url.path) != 0 {
            let code = errno
            attempts += 1
            guard code == ENOENT, createParents, attempts < 5 else {
                throw BuckiaError.posix(code, operation: "rename", path: url.path)
            }
            try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
    }

    /// Copies `source` to `destination` atomically: a copy-on-write clone where the file
    /// systems make one (APFS, Btrfs, XFS: a moment and no space, whatever the size), otherwise
    /// streamed through a fixed-size buffer.
    ///
    /// - Parameter observe: Sees every chunk of what is placed, to hash it on the way (a clone
    ///   is read back for it: what was hashed is what the destination holds).
    /// - Returns: The number of bytes copied.
    @discardableResult
    public static func copy(
        from source: URL, to destination: URL, options: Options = Options(),
        observe: ((UnsafeRawBufferPointer) -> Void)? = nil
    ) throws -> Int64 {
        let input = try LocalFile.openForReading(source)
        defer { try? input.close() }
        var options = options
        // As cp does without -p: a new file gets the source's permission bits, never its
        // setuid, setgid or sticky bit; a replaced file keeps its own mode (write's default).
        if options.permissions == nil && existingPermissions(destination) == nil {
            options.permissions = try input.permissions() & 0o777
        }
        if let cloned = try placeClone(of: input, at: destination, options: options, observe: observe) { return cloned }
        var total: Int64 = 0
        try write(to: destination, options: options) { output in
            total = try pump(from: input, to: output, observe: observe)
        }
        return total
    }

    /// Places a copy-on-write clone of `input` at `url` (``CopyOnWrite``): cloned into a private
    /// temporary folder beside `url` (or in `options.temporaryDirectory`), given its mode and
    /// date, synced when durable, then moved over `url`. The mode is `options.permissions`
    /// less the umask, else the replaced file's, else 0644 less the umask: what ``write(to:options:_:)``
    /// gives.
    ///
    /// - Parameter observe: Sees the clone's bytes, read back before it is placed.
    /// - Returns: The size placed; nil, with nothing changed or left behind, where
    ///   ``CopyOnWrite/clone(_:in:)`` makes no clone (the caller copies the bytes).
    package static func placeClone(
        of input: LocalFile, at url: URL, options: Options, observe: ((UnsafeRawBufferPointer) -> Void)? = nil
    ) throws -> Int64? {
        try LocalFile.checkReplaceable(url.path)
        let directory = options.temporaryDirectory ?? url.deletingLastPathComponent()
        let parent: DirectoryHandle
        do {
            parent = try DirectoryHandle(path: directory.path)
        } catch {
            return nil
        }
        guard let clone = try CopyOnWrite.clone(input, in: parent) else { return nil }
        defer { clone.discard() }
        let existing = existingPermissions(url)
        if let observe {
            try clone.file.forEachChunk { chunk in
                try BlockingWork.checkCancellation("copy")
                observe(chunk)
            }
        }
        let (size, _) = try clone.file.status()
        try clone.file.setPermissions(options.permissions.map { $0 & ~CopyOnWrite.creationMask } ?? existing ?? (0o644 & ~CopyOnWrite.creationMask))
        if let date = options.modificationDate { try clone.file.setModificationDate(date) }
        try place(URL(fileURLWithPath: clone.path), at: url, options: options)
        TransferProgress.observer?.report(size)
        return size
    }

    /// Copies everything from `input` to `output` through one buffer of ``copyBufferSize``,
    /// stopping with `cancelled` between chunks once the task (or the ``BlockingWork`` job) is.
    package static func pump(from input: LocalFile, to output: LocalFile, observe: ((UnsafeRawBufferPointer) -> Void)? = nil) throws -> Int64 {
        var total: Int64 = 0
        let progress = TransferProgress.observer
        try input.forEachChunk { chunk in
            // A cancelled task stops the copy between chunks, not after the whole file.
            try BlockingWork.checkCancellation("copy")
            observe?(chunk)
            try output.write(chunk)
            total += Int64(chunk.count)
            progress?.report(Int64(chunk.count))
        }
        return total
    }
}
