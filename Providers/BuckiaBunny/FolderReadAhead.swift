import BuckiaCore
import BuckiaProviderKit
import Foundation

/// Reads the folders a walk will need next while it works through the current one.
///
/// It keeps the folders still to visit in the walk's own order (a folder's subfolders, in key
/// order, come before the rest of its parent's), and keeps up to `width − 1` of the next ones
/// being read. A folder read ahead is handed over when the walk asks for it; a failed read
/// throws then, so a folder that could not be read is never skipped. Folders the walk passes
/// over (outside its prefix or before its resume point) are dropped, and their reads cancelled,
/// when it asks for one after them.
actor FolderReadAhead {
    typealias Read = @Sendable (_ folder: String) async throws -> [FolderItem]

    private let width: Int
    private let read: Read
    private var upcoming: [String] = []
    private var ahead: [String: Task<[FolderItem], any Error>] = [:]

    init(width: Int, read: @escaping Read) {
        self.width = max(1, width)
        self.read = read
    }

    /// The items of `folder` (`""` for the root, else ending in `/`).
    func items(of folder: String) async throws -> [FolderItem] {
        if let index = upcoming.firstIndex(of: folder) {
            for passed in upcoming[..<index] { ahead.removeValue(forKey: passed)?.cancel() }
            upcoming.removeSubrange(...index)
        }
        let read = read
        let task = ahead.removeValue(forKey: folder) ?? Task { try await read(folder) }
        let items = try await task.value
        let subfolders = items.compactMap { item -> [UInt8]? in
            if case .folder = item.kind { return Array(folder.utf8) + item.name + [UInt8(ascii: "/")] }
            return nil
        }.sorted { $0.lexicographicallyPrecedes($1) }.compactMap { String(validating: $0, as: UTF8.self) }
        upcoming.insert(contentsOf: subfolders, at: 0)
        for name in upcoming {
            guard ahead.count < width - 1 else { break }
            if ahead[name] == nil { ahead[name] = Task { try await read(name) } }
        }
        return items
    }
}
