import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

extension S3Provider {
    /// Uploads a large file in parts, `concurrency` at a time, each read into memory on its
    /// own: memory stays near part size × concurrency whatever the file size.
    ///
    /// The upload id is saved under the state folder before the first part. If the process
    /// dies or the upload fails transiently, running the same upload again lists the parts S3
    /// already has, keeps those whose ETag equals the MD5 of the local bytes, and sends only the
    /// rest. A permanent failure (refused credentials, a changed file) aborts the upload on
    /// the server and forgets it.
    ///
    /// Each part goes with its own `Content-MD5`. When the caller supplied the file's MD5
    /// (`verify`), no pass over the file precedes the upload: the parts' bytes are fed to a
    /// whole-file MD5 in order as they are read (a turnstile admits part n only after part
    /// n − 1 has been read), and a mismatch aborts the upload before it completes, so nothing
    /// is stored.
    ///
    /// An upload that can no longer be resumed — its local file changed or is gone — is
    /// aborted on the server when the next multipart upload to the same bucket starts, so
    /// killed and failed uploads do not keep their parts (and their cost) forever.
    func multipartUpload(
        _ localURL: URL, key: ObjectKey, size: Int64, fileModified: Date, md5: Digest, verify: Bool, partMD5s: [Int: Digest] = [:],
        options: UploadOptions
    ) async throws -> RemoteFile {
        let modified = options.modificationDate ?? now()
        let partSize = settings.partSize(forFileOf: size)
        let identity = MultipartState(
            uploadId: "", bucket: settings.bucket, key: key.rawValue, size: size, modified: modified.timeIntervalSince1970, partSize: partSize,
            endpoint: settings.endpoint.absoluteString, localPath: localURL.path, fileModified: fileModified.timeIntervalSince1970)
        let stateURL = MultipartState.location(
            directory: settings.stateDirectory, endpoint: settings.endpoint, bucket: settings.bucket, key: key.rawValue, localPath: localURL.path)
        MultipartState.sweep(settings.stateDirectory)
        var done: [Int: String] = [:]
        let uploadId: String
        var resumed: (id: String, parts: [Int: String])?
        if let saved = MultipartState.load(stateURL, matching: identity) {
            do {
                resumed = (saved.uploadId, try await listParts(key, uploadId: saved.uploadId))
            } catch let error as BuckiaError where error.code == .notFound {
                resumed = nil  // the upload is gone (completed, aborted or expired): start anew
            } catch let error as BuckiaError {
                // A transient failure must not abandon the parts already sent.
                throw BuckiaError(
                    error.code, "\(error.message) The saved multipart upload was kept; run the same upload again to resume it.",
                    operation: "upload", path: key.rawValue, cause: error)
            }
        }
        if let resumed {
            uploadId = resumed.id
            done = resumed.parts
        } else {
            await abortAbandonedUploads(replacing: stateURL)
            uploadId = try await createMultipartUpload(key, md5: md5, options: options)
            var state = identity
            state.uploadId = uploadId
            try state.save(stateURL)
        }
        let partCount = Int((size + partSize - 1) / partSize)
        do {
            let reader = try FileReader(localURL)
            let etags = Locked<[Int: String]>([:])
            let order = verify ? PartTurnstile() : nil
            let whole = Locked<RunningDigest?>(verify ? RunningDigest(.md5) : nil)
            let held = done
            try await forEachConcurrently(Array(1...max(1, partCount)), width: settings.concurrency) { number in
                do {
                    try await self.sendPart(
                        number, of: key, uploadId: uploadId, localURL: localURL, reader: reader, size: size, existing: held[number],
                        known: partMD5s[number], etags: etags, order: order, whole: whole)
                } catch {
                    await order?.abandon(because: error)
                    throw error
                }
            }
            if verify, let actual = whole.withLock({ $0?.finalize() }), actual != md5 {
                throw BuckiaError.checksumMismatch(key, algorithm: .md5, expected: md5.hex, actual: actual.hex, operation: "upload")
            }
            let parts = etags.withLock { $0 }.sorted { $0.key < $1.key }
            let response: String?
            do {
                response = try await completeMultipartUpload(key, uploadId: uploadId, parts: parts, condition: options.condition)
            } catch let error as BuckiaError where error.code == .conditionNotMatch || (error.code == .notFound && options.condition != nil) {
                throw restate(error, key: key, options: options)
            }
            try? FileManager.default.removeItem(at: stateURL)
            return RemoteFile(
                path: key, size: size, modificationDate: modified, checksums: [.md5: md5.hex],
                contentType: options.contentType ?? "application/octet-stream", etag: response.map(S3Provider.quotedETag), metadata: options.metadata,
                contentHeaders: options.contentHeaders)
        } catch let error as BuckiaError where error.isRetryable || error.code == .cancelled {
            throw BuckiaError(
                error.code, "\(error.message) The multipart upload was kept; run the same upload again to resume it.",
                operation: "upload", path: key.rawValue, cause: error)
        } catch {
            _ = try? await send(.delete, key: key, query: [("uploadId", uploadId)], accepts: .successfulAnd([404]), operation: "abort upload")
            try? FileManager.default.removeItem(at: stateURL)
            throw BuckiaError.wrapping(error, operation: "upload", path: key.rawValue)
        }
    }

