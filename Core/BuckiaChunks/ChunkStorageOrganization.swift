import BuckiaCore
import Foundation

/// Where a chunk lives inside a store: a relative, `/`-separated path for each identifier, and
/// the identifier back from a path.
///
/// Implementations must round-trip: `identifier(from: storagePath(for: id)) == id` for every
/// identifier, and `isValidPath` must be true exactly for the paths `storagePath` can make.
/// The chunk-store conformance scenarios check both.
public protocol ChunkStorageOrganization: Sendable {
    /// A short name for configurations and messages (`git`, `flat`).
    var name: String { get }
    /// A sentence describing the layout.
    var description: String { get }
    /// The relative path the chunk is stored at.
    func storagePath(for identifier: ChunkIdentifier) -> String
    /// The identifier stored at `path`, or nil when `path` is not one this organization makes.
    func identifier(from path: String) -> ChunkIdentifier?
    /// Whether `path` is one this organization makes.
    func isValidPath(_ path: String) -> Bool
}

extension ChunkStorageOrganization {
    public func isValidPath(_ path: String) -> Bool { identifier(from: path) != nil }

    /// The folder (relative, empty or ending in `/`) the chunk's path is in: what a store
    /// lists to learn which of many chunks it holds.
    public func folder(for identifier: ChunkIdentifier) -> String {
        let path = storagePath(for: identifier)
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[...slash])
    }
}

/// Git's object layout: folders named by the identifier's leading hex digits, then the whole
/// identifier as the file name (`ab/abcd…` at depth 1, Git's own and the default;
/// `ab/cd/abcd…` at depth 2).
///
/// For large collections: at depth 1 a million chunks spread over 256 folders of about 4,000,
/// which file systems (ext4's hashed directories, APFS) and object-store listings handle well;
/// depth 2 suits stores of hundreds of millions. Deeper costs a folder per chunk until the
/// store is large: a 1 GiB file at depth 2 makes some 13,000 folders for 13,000 chunks.
public struct GitStyleOrganization: ChunkStorageOrganization {
    /// How many levels of folders (1 to 4).
    public let directoryDepth: Int
    /// Hex digits per folder name (1 to 4).
    public let charactersPerDirectory: Int

    public var name: String { "git" }
    public var description: String {
        "Git-style fan-out: \(directoryDepth) level\(directoryDepth == 1 ? "" : "s") of \(charactersPerDirectory)-digit folders"
    }

    /// Creates the layout. Depths and widths outside 1...4 are clamped into it.
    public init(directoryDepth: Int = 1, charactersPerDirectory: Int = 2) {
        self.directoryDepth = min(max(directoryDepth, 1), 4)
        self.charactersPerDirectory = min(max(charactersPerDirectory, 1), 4)
    }

    public func storagePath(for identifier: ChunkIdentifier) -> String {
        var path = ""
        var index = identifier.id.startIndex
        for _ in 0..<directoryDepth {
            let end = identifier.id.index(index, offsetBy: charactersPerDirectory)
            path += identifier.id[index..<end] + "/"
            index = end
        }
        return path + identifier.id
    }

    public func identifier(from path: String) -> ChunkIdentifier? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == directoryDepth + 1, let name = parts.last, let identifier = try? ChunkIdentifier(id: String(name)) else { return nil }
        return storagePath(for: identifier) == path ? identifier : nil
    }
}

/// Every chunk in one folder, named by its identifier.
///
/// For small collections (under about 10,000 chunks), and for stores whose listing has no
/// folders to walk.
public struct FlatOrganization: ChunkStorageOrganization {
    public var name: String { "flat" }
    public var description: String { "flat: every chunk in one folder" }

    /// Creates the layout.
    public init() {}

    public func storagePath(for identifier: ChunkIdentifier) -> String { identifier.id }

    public func identifier(from path: String) -> ChunkIdentifier? {
        path.contains("/") ? nil : try? ChunkIdentifier(id: path)
    }
}

/// Builds the built-in organizations from a configuration's spelling.
public enum ChunkOrganizations {
    /// Parses `flat`, `git` (depth 1) or `git:N` (depth N, 1 to 4).
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the accepted spellings.
    public static func parse(_ text: String) throws -> any ChunkStorageOrganization {
        let lowered = text.lowercased()
        if lowered == "flat" { return FlatOrganization() }
        if lowered == "git" { return GitStyleOrganization() }
        if lowered.hasPrefix("git:"), let depth = Int(lowered.dropFirst(4)), (1...4).contains(depth) {
            return GitStyleOrganization(directoryDepth: depth)
        }
        throw BuckiaError(
            .invalidConfiguration, "The chunk organization \(text.debugDescription) is not known; use flat, git or git:1 to git:4.",
            path: "organization")
    }
}
