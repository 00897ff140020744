import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// A renamed folder pushed to S3 costs a server-side copy per file, counted on the wire by a
/// proxy in front of the server: no file's bytes are uploaded again.
@Suite("Renamed folders reach S3 as server-side copies", .serialized)
struct S3RenameSyncTests {
    @Test("1,000 files renamed with their folder: 1,000 copies and no uploaded byte, on moto and on Ceph RGW", arguments: [S3TestServer.Kind.moto, .cephRGW])
    func renamedFolder(_ kind: S3TestServer.Kind) async throws {
        // moto mis-verifies signatures of listings under a prefix with `/` (see
        // S3ConformanceTests): its server without signature checks; Ceph RGW checks them all.
        let server = kind == .moto ? try await S3TestServer.shared(auth: false) : try await S3TestServer.shared(.cephRGW)
        let proxy = try FaultProxy.start(upstream: server.endpoint, rate: 0, seed: 1)
        defer { proxy.stop() }
        let vendor = kind == .moto ? "moto" : "ceph"
        let (configuration, _, _) = try await makeS3Configuration(on: server, options: ["endpoint": proxy.endpoint.absoluteString, "vendor": vendor])
        let provider = try S3Provider(settings: S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), resources: .tests)
        let before = Locked<FaultProxy.Stats?>(nil)
        let run = try await RenamedFolderRun.run(to: provider, prefix: "tree", count: 1_000) {
            let stats = try await proxy.stats()
            before.withLock { $0 = stats }
        }
        let after = try await proxy.stats()
        let first = try #require(before.withLock { $0 })
        #expect(run.result.isComplete, "\(run.result.failures.prefix(3))")
        #expect(run.result.movedRemote == 1_000 && run.result.uploaded == 0 && run.result.deletedRemote == 0, "moved \(run.result.movedRemote), uploaded \(run.result.uploaded)")
        // One copy per file, and a retried one again: Ceph RGW on a loaded machine fails some
        // copies (one run: 144 retried of 1,000), which the provider retries.
        #expect(after.copies - first.copies >= 1_000, "\(after.copies - first.copies) copies")
        #expect(after.putBodyBytes == first.putBodyBytes, "\(after.putBodyBytes - first.putBodyBytes) bytes uploaded again")
        #expect(run.keys == Set(run.files.keys), "\(run.keys.subtracting(run.files.keys).sorted().prefix(3)) \(Set(run.files.keys).subtracting(run.keys).sorted().prefix(3))")
        for path in ["photos/2026/0000.bin", "photos/2026/0999.bin"] {
            #expect(try await provider.readData(remotePath: ObjectKey("tree/" + path), options: ReadOptions()) == run.files[path])
        }
    }
}