    /// Aborts the multipart uploads this machine started in this bucket that can no longer be
    /// resumed, and forgets them: those whose local file changed or is gone, and the one saved
    /// at `replacing` (the same file and key, about to be uploaded anew). Failures are left for
    /// the next try or `buckia cleanup`: this is housekeeping, not the caller's upload.
    func abortAbandonedUploads(replacing stateURL: URL) async {
        for (url, state) in MultipartState.all(in: settings.stateDirectory) {
            let replaced = url.standardizedFileURL == stateURL.standardizedFileURL
            guard state.bucket == settings.bucket, replaced || (state.endpoint == settings.endpoint.absoluteString && state.canResume == false)
            else { continue }
            if (try? await abortUpload(key: state.key, uploadId: state.uploadId)) != nil {
                try? FileManager.default.removeItem(at: url)
            }
        }
    }

    /// Aborts one multipart upload; one that is already gone is not an error.
    func abortUpload(key: String, uploadId: String) async throws {
        let objectKey: ObjectKey
        do {
            objectKey = try ObjectKey(key)
        } catch {
            throw BuckiaError(
                .unsupported, "The unfinished upload of \(key.debugDescription) cannot be aborted by Buckia: the key is not addressable.",
                operation: "abort upload", path: key, cause: error)
        }
        _ = try await send(.delete, key: objectKey, query: [("uploadId", uploadId)], accepts: .successfulAnd([404]), operation: "abort upload")
    }

    private func partLength(_ number: Int, size: Int64) -> Int64 {
        let partSize = settings.partSize(forFileOf: size)
        return min(partSize, size - Int64(number - 1) * partSize)
    }

