import BuckiaCore
import Foundation

/// One name in a folder, as a folder-organised backend reports it.
public struct FolderItem: Sendable {
    /// What the name is.
    public enum Kind: Sendable {
        /// An object; with its description when the folder listing already gave one
        /// (Bunny's), nil when the lister must ask for it (a local `stat`).
        case file(RemoteFile?)
        /// A folder, whose keys are `name/…`.
        case folder
        /// Something that cannot be an object (a symbolic link, a device), and why.
        case unaddressable(reason: String)
    }

    /// The name's bytes, as the backend holds them: they need not be UTF-8.
    public var name: [UInt8]
    /// What it is.
    public var kind: Kind

    /// Whether the item is a folder.
    var isFolder: Bool {
        if case .folder = kind { return true }
        return false
    }

    /// Describes one name.
    public init(name: [UInt8], kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// Describes one name given as text.
    public init(_ name: String, kind: Kind) {
        self.init(name: Array(name.utf8), kind: kind)
    }
}

/// A lister for backends organised as folders that list one level at a time (a local file
/// system, Bunny's storage API): it walks the folders in key order, reading each folder it
/// needs once per listing, whatever the page size.
///
/// Recursive listings descend; one-level listings roll each folder up into one
/// ``ListEntry/directory(_:)`` entry, reported only when the folder holds an object somewhere
/// (object stores have no empty folders). Folders that cannot hold an entry after the resume
/// point or under the prefix are never read. Names that cannot be keys are listed as
/// ``ListEntry/unaddressable(_:)``. Memory holds one page and the names of the folders on the
/// current path.
///
/// A failure to read a folder is thrown, never skipped: a truncated listing that looks
/// complete would make sync delete what it did not see.
public actor FolderWalkLister: ObjectLister {
    /// Reads one folder, given as its key prefix (`""` for the root, else ending in `/`).
    public typealias ReadFolder = @Sendable (_ folder: String) async throws -> [FolderItem]
    /// Describes the object at a key that a folder listing named without details; nil when
    /// it has gone since.
    public typealias Describe = @Sendable (_ key: ObjectKey) async throws -> RemoteFile?

    private struct Frame {
        var folder: [UInt8]
        var items: [FolderItem]
        var index = 0
    }

    private let readFolder: ReadFolder
    private let describe: Describe
    private var filter: ListingFilter
    private let pageSize: Int
    private var stack: [Frame] = []
    private var started = false

    /// Prepares a walk for `request`.
    ///
    /// - Throws: As ``ListingFilter/init(_:)``.
    public init(request: ListRequest, maxPageSize: Int, readFolder: @escaping ReadFolder, describe: @escaping Describe) throws {
        filter = try ListingFilter(request)
        pageSize = request.options.effectivePageSize(maximum: maxPageSize)
        self.readFolder = readFolder
        self.describe = describe
    }

    public func nextPage() async throws -> ListPage? {
        if !started {
            started = true
            stack = [Frame(folder: [], items: try await sortedItems(of: []))]
        }
        var page: [ListEntry] = []
        while page.count < pageSize, !stack.isEmpty {
            let top = stack.count - 1
            guard stack[top].index < stack[top].items.count else {
                stack.removeLast()
                continue
            }
            // Taken, not copied: each item is read once, and a copy retained its name and
            // description only to release them again (6 % of a no-op resync's samples went
            // to copying and destroying items).
            var item = FolderItem(name: [], kind: .folder)
            swap(&item, &stack[top].items[stack[top].index])
            stack[top].index += 1
            // The kind moved out of the item, so a described file is moved into the page, not
            // copied (a copy retained its key, entity tag and the rest, to release them again).
            var kind = FolderItem.Kind.folder
            swap(&kind, &item.kind)
            switch consume kind {
            case .file(let described?) where described.path.rawValue.utf8Equals(stack[top].folder, item.name):
                // A file the backend described names its key: checked against the folder and
                // the name where they lie, not joined into a new array to compare (a file a
                // listing meets costs no allocation here).
                guard filter.isEligible(key: described.path.rawValue) else { continue }
                // A recursive listing admits every eligible entry, which this one is (its key
                // is its path): `admit` would copy the key's bytes again to check it again.
                if filter.options.recursive {
                    page.append(.object(described))
                } else if let admitted = filter.admit(.object(described)) {
                    page.append(admitted)
                }
            case .folder:
                let folder = stack[top].folder + item.name + [UInt8(ascii: "/")]
                guard let text = String.validatingUTF8(folder) else {
                    if let entry = filter.admit(.unaddressable(UnaddressableKey(bytes: folder, reason: "the folder's name is not UTF-8"))) {
                        page.append(entry)
                    }
                    continue
                }
                guard filter.mayContain(folder: text) else { continue }
                if filter.rollsUp(folder: text) {
                    // One object is enough to report the folder; the rest of it is not read.
                    if let first = try await firstEntry(in: folder), let entry = filter.admit(first) { page.append(entry) }
                } else {
                    stack.append(Frame(folder: folder, items: try await sortedItems(of: folder)))
                }
            case let other:
                let path = stack[top].folder + item.name
                guard filter.isEligible(path), let entry = try await entry(path, other) else { continue }
                // A recursive listing admits every eligible entry, which this one is (its key
                // is `path`): `admit` would copy the key's bytes again to check it again.
                if filter.options.recursive {
                    page.append(entry)
                } else if let admitted = filter.admit(entry) {
                    page.append(admitted)
                }
            }
        }
        guard let last = page.last else { return nil }
        return ListPage(entries: page, resumeToken: ListingFilter.token(after: last))
    }

    /// The listing entry for a non-folder item, or nil when it has gone.
    private func entry(_ path: [UInt8], _ kind: FolderItem.Kind) async throws -> ListEntry? {
        switch kind {
        case .unaddressable(let reason):
            return .unaddressable(UnaddressableKey(bytes: path, reason: reason))
        case .folder:
            return nil
        case .file(let described):
            // The backend's description names the key it checked: no second validation.
            if let described, described.path.rawValue.utf8Equals(path) { return .object(described) }
            guard let text = String.validatingUTF8(path) else {
                return .unaddressable(UnaddressableKey(bytes: path, reason: "the name is not UTF-8"))
            }
            let key: ObjectKey
            do {
                key = try ObjectKey(text)
            } catch let error as BuckiaError {
                return .unaddressable(UnaddressableKey(bytes: path, reason: error.message))
            }
            if let described { return .object(described) }
            return try await describe(key).map { .object($0) }
        }
    }

    /// The first entry under `folder` in key order, reading as little as it can.
    private func firstEntry(in folder: [UInt8]) async throws -> ListEntry? {
        for item in try await sortedItems(of: folder) {
            if case .folder = item.kind {
                if let found = try await firstEntry(in: folder + item.name + [UInt8(ascii: "/")]) { return found }
            } else if let found = try await entry(folder + item.name, item.kind) {
                return found
            }
        }
        return nil
    }

    /// The longest folder path a walk descends into, in bytes: past it a folder is listed as
    /// unaddressable. No store keeps keys this long (S3 and B2 stop at 1,024 bytes), so only
    /// a server that nests folders without end reaches it.
    public static let maximumFolderPathBytes = 4_096

    /// A folder's items in key order: a folder sorts as its name followed by `/`.
    ///
    /// A name that cannot be one segment of a key (empty, `.`, `..`, holding `/` or NUL), as
    /// a broken or hostile server may report, becomes an unaddressable item: walking a folder
    /// named `.` would read the same folder again, without end.
    private func sortedItems(of folder: [UInt8]) async throws -> [FolderItem] {
        var items = try await readFolder(String(decoding: folder, as: UTF8.self))
        for index in items.indices {
            if let reason = Self.segmentProblem(items[index].name) {
                items[index].kind = .unaddressable(reason: reason)
            } else if case .folder = items[index].kind, folder.count + items[index].name.count + 1 > Self.maximumFolderPathBytes {
                items[index].kind = .unaddressable(reason: "the folder lies deeper than \(Self.maximumFolderPathBytes) bytes of path")
            }
        }
        // Sorted as a permutation over sort keys (a folder's name followed by `/`) laid end to
        // end in one buffer, then applied by swaps: sorting the items themselves copied each
        // one, a name and a whole `RemoteFile`, at every comparison (10 % of a no-op resync of
        // 100,000 files), and comparing keys in one buffer touches no reference count.
        var bytes: [UInt8] = []
        var spans: [Range<Int>] = []
        // Each key's first eight bytes as one big-endian number (zeros past its end): where two
        // differ, they order the keys as their bytes do, and most names of a folder differ there,
        // so most comparisons are one integer comparison, not a call to memcmp.
        var heads: [UInt64] = []
        spans.reserveCapacity(items.count)
        heads.reserveCapacity(items.count)
        for index in items.indices {
            let start = bytes.count
            bytes += items[index].name
            if items[index].isFolder { bytes.append(UInt8(ascii: "/")) }
            spans.append(start..<bytes.count)
            var head: UInt64 = 0
            for offset in 0..<8 {
                head <<= 8
                if start + offset < bytes.count { head |= UInt64(bytes[start + offset]) }
            }
            heads.append(head)
        }
        var order = Array(items.indices)
        bytes.withUnsafeBufferPointer { bytes in
            spans.withUnsafeBufferPointer { spans in
                heads.withUnsafeBufferPointer { heads in
                    // Then memcmp: `lexicographicallyPrecedes` over slices stepped a byte at a time
                    // (4 % of a no-op resync's instructions went to this sort).
                    order.sort {
                        if heads[$0] != heads[$1] { return heads[$0] < heads[$1] }
                        return ObjectKey.compareBytes(UnsafeBufferPointer(rebasing: bytes[spans[$0]]), UnsafeBufferPointer(rebasing: bytes[spans[$1]])) < 0
                    }
                }
            }
        }
        var placed = [Bool](repeating: false, count: items.count)
        items.withUnsafeMutableBufferPointer { items in
            for start in items.indices where !placed[start] {
                // Walk the cycle through `start`: each swap puts one item where it belongs. Swapped
                // in the buffer, the items move; `Array.swapAt` copied both (retaining a name and a
                // whole `RemoteFile` to release them again).
                var position = start
                while true {
                    placed[position] = true
                    let source = order[position]
                    if source == start { break }
                    items.swapAt(position, source)
                    position = source
                }
            }
        }
        return items
    }

    /// Why `name` cannot be one segment of a key, or nil when it can.
    static func segmentProblem(_ name: [UInt8]) -> String? {
        if name.isEmpty { return "the backend listed an empty name" }
        if name == [UInt8(ascii: ".")] || name == [UInt8(ascii: "."), UInt8(ascii: ".")] {
            return "the backend listed a name '\(String(decoding: name, as: UTF8.self))', which would lead back into a folder already walked"
        }
        // One pass for both bytes: nearly every name holds neither.
        guard let found = name.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == 0 }) else { return nil }
        if name[found] == 0 && !name[found...].contains(UInt8(ascii: "/")) { return "the backend listed a name holding NUL" }
        return "the backend listed a name holding '/' in one folder"
    }
}
