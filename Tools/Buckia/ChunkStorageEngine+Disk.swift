import Foundation

// The chunk engine names no other engine (plugins depend on contracts, never on each other);
// here, where every built-in is assembled, its index is a disk engine. `EngineRegistry.builtIn`
// registers it with a factory, so no module declares a conformance for another's type.

extension ChunkStorageEngine {
    /// Opens the engine a configuration describes, its index a disk engine under `index/`
    /// (see ``BuckiaChunkEngine/ChunkStorageEngine/init(configuration:environment:index:)``).
    public init(configuration: EngineConfiguration) async throws {
        try await self.init(configuration: configuration, environment: ProcessInfo.processInfo.environment)
    }

    /// Opens the engine a configuration describes, reading the key variable from `environment`;
    /// its index is a disk engine under `index/` whose dates come from `now`.
    public init(configuration: EngineConfiguration, environment: [String: String], now: @escaping @Sendable () -> Date = { Date() }) async throws {
        try await self.init(configuration: configuration, environment: environment, index: Self.diskIndex(now: now))
    }

    /// An engine in `directory`: chunks under `chunks/`, the index a disk engine under `index/`
    /// whose dates come from `now`.
    public init(
        directory: URL, organization: any ChunkStorageOrganization = GitStyleOrganization(), chunker: FastCDC = .standard,
        durability: FileSystemRetrieval.Durability = .onSynchronize,
        decorate: (any ChunkStorageRetrieval) throws -> any ChunkStorageRetrieval = { $0 }, now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        try self.init(directory: directory, organization: organization, chunker: chunker, durability: durability, decorate: decorate, index: Self.diskIndex(now: now))
    }

    /// Opens a disk engine as the index, as every chunk folder Buckia has made keeps it.
    static func diskIndex(now: @escaping @Sendable () -> Date) -> ChunkIndexOpener {
        { folder, durable in try DiskStorageEngine(directory: folder, durable: durable, now: now) }
    }
}
