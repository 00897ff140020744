import BuckiaCore
import Foundation

/// The `stat` structure; the alias keeps it apart from the `stat` function.
typealias DiskFileStatus = stat

/// The few POSIX calls the disk engine makes beyond ``LocalFile`` and ``AtomicFile``, each
/// failing with a ``BuckiaError`` that keeps `errno` as its cause.
enum DiskFileSystem {
    /// What a directory entry is, as far as the engine cares.
    enum Kind: Sendable {
        case file, directory, other
    }

    /// One name in a directory.
    struct Entry: Sendable {
        /// The name's bytes, as the file system holds them.
        var name: [UInt8]
        var kind: Kind
    }

    /// The status of `path` without following a final symbolic link, or nil if nothing is there.
    static func status(_ path: String) throws -> DiskFileStatus? {
        var info = DiskFileStatus()
        if lstat(path, &info) == 0 { return info }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw BuckiaError.posix(errno, operation: "stat", path: path)
    }

    /// Whether `info` describes a regular file.
    static func isRegularFile(_ info: DiskFileStatus) -> Bool { (info.st_mode & S_IFMT) == S_IFREG }

    /// Whether a directory exists at `path`.
    static func isDirectory(_ path: String) -> Bool {
        var info = DiskFileStatus()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Creates the directory at `path` and any missing parents; an existing directory is fine.
    ///
    /// - Parameter syncParent: Whether to `fsync` the parent of each directory created, so
    ///   the new entry survives a power loss.
    /// - Throws: ``BuckiaError/Code/invalidPath`` when a file stands where a directory is
    ///   needed, ``BuckiaError/Code/permissionDenied`` when the parent is not writable.
    static func createDirectory(_ path: String, syncParent: Bool = false) throws {
        try LocalFile.createDirectories(path, syncParent: syncParent)
    }

    /// Removes the file at `path`; returns false if there was none.
    @discardableResult
    static func removeFile(_ path: String) throws -> Bool {
        if unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw BuckiaError.posix(errno, operation: "remove", path: path)
    }

    /// Removes the directory at `path` if it is empty; anything else leaves it in place.
    static func removeDirectoryIfEmpty(_ path: String) {
        _ = rmdir(path)
    }

    /// Flushes a directory's entries to stable storage; a directory that is gone is skipped.
    static func syncDirectory(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return }
            throw BuckiaError.posix(errno, operation: "open directory", path: path)
        }
        defer { close(descriptor) }
        if SystemCalls.fullSync(descriptor) != 0 {
            throw BuckiaError.posix(errno, operation: "fsync directory", path: path)
        }
    }

    /// The entries of the directory at `path` (without `.` and `..`), or nil if it is missing.
    ///
    /// Kinds come from `d_type`; where the file system does not fill it in, from `lstat`.
    /// Symbolic links are ``Kind/other``: the engine never follows them while listing.
    static func entries(of path: String) throws -> [Entry]? {
        guard let directory = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw BuckiaError.posix(errno, operation: "list", path: path)
        }
        defer { closedir(directory) }
        var result: [Entry] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            let kind: Kind
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_REG): kind = .file
            case Int32(DT_DIR): kind = .directory
            case Int32(DT_UNKNOWN): kind = lstatKind(path + "/" + String(decoding: name, as: UTF8.self))
            default: kind = .other
            }
            result.append(Entry(name: name, kind: kind))
        }
        return result
    }

    private static func lstatKind(_ path: String) -> Kind {
        var info = DiskFileStatus()
        guard lstat(path, &info) == 0 else { return .other }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }
}
