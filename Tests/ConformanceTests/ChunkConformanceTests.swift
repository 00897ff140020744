import Buckia
import BuckiaConformance
import BuckiaConformanceTesting
import Foundation
import Testing

/// Every built-in chunk store through every chunk-store scenario, and the chunk engine through
/// every engine scenario, over the file system and over the local and memory providers; each
/// pair is a test case of its own.
@Suite("Chunk conformance")
struct ChunkConformanceTests {
    private static func scratch(_ label: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("buckia-chunk-\(label)-\(UUID().uuidString)", isDirectory: true)
    }

    @Test("chunk store: file system, Git-style", arguments: ChunkStoreConformance.scenarios)
    func fileSystemGit(_ scenario: ChunkStoreScenario) async throws {
        let folder = Self.scratch("fs")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await scenario.check("file system (git)") { ComposableFileSystemChunkStorage(baseURL: folder, durability: .none) }
    }

    @Test("chunk store: file system, flat", arguments: ChunkStoreConformance.scenarios)
    func fileSystemFlat(_ scenario: ChunkStoreScenario) async throws {
        let folder = Self.scratch("flat")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await scenario.check("file system (flat)") { ComposableFileSystemChunkStorage(baseURL: folder, organization: FlatOrganization(), durability: .none) }
    }

    @Test("chunk store: local provider", arguments: ChunkStoreConformance.scenarios)
    func localProvider(_ scenario: ChunkStoreScenario) async throws {
        let folder = Self.scratch("local")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let provider = try LocalProvider(root: folder, durable: false)
        try await scenario.check("local provider") { try ProviderChunkStorage(provider: provider, prefix: "chunks/") }
    }

    @Test("chunk store: memory provider", arguments: ChunkStoreConformance.scenarios)
    func memoryProvider(_ scenario: ChunkStoreScenario) async throws {
        let provider = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        try await scenario.check("memory provider") { try ProviderChunkStorage(provider: provider, organization: GitStyleOrganization(directoryDepth: 1)) }
    }

    @Test("chunk engine: file system", arguments: EngineConformance.scenarios)
    func engineFileSystem(_ scenario: EngineScenario) async throws {
        let folder = Self.scratch("engine")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await scenario.check("chunk (file system)") { now in
            try ChunkStorageEngine(directory: folder, chunker: try FastCDC(averageSize: 4096), durability: .none, now: now)
        }
    }

    @Test("chunk engine: file system, compressed, encrypted and verified", arguments: EngineConformance.scenarios)
    func engineDecorated(_ scenario: EngineScenario) async throws {
        let folder = Self.scratch("engine-sealed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = EngineConfiguration(
            type: .chunk, directory: folder.path, options: ["compression": "zlib", "encryption-key-env": "KEY", "organization": "git:1", "fsync": "false"])
        let environment = ["KEY": String(repeating: "ab", count: 32)]
        try await scenario.check("chunk (sealed)") { now in try await ChunkStorageEngine(configuration: configuration, environment: environment, now: now) }
    }

    @Test("chunk engine: local provider", arguments: EngineConformance.scenarios)
    func engineLocalProvider(_ scenario: EngineScenario) async throws {
        let folder = Self.scratch("engine-local")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("remote"), withIntermediateDirectories: true)
        let provider = try LocalProvider(root: folder.appendingPathComponent("remote"), durable: false)
        try await scenario.check("chunk (local provider)") { now in
            ChunkStorageEngine(
                chunks: try ProviderChunkStorage(provider: provider, prefix: "chunks"),
                index: try DiskStorageEngine(directory: folder.appendingPathComponent("index"), now: now), chunker: try FastCDC(averageSize: 4096))
        }
    }
}
