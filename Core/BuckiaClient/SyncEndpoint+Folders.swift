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
    /// never a credential.
    ///
    /// A `local` configuration is chosen by its provider type, never by the provider's class
    /// (which a layer may wrap): its folder is opened again from the configuration, named by
    /// its root and, like a local folder, made durable in batches; its other options (such
    /// as `metadata`) stand.
    ///
    /// - Parameter environment: Where a local root's leading `~` finds `HOME`.
    public static func bucket(
        _ provider: any StorageProvider, configuration: BuckiaConfiguration, path: String = "",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> SyncEndpoint {
        if configuration.provider == .local {
            var batched = configuration
            batched.options["fsync"] = "false"
            let local = try LocalProvider(configuration: batched, environment: environment)
            return try SyncEndpoint(provider: local, path: path, backend: "local:\(local.root.path)")
        }
        var backend = "\(configuration.provider.rawValue):\(configuration.bucketName)"
        if let place = configuration.options["root"] ?? configuration.options["endpoint"] { backend += "@\(place)" }
        return try SyncEndpoint(provider: provider, path: path, backend: backend)
    }
}
