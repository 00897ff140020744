import BuckiaCore
import BuckiaHTTP
import Foundation

extension B2Provider {
    /// Uploads a large file in parts, ``B2Settings/concurrency`` at a time, each from the file
    /// in place (the transport reads the part's range; nothing is buffered whole), so memory
    /// stays at the transports' buffers whatever the file's size.
    ///
    /// One pass over the file first computes every part's SHA-1 (sent with the part, checked by
    /// B2) and the whole file's (kept as `large_file_sha1`), and verifies any checksum the
    /// caller gave. Resuming needs no state on this machine: an unfinished large file of the
    /// same name whose `large_file_sha1` and modification time match is this upload, killed or
    /// failed earlier; its parts B2 lists with the SHA-1 of the local part are kept, and only
    /// the others are sent. A transient failure or a cancellation leaves the unfinished file
    /// for the next run to resume; a permanent one cancels it on the server.
    func largeFileUpload(_ localURL: URL, key: ObjectKey, size: Int64, fileModified: Date, options: UploadOptions) async throws -> RemoteFile {
        let account = try await session.account()
        let partSize = settings.partSize(forFileOf: size, minimum: account.minimumPartSize)
        let partCount = Int((size + partSize - 1) / partSize)
        guard partCount >= 2 else {
            // B2 needs two parts for a large file; one part's worth goes up whole.
            let digests = try await hashes(of: localURL, range: 0..<size, options: options, key: key)
            return try await uploadSmall(.file(localURL), key: key, size: size, sha1: digests.sha1, callersSHA1: digests.callers, options: options)
        }
        let plan = try partDigests(localURL, size: size, partSize: partSize, options: options, key: key)
        var info = Self.fileInfo(options)
        info[largeFileSHA1Info] = plan.whole
        let bucketId = try await bucketId()

        let contentType = options.contentType ?? "application/octet-stream"
        let fileId: String
        var held: [Int: B2API.Part] = [:]
        var started = false
        if let unfinished = try await resumable(key: key, bucketId: bucketId, info: info, contentType: contentType, partCount: partCount) {
            (fileId, held) = unfinished
        } else {
            started = true
            let started = try await api(
                "b2_start_large_file",
                ["bucketId": bucketId, "fileName": key.rawValue, "contentType": contentType, "fileInfo": info],
                as: B2API.File.self, operation: "upload", path: key.rawValue)
            guard let id = started.fileId else {
                throw BuckiaError(.corrupt, "B2 started a large file but gave no file id.", operation: "upload", path: key.rawValue)
            }
            fileId = id
        }
        let parts = plan.parts
        let present = held
        do {
            try await forEachConcurrently(Array(1...partCount), width: settings.concurrency) { number in
                let start = Int64(number - 1) * partSize
                let range = start..<min(size, start + partSize)
                let sha1 = parts[number - 1]
                if let part = present[number], part.contentSha1.lowercased() == sha1, part.contentLength == Int64(range.count) { return }
                try await self.uploadPart(number, of: key, fileId: fileId, body: .fileRange(localURL, range), sha1: sha1)
            }
            let finished: RemoteFile
            do {
                let file = try await api(
                    "b2_finish_large_file", ["fileId": fileId, "partSha1Array": parts], as: B2API.File.self, operation: "upload", path: key.rawValue)
                finished = Self.remoteFile(key, file)
            } catch let error as BuckiaError where !error.isRetryable && error.code != .cancelled {
                // An attempt B2 carried out whose answer was lost leaves the retry nothing to
                // finish: the file is there under this id.
                guard let stored = try await stat(remotePath: key), stored.etag == fileId else { throw error }
                finished = stored
            }
            await uploadURLs.forget(fileId)
            return finished
        } catch let error as BuckiaError where error.isRetryable || error.code == .cancelled {
            await uploadURLs.forget(fileId)
            throw BuckiaError(
                error.code, "\(error.message) The large file was kept unfinished on B2; run the same upload again to resume it.",
                operation: "upload", path: key.rawValue, cause: error)
        } catch {
            await uploadURLs.forget(fileId)
            // Only a large file this run started is cancelled: one it resumed may be another
            // process's upload of the same bytes, still going.
            if started { _ = try? await api("b2_cancel_large_file", ["fileId": fileId], operation: "cancel upload", path: key.rawValue) }
            throw BuckiaError.wrapping(error, operation: "upload", path: key.rawValue)
        }
    }

