import BuckiaCore
import BuckiaLocal
import Foundation
import Testing

/// The local provider's copies run on Buckia's blocking-work threads (issue 23) and stop
/// between chunks when their task is cancelled.
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

    /// The kernel's name of the calling thread.
    static func threadName() -> String {
        guard let data = FileManager.default.contents(atPath: "/proc/thread-self/comm") else { return "unknown" }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    enum Operation: String, CaseIterable, Sendable { case upload, download, copy }

    /// Every chunk is reported from the thread that copies it. (On the calling task, as these
    /// copies once ran, the reports came from the cooperative pool's threads.)
    @Test("A whole-file copy runs on buckia-io threads", arguments: Operation.allCases)
    func offThePool(_ operation: Operation) async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let provider = try LocalProvider(root: folder.appendingPathComponent("root"))
        let source = folder.appendingPathComponent("source.bin")
        let bytes = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try bytes.write(to: source)
        let key = try ObjectKey("file.bin")
        if operation != .upload { try await provider.uploadFile(localURL: source, remotePath: key, options: UploadOptions()) }
        let threads = Locked<Set<String>>([])
        let observer = TransferObserver { _ in threads.withLock { _ = $0.insert(Self.threadName()) } }
        try await TransferProgress.$observer.withValue(observer) {
            switch operation {
            case .upload: try await provider.uploadFile(localURL: source, remotePath: key, options: UploadOptions())
            case .download: try await provider.downloadFile(remotePath: key, localURL: folder.appendingPathComponent("copy.bin"))
            case .copy: try await provider.copyFile(from: key, to: try ObjectKey("copy.bin"))
            }
        }
        #expect(threads.withLock { $0 } == ["buckia-io"])
        let stored = operation == .download
            ? try Data(contentsOf: folder.appendingPathComponent("copy.bin"))
            : try await provider.readData(remotePath: operation == .copy ? try ObjectKey("copy.bin") : key, range: nil)
        #expect(stored == bytes)
    }

    /// Where an upload's copy runs, by the file's size and the provider's `fsync`: a small
    /// file without `fsync` is a few system calls, copied on the calling task (the thread hop
    /// cost a first sync of small files a quarter of its time); anything larger or synced
    /// goes to the blocking-work threads.
    @Test(
        "An upload runs on the calling task only when small and not synced",
        arguments: [
            (size: 4_096, fsync: false, offPool: false),
            (size: 256 << 10, fsync: false, offPool: false),
            (size: (256 << 10) + 1, fsync: false, offPool: true),
            (size: 4_096, fsync: true, offPool: true),
        ])
    func inlineUploads(size: Int, fsync: Bool, offPool: Bool) async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = BuckiaConfiguration(provider: .local, options: ["root": folder.appendingPathComponent("root").path, "fsync": String(fsync)])
        let provider = try LocalProvider(configuration: configuration)
        let source = folder.appendingPathComponent("source.bin")
        let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        try bytes.write(to: source)
        let threads = Locked<Set<String>>([])
        let observer = TransferObserver { _ in threads.withLock { _ = $0.insert(Self.threadName()) } }
        let key = try ObjectKey("file.bin")
        try await TransferProgress.$observer.withValue(observer) {
            try await provider.uploadFile(localURL: source, remotePath: key, options: UploadOptions(condition: .ifNoneMatch))
        }
        let seen = threads.withLock { $0 }
        #expect(!seen.isEmpty, "the copy reported its chunks")
        #expect(seen.contains("buckia-io") == offPool, "copied on \(seen)")
        #expect(try await provider.readData(remotePath: key, range: nil) == bytes)
    }
}