    /// Sends one part unless S3 already holds these bytes for it (`existing` is the ETag S3
    /// listed): the part is hashed through a 1 MiB buffer, then sent as a range of the file
    /// itself (``BuckiaHTTP/HTTPRequest/Body/fileRange(_:_:)``), so memory stays at the
    /// transport's buffers and nothing is copied to disk. With a turnstile, the hashing happens
    /// in part order and feeds `whole`.
    private func sendPart(
        _ number: Int, of key: ObjectKey, uploadId: String, localURL: URL, reader: FileReader, size: Int64, existing: String?,
        known: Digest?, etags: Locked<[Int: String]>,
        order: PartTurnstile?, whole: Locked<RunningDigest?>
    ) async throws {
        let start = Int64(number - 1) * settings.partSize(forFileOf: size)
        let range = start..<(start + partLength(number, size: size))
        if let known {
            // Hashed in the one pass that made the whole-file MD5: the part is read only by
            // the transport, straight from the file.
            if "\"\(known.hex)\"" == existing {
                etags.withLock { $0[number] = existing ?? "" }
                return
            }
            let etag = try await putPart(number, of: key, uploadId: uploadId, body: .fileRange(localURL, range), md5: known)
            etags.withLock { $0[number] = etag }
            return
        }
        try await order?.enter(number)
        let feed: (UnsafeRawBufferPointer) -> Void = { chunk in whole.withLock { $0?.update(chunk) } }
        if let existing {
            let digests = try DigestSet([.md5])
            try reader.forEachChunk(in: range) { chunk in
                digests.update(chunk)
                feed(chunk)
            }
            if "\"\(digests.finalize()[.md5]?.hex ?? "")\"" == existing {
                etags.withLock { $0[number] = existing }
                await order?.leave(number)
                return
            }
            // S3 holds other bytes for this part: send it again (the whole-file MD5 has them already).
        }
        // Content-MD5 goes in the headers, so the part is hashed before it is sent; then the
        // transport reads the same range again, in place (the second read comes from the page
        // cache). A file changed in between fails S3's Content-MD5 check rather than storing
        // a mix.
        let digests = try DigestSet([.md5])
        try reader.forEachChunk(in: range) { chunk in
            digests.update(chunk)
            if existing == nil { feed(chunk) }
        }
        await order?.leave(number)
        guard let md5 = digests.finalize()[.md5] else {
            throw BuckiaError(.io, "Part \(number) could not be hashed.", operation: "upload part", path: key.rawValue)
        }
        let etag = try await putPart(number, of: key, uploadId: uploadId, body: .fileRange(localURL, range), md5: md5)
        etags.withLock { $0[number] = etag }
    }

    /// UploadPart of `body` (a range of the file, read in place by the transport, or bytes in
    /// memory) with its `Content-MD5`: the part's ETag, quoted.
    /// - Parameter callersMD5: Whether `md5` is the caller's rather than computed here from the
    ///   body: a `BadDigest` then means the caller's MD5 is wrong, and is not retried.
    func putPart(_ number: Int, of key: ObjectKey, uploadId: String, body: HTTPRequest.Body, md5: Digest, callersMD5: Bool = false) async throws -> String {
        let response = try await send(
            .put, key: key, query: [("partNumber", String(number)), ("uploadId", uploadId)],
            headers: ["content-md5": md5.base64], body: body, payloadHash: SigV4Signer.unsignedPayload, operation: "upload part",
            retriesDigestMismatch: !callersMD5)
        guard let etag = response.etag else {
            throw BuckiaError(.corrupt, "S3 accepted part \(number) but returned no ETag.", operation: "upload part", path: key.rawValue)
        }
        return "\"\(etag)\""
    }

    func createMultipartUpload(_ key: ObjectKey, md5: Digest?, options: UploadOptions) async throws -> String {
        let response = try await send(
            .post, key: key, query: [("uploads", "")], headers: objectHeaders(md5: md5, options: options), operation: "start upload")
        guard let id = try XMLNode.parse(response.data, what: "start upload").value("UploadId"), !id.isEmpty else {
            throw BuckiaError(.corrupt, "S3 started a multipart upload but returned no UploadId.", operation: "start upload", path: key.rawValue)
        }
        return id
    }

    /// The parts S3 holds for an upload: number → ETag, quoted as S3 gives it.
    func listParts(_ key: ObjectKey, uploadId: String) async throws -> [Int: String] {
        try await uploadedParts(of: uploadId, to: key).reduce(into: [:]) { $0[$1.number] = "\"\($1.etag)\"" }
    }

    private func completeHeaders(_ data: Data, condition: WriteCondition?, ifMatch: String?) throws -> [String: String] {
        var headers = ["content-type": "application/xml", "content-md5": try Hashing.digest(data, .md5).base64]
        if condition == .ifNoneMatch { headers["if-none-match"] = "*" }
        headers["if-match"] = ifMatch
        return headers
    }

