import Foundation

/// Where an item with a given name lives inside a folder of many items.
///
/// One concept for every file-per-item store: the disk engine's values, the chunk engine's
/// chunks and the resource cache's files. `flat` keeps every item in one folder;
/// `fanOut` spreads items over `256^depth` subfolders named by the leading bytes of the
/// SHA-256 of the item's name (Git's objects/ab/cdef… shape), so no folder grows past
/// what file systems list quickly.
public enum StorageLayout: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Every item in the root folder.
    case flat
    /// Items in `depth` levels of two-hex-digit subfolders (depth 1 to 4).
    case fanOut(depth: Int)

    /// Git's layout: one level of 256 folders.
    public static let gitStyle = StorageLayout.fanOut(depth: 1)

    /// The folder (relative, empty or ending in `/`) an item named `name` lives in.
    public func folder(for name: String) -> String {
        switch self {
        case .flat:
            return ""
        case .fanOut(let depth):
            let digest = Hashing.sha256(Data(name.utf8)).bytes
            return (0..<max(1, min(depth, 4))).map { Hex.encode([digest[$0]]) + "/" }.joined()
        }
    }

    /// Parses `flat`, `git` or `fanout:N`, as configurations spell it.
    public init(parsing text: String) throws {
        switch text.lowercased() {
        case "flat": self = .flat
        case "git", "gitstyle", "fanout": self = .gitStyle
        default:
            if text.lowercased().hasPrefix("fanout:"), let depth = Int(text.dropFirst("fanout:".count)), (1...4).contains(depth) {
                self = .fanOut(depth: depth)
            } else {
                throw BuckiaError(
                    .invalidConfiguration, "The layout \(text.debugDescription) is not known; use flat, git or fanout:1 to fanout:4.",
                    path: "layout")
            }
        }
    }

    public var description: String {
        switch self {
        case .flat: "flat"
        case .fanOut(let depth): "fanout:\(depth)"
        }
    }
}
