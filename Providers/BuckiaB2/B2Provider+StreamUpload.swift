import BuckiaCore
import BuckiaHTTP
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
        let partSize = Int(clamping: max(settings.partSize, account.minimumPartSize))
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
            return try await uploadSmallData(head, key: remotePath, options: options)
        }
        var info = Self.fileInfo(options)
        info[largeFileSHA1Info] = wholeSHA1
        let started = try await api(
            "b2_start_large_file",
            ["bucketId": try await bucketId(), "fileName": remotePath.rawValue, "contentType": options.contentType ?? "application/octet-stream", "fileInfo": info],
            as: B2API.File.self, operation: "upload", path: remotePath.rawValue)
        guard let fileId = started.fileId else {
            throw BuckiaError(.corrupt, "B2 started a large file but gave no file id.", operation: "upload", path: remotePath.rawValue)
        }
        handedOver = true
        do {
            let file = try await sendLargeFileParts(parts, head: head, partSize: partSize, fileId: fileId, key: remotePath, options: options)
            await uploadURLs.forget(fileId)
            return file
        } catch {
            await uploadURLs.forget(fileId)
            // Nothing can resume an upload from a stream: its parts go now, even when this
            // task was cancelled (the cancel runs in a task of its own).
            let failure = BuckiaError.wrapping(error, operation: "upload", path: remotePath.rawValue)
            do {
                _ = try await Task {
                    try await self.api("b2_cancel_large_file", ["fileId": fileId], operation: "cancel upload", path: remotePath.rawValue)
                }.value
            } catch {
                throw BuckiaError(
                    failure.code, "\(failure.message) Its unfinished large file could not be cancelled; `buckia cleanup` removes it.",
                    operation: "upload", path: remotePath.rawValue, cause: failure)
            }
            throw failure
        }
    }

    /// The parts of a streamed large file, then b2_finish_large_file.
    private func sendLargeFileParts(
        _ parts: StreamParts, head: Data, partSize: Int, fileId: String, key remotePath: ObjectKey, options: UploadOptions
    ) async throws -> RemoteFile {
        let hashes = try await parts.sendAll(
            partsOf: partSize, startingWith: [consume head], width: settings.concurrency, memory: partMemory
        ) { number, part in
            guard number <= B2Provider.maximumParts else {
                throw BuckiaError(
                    .invalidConfiguration,
                    "The stream is longer than \(B2Provider.maximumParts) parts of \(partSize / 1_048_576) MiB, the most one B2 large file can hold; raise partSize.",
                    operation: "upload", path: remotePath.rawValue)
            }
            let sha1 = try Hashing.digest(part, .sha1).hex
            try await self.uploadPart(number, of: remotePath, fileId: fileId, body: .data(part), sha1: sha1)
            return sha1
        }
        try parts.verify(options.knownChecksums, key: remotePath)
        let sha1s = hashes.sorted { $0.key < $1.key }.map(\.value)
        do {
            let file = try await api(
                "b2_finish_large_file", ["fileId": fileId, "partSha1Array": sha1s], as: B2API.File.self, operation: "upload",
                path: remotePath.rawValue)
            return Self.remoteFile(remotePath, file)
        } catch let error as BuckiaError where !error.isRetryable && error.code != .cancelled {
            // An attempt B2 carried out whose answer was lost: the file is there under this id.
            guard let stored = try await stat(remotePath: remotePath), stored.etag == fileId else { throw error }
            return stored
        }
    }

    /// The most parts one B2 large file may have.
    static let maximumParts = 10_000
}
