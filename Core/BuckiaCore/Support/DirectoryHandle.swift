import Foundation

/// An open folder, for working inside a root without the check-then-use races of paths.
///
/// Every name is resolved relative to this descriptor and symbolic links are never followed
/// (`O_NOFOLLOW`, `AT_SYMLINK_NOFOLLOW`), so swapping a folder for a link between a check and
/// a use cannot redirect a read, write or delete outside the root. `Sendable`: it holds only
/// the descriptor and its path, both fixed, and every call on it is one system call the kernel
/// orders; a batch's writers share one (``FolderHandles``). It closes when the last holder lets go.
package final class DirectoryHandle: Sendable {
    let descriptor: Int32
    /// The folder's path, for messages.
    package let path: String

    /// Opens the folder at `path` (which may itself be reached through links).
    package init(path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw BuckiaError.posix(errno, operation: "open folder", path: path) }
        descriptor = fd
        self.path = path
    }

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Opens the folder at the absolute `path` without following a link anywhere on the way,
    /// in one system call (Linux's `openat2` with `RESOLVE_NO_SYMLINKS`): what a walk of
    /// ``folder(_:create:)`` calls does in two per folder.
    ///
    /// - Returns: Nil where the kernel has no such call (before Linux 5.6, in a sandbox that
    ///   filters it, on other platforms): walk instead.
    /// - Throws: The open's error: `ELOOP` when a link is on the way, `ENOENT` when a folder
    ///   is missing, `ENOTDIR` when a file is in the way.
    package static func openWithoutLinks(_ path: String) throws -> DirectoryHandle? {
        guard canOpenWithoutLinks else { return nil }
        let fd = SystemCalls.openWithoutLinks(AT_FDCWD, path, O_RDONLY | O_DIRECTORY, 0)
        guard fd >= 0 else {
            if errno == ENOSYS { return nil }
            throw BuckiaError.posix(errno, operation: "open folder", path: path)
        }
        return DirectoryHandle(descriptor: fd, path: path)
    }

    /// Whether ``openWithoutLinks(_:)`` works here, tried once on `/`.
    package static let canOpenWithoutLinks: Bool = {
        let fd = SystemCalls.openWithoutLinks(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY, 0)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }()

    /// What is at `name` in this folder, without following a link.
    package enum EntryKind: Sendable { case missing, file, folder, symbolicLink, other }

    /// The kind of `name`, and its `stat` when it exists.
    package func entry(_ name: String) throws -> (kind: EntryKind, status: stat) {
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { return (.missing, info) }
            throw BuckiaError.posix(errno, operation: "stat", path: child(name))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return (.file, info)
        case S_IFDIR: return (.folder, info)
        case S_IFLNK: return (.symbolicLink, info)
        default: return (.other, info)
        }
    }

    /// Opens the subfolder `name`, creating it when `create` is set.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when it is missing (and not created),
    ///   ``BuckiaError/Code/invalidPath`` when it is a symbolic link,
    ///   ``BuckiaError/Code/alreadyExists`` when a file is in the way.
    package func folder(_ name: String, create: Bool) throws -> DirectoryHandle {
        for attempt in 0..<3 {
            let fd = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 { return DirectoryHandle(descriptor: fd, path: child(name)) }
            let code = errno
            switch code {
            case ENOENT where create && attempt < 2:
                if mkdirat(descriptor, name, 0o755) != 0 && errno != EEXIST {
                    throw BuckiaError.posix(errno, operation: "create folder", path: child(name))
                }
            case ENOENT:
                throw BuckiaError(.notFound, "The folder \(child(name).debugDescription) does not exist.", operation: "open folder", path: child(name))
            case ELOOP:
                throw symbolicLink(name)
            case ENOTDIR:
                if try entry(name).kind == .symbolicLink { throw symbolicLink(name) }
                throw BuckiaError(
                    .alreadyExists, "A file is where the folder \(child(name).debugDescription) is needed.",
                    operation: "open folder", path: child(name))
            default:
                throw BuckiaError.posix(code, operation: "open folder", path: child(name))
            }
        }
        throw BuckiaError(.transient, "The folder \(child(name).debugDescription) kept disappearing while it was created.", path: child(name))
    }

    /// Opens the regular file `name` for reading.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when it is missing or is a folder,
    ///   ``BuckiaError/Code/invalidPath`` when it is a symbolic link.
    package func openFile(_ name: String) throws -> LocalFile { try openRegular(name, O_RDONLY) }

    /// Opens `name` with `access` (`O_RDONLY`, `O_RDWR`), refusing links and anything but a regular file.
    private func openRegular(_ name: String, _ access: Int32) throws -> LocalFile {
        let fd = openat(descriptor, name, access | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            switch errno {
            case ENOENT, EISDIR: throw BuckiaError(.notFound, "No file exists at \(child(name).debugDescription).", operation: "open", path: child(name))
            case ELOOP: throw symbolicLink(name)
            default: throw BuckiaError.posix(errno, operation: "open", path: child(name))
            }
        }
        let file = LocalFile(descriptor: fd, path: child(name))
        guard try file.isRegularFile() else {
            throw BuckiaError(.notFound, "\(child(name).debugDescription) is not a regular file.", operation: "open", path: child(name))
        }
        return file
    }

    /// Creates the file `name` for reading and writing by position, failing with
    /// ``BuckiaError/Code/alreadyExists`` when something is there: an atomic create-if-absent.
    package func createFile(_ name: String, permissions: mode_t = 0o644) throws -> LocalFile {
        let fd = openat(descriptor, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw BuckiaError(.alreadyExists, "Something already exists at \(child(name).debugDescription).", operation: "create", path: child(name))
            }
            throw BuckiaError.posix(errno, operation: "create", path: child(name))
        }
        return LocalFile(descriptor: fd, path: child(name))
    }

    /// Opens the regular file `name` for reading and writing by position.
    ///
    /// - Throws: ``BuckiaError/Code/notFound`` when it is missing or is no regular file,
    ///   ``BuckiaError/Code/invalidPath`` when it is a symbolic link.
    package func openFileForUpdate(_ name: String) throws -> LocalFile { try openRegular(name, O_RDWR) }

    /// Creates a new, uniquely named file in this folder for writing.
    ///
    /// The file is locked by this process and registered with ``Temporaries`` (unregister it
    /// once it is renamed or removed), so an interrupted process removes it and a later sweep
    /// never takes it while it is in use.
    package func createTemporaryFile(permissions: mode_t = 0o644) throws -> (name: String, file: LocalFile) {
        let name = Temporaries.makeName()
        let file = try Temporaries.create(name, in: descriptor, folder: ".", path: child(name), permissions: permissions)
        return (name, file)
    }

    /// A new file with no name in this folder (`O_TMPFILE`), for ``LocalFile/linkUnnamed(into:as:)``
    /// to name once it is complete: unseen until then, and gone with its descriptor if its
    /// writer dies. Nil where the file system or platform has no such files (the caller then
    /// writes a named temporary).
    package func createUnnamedFile(permissions: mode_t = 0o644) throws -> LocalFile? {
        guard Self.canNameUnnamedFiles else { return nil }
        let fd = SystemCalls.createUnnamed(descriptor, ".", O_WRONLY, permissions)
        guard fd >= 0 else {
            if [EOPNOTSUPP, EISDIR, EINVAL, ENOSYS].contains(errno) { return nil }
            throw BuckiaError.posix(errno, operation: "create", path: path)
        }
        return LocalFile(descriptor: fd, path: path)
    }

    /// Whether an unnamed file can be given a name: through `/proc/self/fd`, looked for once.
    private static let canNameUnnamedFiles = access("/proc/self/fd", X_OK) == 0

    /// Moves `name` from this folder to `newName` in `destination`, replacing what is there
    /// (a link there is replaced, never followed).
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` when a device, FIFO or socket is at
    ///   `newName` (``LocalFile/checkReplaceable(_:in:shownAs:)``).
    package func move(_ name: String, to destination: DirectoryHandle, as newName: String) throws {
        try LocalFile.checkReplaceable(newName, in: destination.descriptor, shownAs: destination.child(newName))
        guard renameat(descriptor, name, destination.descriptor, newName) == 0 else {
            throw BuckiaError.posix(errno, operation: "rename", path: destination.child(newName))
        }
    }

    /// Removes the file or link `name`; returns false when nothing was there.
    @discardableResult
    package func removeFile(_ name: String) throws -> Bool {
        guard unlinkat(descriptor, name, 0) == 0 else {
            if errno == ENOENT { return false }
            throw BuckiaError.posix(errno, operation: "remove", path: child(name))
        }
        return true
    }

    /// Removes the subfolder `name` if it is empty; returns whether it was removed.
    @discardableResult
    package func removeFolderIfEmpty(_ name: String) -> Bool {
        unlinkat(descriptor, name, AT_REMOVEDIR) == 0
    }

    /// Flushes every write made so far on the file system that holds this folder: one call
    /// that makes a batch of unsynced files durable (a group commit), instead of an `fsync`
    /// per file.
    package func syncFileSystem() throws {
        guard SystemCalls.syncFileSystem(descriptor) == 0 else { throw BuckiaError.posix(errno, operation: "syncfs", path: path) }
    }

    /// Flushes the folder's entries to stable storage, after a rename into it.
    package func sync() throws {
        guard SystemCalls.fullSync(descriptor) == 0 else { throw BuckiaError.posix(errno, operation: "fsync", path: path) }
    }

    /// The names in this folder with their kinds, `.` and `..` left out, unsorted; names that
    /// are not valid UTF-8 are left out too (``rawNames()`` has them).
    package func names() throws -> [(name: String, kind: EntryKind)] {
        try rawNames().compactMap { entry in
            String.validatingUTF8(entry.name).map { ($0, entry.kind) }
        }
    }

    /// Every name in this folder as bytes, with its kind, `.` and `..` left out, unsorted.
    ///
    /// Kinds come from the directory entry where the file system provides them, so listing
    /// a large folder costs one `stat` only for entries of unknown type.
    package func rawNames() throws -> [(name: [UInt8], kind: EntryKind)] {
        let fd = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = fdopendir(fd) else {
            let code = errno
            if fd >= 0 { close(fd) }
            throw BuckiaError.posix(code, operation: "list", path: path)
        }
        defer { closedir(stream) }
        // Labelled as returned: an unlabelled array was converted element by element on return.
        var result: [(name: [UInt8], kind: EntryKind)] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                // readdir returns NULL at the end and on failure; only errno tells them apart.
                if errno != 0 { throw BuckiaError.posix(errno, operation: "list", path: path) }
                break
            }
            // The name's bytes up to its NUL, copied once (a byte-by-byte `prefix` over the
            // 256-byte field cost a thousand instructions a name).
            let name = withUnsafeBytes(of: &entry.pointee.d_name) { raw -> [UInt8] in
                guard let base = raw.baseAddress else { return [] }
                return Array(UnsafeRawBufferPointer(start: base, count: strnlen(base.assumingMemoryBound(to: CChar.self), raw.count)))
            }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            let kind: EntryKind
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_REG): kind = .file
            case Int32(DT_DIR): kind = .folder
            case Int32(DT_LNK): kind = .symbolicLink
            case Int32(DT_UNKNOWN): kind = try self.entry(bytes: name).kind
            default: kind = .other
            }
            result.append((name, kind))
        }
        return result
    }

    /// The kind of the entry whose name is `bytes` (which need not be UTF-8).
    func entry(bytes: [UInt8]) throws -> (kind: EntryKind, status: stat) {
        var info = stat()
        let result = (bytes + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { name in
                name.baseAddress.map { fstatat(descriptor, $0, &info, AT_SYMLINK_NOFOLLOW) } ?? -1
            }
        }
        guard result == 0 else {
            if errno == ENOENT { return (.missing, info) }
            throw BuckiaError.posix(errno, operation: "stat", path: child(String(decoding: bytes, as: UTF8.self)))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return (.file, info)
        case S_IFDIR: return (.folder, info)
        case S_IFLNK: return (.symbolicLink, info)
        default: return (.other, info)
        }
    }

    /// Gives the file `name` a second name, `newName` in `destination`, failing with
    /// ``BuckiaError/Code/alreadyExists`` when that name is taken: an atomic create-if-absent.
    package func link(_ name: String, to destination: DirectoryHandle, as newName: String) throws {
        guard linkat(descriptor, name, destination.descriptor, newName, 0) == 0 else {
            let code = errno
            if code == EEXIST {
                throw BuckiaError(
                    .alreadyExists, "Something already exists at \(destination.child(newName).debugDescription).",
                    operation: "link", path: destination.child(newName))
            }
            throw BuckiaError.posix(code, operation: "link", path: destination.child(newName))
        }
    }

    /// Holds an exclusive advisory lock on the file `name` in this folder (created if missing)
    /// while `body` runs: serialises read-check-write sequences between tasks and processes.
    package func withExclusiveLock<T>(on name: String, _ body: () throws -> T) throws -> T {
        let fd = openat(descriptor, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BuckiaError.posix(errno, operation: "lock", path: child(name)) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw BuckiaError.posix(errno, operation: "lock", path: child(name)) }
        }
        return try body()
    }

    /// Takes an exclusive advisory lock on the file `name` in this folder (created when
    /// `create` is set) without waiting, held until the returned lock is released or dropped:
    /// a mark that says its holder is at work for as long as the holder lives, since the lock
    /// goes with a process that dies.
    ///
    /// - Returns: Nil when another holder has the lock, or (without `create`) no file is there.
    package func tryLock(_ name: String, create: Bool) throws -> HeldLock? {
        let fd = openat(descriptor, name, O_RDWR | (create ? O_CREAT : 0) | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == ENOENT && !create { return nil }
            throw BuckiaError.posix(errno, operation: "lock", path: child(name))
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EINTR else {
                close(fd)
                if code == EWOULDBLOCK { return nil }
                throw BuckiaError.posix(code, operation: "lock", path: child(name))
            }
        }
        return HeldLock(descriptor: fd)
    }

    /// Holds a shared advisory lock on this folder itself while `body` runs. Writers that keep
    /// working files in a folder take it, so that ``tryExclusiveLock()`` succeeds only when no
    /// writer is at work and the working files can go.
    package func withSharedLock<T>(_ body: () async throws -> T) async throws -> T {
        try lockFolder(LOCK_SH)
        defer { flock(descriptor, LOCK_UN) }
        return try await body()
    }

    /// ``withSharedLock(_:)`` for synchronous work.
    package func withSharedLock<T>(_ body: () throws -> T) throws -> T {
        try lockFolder(LOCK_SH)
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }

    /// Takes an exclusive advisory lock on this folder if no one holds a lock on it, without
    /// waiting; held until the handle closes.
    ///
    /// - Returns: Whether the lock was taken.
    package func tryExclusiveLock() throws -> Bool {
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EWOULDBLOCK { return false }
            guard errno == EINTR else { throw BuckiaError.posix(errno, operation: "lock", path: path) }
        }
        return true
    }

    private func lockFolder(_ operation: Int32) throws {
        while flock(descriptor, operation) != 0 {
            guard errno == EINTR else { throw BuckiaError.posix(errno, operation: "lock", path: path) }
        }
    }

    /// The path of `name` in this folder, for messages and for naming held folders.
    package func child(_ name: String) -> String { path.hasSuffix("/") ? path + name : path + "/" + name }

    private func symbolicLink(_ name: String) -> BuckiaError {
        BuckiaError(
            .invalidPath, "\(child(name).debugDescription) is a symbolic link; links are not followed, so nothing can reach outside the root.",
            path: child(name))
    }
}

/// An advisory lock ``DirectoryHandle/tryLock(_:create:)`` took, held until ``release()`` or
/// until it is dropped. Not `Sendable`: it belongs to the operation that took it.
package final class HeldLock {
    private var descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { release() }

    /// Lets the lock go (closing its file); releasing again does nothing.
    package func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }
}
