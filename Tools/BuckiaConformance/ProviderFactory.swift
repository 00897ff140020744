import BuckiaCore
import Foundation

/// How the conformance suite gets the provider under test.
///
/// The suite can be given one instance, for a quick start, or a factory, which lets it check
/// what one instance cannot show: that data survives a new instance (where the provider
/// declares ``Capability/persistent``), that the configuration is validated, and that the
/// registry builds the provider by its type name. Scenarios that need a factory are skipped,
/// with the reason, when the suite has only an instance.
public struct ProviderFactory: Sendable {
    /// What reports call the subject (its provider type, or the remote's name).
    public var name: String
    /// Whether ``open()`` returns a new instance each time (over the same backing store).
    public let opensNewInstances: Bool
    /// The configuration route, when the factory has one.
    public let plugin: PluginRoute?
    private let opener: @Sendable () async throws -> any StorageProvider

    /// A registry, the configuration it builds the provider from, and the environment it
    /// reads credentials from.
    public struct PluginRoute: Sendable {
        /// A registry in which the provider's type is registered.
        public var registry: ProviderRegistry
        /// A configuration that builds a working provider.
        public var configuration: BuckiaConfiguration
        /// The environment the provider is given.
        public var environment: [String: String]
        /// Where the provider writes its network events, if anywhere.
        public var log: (@Sendable (String) -> Void)?
        /// What the providers built share (the HTTP transport).
        public var resources: SharedResources = .process

        /// Builds a provider from `configuration` through the registry, as an application
        /// selecting it by name would.
        public func make(_ configuration: BuckiaConfiguration) throws -> any StorageProvider {
            try registry.makeProvider(for: configuration, environment: environment, log: log, resources: resources)
        }
    }

    /// Opens the provider: a new instance on the same backing store each time, or the one
    /// instance the suite was given.
    public func open() async throws -> any StorageProvider { try await opener() }

    /// The one instance given: every scenario that needs only that runs; reopening,
    /// configuration and registry scenarios are skipped.
    public static func instance(_ provider: any StorageProvider) -> ProviderFactory {
        ProviderFactory(name: provider.providerType.rawValue, opensNewInstances: false, plugin: nil) { provider }
    }

    /// A closure that opens a new instance over the same backing store on every call (the
    /// same folder, bucket or database), so data written through one is there for the next.
    public static func opening(_ name: String, _ open: @escaping @Sendable () async throws -> any StorageProvider) -> ProviderFactory {
        ProviderFactory(name: name, opensNewInstances: true, plugin: nil, opener: open)
    }

    /// A plugin and a configuration that selects it: the provider is built through a registry
    /// holding `registry`'s types plus `plugin` (registered here unless it already is), every
    /// time anew, and every scenario runs.
    ///
    /// - Parameters:
    ///   - configuration: Must build a working provider over storage that outlives one
    ///     instance, where the provider declares ``Capability/persistent``.
    ///   - environment: The environment the provider reads credentials from; none by default,
    ///     so a test does not depend on the machine's.
    ///   - resources: What the providers built share (the HTTP transport).
    public static func plugin<Plugin: StorageProviderPlugin>(
        _ plugin: Plugin.Type, configuration: BuckiaConfiguration, environment: [String: String] = [:],
        registry: ProviderRegistry = ProviderRegistry(), resources: SharedResources = .process
    ) throws -> ProviderFactory {
        var registry = registry
        if !registry.contains(Plugin.providerType) { try registry.register(plugin) }
        return registered(configuration: configuration, registry: registry, environment: environment, resources: resources)
    }

    /// A configuration whose provider type is already registered in `registry` (the command
    /// line's `conformance` command uses this for a configured remote).
    public static func registered(
        configuration: BuckiaConfiguration, registry: ProviderRegistry, environment: [String: String] = [:],
        log: (@Sendable (String) -> Void)? = nil, name: String? = nil, resources: SharedResources = .process
    ) -> ProviderFactory {
        let route = PluginRoute(registry: registry, configuration: configuration, environment: environment, log: log, resources: resources)
        return ProviderFactory(name: name ?? configuration.provider.rawValue, opensNewInstances: true, plugin: route) {
            try route.make(configuration)
        }
    }

    private init(name: String, opensNewInstances: Bool, plugin: PluginRoute?, opener: @escaping @Sendable () async throws -> any StorageProvider) {
        self.name = name
        self.opensNewInstances = opensNewInstances
        self.plugin = plugin
        self.opener = opener
    }
}
