import BuckiaCore
import BuckiaHTTP
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 9's URLSession deadlock, as a regression test: `buckia-bench cancel-storm` cancels task
/// groups with 16 transfers in flight, 60 rounds, in a child process this test kills after 45 s.
/// Over libcurl it must finish. Over URLSession it deadlocks in most runs (`URLSessionTask.cancel`
/// waiting on the session queue, which waits on the task's lock — seen in gdb on this
/// toolchain, Swift 6.3.1), so that case is a known issue: it is reported, not failed, and it
/// shows the day FoundationNetworking is fixed.
@Suite("Cancellation storm")
struct CancellationStormTests {
    @Test("Cancelling task groups with transfers in flight never hangs", arguments: HTTPClient.TransportKind.privateKinds)
    func storm(_ kind: HTTPClient.TransportKind) async throws {
        try await withTestServer { server in
            // libcurl's bound only guards against a hang (a busy or sanitized run is slow, not
            // stuck); URLSession's known deadlock is waited for 45 s, then recorded as known.
            let bound = kind == .urlSession ? 45 : 600
            let (finished, output) = try Self.runStorm(base: try server.url("/"), kind: kind, bound: bound)
            if kind == .urlSession {
                withKnownIssue("FoundationNetworking deadlocks when a task is cancelled with transfers in flight", isIntermittent: true) {
                    #expect(finished && output.hasPrefix("done"), "\(output)")
                }
            } else {
                #expect(finished && output.hasPrefix("done"), "the storm over libcurl did not finish within \(bound) s: \(output)")
            }
        }
    }

    /// Runs the storm; false when it had to be killed.
    static func runStorm(base: URL, kind: HTTPClient.TransportKind, bound: Int) throws -> (Bool, String) {
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-storm-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let process = try Spawned(
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia-bench"),
            ["cancel-storm", "--url", base.absoluteString, "--transport", kind.rawValue], output: .file(outputURL))
        let finished = process.wait(.seconds(bound))
        process.stop()
        let text = String(decoding: try Data(contentsOf: outputURL), as: UTF8.self)
        return (finished && process.termination == .exited(0), text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
