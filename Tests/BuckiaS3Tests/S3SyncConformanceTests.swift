import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaLocal
import BuckiaS3
import BuckiaSyncConformance
import Foundation
import Testing

/// Every sync scenario between a local folder and S3 (moto), each reported on its own.
@Suite("S3 sync conformance (moto)")
struct S3SyncConformanceTests {
    @Test("local folder ↔ s3", arguments: SyncConformance.scenarios)
    func s3(_ scenario: SyncScenario) async throws {
        let (provider, _, _) = try await makeS3Provider(auth: false, options: ["vendor": "moto"])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await scenario.check(local: LocalProvider(root: folder), remote: provider)
    }
}
