import Buckia
import BuckiaClient
import BuckiaCore
@testable import BuckiaDatabase
import BuckiaSQLite
import BuckiaTestSupport
import Foundation
import Testing

/// Two users exchanging diffs through a bucket (``DatabaseExchange``): each edits their own
/// database, sends a diff to the other's `inbound/`, and syncs; both end equal to one database
/// that made both edits. The S3 and B2 tests run the same exchange over moto and the emulator.
@Suite("Diff exchange between users")
struct ExchangeTests {
    @Test("Two users exchange diffs through the local provider and end equal")
    func local() async throws {
        let root = try DB.scratch("exchange")
        defer { try? FileManager.default.removeItem(at: root) }
        let bucket = root.appendingPathComponent("bucket")
        try FileManager.default.createDirectory(at: bucket, withIntermediateDirectories: true)
        let client = try await BuckiaClient(configuration: BuckiaConfiguration(provider: .local, bucketName: "local", options: ["root": bucket.path]), registry: .builtIn, environment: TestHome.processEnvironment)
        let problems = try await DatabaseExchange.run(through: client, root: root)
        #expect(problems.isEmpty, "\(problems)")
    }
}
