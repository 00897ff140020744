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
    /// Lists by walking folders in UTF-8 order of the keys they hold, pruning every folder
    /// that lies wholly before the resume point or outside the prefix. Each page is one pruned
    /// walk: memory holds one page and one folder's names at a time.
    ///
    /// Folders are opened relative to their parent without following links, and symbolic
    /// links are not listed. Names before the resume point are skipped from the directory
    /// entry alone, so a page of a large folder costs one read of its names, one sort of
    /// those after the resume point, and a `stat` per listed file. Very large flat folders
    /// still cost a read of every name per page: prefer nested keys for millions of objects.
    public func listPage(_ request: ListRequest) async throws -> ListPage {
        var builder = try ListPageBuilder(request: request, maxPageSize: capabilities.maxListPageSize)
        let walk = Walk(provider: self, options: request.options, resumeAfter: builder.resumeAfter)
        _ = try walk.visit(try DirectoryHandle(path: rootPath), folder: "") { builder.offer($0) }
        return builder.page()
    }

    struct Walk {
        let provider: LocalProvider
        let options: ListOptions
        let resumeAfter: String?

        /// Visits the files under `handle` (the folder whose keys start with `folder`) in key
        /// order. Returns false when `offer` asked to stop.
        func visit(_ handle: DirectoryHandle, folder: String, offer: (RemoteFile) -> Bool) throws -> Bool {
            for (name, kind) in try entries(handle, folder: folder) {
                let path = folder + name + (kind == .folder ? "/" : "")
                if kind == .folder {
                    guard let child = try? handle.folder(name, create: false) else { continue }
                    let rollsUp = !options.recursive && path.hasPrefix(options.prefix) && path != options.prefix
                    if rollsUp {
                        // One file is enough to report the folder; skip the rest of it.
                        if let first = try firstFile(child, folder: path), !offer(first) { return false }
                    } else if try !visit(child, folder: path, offer: offer) {
                        return false
                    }
                } else if path.hasPrefix(options.prefix), let file = try describe(handle, name, path) {
                    if !offer(file) { return false }
                }
            }
            return true
        }

        private func firstFile(_ handle: DirectoryHandle, folder: String) throws -> RemoteFile? {
            for (name, kind) in try entries(handle, folder: folder) {
                if kind == .folder {
                    guard let child = try? handle.folder(name, create: false) else { continue }
                    if let file = try firstFile(child, folder: folder + name + "/") { return file }
                } else if let file = try describe(handle, name, folder + name) {
                    return file
                }
            }
            return nil
        }

        private func describe(_ handle: DirectoryHandle, _ name: String, _ path: String) throws -> RemoteFile? {
            let (kind, info) = try handle.entry(name)
            return kind == .file ? provider.remoteFile(path, info) : nil
        }

        /// A folder's files and folders that can still matter, sorted as keys sort (a folder
        /// as its name plus `/`). Links and other kinds are left out; so are entries wholly
        /// before the resume point or outside the prefix, decided from names alone.
        private func entries(_ handle: DirectoryHandle, folder: String) throws -> [(String, DirectoryHandle.EntryKind)] {
            var kept: [(name: String, kind: DirectoryHandle.EntryKind, sortKey: String)] = []
            for (name, kind) in try handle.names() {
                if folder.isEmpty && name == LocalProvider.reservedName { continue }
                switch kind {
                case .file:
                    let path = folder + name
                    guard path.hasPrefix(options.prefix) else { continue }
                    if let resumeAfter, !resumeAfter.utf8Precedes(path) { continue }
                    kept.append((name, kind, name))
                case .folder:
                    let path = folder + name + "/"
                    guard path.hasPrefix(options.prefix) || options.prefix.hasPrefix(path) else { continue }
                    if let resumeAfter, !resumeAfter.utf8Precedes(path), !resumeAfter.hasPrefix(path) { continue }
                    kept.append((name, kind, name + "/"))
                default:
                    continue
                }
            }
            kept.sort { $0.sortKey.utf8Precedes($1.sortKey) }
            return kept.map { ($0.name, $0.kind) }
        }
    }
}
