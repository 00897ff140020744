import BuckiaCore
import BuckiaHTTP
import Foundation

extension S3Provider {
    /// Sends the stream as it is read: a stream that fits one part (``S3Settings/partSize``)
    /// goes up in one PutObject, exactly as ``uploadData(_:remotePath:options:)`` sends it;
    /// a longer one as a multipart upload whose parts, each with its own `Content-MD5`, go
    /// ``S3Settings/concurrency`` at a time while the next is read, so memory stays near part
    /// size × (concurrency + 1) and no byte is copied to disk. As with rclone's streamed
    /// uploads, the length of a stream is unknown when its parts are sized, so a stream can be
    /// at most 10,000 parts long: 48.8 GiB with the default 5 MiB parts (``S3Settings/partSize``
    /// raises it); a longer one fails, and its upload is aborted.
    ///
    /// A multipart upload from a stream cannot be resumed (the stream cannot be read again),
    /// so any failure aborts it on the server. Its whole-object MD5 is not known when the
    /// upload starts, so it is not stored as `md5chksum` metadata (rclone's streamed uploads
    /// store none either); known checksums are verified over the bytes read before the upload
    /// completes, and a mismatch aborts it, storing nothing.
    @discardableResult
    public func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options)
        var options = options
        options.modificationDate = options.modificationDate ?? now()
        let partSize = Int(clamping: settings.partSize)
        let parts = try StreamParts(stream, hashing: try options.verifyingAlgorithms())
        // The first part's share of the process's upload memory, held until it is sent (by
        // itself, or handed to `sendAll`, which gives it back). A stream that ends within a
        // MiB needs none: waiting for a part's worth (B2's is 96 MiB) for a few bytes would
        // hold back every small file of a sync behind the large ones.
        let small = min(partSize, StreamParts.unreserved)
        let reserved = try await parts.endsWithin(small) ? 0 : try await partMemory.reserve(partSize)
        var handedOver = false
        defer { if !handedOver { partMemory.release(reserved) } }
        let head = try await parts.next(upTo: partSize) ?? Data()
        if try await parts.isAtEnd() {
            // S3 checks a known MD5 (Content-MD5) and SHA-256 (the signed payload hash) itself;
            // any other known checksum is checked here, over the bytes read.
            try parts.verify(options.knownChecksums, key: remotePath)
            return try await uploadData(head, remotePath: remotePath, options: options)
        }
        guard options.condition == nil || settings.profile.conditionalCompletions else {
            throw BuckiaError(
                .unsupported,
                "This server ignores conditions on multipart completions, and the stream is longer than one part (\(partSize / 1_048_576) MiB): it cannot be stored conditionally. Store it without a condition, or raise partSizeMiB.",
                operation: "upload", path: remotePath.rawValue)
        }
        let uploadId = try await createMultipartUpload(remotePath, md5: nil, options: options)
        handedOver = true
        do {
            let etags = try await parts.sendAll(
                partsOf: partSize, startingWith: [consume head], width: settings.concurrency, memory: partMemory
            ) { number, part in
                guard number <= S3Provider.maximumParts else {
                    throw BuckiaError(
                        .invalidConfiguration,
                        "The stream is longer than \(S3Provider.maximumParts) parts of \(partSize / 1_048_576) MiB, the most one S3 upload can hold; raise partSizeMiB.",
                        operation: "upload", path: remotePath.rawValue)
                }
                return try await self.putPart(number, of: remotePath, uploadId: uploadId, body: .data(part), md5: try Hashing.digest(part, .md5))
            }
            try parts.verify(options.knownChecksums, key: remotePath)
            let etag: String?
            do {
                etag = try await completeMultipartUpload(
                    remotePath, uploadId: uploadId, parts: etags.sorted { $0.key < $1.key }, condition: options.condition)
            } catch let error as BuckiaError where error.code == .conditionNotMatch || (error.code == .notFound && options.condition != nil) {
                throw restate(error, key: remotePath, options: options)
            }
            return RemoteFile(
                path: remotePath, size: parts.count, modificationDate: options.modificationDate,
                contentType: options.contentType ?? "application/octet-stream", etag: etag.map(S3Provider.quotedETag), metadata: options.metadata,
                contentHeaders: options.contentHeaders)
        } catch {
            // Nothing can resume an upload from a stream: its parts go now, not at the next
            // run, even when this task was cancelled (the abort runs in a task of its own).
            let failure = BuckiaError.wrapping(error, operation: "upload", path: remotePath.rawValue)
            do {
                try await Task { try await self.abortUpload(key: remotePath.rawValue, uploadId: uploadId) }.value
            } catch {
                throw BuckiaError(
                    failure.code, "\(failure.message) Its multipart upload could not be aborted; `buckia cleanup` removes the parts.",
                    operation: "upload", path: remotePath.rawValue, cause: failure)
            }
            throw failure
        }
    }

    /// The most parts one S3 multipart upload may have.
    static let maximumParts = 10_000
    /// The largest object one PutObject stores, S3's 5 GiB.
    static let largestPut: Int64 = 5 << 30
}
