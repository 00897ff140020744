import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaHTTP
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// An S3 provider on a fresh bucket of the shared moto server, which checks signatures.
func makeS3Provider(auth: Bool = true, options: [String: String] = [:]) async throws -> (S3Provider, S3TestServer, String) {
    try await makeS3Provider(on: S3TestServer.shared(auth: auth), options: options)
}

/// An S3 provider on a fresh bucket of `server`.
func makeS3Provider(on server: S3TestServer, options: [String: String] = [:]) async throws -> (S3Provider, S3TestServer, String) {
    let (configuration, _, bucket) = try await makeS3Configuration(on: server, options: options)
    return (try S3Provider(settings: S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), resources: .tests), server, bucket)
}

/// The configuration of an S3 provider on a fresh bucket of the shared moto server.
func makeS3Configuration(auth: Bool = true, options: [String: String] = [:]) async throws -> (BuckiaConfiguration, S3TestServer, String) {
    try await makeS3Configuration(on: S3TestServer.shared(auth: auth), options: options)
}

/// The configuration of an S3 provider on a fresh bucket of `server`.
func makeS3Configuration(on server: S3TestServer, options: [String: String] = [:]) async throws -> (BuckiaConfiguration, S3TestServer, String) {
    let bucket = uniqueBucketName()
    _ = try await harnessClient().send(server.signedRequest(.put, bucket: bucket))
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-state-\(UUID().uuidString)")
    let configuration = BuckiaConfiguration(
        provider: .s3, bucketName: bucket,
        authConfig: .awsSignature(accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey.exposedValue),
        options: ["endpoint": server.endpoint.absoluteString, "region": server.region, "stateDirectory": state.path].merging(options) { $1 })
    return (configuration, server, bucket)
}

/// Every provider scenario against moto.
///
/// moto 5.2.1 mis-verifies signatures whenever a query value holds `/` or a key holds `+`, `%`
/// or non-ASCII characters: boto3's own requests fail there too (Docs/Testing.md). Every
/// scenario lists under a `prefix/with/slashes/`, so the suite runs against moto without
/// signature checks, and S3SignatureTests runs each operation against moto with them.
@Suite("S3 provider conformance (moto)")
struct S3ConformanceTests {
    /// moto accepts any `Content-MD5` (it never answers BadDigest): its profile says so, and the
    /// provider does not claim to verify known checksums there; on AWS and Ceph it does.
    @Test("s3 provider", arguments: ProviderConformance.scenarios)
    func s3(_ scenario: ProviderScenario) async throws {
        let (configuration, _, _) = try await makeS3Configuration(auth: false, options: ["vendor": "moto"])
        // Built through the registry from its configuration, so a new instance (the
        // persistence scenario) is a new S3Provider over the same bucket.
        try await scenario.check(.plugin(S3Provider.self, configuration: configuration, environment: ["HOME": TestHome.empty], resources: .tests))
    }

    @Test("A wrong secret is refused by the server as unauthorized, and no message holds the secret")
    func wrongSecret() async throws {
        let server = try await S3TestServer.shared(auth: true)
        let (good, _, bucket) = try await makeS3Provider()
        let wrong = "WRONG-\(UUID().uuidString)"
        var settings = good.settings
        settings.credentials.secretAccessKey = Secret(wrong)
        let provider = S3Provider(settings: settings, resources: .tests)
        let error = await #expect(throws: BuckiaError.self) { try await provider.uploadData(Data("x".utf8), remotePath: "k") }
        #expect(error?.code == .unauthorized)
        for text in [error.map { "\($0)" } ?? "", error.map { String(reflecting: $0) } ?? ""] {
            #expect(!text.contains(wrong) && !text.contains(server.secretAccessKey.exposedValue))
        }
        _ = bucket
    }
}
