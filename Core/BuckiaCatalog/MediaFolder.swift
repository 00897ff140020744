import BuckiaCore
import Foundation

/// The folder an app keeps downloaded media in: the only place a catalog removes files from.
///
/// A path comes from a record (its URL's last component, by default), so it is held to the
/// folder: relative, with no empty, `.` or `..` component; every folder on the way is opened
/// relative to the last without following a link (a link planted there is never crossed); and
/// only a regular file is removed, never a folder, a device or what a link points at.
struct MediaFolder: Sendable {
    let root: URL
    /// Lowercased, without the dot.
    let extensions: Set<String>

    /// What removing a path found.
    enum Removal: Equatable {
        case removed
        /// Nothing there, or a folder on the way missing.
        case missing
        /// Something there that is not a regular file (a folder, a link, a device), or a link
        /// on the way: left alone.
        case leftAlone
        /// A path that could leave the folder (``components(_:)`` refuses it): never acted on.
        case refused
    }

    /// The components of `path`, checked.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` for a path that could leave the folder.
    static func components(_ path: String) throws -> [String] {
        let refuse = { (why: String) in
            BuckiaError(.invalidPath, "The media path \(path.debugDescription) \(why); a catalog removes files only inside its media folder.", operation: "remove media")
        }
        guard !path.isEmpty, path.utf8.count <= 4096 else { throw refuse("is empty or too long") }
        guard !path.hasPrefix("/") else { throw refuse("is absolute") }
        guard !path.utf8.contains(0) else { throw refuse("holds a NUL character") }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for part in parts {
            guard !part.isEmpty, part != ".", part != "..", part.utf8.count <= 255 else {
                throw refuse("has an empty, `.` or `..` component, or one longer than 255 bytes")
            }
        }
        return parts
    }

    /// Removes the regular file at `path` under the root.
    ///
    /// - Throws: what the file system reports (the folder unreadable, a removal refused); a
    ///   path that could leave the folder is ``Removal/refused``, not an error.
    func remove(_ path: String) throws -> Removal {
        let parts: [String]
        do {
            parts = try Self.components(path)
        } catch {
            return .refused
        }
        var folder: DirectoryHandle
        do {
            folder = try DirectoryHandle(path: root.path)
        } catch let error as BuckiaError where error.code == .notFound {
            return .missing
        }
        for name in parts.dropLast() {
            switch try folder.entry(name).kind {
            case .missing: return .missing
            case .folder: folder = try folder.folder(name, create: false)
            default: return .leftAlone
            }
        }
        guard let name = parts.last else { return .missing }
        switch try folder.entry(name).kind {
        case .missing: return .missing
        case .file: return try folder.removeFile(name) ? .removed : .missing
        default: return .leftAlone
        }
    }

    /// Removes every regular file at the top of the folder whose extension is one of
    /// ``extensions``, as the seed's `truncateFiles` clears the documents folder; returns how
    /// many it removed.
    func sweep() throws -> Int {
        let folder: DirectoryHandle
        do {
            folder = try DirectoryHandle(path: root.path)
        } catch let error as BuckiaError where error.code == .notFound {
            return 0
        }
        var removed = 0
        for (name, kind) in try folder.names() where kind == .file {
            guard let dot = name.lastIndex(of: "."), extensions.contains(name[name.index(after: dot)...].lowercased()) else { continue }
            if try folder.removeFile(name) { removed += 1 }
        }
        return removed
    }
}
