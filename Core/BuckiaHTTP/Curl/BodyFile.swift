import BuckiaCore
import Foundation

/// Writes a streamed response body to a file beside its destination on the blocking-work
/// threads, hashing it for the body check as it goes, and moves it over the destination only
/// when every byte has arrived and the check holds.
enum BodyFile {
    /// How much of the body is gathered before one write: one hop to a blocking-work thread
    /// per megabyte, not per libcurl callback.
    static let writeSize = 1 << 20

    /// The temporary file, made by the first write and owned by an `Exclusive` from then on.
    private final class Output {
        let folder: DirectoryHandle
        let name: String
        let file: LocalFile

        init(folder: DirectoryHandle, name: String, file: LocalFile) {
            self.folder = folder
            self.name = name
            self.file = file
        }

        /// Removes the unfinished file; a failure leaves it to the temporaries sweep (it
        /// carries Buckia's temporary name), and the download's own error is what the caller
        /// hears.
        func discard() {
            do { try file.close() } catch {}
            do { _ = try folder.removeFile(name) } catch {}
            Temporaries.unregister(file.path)
        }
    }

    /// Writes `bytes` (the body of `result`) to `destination` and returns `result` with the
    /// file as its body and the checked digests.
    ///
    /// - Throws: ``HTTPBodyMismatch`` when the body misses the check; ``HTTPBodyTooLarge``
    ///   when it declares or brings more than `limit` bytes; the stream's errors
    ///   (the transfer's); ``BuckiaCore/BuckiaError`` for the file. The destination is then
    ///   left as it was.
    static func write(_ bytes: ByteStream, of result: HTTPTransportResult, to destination: URL, check: HTTPBodyCheck?, limit: Int64? = nil) async throws -> HTTPTransportResult {
        if let limit, let declared = HTTPResponse.declaredLength(result.headers), declared > limit {
            bytes.cancel()
            throw HTTPBodyTooLarge(limit: limit, declared: declared)
        }
        var received: Int64 = 0
        let expected = check?.expected(result.headers) ?? [:]
        let digests = expected.isEmpty ? nil : try DigestSet(expected.keys)
        // Created with the first write, on the same blocking-work hop: a body of less than a
        // megabyte is created, written, closed and moved into place in one hop, not three.
        // Each write is awaited before the next starts, so the lock is never waited for.
        let made = Exclusive<Output?>(nil)
        @Sendable func withOutput(_ body: (Output) throws -> Void) throws {
            try made.withLock { made in
                if let output = made { return try body(output) }
                let folder = try DirectoryHandle(path: destination.deletingLastPathComponent().path)
                let (name, file) = try folder.createTemporaryFile(permissions: 0o644)
                let output = Output(folder: folder, name: name, file: file)
                made = output
                try body(output)
            }
        }
        do {
            var pending = Data()
            pending.reserveCapacity(writeSize)
            while let chunk = try await bytes.next() {
                received += Int64(chunk.count)
                if let limit, received > limit { throw HTTPBodyTooLarge(limit: limit) }
                digests?.update(chunk)
                pending.append(chunk)
                if pending.count >= writeSize {
                    let full = pending
                    pending.removeAll(keepingCapacity: true)
                    try await BlockingWork.run("download") { try withOutput { try $0.file.write(full) } }
                }
            }
            var finished = result
            finished.bodyStream = nil
            finished.body = .file(destination)
            if let digests {
                finished.bodyDigests = digests.finalize()
                try HTTPBodyCheck.compare(expected: expected, actual: finished.bodyDigests)
            }
            let last = pending
            try await BlockingWork.run("download") {
                try withOutput { output in
                    if !last.isEmpty { try output.file.write(last) }
                    try output.file.close()
                    try output.folder.move(output.name, to: output.folder, as: destination.lastPathComponent)
                    Temporaries.unregister(output.file.path)
                }
            }
            return finished
        } catch {
            bytes.cancel()
            made.withLock { $0?.discard() }
            throw error
        }
    }
}
