// The umbrella module: import Buckia to get the core contracts, the client, sync and every
// built-in plugin. The plumbing under them (BuckiaHTTP, BuckiaSigV4, BuckiaSQLite) is not
// re-exported: import it by name where you need it, so it is not part of this module's API.
@_exported import BuckiaB2
@_exported import BuckiaBunny
@_exported import BuckiaCatalog
@_exported import BuckiaChunkEngine
@_exported import BuckiaChunks
@_exported import BuckiaClient
@_exported import BuckiaCore
@_exported import BuckiaDatabase
@_exported import BuckiaDiskEngine
@_exported import BuckiaLocal
@_exported import BuckiaMemory
@_exported import BuckiaMemoryEngine
@_exported import BuckiaOAuth
@_exported import BuckiaProviderKit
@_exported import BuckiaResourceCache
@_exported import BuckiaS3
@_exported import BuckiaSecurity
@_exported import BuckiaSQLiteEngine
@_exported import BuckiaSync
@_exported import BuckiaUserFolder

// The S3 server, on the platforms that run servers (Package.swift's `desktop`).
#if canImport(BuckiaGateway)
@_exported import BuckiaGateway
#endif

extension ProviderRegistry {
    /// A registry with every provider that ships with Buckia.
    ///
    /// Add your own on a copy: `var registry = ProviderRegistry.builtIn; try registry.register(FTPProvider.self)`.
    public static var builtIn: ProviderRegistry {
        ProviderRegistry(distinct: [LocalProvider.self, MemoryProvider.self, S3Provider.self, B2Provider.self, BunnyProvider.self])
    }
}

extension EngineRegistry {
    /// A registry with every engine that ships with Buckia.
    public static var builtIn: EngineRegistry {
        EngineRegistry(
            distinct: [MemoryStorageEngine.self, SQLiteStorageEngine.self, DiskStorageEngine.self],
            // Assembled here, where both engines are known: its index is a disk engine.
            factories: [ChunkStorageEngine.engineType: { try await ChunkStorageEngine(configuration: $0) }])
    }
}

extension BuckiaClient {
    /// A client for the bucket `configuration` selects among the built-in providers, with an
    /// optional fallback bucket used when the primary does not answer (see
    /// ``BuckiaClient/init(configuration:fallback:registry:environment:)``).
    public convenience init(configuration: BuckiaConfiguration, fallback: BuckiaConfiguration? = nil) async throws {
        try await self.init(configuration: configuration, fallback: fallback, registry: .builtIn)
    }
}
