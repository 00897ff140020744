import BuckiaCore
import BuckiaHTTP
import BuckiaProviderKit
import Foundation

extension B2Provider {
    /// Sends the stream as it is read: a stream that fits one part goes up in one
    /// b2_upload_file, exactly as ``uploadData(_:remotePath:options:)`` sends it; a longer one
    /// as a large file whose parts (each with the SHA-1 B2 checks) go
    /// ``B2Settings/concurrency`` at a time while the next is read, so memory stays near part
    /// size × (concurrency + 1), and no byte is copied to disk. The part size is
    /// ``B2Settings/partSize`` or the account's minimum, whichever is larger.
    ///
    /// The whole file's SHA-1 is not known when the large file starts, so no
    /// `large_file_sha1` is stored (as with rclone's streamed uploads): a reader of it checks
    /// its size but no checksum. Such an upload cannot be resumed: any failure cancels it on
    /// B2. Known checksums are verified over the bytes read before the file is finished; a
    /// mismatch cancels it, storing nothing.
    @discardableResult
    public func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await upload(from: stream, remotePath: remotePath, options: options, wholeSHA1: nil)
    }

    /// The streamed upload, storing `wholeSHA1` as `large_file_sha1` where the caller knows
    /// it before the stream is read (bytes in memory), so that readers can check a large file.
    func upload(from stream: ByteStream, remotePath: ObjectKey, options: UploadOptions, wholeSHA1: String?) async throws -> RemoteFile {
        try check(options, key: remotePath)
        var options = options
        options.modificationDate = options.modificationDate ?? now()
        let account = try await session.account()
        return try await MultipartWriter.write(
            stream, to: StreamedUpload(provider: self, key: remotePath, options: options, wholeSHA1: wholeSHA1), key: remotePath, options: options,
            partSize: Int(clamping: max(settings.partSize, account.minimumPartSize)), width: settings.concurrency, memory: partMemory)
    }

    /// One streamed upload's steps, as ``BuckiaProviderKit/MultipartWriter`` runs them: a
    /// large file started, its parts each with the SHA-1 B2 checks, then finished.
    struct StreamedUpload: MultipartWrite {
        let provider: B2Provider
        let key: ObjectKey
        let options: UploadOptions
        let wholeSHA1: String?

        var partLimit: (count: Int, upload: String, setting: String) { (B2Provider.maximumParts, "one B2 large file", "partSize") }
        var leftBehind: String { "Its unfinished large file could not be cancelled; `buckia cleanup` removes it." }

        func writeOnce(_ data: Data, parts: StreamParts) async throws -> RemoteFile {
            // Verifies the known checksums itself, with the SHA-1 it sends.
            try await provider.uploadSmallData(data, key: key, options: options)
        }

        func initiate() async throws -> String {
            var info = B2Provider.fileInfo(options)
            info[largeFileSHA1Info] = wholeSHA1
            let started = try await provider.api(
                "b2_start_large_file",
                [
                    "bucketId": try await provider.bucketId(), "fileName": key.rawValue, "contentType": options.contentType ?? "application/octet-stream",
                    "fileInfo": info,
                ],
                as: B2API.File.self, operation: "upload", path: key.rawValue)
            guard let fileId = started.fileId else {
                throw BuckiaError(.corrupt, "B2 started a large file but gave no file id.", operation: "upload", path: key.rawValue)
            }
            return fileId
        }

        func writePart(_ number: Int, _ part: Data, upload: String) async throws -> String {
            let sha1 = try Hashing.digest(part, .sha1).hex
            try await provider.uploadPart(number, of: key, fileId: upload, body: .data(part), sha1: sha1)
            return sha1
        }

        func complete(_ upload: String, parts: [(number: Int, receipt: String)], size: Int64) async throws -> RemoteFile {
            do {
                let file = try await provider.api(
                    "b2_finish_large_file", ["fileId": upload, "partSha1Array": parts.map(\.receipt)], as: B2API.File.self, operation: "upload",
                    path: key.rawValue)
                return B2Provider.remoteFile(key, file)
            } catch let error as BuckiaError where !error.isRetryable && error.code != .cancelled {
                // An attempt B2 carried out whose answer was lost: the file is there under this id.
                guard let stored = try await provider.stat(remotePath: key), stored.etag == upload else { throw error }
                return stored
            }
        }

        func abort(_ upload: String) async throws {
            _ = try await provider.api("b2_cancel_large_file", ["fileId": upload], operation: "cancel upload", path: key.rawValue)
        }

        func finished(_ upload: String) async {
            await provider.uploadURLs.forget(upload)
        }
    }

    /// The most parts one B2 large file may have.
    static let maximumParts = 10_000
}
