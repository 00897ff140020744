import BuckiaCore
import Foundation

/// The entry point an app holds: one storage bucket, chosen by configuration through a
/// registry, with an optional fallback bucket used when the primary cannot be reached.
///
/// ```swift
/// let client = try await BuckiaClient(
///     configuration: BuckiaConfiguration(provider: .local, options: ["root": "/srv/buckia"]),
///     registry: registry)
/// let status = try await client.testConnection()
/// _ = try await client.uploadFile(localURL: URL(fileURLWithPath: "/tmp/a.txt"), remotePath: "inbox/a.txt")
/// ```
///
/// The `Buckia` module adds `init(configuration:fallback:)`, which uses every built-in provider.
/// A client is safe to share between tasks: it holds one provider and no mutable state.
public final class BuckiaClient: Sendable {
    /// The configuration of the bucket in use: the primary's, or the fallback's when the
    /// primary could not be reached at creation.
    public let configuration: BuckiaConfiguration
    /// Whether the fallback bucket is the one in use.
    public let isUsingFallback: Bool
    /// The provider every call goes to.
    public let provider: any StorageProvider
    /// Where state (sync state stores) goes: the environment the client was made with.
    let environment: [String: String]

    /// Builds the provider `configuration` selects from `registry`.
    ///
    /// Without a fallback nothing is sent over the network: call ``testConnection()`` to find
    /// out whether the bucket answers. With a fallback the primary's connection is tested
    /// first, and the fallback is used when the primary does not answer.
    ///
    /// - Parameters:
    ///   - configuration: The primary bucket.
    ///   - fallback: A second bucket, used when the primary's connection test fails.
    ///   - registry: Where provider types are looked up (third-party ones included).
    ///   - environment: Variables providers read credentials from; the process's by default.
    ///   - resources: What the providers share with every other one built with the same value
    ///     (the HTTP transport); ``BuckiaCore/SharedResources/process`` by default.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` when a configuration
    ///   names an unknown provider or is invalid (the fallback's too, whether or not it is
    ///   needed); ``BuckiaCore/BuckiaError/Code/transient`` naming both reasons when neither
    ///   bucket answers.
    public init(
        configuration: BuckiaConfiguration, fallback: BuckiaConfiguration? = nil, registry: ProviderRegistry,
        environment: [String: String] = ProcessInfo.processInfo.environment, resources: SharedResources = .process
    ) async throws {
        let primary = try registry.makeProvider(for: configuration, environment: environment, resources: resources)
        // Both are built now, so a misconfigured fallback is reported at once, not on the day
        // the primary is down.
        let second = try fallback.map { try registry.makeProvider(for: $0, environment: environment, resources: resources) }
        guard let fallback, let second else {
            (self.configuration, provider, isUsingFallback, self.environment) = (configuration, primary, false, environment)
            return
        }
        let primaryStatus = await Self.status(of: primary)
        if primaryStatus.isConnected {
            (self.configuration, provider, isUsingFallback, self.environment) = (configuration, primary, false, environment)
            return
        }
        let fallbackStatus = await Self.status(of: second)
        guard fallbackStatus.isConnected else {
            throw BuckiaError(
                .transient,
                "Neither bucket answers. Primary (\(configuration.provider) \(configuration.bucketName.debugDescription)): \(primaryStatus.message.withoutTerminalPeriod). Fallback (\(fallback.provider) \(fallback.bucketName.debugDescription)): \(fallbackStatus.message.withoutTerminalPeriod).",
                operation: "connect")
        }
        (self.configuration, provider, isUsingFallback, self.environment) = (fallback, second, true, environment)
    }

    /// A client over a provider the app built itself: an S3 provider whose credentials come
    /// from the app's login (``BuckiaCore/StorageProvider`` with `S3Settings.webIdentity`), or a
    /// third party's. No registry and no fallback; nothing is sent over the network.
    ///
    /// - Parameters:
    ///   - provider: The bucket every call goes to.
    ///   - configuration: What it was built from (sync reads its limits and names state by it).
    ///   - environment: Where sync state and locks go (`XDG_STATE_HOME`), and where a local root's `~` finds `HOME`; the process's by default.
    public init(provider: any StorageProvider, configuration: BuckiaConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment) {
        (self.configuration, self.provider, isUsingFallback, self.environment) = (configuration, provider, false, environment)
    }

    /// A connection test that reports a thrown error as "not connected", with its message.
    private static func status(of provider: any StorageProvider) async -> ConnectionStatus {
        do {
            return try await provider.testConnection()
        } catch {
            return ConnectionStatus(isConnected: false, message: BuckiaError.wrapping(error).message)
        }
    }

    /// Whether the bucket answers, and how fast.
    public func testConnection() async throws -> ConnectionStatus {
        try await provider.testConnection()
    }

    /// Uploads a local file to `remotePath`, or under its own name when nil.
    public func uploadFile(localURL: URL, remotePath: String? = nil, options: UploadOptions = UploadOptions()) async throws -> RemoteFile {
        try await provider.uploadFile(localURL: localURL, remotePath: remotePath, options: options)
    }

    /// Downloads `remotePath` to `localURL`, which is replaced only by the complete, verified
    /// object.
    public func downloadFile(remotePath: String, localURL: URL, options: ReadOptions = ReadOptions()) async throws -> DownloadResult {
        try await provider.downloadFile(remotePath: remotePath, localURL: localURL, options: options)
    }

    /// Deletes `remotePath`; returns false when there was nothing to delete (deleting is
    /// idempotent, so that is not an error).
    @discardableResult
    public func deleteFile(remotePath: String) async throws -> Bool {
        let key = try ObjectKey(remotePath)
        guard try await provider.stat(remotePath: key) != nil else { return false }
        try await provider.deleteFile(remotePath: key)
        return true
    }

    /// Every object under the folder `path` (`nil` for the whole bucket), recursively.
    public func listFiles(path: String? = nil) async throws -> [RemoteFile] {
        try await provider.listFiles(path: path)
    }

    /// A URL that fetches `remotePath` without credentials, when the bucket allows it.
    public func getPublicURL(remotePath: String) throws -> URL {
        try provider.getPublicURL(remotePath: remotePath)
    }
}
