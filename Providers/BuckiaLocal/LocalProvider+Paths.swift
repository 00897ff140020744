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
    /// Where a key lives: its parent folder, opened by walking down from the root one
    /// segment at a time without following links, and the chain of folders walked.
    struct Location {
        let root: DirectoryHandle
        let parent: DirectoryHandle
        let name: String
        /// Each folder on the way with the name of its child, root first, for pruning.
        let chain: [(folder: DirectoryHandle, child: String)]
    }

    /// Opens the folders on the way to `key`, creating them when `create` is set.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/notFound`` when a folder is missing (and not
    ///   created) or a file is in the way of a read; ``BuckiaCore/BuckiaError/Code/invalidPath``
    ///   when a folder on the way is a symbolic link or the key uses the reserved name;
    ///   ``BuckiaCore/BuckiaError/Code/alreadyExists`` when a file is in the way of a write.
    func locate(_ key: ObjectKey, create: Bool, operation: String) throws -> Location {
        let segments = key.segments.map(String.init)
        if segments.first == LocalProvider.reservedName {
            throw BuckiaError(
                .invalidPath, "The first segment \(LocalProvider.reservedName) is reserved by the local provider for temporary files.",
                operation: operation, path: key.rawValue)
        }
        let root = try DirectoryHandle(path: rootPath)
        var current = root
        var chain: [(folder: DirectoryHandle, child: String)] = []
        do {
            for segment in segments.dropLast() {
                let next = try current.folder(segment, create: create)
                chain.append((current, segment))
                current = next
            }
        } catch let error as BuckiaError {
            throw keyError(error, key: key, operation: operation, writing: create)
        }
        return Location(root: root, parent: current, name: segments.last ?? key.rawValue, chain: chain)
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

    /// Opens the object's file for reading.
    func openObject(_ key: ObjectKey, operation: String) throws -> LocalFile {
        let location = try locate(key, create: false, operation: operation)
        do {
            return try location.parent.openFile(location.name)
        } catch let error as BuckiaError {
            throw keyError(error, key: key, operation: operation, writing: false)
        }
    }

    /// Writes an object atomically: a temporary file under `.buckia/tmp`, synced, then renamed
    /// into the folder walked to without links. A folder removed by a concurrent delete between
    /// the walk and the rename is walked to (and created) again.
    func writeObject(_ key: ObjectKey, modified: Date?, _ body: (LocalFile) throws -> Void) throws {
        var location = try locate(key, create: true, operation: "upload")
        let temporary = try temporaryFolder(location.root)
        let (name, file) = try temporary.createTemporaryFile()
        do {
            try body(file)
            if let modified { try file.setModificationDate(modified) }
            if durable { try file.sync() }
            try file.close()
            var attempts = 0
            while true {
                do {
                    try temporary.move(name, to: location.parent, as: location.name)
                    break
                } catch let error as BuckiaError where (error.cause as? POSIXErrorNumber)?.rawValue == ENOENT && attempts < 4 {
                    attempts += 1
                    location = try locate(key, create: true, operation: "upload")
                }
            }
            if durable { try location.parent.sync() }
        } catch {
            try? file.close()
            _ = try? temporary.removeFile(name)
            throw mapWriteError(error, key: key, operation: "upload")
        }
    }

    private func mapWriteError(_ error: any Error, key: ObjectKey, operation: String) -> BuckiaError {
        let wrapped = BuckiaError.wrapping(error, operation: operation, path: key.rawValue)
        guard let cause = wrapped.cause as? POSIXErrorNumber, [EISDIR, ENOTDIR, EEXIST, ENOTEMPTY].contains(cause.rawValue) else {
            return wrapped
        }
        return BuckiaError(
            .alreadyExists, "A folder exists where this object would go; the local file system cannot hold both.",
            operation: operation, path: key.rawValue, cause: cause)
    }
}
