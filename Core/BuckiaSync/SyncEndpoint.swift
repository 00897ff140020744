import BuckiaCore
import Foundation

/// One side of a sync: a provider, and the folder within it that is synced.
///
/// A local folder is a local provider (``BuckiaCore/Capability/localFiles``) rooted at that folder (the
/// `BuckiaClient` module's `SyncEndpoint.localFolder(_:)` builds one), so one engine serves local
/// folders and buckets alike, and every write keeps the provider's own guarantees (atomic
/// renames, no links followed, conditional writes).
public struct SyncEndpoint: Sendable {
    /// Where the files are.
    public var provider: any StorageProvider
    /// The folder synced, as a key prefix: empty for the whole provider, else ending in `/`.
    public let prefix: String
    /// Names the storage behind ``provider`` (a bucket, a root folder) so that two endpoints on
    /// the same storage copy between each other server-side, and a pair of endpoints has one
    /// state store. Never holds a credential.
    public let backend: String

    /// An endpoint for the folder `path` (`""` for everything) of `provider`.
    ///
    /// - Parameters:
    ///   - backend: What storage the provider reaches, for example `s3:photos@eu-west-1` or
    ///     `local:/srv/data`; endpoints with equal backends are on the same storage.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidPath`` when `path` cannot be a prefix.
    public init(provider: any StorageProvider, path: String = "", backend: String) throws {
        var trimmed = Substring(path)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        if !trimmed.isEmpty { try ObjectKey.validatePrefix(trimmed + "/") }
        self.provider = provider
        self.prefix = trimmed.isEmpty ? "" : trimmed + "/"
        self.backend = backend
    }

    /// Names the endpoint for state stores and messages: the backend and the folder.
    public var identity: String { prefix.isEmpty ? backend : "\(backend)/\(prefix)" }

    /// Whether one of the two endpoints lies within the other: the same storage, and one
    /// folder at or under the other's. A sync between them would copy a tree into itself
    /// (one more nested copy every run) or delete its own source, so the engine refuses such a
    /// pair, as `rclone sync` refuses overlapping remotes.
    ///
    /// Local folders compare by their real paths (a local remote's root and folder, a plain
    /// local folder), so `/srv/a` as a folder and a remote rooted at `/srv` with the folder
    /// `a/b` overlap.
    public func overlaps(_ other: SyncEndpoint) -> Bool {
        let (mine, theirs) = (place, other.place)
        return mine.hasPrefix(theirs) || theirs.hasPrefix(mine)
    }

    /// Throws unless the two endpoints are apart (``overlaps(_:)``): the one refusal the engine,
    /// the client and the command line share.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` naming both places.
    public func requireApart(from other: SyncEndpoint) throws {
        guard overlaps(other) else { return }
        throw BuckiaError(
            .invalidConfiguration,
            "The two sides overlap (\(identity) and \(other.identity)): one lies within the other, so a sync would copy the tree into itself or delete its own files. Sync folders that are apart.",
            operation: "sync")
    }

    /// The storage and folder as one string ending in `/`: for local storage the folder's full
    /// path (`local:/srv/a/b/`), else the backend and the prefix (`s3:bucket@host/photos/`).
    var place: String {
        if backend.hasPrefix("local:") {
            var root = Substring(backend)
            while root.hasSuffix("/") { root = root.dropLast() }
            return "\(root)/\(prefix)"
        }
        return "\(backend)/\(prefix)"
    }

    /// The provider's key for `path`, a path relative to the endpoint.
    func key(_ path: ObjectKey) throws -> ObjectKey {
        prefix.isEmpty ? path : try ObjectKey(prefix + path.rawValue)
    }

    /// The provider, if its files are on this machine (``BuckiaCore/Capability/localFiles``),
    /// so transfers read and write them directly.
    var fileStore: (any StorageProvider)? { provider.capabilities.supports(.localFiles) ? provider : nil }
}
