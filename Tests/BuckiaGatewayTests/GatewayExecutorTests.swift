import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaSigV4
import CLinux
import Foundation
import Testing

/// The gateway's backend calls run on threads of its own, never the cooperative pool's, so it
/// answers while the rest of the process keeps the pool busy or blocked (an app embedding it,
/// tests running beside it). Before that, a full test run timed out in the gateway's tests
/// while CLI tests held the pool's two threads.
@Suite("S3 gateway: backend calls on the gateway's own threads")
struct GatewayExecutorTests {
    /// A local provider that records the name of the thread each call runs on.
    struct ThreadRecorder: ForwardingStorageProvider {
        let base: any StorageProvider
        let threads: Locked<[String]>

        func record(_ call: String) {
            // The kernel's name of the thread (buckia_name_thread sets it there).
            let comm = "/proc/self/task/\(buckia_thread_id())/comm"
            let text = ((try? String(contentsOfFile: comm, encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
            threads.withLock { $0.append("\(text) \(call)") }
        }

        func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
            record("stat")
            return try await base.stat(remotePath: remotePath)
        }

        func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
            record("upload")
            return try await base.upload(from: stream, remotePath: remotePath, options: options)
        }

        func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
            record("openRead")
            return try await base.openRead(remotePath: remotePath, options: options)
        }
    }

    @Test("PUT, HEAD and GET call the backend on buckia-gw threads")
    func threads() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-gateway-threads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let threads = Locked<[String]>([])
        let harness = try GatewayHarness(provider: ThreadRecorder(base: try LocalProvider(root: root), threads: threads))
        defer { harness.stop() }
        try await harness.createBucket("threads")
        #expect(try await harness.send("PUT", "/threads/key.txt", body: Data("on whose thread".utf8)).0 == 200)
        #expect(try await harness.send("HEAD", "/threads/key.txt").0 == 200)
        let (status, body) = try await harness.send("GET", "/threads/key.txt")
        #expect(status == 200 && body == Data("on whose thread".utf8))
        let seen = threads.withLock { $0 }
        #expect(seen.count >= 4, "\(seen)")
        #expect(seen.allSatisfy { $0.hasPrefix("buckia-gw ") }, "\(seen)")
    }
}
