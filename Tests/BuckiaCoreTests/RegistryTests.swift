import BuckiaCore
import BuckiaProviderKit
import Foundation
import Testing

/// A provider that stores nothing: just enough to be registered and built.
private protocol InertProvider: StorageProviderPlugin {
    var configuration: BuckiaConfiguration { get }
}

extension InertProvider {
    var capabilities: ProviderCapabilities { ProviderCapabilities(features: []) }
    func testConnection() async throws -> ConnectionStatus { ConnectionStatus(isConnected: true, message: "inert") }
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        throw BuckiaError(.unsupported, "inert")
    }
    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        throw BuckiaError.notFound(remotePath, operation: "download")
    }
    func deleteFile(remotePath: ObjectKey) async throws {}
    func stat(remotePath: ObjectKey) async throws -> RemoteFile? { nil }
    func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        try SnapshotLister(entries: [], request: request, maxPageSize: 1)
    }
}

private struct ZuluProvider: InertProvider {
    static let providerType: ProviderType = "zulu"
    let configuration: BuckiaConfiguration
    init(context: ProviderContext) { self.configuration = context.configuration }
}

private struct AlphaProvider: InertProvider {
    static let providerType: ProviderType = "alpha"
    let configuration: BuckiaConfiguration
    init(context: ProviderContext) throws {
        guard !context.configuration.bucketName.isEmpty else {
            throw BuckiaError(.invalidConfiguration, "The alpha provider needs a bucket name.", path: "bucketName")
        }
        self.configuration = context.configuration
    }
}

private struct MikeProvider: InertProvider {
    static let providerType: ProviderType = "mike"
    let configuration: BuckiaConfiguration
    init(context: ProviderContext) { self.configuration = context.configuration }
}

/// An engine that holds nothing.
private protocol InertEngine: StorageEnginePlugin {
    var configuration: EngineConfiguration { get }
}

extension InertEngine {
    nonisolated var capabilities: Set<EngineCapability> { [] }
    func write(_ data: Data, key: CacheKey) async throws {}
    func read(key: CacheKey) async throws -> Data? { nil }
    func readAllDataAndKeys() async throws -> [(key: CacheKey, data: Data)] { [] }
    func remove(key: CacheKey) async throws {}
    func removeAllData() async throws {}
    func allKeys() async throws -> [CacheKey] { [] }
    func createdAt(key: CacheKey) async throws -> Date? { nil }
    func updatedAt(key: CacheKey) async throws -> Date? { nil }
}

private actor YankeeEngine: InertEngine {
    static let engineType: EngineType = "yankee"
    let configuration: EngineConfiguration
    init(configuration: EngineConfiguration) async throws { self.configuration = configuration }
}

private actor BravoEngine: InertEngine {
    static let engineType: EngineType = "bravo"
    let configuration: EngineConfiguration
    init(configuration: EngineConfiguration) async throws {
        _ = try configuration.requireDirectory()
        self.configuration = configuration
    }
}

struct RegistryTests {
    private func providers() throws -> ProviderRegistry {
        var registry = ProviderRegistry()
        try registry.register(ZuluProvider.self)
        try registry.register(AlphaProvider.self)
        try registry.register(MikeProvider.self)
        return registry
    }

    @Test("Provider types list sorted, whatever the registration order")
    func providerTypesSorted() throws {
        let registry = try providers()
        #expect(registry.registeredTypes == ["alpha", "mike", "zulu"])
        #expect(registry.contains("mike"))
        #expect(!registry.contains("s3"))
        #expect(ProviderRegistry().registeredTypes.isEmpty)
        let empty = #expect(throws: BuckiaError.self) { try ProviderRegistry().makeProvider(for: BuckiaConfiguration(provider: .s3)) }
        #expect(empty?.message.contains("none") == true)
    }

    @Test("A registered provider is built from its configuration")
    func makeProvider() throws {
        let configuration = BuckiaConfiguration(provider: "alpha", bucketName: "pictures")
        let provider = try providers().makeProvider(for: configuration)
        let alpha = try #require(provider as? AlphaProvider)
        #expect(alpha.providerType == "alpha")
        #expect(alpha.configuration == configuration)
    }

