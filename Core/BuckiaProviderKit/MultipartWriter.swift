import BuckiaCore
import Foundation

/// The steps of a multipart upload that differ from one backend to the next: what a provider
/// with parts of its own (S3, B2) writes, and all it writes, for ``MultipartWriter`` to send a
/// stream. The shape is Apache OpenDAL's `MultipartWrite`: one request for what fits one part,
/// else initiate, write each part, complete, or abort.
package protocol MultipartWrite: Sendable {
    /// What the backend answers for a part, which completing names (S3's entity tag, B2's SHA-1).
    associatedtype Receipt: Sendable

    /// The most parts one upload may have, and how a message names one upload ("one S3
    /// upload") and the setting that raises the part size ("partSizeMiB").
    var partLimit: (count: Int, upload: String, setting: String) { get }

    /// Stores `data`, the whole stream, in one request. `parts` has read it, and verifies the
    /// caller's known checksums the backend does not check itself.
    func writeOnce(_ data: Data, parts: StreamParts) async throws -> RemoteFile

    /// Starts an upload and returns its identifier; throws, sending nothing, for what the
    /// backend cannot store in parts as asked.
    func initiate() async throws -> String

    /// Sends part `number` (from 1) of `upload`.
    func writePart(_ number: Int, _ part: Data, upload: String) async throws -> Receipt

    /// Joins the parts, in order, into the object; `size` is the stream's length.
    func complete(_ upload: String, parts: [(number: Int, receipt: Receipt)], size: Int64) async throws -> RemoteFile

    /// Removes an upload and its parts from the server.
    func abort(_ upload: String) async throws

    /// Called once `upload` has completed or failed, for what the provider keeps per upload.
    func finished(_ upload: String) async

    /// What the message of a failed abort adds: what stays on the server and what removes it.
    var leftBehind: String { get }
}

extension MultipartWrite {
    package func finished(_ upload: String) async {}
}

/// Sends a stream as it is read through a ``MultipartWrite``: a stream that fits one part in
/// one request, a longer one as parts, `width` at a time while the next is read.
///
/// Memory stays near `partSize × (width + 1)`, every part held by a reservation from `memory`
/// so the streamed uploads of a process share one budget; no byte is copied to disk. The
/// stream's length is unknown when its parts are sized, so it may be at most
/// ``MultipartWrite/partLimit`` parts long. A stream cannot be read again, so an upload from
/// one is never resumed: any failure, a cancellation included, aborts it on the server, in a
/// task of its own. The caller's known checksums are verified over the bytes read before the
/// upload completes, and a mismatch aborts it, storing nothing.
package enum MultipartWriter {
    package static func write<Writer: MultipartWrite>(
        _ stream: ByteStream, to writer: Writer, key: ObjectKey, options: UploadOptions, partSize: Int, width: Int, memory: UploadMemory
    ) async throws -> RemoteFile {
        let parts = try StreamParts(stream, hashing: try options.verifyingAlgorithms())
        // The first part's share of the process's upload memory, held until it is sent (by
        // itself, or handed to `sendAll`, which gives it back). A stream that ends within a
        // MiB needs none: waiting for a part's worth (B2's is 96 MiB) for a few bytes would
        // hold back every small file of a sync behind the large ones.
        let small = min(partSize, StreamParts.unreserved)
        let reserved = try await parts.endsWithin(small) ? 0 : try await memory.reserve(partSize)
        var handedOver = false
        defer { if !handedOver { memory.release(reserved) } }
        let head = try await parts.next(upTo: partSize) ?? Data()
        if try await parts.isAtEnd() {
            return try await writer.writeOnce(head, parts: parts)
        }
        let upload = try await writer.initiate()
        handedOver = true
        do {
            let limit = writer.partLimit
            let receipts = try await parts.sendAll(partsOf: partSize, startingWith: [consume head], width: width, memory: memory) { number, part in
                guard number <= limit.count else {
                    throw BuckiaError(
                        .invalidConfiguration,
                        "The stream is longer than \(limit.count) parts of \(partSize / 1_048_576) MiB, the most \(limit.upload) can hold; raise \(limit.setting).",
                        operation: "upload", path: key.rawValue)
                }
                return try await writer.writePart(number, part, upload: upload)
            }
            try parts.verify(options.knownChecksums, key: key)
            let file = try await writer.complete(upload, parts: receipts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, size: parts.count)
            await writer.finished(upload)
            return file
        } catch {
            await writer.finished(upload)
            // Nothing can resume an upload from a stream: its parts go now, not at the next
            // run, even when this task was cancelled (the abort runs in a task of its own).
            let failure = BuckiaError.wrapping(error, operation: "upload", path: key.rawValue)
            do {
                try await Task { try await writer.abort(upload) }.value
            } catch {
                throw BuckiaError(failure.code, "\(failure.message) \(writer.leftBehind)", operation: "upload", path: key.rawValue, cause: failure)
            }
            throw failure
        }
    }
}
