import BuckiaCore
import BuckiaProviderKit
import Foundation

extension LocalProvider {
    /// Lists by walking folders in UTF-8 order of the keys they hold (``FolderWalkLister``):
    /// each folder the listing needs is read once, however many pages it fills, and folders
    /// wholly before the resume point or outside the prefix are never opened.
    ///
    /// Folders are opened relative to their parent without following links. Symbolic links,
    /// special files and names that are not UTF-8 are listed as unaddressable. A folder that
    /// cannot be read fails the listing: it is never skipped.
    public func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        let provider = self
        return try FolderWalkLister(
            request: request, maxPageSize: capabilities.maxListPageSize,
            readFolder: { folder in try provider.folderItems(folder) },
            describe: { key in try provider.statNow(key, operation: "list") })
    }

    /// The items of the folder whose keys start with `folder` (`""` or ending in `/`).
    func folderItems(_ folder: String) throws -> [FolderItem] {
        var handle: DirectoryHandle
        do {
            handle = try openRoot(create: false)
        } catch let error as BuckiaError where error.code == .notFound {
            return []  // a root no write has created yet holds nothing
        }
        for segment in folder.split(separator: "/", omittingEmptySubsequences: true) {
            do {
                handle = try handle.folder(String(segment), create: false)
            } catch let error as BuckiaError where error.code == .notFound {
                return []  // removed since its parent was read: nothing under it now
            } catch let error as BuckiaError {
                throw BuckiaError(
                    error.code, "The folder \(folder.debugDescription) could not be opened, so the listing would be incomplete: \(error.message)",
                    operation: "list", path: folder, cause: error.cause)
            }
        }
        let names: [(name: [UInt8], kind: DirectoryHandle.EntryKind)]
        do {
            names = try handle.rawNames()
        } catch let error as BuckiaError {
            throw BuckiaError(
                error.code, "The folder \(folder.debugDescription) could not be read, so the listing would be incomplete: \(error.message)",
                operation: "list", path: folder, cause: error.cause)
        }
        let reserved = Array(LocalProvider.reservedName.utf8)
        // Checked once here, so each file's key checks only its own name.
        let validFolder: Bool
        do {
            try ObjectKey.validatePrefix(folder)
            validFolder = true
        } catch {
            validFolder = false
        }
        /// The key of a file named `text` here; nil for a name no key can hold (it is listed
        /// as unaddressable).
        func key(_ text: String) -> ObjectKey? {
            guard validFolder else { return nil }
            do {
                return try ObjectKey(folder: folder, name: text)
            } catch {
                return nil
            }
        }
        // Appended one by one: through `compactMap`'s optional, each file's description was
        // copied (its key, entity tag and the rest retained) and the original released.
        var items: [FolderItem] = []
        items.reserveCapacity(names.count)
        for (name, kind) in names {
            if folder.isEmpty && name == reserved { continue }
            // A download or copy in progress (or abandoned) here is not an object.
            if kind == .file && Temporaries.isTemporaryName(name) { continue }
            switch kind {
            case .file:
                // Described here, relative to the open folder: one fstatat, not a walk from the root.
                guard let text = String.validatingUTF8(name), let key = key(text) else {
                    items.append(FolderItem(name: name, kind: .file(nil)))
                    continue
                }
                let (current, info) = try handle.entry(text)
                switch current {
                case .file: items.append(FolderItem(name: name, kind: .file(remoteFile(key, info))))
                case .missing: continue
                default: items.append(FolderItem(name: name, kind: .file(nil)))
                }
            case .folder: items.append(FolderItem(name: name, kind: .folder))
            case .symbolicLink:
                items.append(FolderItem(name: name, kind: .unaddressable(reason: "it is a symbolic link; the local provider does not follow links")))
            case .other:
                items.append(FolderItem(name: name, kind: .unaddressable(reason: "it is not a regular file")))
            case .missing:
                continue
            }
        }
        return items
    }
}
