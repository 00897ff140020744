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
    /// that lies wholly before the resume point or outside the prefix. Each page is one
    /// pruned walk, so memory holds one page and one folder's names at a time.
    public func listPage(_ request: ListRequest) async throws -> ListPage {
        var builder = try ListPageBuilder(request: request, maxPageSize: capabilities.maxListPageSize)
        let walk = Walk(provider: self, options: request.options, resumeAfter: builder.resumeAfter)
        _ = try walk.visit(folder: "") { builder.offer($0) }
        return builder.page()
    }

    struct Walk {
        let provider: LocalProvider
        let options: ListOptions
        let resumeAfter: String?

        /// Visits files under `folder` (a key prefix ending in `/`, or empty) in key order.
        /// Returns false when `offer` asked to stop.
        func visit(folder: String, offer: (RemoteFile) -> Bool) throws -> Bool {
            for (name, info) in try entries(of: folder) {
                let isFolder = (info.st_mode & S_IFMT) == S_IFDIR
                let path = folder + name + (isFolder ? "/" : "")
                if isFolder {
                    guard path.hasPrefix(options.prefix) || options.prefix.hasPrefix(path) else { continue }
                    if let resumeAfter, !resumeAfter.utf8Precedes(path), !resumeAfter.hasPrefix(path) { continue }
                    let rollsUp = !options.recursive && path.hasPrefix(options.prefix) && path != options.prefix
                    if rollsUp {
                        // One file is enough to report the folder; skip the rest of it.
                        if let first = try firstFile(under: path), !offer(first) { return false }
                    } else if try !visit(folder: path, offer: offer) {
                        return false
                    }
                } else if (info.st_mode & S_IFMT) == S_IFREG, path.hasPrefix(options.prefix) {
                    if !offer(provider.remoteFile(path, info)) { return false }
                }
            }
            return true
        }

        /// The first file in key order under `folder` that lies after the resume point.
        private func firstFile(under folder: String) throws -> RemoteFile? {
            for (name, info) in try entries(of: folder) {
                let isFolder = (info.st_mode & S_IFMT) == S_IFDIR
                let path = folder + name + (isFolder ? "/" : "")
                if let resumeAfter, !resumeAfter.utf8Precedes(path), !(isFolder && resumeAfter.hasPrefix(path)) { continue }
                if isFolder {
                    if let file = try firstFile(under: path) { return file }
                } else if (info.st_mode & S_IFMT) == S_IFREG {
                    return provider.remoteFile(path, info)
                }
            }
            return nil
        }

        /// A folder's entries, sorted as keys sort: folders as if their name ended in `/`.
        /// Symbolic links are followed only to files inside the root; linked folders are not
        /// descended into, which keeps walks finite.
        private func entries(of folder: String) throws -> [(String, FileStatus)] {
            let directoryPath = provider.rootPath + "/" + folder
            guard let directory = opendir(directoryPath) else {
                if errno == ENOENT || errno == ENOTDIR { return [] }
                throw BuckiaError.posix(errno, operation: "list", path: folder)
            }
            defer { closedir(directory) }
            var result: [(String, FileStatus, String)] = []
            while let entry = readdir(directory) {
                // Names that are not valid UTF-8 cannot be keys; they are skipped.
                let decoded = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(validating: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard let name = decoded else { continue }
                if name == "." || name == ".." { continue }
                if folder.isEmpty && name == LocalProvider.reservedName { continue }
                var info = FileStatus()
                let full = directoryPath + name
                guard lstat(full, &info) == 0 else { continue }
                if (info.st_mode & S_IFMT) == S_IFLNK {
                    guard let real = provider.realPath(full),
                          real.hasPrefix(provider.rootPath + "/"),
                          statFollowingLinks(real, &info) == 0,
                          (info.st_mode & S_IFMT) == S_IFREG
                    else { continue }
                }
                let sortName = (info.st_mode & S_IFMT) == S_IFDIR ? name + "/" : name
                result.append((name, info, sortName))
            }
            result.sort { $0.2.utf8Precedes($1.2) }
            return result.map { ($0.0, $0.1) }
        }
    }
}
