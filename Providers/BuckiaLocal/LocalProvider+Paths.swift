import BuckiaCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension LocalProvider {
    enum Access {
        /// The object must exist; symbolic links are followed but must stay inside the root.
        case read
        /// Parent folders are created; existing ones must resolve inside the root.
        case write
        /// Nothing is created; an existing parent must resolve inside the root.
        case delete
    }

    /// Maps a key to a file path, refusing anything that would leave the root.
    func resolve(_ key: ObjectKey, for access: Access) throws -> URL {
        if key.segments.first == Substring(LocalProvider.reservedName) {
            throw BuckiaError(
                .invalidPath, "The first segment \(LocalProvider.reservedName) is reserved by the local provider for temporary files.",
                path: key.rawValue)
        }
        let path = rootPath + "/" + key.rawValue
        switch access {
        case .read:
            guard let real = realPath(path) else {
                if errno == ENOENT || errno == ENOTDIR { throw BuckiaError.notFound(key, operation: "read") }
                throw BuckiaError.posix(errno, operation: "resolve", path: key.rawValue)
            }
            try checkInsideRoot(real, key: key)
            return URL(fileURLWithPath: real, isDirectory: false)
        case .delete:
            let parent = (path as NSString).deletingLastPathComponent
            guard let real = realPath(parent) else { return URL(fileURLWithPath: path, isDirectory: false) }
            try checkInsideRoot(real, key: key)
            return URL(fileURLWithPath: real + "/" + key.lastSegment, isDirectory: false)
        case .write:
            let parent = (path as NSString).deletingLastPathComponent
            var existing = parent
            while realPath(existing) == nil && existing.count > rootPath.count {
                existing = (existing as NSString).deletingLastPathComponent
            }
            guard let realExisting = realPath(existing) else {
                throw BuckiaError.posix(errno, operation: "resolve", path: key.rawValue)
            }
            try checkInsideRoot(realExisting, key: key)
            try makeDirectory(parent, key: key)
            try makeDirectory(rootPath + "/" + LocalProvider.reservedName + "/tmp", key: key)
            return URL(fileURLWithPath: path, isDirectory: false)
        }
    }

    private func checkInsideRoot(_ real: String, key: ObjectKey) throws {
        guard real == rootPath || real.hasPrefix(rootPath + "/") else {
            throw BuckiaError(
                .invalidPath, "The key resolves through a symbolic link to a place outside the provider's root; it was refused.",
                path: key.rawValue)
        }
    }

    private func makeDirectory(_ path: String, key: ObjectKey) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            var info = FileStatus()
            if statFollowingLinks(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { return }
            throw BuckiaError(
                .alreadyExists, "An object exists where this key needs a folder; the local file system cannot hold both.",
                operation: "upload", path: key.rawValue, cause: SendableErrorDescription(error))
        }
    }

    func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