    @Test("Registering a provider type twice throws alreadyExists", arguments: [ZuluProvider.providerType, "alpha"])
    func duplicateProvider(type: ProviderType) throws {
        var registry = try providers()
        let plugin = #expect(throws: BuckiaError.self) { try registry.register(ZuluProvider.self) }
        #expect(plugin?.code == .alreadyExists)
        #expect(plugin?.path == "zulu")
        let factory = #expect(throws: BuckiaError.self) {
            try registry.register(type) { MikeProvider(context: $0) }
        }
        #expect(factory?.code == .alreadyExists)
        #expect(registry.registeredTypes == ["alpha", "mike", "zulu"])
    }

    @Test("An unknown provider type names every registered type", arguments: ["s3", "ALPHA", ""] as [ProviderType])
    func unknownProvider(type: ProviderType) throws {
        let error = #expect(throws: BuckiaError.self) {
            try providers().makeProvider(for: BuckiaConfiguration(provider: type))
        }
        #expect(error?.code == .invalidConfiguration)
        for known in ["alpha", "mike", "zulu"] {
            #expect(error?.message.contains(known) == true, "message does not name \(known)")
        }
    }

    @Test("The configuration is validated, and a plugin's own rejection passes through")
    func providerValidation() throws {
        let registry = try providers()
        let invalid = #expect(throws: BuckiaError.self) {
            try registry.makeProvider(for: BuckiaConfiguration(provider: "zulu", maxConcurrentOperations: 0))
        }
        #expect(invalid?.path == "maxConcurrentOperations")
        let rejected = #expect(throws: BuckiaError.self) { try registry.makeProvider(for: BuckiaConfiguration(provider: "alpha")) }
        #expect(rejected?.path == "bucketName")
    }

    @Test("A factory closure registers like a plugin")
    func factoryRegistration() throws {
        var registry = ProviderRegistry()
        try registry.register("custom") { ZuluProvider(context: $0) }
        let provider = try registry.makeProvider(for: BuckiaConfiguration(provider: "custom", bucketName: "x"))
        #expect((provider as? ZuluProvider)?.configuration.bucketName == "x")
    }

    private func engines() throws -> EngineRegistry {
        var registry = EngineRegistry()
        try registry.register(YankeeEngine.self)
        try registry.register(BravoEngine.self)
        return registry
    }

    @Test("Engines register, list sorted, refuse duplicates and open from a configuration")
    func engineRegistration() async throws {
        var registry = try engines()
        #expect(registry.registeredTypes == ["bravo", "yankee"])
        #expect(registry.contains("bravo"))

        let duplicate = #expect(throws: BuckiaError.self) { try registry.register(BravoEngine.self) }
        #expect(duplicate?.code == .alreadyExists)

        let configuration = EngineConfiguration(type: "bravo", directory: "/tmp/x", options: ["k": "v"])
        let engine = try await registry.makeEngine(for: configuration)
        #expect((engine as? BravoEngine)?.configuration == configuration)
    }

    @Test("An engine factory closure registers like a plugin, refuses a taken name, and opens with the configuration it is given")
    func engineFactory() async throws {
        var registry = try engines()
        try registry.register("composed") { configuration in try await YankeeEngine(configuration: configuration) }
        #expect(registry.registeredTypes == ["bravo", "composed", "yankee"])
        let duplicate = #expect(throws: BuckiaError.self) { try registry.register("bravo") { try await YankeeEngine(configuration: $0) } }
        #expect(duplicate?.code == .alreadyExists)
        let configuration = EngineConfiguration(type: "composed", options: ["k": "v"])
        #expect((try await registry.makeEngine(for: configuration) as? YankeeEngine)?.configuration == configuration)
    }

    @Test("An unknown engine type names every registered type; a plugin's rejection passes through")
    func unknownEngine() async throws {
        let registry = try engines()
        let unknown = await #expect(throws: BuckiaError.self) {
            try await registry.makeEngine(for: EngineConfiguration(type: .sqlite))
        }
        #expect(unknown?.code == .invalidConfiguration)
        #expect(unknown?.message.contains("bravo, yankee") == true)
        let rejected = await #expect(throws: BuckiaError.self) {
            try await registry.makeEngine(for: EngineConfiguration(type: "bravo"))
        }
        #expect(rejected?.path == "directory")
    }
}

/// A provider declaring the capabilities it is given.
private struct DeclaringProvider: InertProvider {
    static let providerType: ProviderType = "declaring"
    let configuration: BuckiaConfiguration
    let features: Set<Capability>
    var capabilities: ProviderCapabilities { ProviderCapabilities(features: features) }
    init(context: ProviderContext) {
        configuration = context.configuration
        features = Set(context.configuration.options["features", default: ""].split(separator: ",").map { Capability(rawValue: String($0)) })
    }
}

/// An engine declaring the capabilities its configuration names.
private actor DeclaringEngine: InertEngine {
    static let engineType: EngineType = "declaring"
    let configuration: EngineConfiguration
    nonisolated let capabilities: Set<EngineCapability>
    init(configuration: EngineConfiguration) async throws {
        self.configuration = configuration
        capabilities = Set(configuration.options["features", default: ""].split(separator: ",").map { EngineCapability(rawValue: String($0)) })
    }
}

@Suite("Capability vocabularies")
struct CapabilityVocabularyTests {
    /// Declared names, and whether a provider (then an engine) declaring them is built.
    @Test("A provider is built with Buckia's names and dotted third-party ones, refused for a misspelt or an engine's name", arguments: [
        ("readWithRange,localFiles", true), ("com.example.ftp.resumeDownloads", true), ("readWithRange,org.example.x", true),
        ("listStartAftr", false), ("pagination", false), ("readWithRange,readwithrange", false),
    ])
    func providers(_ features: String, built: Bool) throws {
        var registry = ProviderRegistry()
        try registry.register(DeclaringProvider.self)
        let configuration = BuckiaConfiguration(provider: "declaring", options: ["features": features])
        if built {
            #expect(try registry.makeProvider(for: configuration).capabilities.features.count == features.split(separator: ",").count)
        } else {
            let error = #expect(throws: BuckiaError.self) { try registry.makeProvider(for: configuration) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("reverse-DNS") == true)
        }
    }

    @Test("An engine is built with its own names and dotted ones, refused for a provider's name", arguments: [
        ("persistent,pagination", true), ("com.example.engine.compaction", true), ("readWithRange", false), ("paginaton", false),
    ])
    func engines(_ features: String, built: Bool) async throws {
        var registry = EngineRegistry()
        try registry.register(DeclaringEngine.self)
        let configuration = EngineConfiguration(type: "declaring", options: ["features": features])
        if built {
            #expect(try await registry.makeEngine(for: configuration).capabilities.count == features.split(separator: ",").count)
        } else {
            let error = await #expect(throws: BuckiaError.self) { try await registry.makeEngine(for: configuration) }
            #expect(error?.code == .invalidConfiguration)
        }
    }
}