    func completeMultipartUpload(_ key: ObjectKey, uploadId: String, parts: [(key: Int, value: String)], condition: WriteCondition?) async throws -> String? {
        let body = "<CompleteMultipartUpload>"
            + parts.map { "<Part><PartNumber>\($0.key)</PartNumber><ETag>\($0.value.xmlEscaped)</ETag></Part>" }.joined()
            + "</CompleteMultipartUpload>"
        let data = Data(body.utf8)
        let response: HTTPResponse
        do {
            var ifMatch: String?
            if case .ifMatch(let etag) = condition { ifMatch = etag }
            response = try await matching(ifMatch, key: key) { tag in
                try await send(
                    .post, key: key, query: [("uploadId", uploadId)], headers: completeHeaders(data, condition: condition, ifMatch: tag),
                    body: .data(data), payloadHash: Hashing.sha256(data).hex, operation: "complete upload",
                    check: { try S3Provider.errorInBody($0, operation: "complete upload") })
            }
        } catch let error as BuckiaError where error.code == .notFound {
            // NoSuchUpload after an attempt whose answer was lost: S3 completed the upload then.
            // The object's ETag, the MD5 of the parts' MD5s, says whether these parts made it.
            let expected = try Self.multipartETag(parts.map(\.value))
            if let object = try? await stat(remotePath: key), object.etag.map(Self.unquotedETag) == expected {
                return expected
            }
            throw error
        }
        let root = try XMLNode.parse(response.data, what: "complete upload")
        return root.value("ETag")
    }

    /// The ETag S3 gives an object assembled from parts with these ETags: the MD5 of their
    /// MD5s, a dash and their number.
    static func multipartETag(_ partETags: [String]) throws -> String {
        var joined = Data()
        for etag in partETags {
            guard let bytes = Hex.decode(unquotedETag(etag)), bytes.count == 16 else {
                throw BuckiaError(.corrupt, "A part's ETag \(etag.debugDescription) is not an MD5.", operation: "complete upload")
            }
            joined.append(contentsOf: bytes)
        }
        return "\(try Hashing.digest(joined, .md5).hex)-\(partETags.count)"
    }

    static func unquotedETag(_ etag: String) -> String {
        etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count >= 2 ? String(etag.dropFirst().dropLast()) : etag
    }
}


/// Lets tasks through one at a time in part order: part n enters once part n − 1 has left.
/// Parts are read in order through it (so a whole-file digest can be fed) while their uploads
/// still run in parallel. A failed part abandons it, so no task waits forever.
actor PartTurnstile {
    private var next = 1
    private var failure: (any Error)?
    private var waiting: [Int: CheckedContinuation<Void, any Error>] = [:]

    /// Waits until part `number` may go.
    func enter(_ number: Int) async throws {
        if let failure { throw failure }
        if number == next { return }
        try await withCheckedThrowingContinuation { waiting[number] = $0 }
    }

    /// Lets the next part go.
    func leave(_ number: Int) {
        next = number + 1
        waiting.removeValue(forKey: next)?.resume()
    }

    /// Releases every waiting part with the error that stopped the upload, so whichever part
    /// reports first reports the real cause.
    func abandon(because error: any Error) {
        if failure == nil { failure = error }
        for continuation in waiting.values { continuation.resume(throwing: failure ?? error) }
        waiting.removeAll()
    }
}

extension S3Provider {
    /// Files from this size up are hashed off the cooperative pool, one job per algorithm.
    static let concurrentHashing: Int64 = 4 << 20

    /// Every part's MD5, in one pass over the file, for each part's `Content-MD5`, so no part
    /// is read again before it is sent. The whole-file MD5, for the `md5chksum` metadata that
    /// must go with CreateMultipartUpload, is a pass of its own beside this one.
    static func partMD5s(_ reader: FileReader, size: Int64, settings: S3Settings) throws -> [Int: Digest] {
        let partSize = settings.partSize(forFileOf: size)
        var parts: [Int: Digest] = [:]
        var start: Int64 = 0
        var number = 1
        repeat {
            let end = min(size, start + partSize)
            let part = try DigestHasher(.md5)
            try reader.forEachChunk(in: start..<end) { chunk in
                try BlockingWork.checkCancellation("hash")
                part.update(chunk)
            }
            parts[number] = part.finalize()
            start = end
            number += 1
        } while start < size
        return parts
    }
}
