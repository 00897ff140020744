import Buckia
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaTestSupport
import Foundation
import Testing

/// A wrapper that changes nothing: everything forwards to the inner provider.
struct PassThroughProvider: ForwardingStorageProvider {
    let base: any StorageProvider
}

@Suite("Registry context, wrappers and option checks")
struct RegistryContextTests {
    @Test("A wrapper registered by type opens its inner provider through the registry it came from")
    func wrapperOpensInner() async throws {
        var registry = ProviderRegistry.builtIn
        try registry.register("passthrough") { context in
            guard let inner = context.configuration.options["inner"] else {
                throw BuckiaError(.invalidConfiguration, "passthrough needs an inner provider type", path: "options.inner")
            }
            return PassThroughProvider(base: try context.makeProvider(for: BuckiaConfiguration(provider: ProviderType(rawValue: inner))))
        }
        let provider = try registry.makeProvider(for: BuckiaConfiguration(provider: "passthrough", options: ["inner": "memory"]))
        #expect(provider.providerType == .memory)
        try await provider.uploadData(Data("x".utf8), remotePath: "k")
        #expect(try await provider.readData(remotePath: "k") == Data("x".utf8))
        let error = #expect(throws: BuckiaError.self) {
            try registry.makeProvider(for: BuckiaConfiguration(provider: "passthrough", options: ["inner": "nosuch"]))
        }
        #expect(error?.message.contains("registered types") == true)
    }

    @Test("The environment a registry is given reaches the provider, not the process's")
    func environmentReachesProvider() throws {
        let configuration = BuckiaConfiguration(
            provider: .s3, bucketName: "bucket", options: ["endpoint": "http://127.0.0.1:9", "profile": "nonexistent-\(UUID().uuidString)"])
        let environment = ["AWS_ACCESS_KEY_ID": "AKIDFROMCONTEXT", "AWS_SECRET_ACCESS_KEY": "s", "HOME": TestHome.empty]
        let provider = try ProviderRegistry.builtIn.makeProvider(for: configuration, environment: environment)
        #expect((provider as? S3Provider)?.settings.credentials.accessKeyId == "AKIDFROMCONTEXT")
        let error = #expect(throws: BuckiaError.self) {
            try ProviderRegistry.builtIn.makeProvider(for: configuration, environment: ["HOME": TestHome.empty])
        }
        #expect(error?.code == .unauthorized)
    }

    @Test("A misspelt provider option is an error that lists the known ones", arguments: [
        (ProviderType.local, ["root": "/tmp/x", "fsynk": "false"], "fsynk"),
        (ProviderType.s3, ["endpoint": "http://127.0.0.1:9", "regoin": "eu-west-1"], "regoin"),
        (ProviderType.memory, ["pagesize": "10"], "pagesize"),
    ])
    func unknownOption(_ type: ProviderType, _ options: [String: String], _ wrong: String) {
        let configuration = BuckiaConfiguration(provider: type, bucketName: "bucket", options: options)
        let error = #expect(throws: BuckiaError.self) {
            try ProviderRegistry.builtIn.makeProvider(for: configuration, environment: ["AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"])
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.path == "options.\(wrong)")
        #expect(error?.message.contains("its options are") == true, "\(String(describing: error))")
    }
}

@Suite("Forwarding wrapper conformance")
struct ForwardingConformanceTests {
    @Test("a ForwardingStorageProvider over memory passes what memory passes", arguments: ProviderConformance.scenarios)
    func forwarding(_ scenario: ProviderScenario) async throws {
        try await scenario.check(PassThroughProvider(base: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))))
    }
}
