import BuckiaClient
import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// The two-user diff exchange (``DatabaseExchange``) through an S3 bucket: the diffs go up with a
/// conditional create and come down through a start-after listing. On moto without signature
/// checks (moto mis-verifies a listing whose prefix holds `/`, Docs/Testing.md), and on Ceph RGW
/// with every signature checked.
@Suite("Diff exchange between users over S3 (moto, Ceph RGW)")
struct S3DatabaseExchangeTests {
    @Test("Two users exchange diffs through an S3 server and end equal", arguments: [S3TestServer.Kind.moto, .cephRGW])
    func exchange(_ kind: S3TestServer.Kind) async throws {
        let (configuration, _, _) = kind == .moto
            ? try await makeS3Configuration(auth: false, options: ["vendor": "moto"])
            : try await makeS3Configuration(on: S3TestServer.shared(.cephRGW), options: ["vendor": "ceph"])
        var registry = ProviderRegistry()
        try registry.register(S3Provider.self)
        let client = try await BuckiaClient(configuration: configuration, registry: registry, environment: TestHome.processEnvironment)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-exchange-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(client.provider.capabilities.supports(.conditionalWrite), "the profile sends If-None-Match")
        let problems = try await DatabaseExchange.run(through: client, root: root)
        #expect(problems.isEmpty, "\(problems)")
    }
}
