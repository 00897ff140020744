import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaLocal
import BuckiaMemory
import BuckiaS3
import BuckiaSyncConformance
import BuckiaTestSupport
import Foundation
import Testing

/// Buckia's own S3 provider, pointed at `buckia serve s3`, through every provider and sync
/// scenario: the command in a process of its own, in front of a local folder and in front of
/// memory. A scenario the gateway's backend cannot support is skipped by the capability the S3
/// profile declares (`vendor: buckia`, and `userMetadata: false` over a local folder), never in
/// the test.
@Suite("S3 gateway conformance")
struct GatewayConformanceTests {
    enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
        case local, memory
        var description: String { rawValue }

        /// Where the local backends' folders go; each is removed with its gateway.
        static let roots = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-gateway-conformance")

        func start() throws -> any GatewayEndpoint {
            switch self {
            case .local:
                let root = Self.roots.appendingPathComponent(UUID().uuidString)
                return try GatewayProcess(
                    remoteJSON: #"{"provider": "local", "bucketName": "served", "options": {"root": "\#(root.path)"}}"#,
                    capabilities: try LocalProvider(root: root).capabilities)
            case .memory:
                let capabilities = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)).capabilities
                return try GatewayProcess(remoteJSON: #"{"provider": "memory"}"#, capabilities: capabilities)
            }
        }
    }

    /// Runs `body` with a fresh gateway over `backend`, stopped after it.
    static func withGateway(_ backend: Backend, _ body: (any GatewayEndpoint) async throws -> Void) async throws {
        let gateway = try backend.start()
        defer {
            if let harness = gateway as? GatewayHarness { harness.stop() }
            if let process = gateway as? GatewayProcess {
                let root = process.servedRoot
                process.stop()
                if let root { try? FileManager.default.removeItem(at: root) }
            }
        }
        try await body(gateway)
    }

    @Test("s3 provider through the gateway", arguments: Backend.allCases, ProviderConformance.scenarios)
    func provider(_ backend: Backend, _ scenario: ProviderScenario) async throws {
        try await Self.withGateway(backend) { harness in
            let bucket = freshBucket()
            try await harness.createBucket(bucket)
            let configuration = harness.s3Configuration(bucket: bucket)
            try await scenario.check(.plugin(S3Provider.self, configuration: configuration, environment: ["HOME": TestHome.empty], resources: .tests))
        }
    }

    @Test("local folder ↔ s3 through the gateway", arguments: Backend.allCases, SyncConformance.scenarios)
    func sync(_ backend: Backend, _ scenario: SyncScenario) async throws {
        try await Self.withGateway(backend) { harness in
            let bucket = freshBucket()
            try await harness.createBucket(bucket)
            let remote = try S3Provider(
                settings: S3Settings.resolve(harness.s3Configuration(bucket: bucket), environment: [:], home: TestHome.empty), resources: .tests)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-gateway-sync-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            try await scenario.check(local: LocalProvider(root: folder), remote: remote, subject: "local ↔ s3 via gateway over \(backend)")
        }
    }
}
