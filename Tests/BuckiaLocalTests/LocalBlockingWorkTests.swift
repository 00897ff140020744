import BuckiaCore
import BuckiaLocal
import Foundation
import Testing

/// The local provider's copies stop between chunks when their task is cancelled.
@Suite("Local copies and cancellation")
struct LocalBlockingWorkTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-blocking-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("Cancelling an upload stops its copy between chunks and stores nothing")
    func cancelled() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let provider = try LocalProvider(root: folder.appendingPathComponent("root"))
        let source = folder.appendingPathComponent("source.bin")
        let size: Int64 = 64 << 20
        _ = FileManager.default.createFile(atPath: source.path, contents: nil)
        let handle = try FileHandle(forWritingTo: source)
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
        // The copy's first chunk waits until the test has cancelled the task: no race with a
        // copy that could finish first.
        let firstChunk = DispatchSemaphore(value: 0)
        let cancelledNow = DispatchSemaphore(value: 0)
        let seen = Locked<Int64>(0)
        let observer = TransferObserver { moved in
            let total = seen.withLock { total -> Int64 in
                total += moved
                return total
            }
            if total == moved {
                firstChunk.signal()
                cancelledNow.wait()
            }
        }
        let upload = Task {
            try await TransferProgress.$observer.withValue(observer) {
                try await provider.uploadFile(localURL: source, remotePath: try ObjectKey("big.bin"), options: UploadOptions())
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                firstChunk.wait()
                continuation.resume()
            }
        }
        upload.cancel()
        cancelledNow.signal()
        let error = await #expect(throws: BuckiaError.self) { try await upload.value }
        #expect(error?.code == .cancelled)
        #expect(seen.withLock { $0 } < size, "the copy stopped before the end")
        #expect(try await provider.stat(remotePath: try ObjectKey("big.bin")) == nil)
    }
}
