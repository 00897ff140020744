import Foundation

/// An open file descriptor, for plugins that stream bytes with a fixed-size buffer.
///
/// Foundation's `FileHandle` hides `errno` and cannot set modification times; providers and
/// engines need both. Every failure is a ``BuckiaError`` naming the path. The descriptor is
/// closed on ``close()`` or when the value is released.
package final class LocalFile {
    /// The path the file was opened at, for messages.
    package let path: String
    private var descriptor: Int32

    /// The descriptor, for taking a lock on the open file.
    var descriptorForLocking: Int32 { descriptor }

    /// Runs `body` with the open descriptor, for calls this type does not wrap (extended
    /// attributes); `body` must not close it.
    package func withDescriptor<T>(_ body: (Int32) throws -> T) rethrows -> T { try body(descriptor) }

    /// Names a file made by ``DirectoryHandle/createUnnamedFile(permissions:)``: `name` in
    /// `folder`, in one `linkat`, which fails if anything (a file, a folder, a link) is there.
    ///
    /// - Throws: ``BuckiaError/Code/alreadyExists`` when `name` is taken; what the file system
    ///   reports otherwise (`ENOENT` when `folder` was removed meanwhile).
    package func linkUnnamed(into folder: DirectoryHandle, as name: String) throws {
        guard SystemCalls.linkUnnamed(descriptor, folder.descriptor, name) == 0 else {
            let code = errno
            if code == EEXIST {
                throw BuckiaError(.alreadyExists, "Something already exists at \(folder.child(name).debugDescription).", operation: "link", path: folder.child(name))
            }
            throw BuckiaError.posix(code, operation: "link", path: folder.child(name))
        }
    }

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        if descriptor >= 0 { _ = systemClose(descriptor) }
    }

    /// Opens an existing file for reading.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for anything but a regular file (a folder, a
    ///   device, a FIFO, a socket): opened without blocking, so a FIFO with no writer is
    ///   refused at once instead of waiting forever.
    package static func openForReading(_ url: URL) throws -> LocalFile {
        try openDescribed(url).file
    }

    /// Opens an existing file for reading, as ``openForReading(_:)``, with the `stat` record
    /// the open checked it by: what was opened, described without another system call.
    package static func openDescribed(_ url: URL) throws -> (file: LocalFile, status: stat) {
        let path = url.path  // Foundation decodes the URL again for every call
        let (fd, info) = try openRegularFile(path)
        return (LocalFile(descriptor: fd, path: path), info)
    }

    /// Opens the regular file at the absolute `path` for reading without following a link
    /// anywhere on the way (`openat2` with `RESOLVE_NO_SYMLINKS`, as
    /// ``DirectoryHandle/openWithoutLinks(_:)``), described by its own `fstat`: one lookup of
    /// the path where opening its folder, checking the name and opening the file took three.
    ///
    /// - Returns: Nil when that fails for any reason (no `openat2` here, a link or a file on
    ///   the way, nothing there, not a regular file): the caller then takes the path one
    ///   folder at a time, which reports exactly what is wrong.
    package static func openRegularWithoutLinks(_ path: String) -> (file: LocalFile, status: stat)? {
        guard DirectoryHandle.canOpenWithoutLinks else { return nil }
        let fd = SystemCalls.openWithoutLinks(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            _ = systemClose(fd)  // opened for reading only: closing it loses nothing
            return nil
        }
        return (LocalFile(descriptor: fd, path: path), info)
    }

    /// The descriptor of the regular file at `path`, opened for reading (``openForReading(_:)``
    /// and ``FileReader`` share it), and its `stat` record.
    ///
    /// It is opened with `O_NONBLOCK` (a FIFO with no writer would otherwise block the open
    /// before it could be refused) and `O_NOCTTY`, and checked with `fstat`. The flag stays:
    /// it changes nothing for a regular file, whose reads never wait in that sense, and
    /// clearing it was two system calls a file.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for anything but a regular file; the open's
    ///   or `fstat`'s error otherwise.
    static func openRegularFile(_ path: String) throws -> (descriptor: Int32, status: stat) {
        let fd = try openDescriptor(path, flags: O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode: 0, operation: "open")
        var info = stat()
        let status = fstat(fd, &info)
        let code = errno
        guard status == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            _ = systemClose(fd)  // opened for reading only: closing it loses nothing
            if status != 0 { throw BuckiaError.posix(code, operation: "stat", path: path) }
            throw BuckiaError(
                .invalidPath, "\(path.debugDescription) is \(kind(of: info.st_mode)), not a regular file; only files are read.",
                operation: "open", path: path)
        }
        return (fd, info)
    }

    /// Refuses a destination that a rename would replace but that is no regular file: a
    /// character or block device, a FIFO or a socket (`/dev/null`, `/dev/full`, a named pipe).
    /// A rename over one would put a regular file in its place; `cp` writes into it instead.
    /// Nothing there, a regular file, a folder (the rename itself fails) or a symbolic link
    /// (a rename replaces the link, never its target) pass.
    ///
    /// - Parameters:
    ///   - folder: The folder `name` is in (`AT_FDCWD` with a path for `name`).
    /// - Throws: ``BuckiaError/Code/invalidPath`` naming what is there.
    package static func checkReplaceable(_ name: String, in folder: Int32 = AT_FDCWD, shownAs shown: String? = nil) throws {
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        switch info.st_mode & S_IFMT {
        case S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK: break
        default: return
        }
        let path = shown ?? name
        throw BuckiaError(
            .invalidPath,
            "\(path) is \(kind(of: info.st_mode)), not a regular file; Buckia replaces only regular files and never writes into a device or pipe (redirect standard output into it instead).",
            operation: "write", path: path)
    }

    /// The `st_mode` of what is at `path`, links followed, or nil when nothing is there: the one
    /// look a check of a folder or file given by a user takes before ``kind(of:)`` names it.
    ///
    /// - Throws: What `stat` reports other than `ENOENT` (a folder on the way that may not be
    ///   read, a loop of links).
    package static func existingMode(_ path: String) throws -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            guard errno == ENOENT else { throw BuckiaError.posix(errno, operation: "stat", path: path) }
            return nil
        }
        return info.st_mode
    }

    /// What a file of the `st_mode` `mode` is, in words for a message ("a FIFO (named pipe)").
    package static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a folder"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "an unknown kind of file"
        }
    }

    /// Whether `a` and `b` name the same file: the same path once standardized, or (when both
    /// exist) the same device and inode, through links and hard links alike.
    package static func isSameFile(_ a: URL, _ b: URL) -> Bool {
        if a.standardizedFileURL.path == b.standardizedFileURL.path { return true }
        var first = stat()
        var second = stat()
        guard stat(a.path, &first) == 0, stat(b.path, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// Creates a new file for writing; fails with ``BuckiaError/Code/alreadyExists`` if one is there.
    package static func createExclusive(_ url: URL, permissions: mode_t = 0o644) throws -> LocalFile {
        try open(url.path, flags: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: permissions, operation: "create")
    }

    /// Creates a new file for reading and writing by position (``write(_:at:)``); fails with
    /// ``BuckiaError/Code/alreadyExists`` if one is there.
    package static func createExclusiveForUpdate(_ url: URL, permissions: mode_t = 0o644) throws -> LocalFile {
        try open(url.path, flags: O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode: permissions, operation: "create")
    }

    /// Opens a directory so it can be synced after a rename into it.
    static func openDirectory(_ path: String) throws -> LocalFile {
        try open(path, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC, mode: 0, operation: "open directory")
    }

    private static func open(_ path: String, flags: Int32, mode: mode_t, operation: String) throws -> LocalFile {
        LocalFile(descriptor: try openDescriptor(path, flags: flags, mode: mode, operation: operation), path: path)
    }

    private static func openDescriptor(_ path: String, flags: Int32, mode: mode_t, operation: String) throws -> Int32 {
        while true {
            let fd = systemOpen(path, flags, mode)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw BuckiaError.posix(errno, operation: operation, path: path)
        }
    }

    /// Reads up to `buffer.count` bytes at the current offset; returns 0 at end of file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let count = systemRead(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw BuckiaError.posix(errno, operation: "read", path: path)
        }
    }

    /// Reads up to `count` bytes starting at `offset`, without moving the file offset.
    package func read(count: Int, at offset: Int64) throws -> Data {
        var data = Data(count: count)
        var filled = 0
        try data.withUnsafeMutableBytes { buffer in
            while filled < count {
                let n = pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
                if n == 0 { break }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw BuckiaError.posix(errno, operation: "read", path: path)
                }
                filled += n
            }
        }
        data.removeSubrange(filled..<count)
        return data
    }

    /// Reads up to `buffer.count` bytes starting at `offset` without moving the file offset;
    /// returns 0 at end of file. Safe to call from several threads on one descriptor.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw BuckiaError.posix(errno, operation: "read", path: path)
        }
    }

    /// Writes every byte of `buffer`, retrying short writes.
    package func write(_ buffer: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < buffer.count {
            let count = systemWrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                throw BuckiaError.posix(errno, operation: "write", path: path)
            }
            offset += count
        }
    }

    /// Writes every byte of `data`.
    package func write(_ data: Data) throws {
        try data.withUnsafeBytes { try write($0) }
    }

    /// Writes every byte of `data` starting at `offset`, without moving the file offset. Safe
    /// to call from several threads on one descriptor for ranges that do not overlap.
    package func write(_ data: Data, at offset: Int64) throws {
        try data.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = pwrite(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                if count < 0 {
                    if errno == EINTR { continue }
                    throw BuckiaError.posix(errno, operation: "write", path: path)
                }
                done += count
            }
        }
    }

    /// Cuts the file to `size` bytes (or extends it with zeros).
    package func truncate(to size: Int64) throws {
        while ftruncate(descriptor, off_t(size)) != 0 {
            if errno == EINTR { continue }
            throw BuckiaError.posix(errno, operation: "truncate", path: path)
        }
    }

    /// Reads from the current offset to the end through one buffer of
    /// ``AtomicFile/copyBufferSize``, handing each chunk to `body`: the one sequential
    /// read loop that copies and hashes share.
    package func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: AtomicFile.copyBufferSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try read(into: buffer)
            if count == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Copies the bytes of `range` to `output` by position, leaving this file's offset alone.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` when the file ends before the range does.
    package func copy(_ range: Range<Int64>, to output: LocalFile) throws {
        try readRange(range, bufferSize: AtomicFile.copyBufferSize, path: path, read: { try read(into: $0, at: $1) }) { try output.write($0) }
    }

    /// ``sync()`` on Buckia's blocking-work threads, for a caller on the cooperative pool: an
    /// `fsync` of a large file can take seconds. The file must stay open until it returns.
    package func syncOffThePool() async throws {
        let descriptor = descriptor
        let path = path
        try await BlockingWork.run("fsync") {
            if SystemCalls.fullSync(descriptor) != 0 {
                throw BuckiaError.posix(errno, operation: "fsync", path: path)
            }
        }
    }

    /// Flushes the file's data (and the metadata needed to read it back) to stable storage:
    /// `fdatasync`, for flushing a file in steps as it grows.
    package func syncData() throws {
        if SystemCalls.dataSync(descriptor) != 0 {
            throw BuckiaError.posix(errno, operation: "fdatasync", path: path)
        }
    }

    /// Writes the file's bytes to the device `step` bytes at a time, waiting for each piece,
    /// then `fsync`s it: the same durability as ``sync()``, without handing the kernel the
    /// whole file to write at once (on ext4 in ordered mode another program's `fsync` then
    /// waits behind all of it: an app's commit stalled for most of a second per GiB).
    package func syncInSteps(_ step: Int64 = 16 << 20) throws {
        let size = try status().size
        var offset: Int64 = 0
        while offset < size {
            if SystemCalls.syncRange(descriptor, offset, min(step, size - offset)) != 0 {
                throw BuckiaError.posix(errno, operation: "sync_file_range", path: path)
            }
            offset += step
        }
        try sync()
    }

    /// Asks the kernel to start writing `range` to the device without waiting, so that a
    /// later ``sync()`` finds most of the file written. A hint: it returns whether the kernel
    /// took it, and a failure loses nothing (the `fsync` that follows reports any write error).
    @discardableResult
    package func startWriteback(_ range: Range<Int64>) -> Bool {
        SystemCalls.startWriteback(descriptor, range.lowerBound, range.upperBound - range.lowerBound) == 0
    }

    /// Flushes the file's data and metadata to stable storage.
    package func sync() throws {
        if SystemCalls.fullSync(descriptor) != 0 {
            throw BuckiaError.posix(errno, operation: "fsync", path: path)
        }
    }

    /// Sets the modification (and access) time.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a date a file system cannot hold.
    package func setModificationDate(_ date: Date) throws {
        let spec = try Self.timeSpec(date, path: path, operation: "set modification time")
        if futimens(descriptor, [spec, spec]) != 0 {
            throw BuckiaError.posix(errno, operation: "set modification time", path: path)
        }
    }

    /// Sets the modification (and access) time of the file at `url`, not following a link
    /// there: a download's destination takes its source's time.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a date a file system cannot
    ///   hold, and the system's error (as `operation`) when the time cannot be set.
    package static func setModificationDate(_ date: Date, of url: URL, operation: String) throws {
        let spec = try timeSpec(date, path: url.path, operation: operation)
        if utimensat(AT_FDCWD, url.path, [spec, spec], AT_SYMLINK_NOFOLLOW) != 0 {
            throw BuckiaError.posix(errno, operation: operation, path: url.path)
        }
    }

    private static func timeSpec(_ date: Date, path: String, operation: String) throws -> timespec {
        let interval = date.timeIntervalSince1970
        let seconds = interval.rounded(.down)
        guard seconds.isFinite, abs(seconds) < 1e15 else {
            throw BuckiaError(.invalidConfiguration, "The modification time \(date) cannot be stored in a file system.", operation: operation, path: path)
        }
        let nanoseconds = min(999_999_999, max(0, Int((interval - seconds) * 1_000_000_000)))
        return timespec(tv_sec: Int(seconds), tv_nsec: nanoseconds)
    }

    /// The file's size and modification time.
    package func status() throws -> (size: Int64, modificationDate: Date) {
        var info = stat()
        if fstat(descriptor, &info) != 0 {
            throw BuckiaError.posix(errno, operation: "stat", path: path)
        }
        return (Int64(info.st_size), LocalFile.modificationDate(of: info))
    }

    /// The file's full `stat` record: size, times, inode, mode.
    package func statRecord() throws -> stat {
        var info = stat()
        if fstat(descriptor, &info) != 0 {
            throw BuckiaError.posix(errno, operation: "stat", path: path)
        }
        return info
    }

    /// Whether the descriptor refers to a regular file (not a folder, device or pipe).
    package func isRegularFile() throws -> Bool {
        var info = stat()
        if fstat(descriptor, &info) != 0 {
            throw BuckiaError.posix(errno, operation: "stat", path: path)
        }
        return (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Sets the file's permission bits.
    package func setPermissions(_ mode: mode_t) throws {
        if fchmod(descriptor, mode & 0o7777) != 0 {
            throw BuckiaError.posix(errno, operation: "chmod", path: path)
        }
    }

    /// The file's permission bits.
    package func permissions() throws -> mode_t {
        var info = stat()
        if fstat(descriptor, &info) != 0 {
            throw BuckiaError.posix(errno, operation: "stat", path: path)
        }
        return info.st_mode & 0o7777
    }

    /// Closes the descriptor, reporting a failed close (which can mean lost writes).
    /// Closes a file that was only read: a failed `close` of a descriptor that wrote nothing
    /// loses nothing, so there is no error to report.
    package func closeAfterReading() {
        guard descriptor >= 0 else { return }
        _ = systemClose(descriptor)
        descriptor = -1
    }

    package func close() throws {
        guard descriptor >= 0 else { return }
        let fd = descriptor
        descriptor = -1
        if systemClose(fd) != 0 {
            throw BuckiaError.posix(errno, operation: "close", path: path)
        }
    }

    /// The modification time recorded in a `stat` result.
    /// The status-change time (`st_ctime`) of a `stat` result.
    package static func statusChangeDate(of info: stat) -> Date {
        #if canImport(Darwin)
        let spec = info.st_ctimespec
        #else
        let spec = info.st_ctim
        #endif
        return Date(timeIntervalSince1970: TimeInterval(spec.tv_sec) + TimeInterval(spec.tv_nsec) / 1_000_000_000)
    }

    package static func modificationDate(of info: stat) -> Date {
        #if canImport(Darwin)
        let spec = info.st_mtimespec
        #else
        let spec = info.st_mtim
        #endif
        return Date(timeIntervalSince1970: TimeInterval(spec.tv_sec) + TimeInterval(spec.tv_nsec) / 1_000_000_000)
    }
}

// The C functions share names with LocalFile's methods; these aliases keep calls unambiguous.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }

extension LocalFile {
    /// Creates the folder at `path` and any missing parents (mode 0755 less the umask); an
    /// existing folder is fine. Unlike `FileManager`, a failure names its cause (`errno`).
    ///
    /// - Parameter syncParent: Whether to `fsync` the parent of each folder created, so the
    ///   new entry survives a power loss.
    /// - Throws: ``BuckiaError/Code/invalidPath`` when a file stands where a folder is needed,
    ///   ``BuckiaError/Code/permissionDenied`` when a parent is not writable.
    package static func createDirectories(_ path: String, syncParent: Bool = false) throws {
        func isDirectory(_ path: String) -> Bool {
            var info = stat()
            return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
        }
        func syncParentOf(_ path: String) throws {
            guard syncParent else { return }
            let parent = try openDirectory(Self.parent(of: path))
            try parent.sync()
            try parent.close()
        }
        if mkdir(path, 0o755) == 0 { return try syncParentOf(path) }
        switch errno {
        case EEXIST:
            guard isDirectory(path) else { throw BuckiaError.posix(ENOTDIR, operation: "create directory", path: path) }
        case ENOENT:
            let parent = Self.parent(of: path)
            guard parent != path, !parent.isEmpty, parent != "." else { throw BuckiaError.posix(ENOENT, operation: "create directory", path: path) }
            try createDirectories(parent, syncParent: syncParent)
            if mkdir(path, 0o755) == 0 {
                try syncParentOf(path)
            } else if errno != EEXIST || !isDirectory(path) {
                throw BuckiaError.posix(errno == EEXIST ? ENOTDIR : errno, operation: "create directory", path: path)
            }
        default:
            throw BuckiaError.posix(errno, operation: "create directory", path: path)
        }
    }

    /// The folder holding `path` (`/` for a top-level path, `.` for a bare name).
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}
