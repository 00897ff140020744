import BuckiaCore
import BuckiaHTTP
import BuckiaProviderKit
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
        return try await MultipartWriter.write(
            stream, to: StreamedUpload(provider: self, key: remotePath, options: options), key: remotePath, options: options,
            partSize: Int(clamping: settings.partSize), width: settings.concurrency, memory: partMemory)
    }

    /// One streamed upload's steps, as ``BuckiaProviderKit/MultipartWriter`` runs them.
    struct StreamedUpload: MultipartWrite {
        let provider: S3Provider
        let key: ObjectKey
        let options: UploadOptions

        var partLimit: (count: Int, upload: String, setting: String) { (S3Provider.maximumParts, "one S3 upload", "partSizeMiB") }
        var leftBehind: String { "Its multipart upload could not be aborted; `buckia cleanup` removes the parts." }

        func writeOnce(_ data: Data, parts: StreamParts) async throws -> RemoteFile {
            // S3 checks a known MD5 (Content-MD5) and SHA-256 (the signed payload hash) itself;
            // any other known checksum is checked here, over the bytes read.
            try parts.verify(options.knownChecksums, key: key)
            return try await provider.uploadData(data, remotePath: key, options: options)
        }

        func initiate() async throws -> String {
            guard options.condition == nil || provider.settings.profile.conditionalCompletions else {
                throw BuckiaError(
                    .unsupported,
                    "This server ignores conditions on multipart completions, and the stream is longer than one part (\(provider.settings.partSize / 1_048_576) MiB): it cannot be stored conditionally. Store it without a condition, or raise partSizeMiB.",
                    operation: "upload", path: key.rawValue)
            }
            return try await provider.createMultipartUpload(key, md5: nil, options: options)
        }

        func writePart(_ number: Int, _ part: Data, upload: String) async throws -> String {
            try await provider.putPart(number, of: key, uploadId: upload, body: .data(part), md5: try Hashing.digest(part, .md5))
        }

        func complete(_ upload: String, parts: [(number: Int, receipt: String)], size: Int64) async throws -> RemoteFile {
            let etag: String?
            do {
                etag = try await provider.completeMultipartUpload(
                    key, uploadId: upload, parts: parts.map { (key: $0.number, value: $0.receipt) }, condition: options.condition)
            } catch let error as BuckiaError where error.code == .conditionNotMatch || (error.code == .notFound && options.condition != nil) {
                throw provider.restate(error, key: key, options: options)
            }
            return RemoteFile(
                path: key, size: size, modificationDate: options.modificationDate,
                contentType: options.contentType ?? "application/octet-stream", etag: etag.map(S3Provider.quotedETag), metadata: options.metadata,
                contentHeaders: options.contentHeaders)
        }

        func abort(_ upload: String) async throws {
            try await provider.abortUpload(key: key.rawValue, uploadId: upload)
        }
    }

    /// The most parts one S3 multipart upload may have.
    static let maximumParts = 10_000
    /// The largest object one PutObject stores, S3's 5 GiB.
    static let largestPut: Int64 = 5 << 30
}
