/// A provider that can be built from a configuration, and so selected by name.
///
/// ```swift
/// public struct FTPProvider: StorageProviderPlugin {
///     public static let providerType: ProviderType = "ftp"
///     public init(configuration: BuckiaConfiguration) throws { … }
///     …
/// }
/// ```
public protocol StorageProviderPlugin: StorageProvider {
    /// The type name configurations select this provider by.
    static var providerType: ProviderType { get }

    /// Builds the provider, validating everything in `configuration` it needs.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the missing or bad setting.
    init(configuration: BuckiaConfiguration) throws
}

extension StorageProviderPlugin {
    public var providerType: ProviderType { Self.providerType }
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
    private var storage = PluginRegistry<ProviderType, BuckiaConfiguration, any StorageProvider>(noun: "provider")

    /// An empty registry.
    public init() {}

    /// Registers a plugin under its ``StorageProviderPlugin/providerType``.
    ///
    /// - Throws: ``BuckiaError/Code/alreadyExists`` if that type is already registered.
    public mutating func register<Plugin: StorageProviderPlugin>(_ plugin: Plugin.Type) throws {
        try storage.register(Plugin.providerType) { try Plugin(configuration: $0) }
    }

    /// Registers a factory closure under `type`.
    public mutating func register(
        _ type: ProviderType, factory: @escaping @Sendable (BuckiaConfiguration) throws -> any StorageProvider
    ) throws {
        try storage.register(type, factory: factory)
    }

    /// The registered type names, sorted.
    public var registeredTypes: [ProviderType] { storage.registeredTypes }

    /// Whether `type` is registered.
    public func contains(_ type: ProviderType) -> Bool { storage.contains(type) }

    /// Builds the provider the configuration selects.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for an unknown type (the message
    ///   lists the registered ones) or a configuration the provider rejects.
    public func makeProvider(for configuration: BuckiaConfiguration) throws -> any StorageProvider {
        try configuration.validate()
        return try storage.make(configuration.provider, configuration: configuration)
    }
}
