import BuckiaCore
import Foundation

/// Folders as the file system has them (``Capability/folders``): what an S3 folder marker
/// (`photos/`) is over a local folder. Each call works relative to folders opened without
/// following links, as every other call here does.
extension LocalProvider {
    public func createFolder(_ key: ObjectKey) async throws {
        let location = try locate(key, create: true, operation: "createFolder")
        switch try location.parent.entry(location.name).kind {
        case .folder:
            return
        case .missing:
            _ = try location.parent.folder(location.name, create: true)
            if durable { try location.parent.sync() }
        case .symbolicLink:
            throw BuckiaError(.invalidPath, "The key names a symbolic link; the local provider does not follow links.", operation: "createFolder", path: key.rawValue)
        case .file, .other:
            throw BuckiaError(
                .alreadyExists, "An object has this name, so it cannot also be a folder; the local file system cannot hold both.",
                operation: "createFolder", path: key.rawValue)
        }
    }

    public func folderDate(_ key: ObjectKey) async throws -> Date? {
        let location: Location
        do {
            location = try locate(key, create: false, operation: "folderDate")
        } catch let error as BuckiaError where error.code == .notFound || error.code == .alreadyExists {
            return nil  // a folder on the way is missing, or is a file
        }
        let (kind, info) = try location.parent.entry(location.name)
        guard kind == .folder else { return nil }
        return LocalFile.modificationDate(of: info)
    }

    public func deleteFolder(_ key: ObjectKey) async throws {
        let location: Location
        do {
            location = try locate(key, create: false, operation: "deleteFolder")
        } catch let error as BuckiaError where error.code == .notFound || error.code == .alreadyExists {
            return
        }
        guard try location.parent.entry(location.name).kind == .folder else { return }
        // Not empty: its objects keep it, as S3 keeps them when a marker goes.
        if location.parent.removeFolderIfEmpty(location.name), durable { try location.parent.sync() }
    }
}
