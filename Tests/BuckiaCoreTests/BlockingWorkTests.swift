@testable import BuckiaCore
import Foundation
import Testing

/// ``BlockingWork``: blocking jobs on threads of their own, cancelled through a token.
@Suite("Blocking work off the cooperative pool")
struct BlockingWorkTests {
    /// The kernel's name of the calling thread.
    static func threadName() -> String {
        guard let data = FileManager.default.contents(atPath: "/proc/thread-self/comm") else { return "unknown" }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("A job runs on a buckia-io thread, with the task's progress observer, and returns its value")
    func runsOffThePool() async throws {
        let observed = Locked<[String]>([])
        let observer = TransferObserver { _ in observed.withLock { $0.append(Self.threadName()) } }
        let name = try await TransferProgress.$observer.withValue(observer) {
            try await BlockingWork.run("test") {
                TransferProgress.observer?.report(1)
                return Self.threadName()
            }
        }
        #expect(name == "buckia-io")
        #expect(observed.withLock { $0 } == ["buckia-io"])
    }

    @Test("Cancelling the task stops a job at its next check, as cancelled")
    func cancellation() async throws {
        // The job waits, after starting, until the task has been cancelled: no timing involved.
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let job = Task {
            try await BlockingWork.run("test") {
                started.signal()
                proceed.wait()
                try BlockingWork.checkCancellation("test")
                return "not stopped"
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                started.wait()
                continuation.resume()
            }.start()
        }
        job.cancel()
        proceed.signal()
        let error = await #expect(throws: BuckiaError.self) { _ = try await job.value }
        #expect(error?.code == .cancelled)
    }

    @Test("An error thrown by the job reaches the caller as it was")
    func errors() async throws {
        let error = await #expect(throws: BuckiaError.self) {
            try await BlockingWork.run("test") { () -> Int in throw BuckiaError(.corrupt, "bad") }
        }
        #expect(error?.code == .corrupt)
    }
}
