import BuckiaCore
import BuckiaLocal
import BuckiaSync
import Foundation

extension SyncEndpoint {
    /// A local folder as a sync endpoint: a local provider rooted there, whose writes are made
    /// durable in batches (one `syncfs` before each batch a sync records) rather than by an
    /// `fsync` per file.
    ///
    /// - Parameter create: Create the folder now if it is missing; otherwise the sync's first
    ///   write creates it (so a run refused before it writes, such as an overlapping pair,
    ///   leaves nothing behind).
    public static func localFolder(_ url: URL, create: Bool = true) throws -> SyncEndpoint {
        let folder = try LocalProvider(root: url, durable: false, createRoot: create)
        return try SyncEndpoint(provider: folder, backend: "local:\(folder.root.path)")
    }

    /// The folder `path` of the bucket `configuration` configures, served by `provider`, as a
    /// sync endpoint. Its backend names the provider, bucket and place (root or endpoint),
    /// never a credential; a `local` configuration is named by its folder (`local:/path`, the
    /// way ``localFolder(_:create:)`` names one), so a sync between it and the same folder is
    /// refused as overlapping.
    ///
    /// `provider` serves every read and write as it is, layers included: a read-only or
    /// logging layer around a local remote sees the sync's calls. The name comes from the
    /// configuration, chosen by its provider type, never from the provider's class (a layer
    /// hides it). To make a local remote's writes durable in batches rather than one `fsync`
    /// per file, make its provider with the option `fsync` false, as the command line does.
    ///
    /// - Parameter environment: Where a local root's leading `~` finds `HOME`.
    public static func bucket(
        _ provider: any StorageProvider, configuration: BuckiaConfiguration, path: String = "",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> SyncEndpoint {
        if configuration.provider == .local {
            let root = try LocalProvider.resolvedRoot(of: configuration, environment: environment)
            return try SyncEndpoint(provider: provider, path: path, backend: "local:\(root.path)")
        }
        var backend = "\(configuration.provider.rawValue):\(configuration.bucketName)"
        if let place = configuration.options["root"] ?? configuration.options["endpoint"] { backend += "@\(place)" }
        return try SyncEndpoint(provider: provider, path: path, backend: backend)
    }
}
