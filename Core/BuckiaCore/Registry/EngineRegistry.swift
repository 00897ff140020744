import Foundation

/// Where and how to open a key-value engine.
public struct EngineConfiguration: Hashable, Sendable, Codable {
    /// Which engine to open.
    public var type: EngineType
    /// The directory the engine keeps its files in; engines that keep none ignore it.
    public var directory: String?
    /// Engine-specific settings.
    public var options: [String: String]

    /// Creates an engine configuration.
    public init(type: EngineType, directory: String? = nil, options: [String: String] = [:]) {
        self.type = type
        self.directory = directory
        self.options = options
    }

    /// The directory as a URL, or an error saying the engine needs one.
    public func requireDirectory() throws -> URL {
        guard let directory, !directory.isEmpty else {
            throw BuckiaError(.invalidConfiguration, "The \(type) engine needs a directory.", path: "directory")
        }
        return URL(fileURLWithPath: directory, isDirectory: true)
    }
}

/// An engine that can be built from a configuration, and so selected by name.
public protocol StorageEnginePlugin: StorageEngine {
    /// The type name configurations select this engine by.
    static var engineType: EngineType { get }

    /// Opens the engine.
    init(configuration: EngineConfiguration) async throws
}

/// Engine types mapped to the code that opens them; the same mechanism as ``ProviderRegistry``.
public struct EngineRegistry: Sendable {
    private var storage = PluginRegistry<EngineType, EngineConfiguration, @Sendable () async throws -> any StorageEngine>(noun: "engine")

    /// An empty registry.
    public init() {}

    /// Registers a plugin under its ``StorageEnginePlugin/engineType``.
    ///
    /// - Throws: ``BuckiaError/Code/alreadyExists`` if that type is already registered.
    public mutating func register<Plugin: StorageEnginePlugin>(_ plugin: Plugin.Type) throws {
        try storage.register(Plugin.engineType) { configuration in
            { try await Plugin(configuration: configuration) }
        }
    }

    /// A registry of `plugins` and `factories`, whose types are distinct (the umbrella's
    /// built-ins): nothing to refuse, so nothing thrown.
    package init(
        distinct plugins: [any StorageEnginePlugin.Type],
        factories: [EngineType: @Sendable (EngineConfiguration) async throws -> any StorageEngine] = [:]
    ) {
        for plugin in plugins { set(plugin) }
        for (type, factory) in factories {
            storage.set(type) { configuration in
                { try await factory(configuration) }
            }
        }
    }

    private mutating func set<Plugin: StorageEnginePlugin>(_ plugin: Plugin.Type) {
        storage.set(Plugin.engineType) { configuration in
            { try await Plugin(configuration: configuration) }
        }
    }

    /// Registers a factory closure under `type`: an engine assembled from others (the chunk
    /// engine and its index), or one whose opening needs more than its configuration.
    ///
    /// - Throws: ``BuckiaError/Code/alreadyExists`` if that type is already registered.
    public mutating func register(
        _ type: EngineType, factory: @escaping @Sendable (EngineConfiguration) async throws -> any StorageEngine
    ) throws {
        try storage.register(type) { configuration in
            { try await factory(configuration) }
        }
    }

    /// The registered type names, sorted.
    public var registeredTypes: [EngineType] { storage.registeredTypes }

    /// Whether `type` is registered.
    public func contains(_ type: EngineType) -> Bool { storage.contains(type) }

    /// Opens the engine the configuration selects.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for an unknown type, listing the
    ///   registered ones, or an engine that declares a capability Buckia does not define.
    public func makeEngine(for configuration: EngineConfiguration) async throws -> any StorageEngine {
        let engine = try await storage.make(configuration.type, configuration: configuration)()
        try EngineCapability.checkKnown(engine.capabilities, declaredBy: "engine type \(configuration.type.rawValue.debugDescription)")
        return engine
    }
}