    /// Every part's SHA-1 and the whole file's, in one pass; known checksums verified on the way.
    private func partDigests(_ url: URL, size: Int64, partSize: Int64, options: UploadOptions, key: ObjectKey) throws -> (whole: String, parts: [String]) {
        let known = options.knownChecksums
        let wholeAlgorithms = try ChecksumAlgorithm.hashAlgorithms(verifying: Set(known.keys).union([.sha1]))
        var parts: [String] = []
        let whole: [HashAlgorithm: Digest]
        do {
            let reader = try FileReader(url)
            let wholeSet = try DigestSet(wholeAlgorithms)
            var start: Int64 = 0
            while start < size {
                let end = min(size, start + partSize)
                let part = try DigestHasher(.sha1)
                try reader.forEachChunk(in: start..<end) { chunk in
                    part.update(chunk)
                    wholeSet.update(chunk)
                }
                parts.append(part.finalize().hex)
                start = end
            }
            whole = wholeSet.finalize()
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: url.path)
        }
        var actual: [ChecksumAlgorithm: String] = [:]
        for (algorithm, digest) in whole { actual[ChecksumAlgorithm(rawValue: algorithm.rawValue)] = digest.hex }
        try Self.verify(known, against: actual, key: key, except: [])
        return (actual[.sha1] ?? "", parts)
    }

    /// An unfinished large file that is this very upload begun earlier, and the parts it
    /// holds: same name, same file info (whole SHA-1, modification time, metadata), same
    /// content type, and no part beyond this upload's last (a different part size would leave
    /// one, and B2 would refuse to finish).
    private func resumable(
        key: ObjectKey, bucketId: String, info: [String: String], contentType: String, partCount: Int
    ) async throws -> (id: String, parts: [Int: B2API.Part])? {
        var start: String?
        repeat {
            var fields: [String: any Sendable] = ["bucketId": bucketId, "namePrefix": key.rawValue, "maxFileCount": 100]
            if let start { fields["startFileId"] = start }
            let page = try await api(
                "b2_list_unfinished_large_files", fields, as: B2API.UnfinishedFiles.self, operation: "upload", path: key.rawValue)
            for file in page.files where file.fileName == key.rawValue && (file.fileInfo ?? [:]) == info && file.contentType == contentType {
                guard let id = file.fileId else { continue }
                let parts = try await listParts(id, key: key)
                if parts.keys.allSatisfy({ $0 <= partCount }) { return (id, parts) }
            }
            start = page.nextFileId
        } while start != nil
        return nil
    }

    /// How many parts B2 holds for an unfinished large file: what a resumed upload need not
    /// send again (the tests read it after a kill).
    package func storedPartCount(of upload: UnfinishedUpload) async throws -> Int {
        try await listParts(upload.id, key: try ObjectKey(upload.key)).count
    }

    /// The parts B2 holds for an unfinished large file, by number.
    func listParts(_ fileId: String, key: ObjectKey) async throws -> [Int: B2API.Part] {
        var parts: [Int: B2API.Part] = [:]
        var next: Int? = 1
        while let start = next {
            let page = try await api(
                "b2_list_parts", ["fileId": fileId, "startPartNumber": start, "maxPartCount": 1000], as: B2API.Parts.self,
                operation: "upload", path: key.rawValue)
            for part in page.parts { parts[part.partNumber] = part }
            guard let following = page.nextPartNumber, following > start else { break }
            next = following
        }
        return parts
    }

    /// b2_upload_part of `body` (a range of a file, read in place by the transport, or bytes
    /// in memory), on a part URL of its own; B2's answer describes the part.
    @discardableResult
    func uploadPart(_ number: Int, of key: ObjectKey, fileId: String, body: HTTPRequest.Body, sha1: String) async throws -> HTTPResponse {
        do {
            return try await upload(scope: fileId, fetch: { try await self.newPartURL(fileId: fileId, key: key) }) { target in
                var request = HTTPRequest(.post, target.url, body: body)
                request.headers.set("Authorization", secret: target.token)
                request.headers.set("X-Bz-Part-Number", String(number))
                request.headers.set("X-Bz-Content-Sha1", sha1)
                // The SHA-1 was computed here: a mismatch means bytes changed on the way.
                request.retriesDigestMismatch = true
                return request
            }
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload part \(number)", path: key.rawValue)
        }
    }

    private func newPartURL(fileId: String, key: ObjectKey) async throws -> B2UploadURLPool.Target {
        let answer = try await api("b2_get_upload_part_url", ["fileId": fileId], as: B2API.UploadURL.self, operation: "upload", path: key.rawValue)
        guard let url = URL(string: answer.uploadUrl), url.host != nil else {
            throw BuckiaError(.corrupt, "B2 answered b2_get_upload_part_url with an unusable URL.", operation: "upload", path: key.rawValue)
        }
        try checkServerURL(url, settings: settings, what: "upload URL")
        return B2UploadURLPool.Target(url: url, token: Secret(answer.authorizationToken))
    }
}

extension B2Provider {
    /// The unfinished large files under `prefix`. Their status is unknown: B2 records no
    /// owner, and the next upload of the same bytes resumes one wherever it started.
    public func unfinishedUploads(prefix: String) async throws -> [UnfinishedUpload] {
        let bucketId = try await bucketId()
        var uploads: [UnfinishedUpload] = []
        var start: String?
        repeat {
            var fields: [String: any Sendable] = ["bucketId": bucketId, "maxFileCount": 100]
            if !prefix.isEmpty { fields["namePrefix"] = prefix }
            if let start { fields["startFileId"] = start }
            let page = try await api("b2_list_unfinished_large_files", fields, as: B2API.UnfinishedFiles.self, operation: "list uploads", path: prefix)
            for file in page.files {
                guard let id = file.fileId else { continue }
                uploads.append(UnfinishedUpload(
                    key: file.fileName, id: id, initiated: file.uploadTimestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) }, status: .unknown))
            }
            start = page.nextFileId
        } while start != nil
        return uploads
    }

    /// Cancels an unfinished large file (b2_cancel_large_file), deleting its parts.
    public func abortUpload(_ upload: UnfinishedUpload) async throws {
        do {
            _ = try await api("b2_cancel_large_file", ["fileId": upload.id], operation: "abort upload", path: upload.key)
        } catch let error as BuckiaError where error.code == .notFound || B2ErrorMapping.code(of: error) == "bad_request" {
            return  // already finished or cancelled
        }
    }
}
