import Foundation

/// What a provider factory gets: the configuration, the registry it was looked up in, and the
/// environment secrets may come from.
///
/// A wrapper (encryption, chunking, caching) opens its inner provider through ``makeProvider(for:)``,
/// so the inner one comes from the same registry, third-party plugins included.
public struct ProviderContext: Sendable {
    /// The configuration that selected this provider.
    public var configuration: BuckiaConfiguration
    /// The registry the provider is being built from.
    public var registry: ProviderRegistry
    /// Environment variables a provider may read credentials and settings from
    /// (`AWS_ACCESS_KEY_ID`, `B2_APPLICATION_KEY`); the process's by default, injectable in tests.
    public var environment: [String: String]
    /// Receives one line per network event (each attempt, retry and final status), already
    /// redacted, for a `--verbose` flag or a log file; nil keeps the provider silent.
    public var log: (@Sendable (String) -> Void)?
    /// What the providers built with this context share: the HTTP transport (one thread and
    /// connection pool for all of them), and whatever plugins declare. ``SharedResources/process``
    /// unless the application passes its own, which it shuts down when done.
    public var resources: SharedResources

    /// Creates a context.
    public init(
        configuration: BuckiaConfiguration, registry: ProviderRegistry = ProviderRegistry(),
        environment: [String: String] = ProcessInfo.processInfo.environment, log: (@Sendable (String) -> Void)? = nil,
        resources: SharedResources = .process
    ) {
        self.configuration = configuration
        self.registry = registry
        self.environment = environment
        self.log = log
        self.resources = resources
    }

    /// Builds another provider through the same registry, environment and shared resources: a
    /// wrapper's inner one.
    public func makeProvider(for configuration: BuckiaConfiguration) throws -> any StorageProvider {
        try registry.makeProvider(for: configuration, environment: environment, log: log, resources: resources)
    }
}

/// A provider that can be built from a configuration, and so selected by name.
///
/// ```swift
/// public struct FTPProvider: StorageProviderPlugin {
///     public static let providerType: ProviderType = "ftp"
///     public init(context: ProviderContext) throws { … context.configuration … }
///     …
/// }
/// ```
public protocol StorageProviderPlugin: StorageProvider {
    /// The type name configurations select this provider by.
    static var providerType: ProviderType { get }

    /// Builds the provider, validating everything in the configuration it needs.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the missing or bad setting
    ///   (an unknown option included: see ``BuckiaConfiguration/checkOptions(known:)``).
    init(context: ProviderContext) throws

    /// The options this provider reads, or nil when it does not say. Tools that derive option
    /// names (the command line's `BUCKIA_REMOTE_<NAME>_<KEY>` variables) match against them.
    static var knownOptions: Set<String>? { get }
}

extension StorageProviderPlugin {
    public var providerType: ProviderType { Self.providerType }

    public static var knownOptions: Set<String>? { nil }
}

/// Provider types mapped to the code that builds them.
///
/// An explicit value, not a global: build one, register what you need, pass it where
/// providers are made. The `Buckia` umbrella module offers one with every built-in already
/// registered (`ProviderRegistry.builtIn`).
///
/// ```swift
/// var registry = ProviderRegistry()
/// try registry.register(LocalProvider.self)
/// let provider = try registry.makeProvider(for: configuration)
/// ```
public struct ProviderRegistry: Sendable {
    private var storage = PluginRegistry<ProviderType, ProviderContext, any StorageProvider>(noun: "provider")
    private var options: [ProviderType: Set<String>] = [:]

    /// An empty registry.
    public init() {}

    /// Registers a plugin under its ``StorageProviderPlugin/providerType``.
    ///
    /// - Throws: ``BuckiaError/Code/alreadyExists`` if that type is already registered.
    public mutating func register<Plugin: StorageProviderPlugin>(_ plugin: Plugin.Type) throws {
        try storage.register(Plugin.providerType) { try Plugin(context: $0) }
        options[Plugin.providerType] = Plugin.knownOptions
    }

    /// A registry of `plugins`, whose types are distinct (the umbrella's built-ins): nothing to
    /// refuse, so nothing thrown.
    package init(distinct plugins: [any StorageProviderPlugin.Type]) {
        for plugin in plugins { set(plugin) }
    }

    private mutating func set<Plugin: StorageProviderPlugin>(_ plugin: Plugin.Type) {
        storage.set(Plugin.providerType) { try Plugin(context: $0) }
        options[Plugin.providerType] = Plugin.knownOptions
    }

    /// The options a registered provider type reads, when it declares them.
    public func knownOptions(for type: ProviderType) -> Set<String>? { options[type] }

    /// Registers a factory closure under `type`.
    public mutating func register(
        _ type: ProviderType, factory: @escaping @Sendable (ProviderContext) throws -> any StorageProvider
    ) throws {
        try storage.register(type, factory: factory)
    }

    /// The registered type names, sorted.
    public var registeredTypes: [ProviderType] { storage.registeredTypes }

    /// Whether `type` is registered.
    public func contains(_ type: ProviderType) -> Bool { storage.contains(type) }

    /// Builds the provider the configuration selects.
    ///
    /// - Parameters:
    ///   - environment: Where the provider may read credentials; the process's by default.
    ///   - log: Receives one redacted line per network event.
    ///   - resources: What the provider shares with the others built with the same value (the
    ///     HTTP transport); ``SharedResources/process`` by default.
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for an unknown type (the message
    ///   lists the registered ones), a configuration the provider rejects, or a provider that
    ///   declares a capability Buckia does not define (a misspelt name would otherwise never
    ///   apply, silently).
    public func makeProvider(
        for configuration: BuckiaConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment,
        log: (@Sendable (String) -> Void)? = nil, resources: SharedResources = .process
    ) throws -> any StorageProvider {
        try configuration.validate()
        let provider = try storage.make(
            configuration.provider,
            configuration: ProviderContext(
                configuration: configuration, registry: self, environment: environment, log: log, resources: resources))
        try Capability.checkKnown(provider.capabilities.features, declaredBy: "provider type \(configuration.provider.rawValue.debugDescription)")
        return provider
    }
}
