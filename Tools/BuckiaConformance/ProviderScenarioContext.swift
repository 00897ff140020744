import BuckiaCore
import Foundation


/// What a provider scenario works with: the provider, a key prefix of its own, and a local
/// scratch folder. The runner removes both afterwards.
public struct ProviderScenarioContext: Sendable {
    /// The provider under test.
    public let provider: any StorageProvider
    /// Where the provider came from: a scenario opens a second instance, or builds one from a
    /// configuration, through it.
    public let factory: ProviderFactory
    /// A prefix no other scenario uses, ending in `/`; every key the scenario writes is under it.
    public let prefix: String
    /// A local folder for the scenario's files.
    public let scratch: URL

    /// A new instance of the provider over the same backing store.
    ///
    /// - Throws: ``ConformanceSkip`` when the suite was given one instance, not a factory.
    public func reopen() async throws -> any StorageProvider {
        guard factory.opensNewInstances else {
            throw ConformanceSkip("needs a factory that opens a new instance; the suite was given one instance (ProviderFactory.instance)")
        }
        return try await factory.open()
    }

    /// The registry, configuration and environment the provider is built from.
    ///
    /// - Throws: ``ConformanceSkip`` when the suite was not given a plugin and configuration.
    public func pluginRoute() throws -> ProviderFactory.PluginRoute {
        guard let route = factory.plugin else {
            throw ConformanceSkip("needs a plugin and its configuration (ProviderFactory.plugin or .registered); the suite was given \(factory.opensNewInstances ? "an opening closure" : "one instance")")
        }
        return route
    }

    /// The key `name` under this scenario's prefix.
    public func key(_ name: String) throws -> ObjectKey {
        try ObjectKey(prefix + name)
    }

    /// Writes `data` to a new local file in the scratch folder.
    public func localFile(_ name: String, contents: Data) throws -> URL {
        let url = scratch.appendingPathComponent(name)
        try contents.write(to: url)
        return url
    }

    /// Every entry under this scenario's prefix, paths relative to it.
    public func listedPaths(_ options: ListOptions = ListOptions()) async throws -> [String] {
        var options = options
        options.prefix = prefix + options.prefix
        if let after = options.startAfter { options.startAfter = prefix + after }
        var paths: [String] = []
        for try await entry in provider.list(options) {
            paths.append(entry.path.utf8Dropping(prefix: prefix) ?? entry.path)
        }
        return paths
    }

    /// Deterministic pseudo-random bytes, so failures reproduce.
    public static func pattern(count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> Data {
        var state = seed
        var data = Data(count: count)
        data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            for index in 0..<count {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                buffer[index] = UInt8(truncatingIfNeeded: state >> 33)
            }
        }
        return data
    }
}
