import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

extension S3Provider {
    /// Buckia's metadata name from before it followed rclone (an MD5 in hex), read and never
    /// written; user metadata may not use it.
    static let legacyMD5Metadata = "md5"

    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options)
        let size: Int64
        let modified: Date
        var md5 = try S3Provider.knownDigest(options, .md5)
        let md5Given = md5 != nil
        var sha256 = try S3Provider.knownDigest(options, .sha256)
        var partMD5s: [Int: Digest] = [:]
        // A condition the server would drop on a completion goes with one PutObject instead.
        let parted = { (size: Int64) in size >= self.settings.multipartThreshold && (options.condition == nil || self.settings.profile.conditionalCompletions) }
        do {
            let reader = try FileReader(localURL)
            (size, modified) = try reader.status()
            // With a known MD5 the file is read once, by the transfer itself. Otherwise a pass
            // computes the MD5 for Content-MD5 and metadata, and the SHA-256 that signs a single
            // PUT, or, for a multipart upload, every part's MD5 besides. Past a few MiB each of
            // those is a job of its own, side by side: the whole-file MD5 (620 MB/s here) sets
            // the pace, and a 256 MiB file's pass took 0.82 s with both MD5s in one loop, 0.43 s
            // apart.
            if md5 == nil, parted(size) {
                async let whole = reader.digestsConcurrently(of: 0..<size, [.md5])
                async let parts = BlockingWork.run("hash", on: pool) { [settings] in try S3Provider.partMD5s(reader, size: size, settings: settings) }
                (md5, partMD5s) = (try await whole[.md5], try await parts)
                // Two passes: a file changed between them could pair a whole-file MD5 of one
                // version with parts of another, and S3 would store the parts under it.
                guard try reader.status() == (size, modified) else {
                    throw BuckiaError(
                        .conditionNotMatch, "The file changed while it was being hashed for upload; nothing was sent. Upload it again.",
                        operation: "upload", path: localURL.path)
                }
            } else if md5 == nil {
                let algorithms: [HashAlgorithm] = sha256 != nil ? [.md5] : [.md5, .sha256]
                let digests = size >= S3Provider.concurrentHashing
                    ? try await reader.digestsConcurrently(of: 0..<size, algorithms) : try reader.digests(of: 0..<size, algorithms)
                md5 = digests[.md5]
                sha256 = sha256 ?? digests[.sha256]
            }
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: localURL.path)
        }
        var options = options
        options.modificationDate = options.modificationDate ?? modified
        if !parted(size), size > S3Provider.largestPut {
            throw BuckiaError(
                .unsupported,
                "This server ignores conditions on multipart completions, so a conditional upload goes as one PutObject, which holds at most 5 GiB; this file is larger. Upload it without a condition.",
                operation: "upload", path: remotePath.rawValue)
        }
        if parted(size), let md5 {
            return try await multipartUpload(
                localURL, key: remotePath, size: size, fileModified: modified, md5: md5, verify: md5Given, partMD5s: partMD5s, options: options)
        }
        return try await putObject(remotePath, body: .file(localURL), size: size, md5: md5, sha256: sha256, options: options)
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options)
        var options = options
        options.modificationDate = options.modificationDate ?? now()
        let md5 = try S3Provider.knownDigest(options, .md5) ?? Hashing.digest(data, .md5)
        let sha256 = try S3Provider.knownDigest(options, .sha256) ?? Hashing.sha256(data)
        return try await putObject(remotePath, body: .data(data), size: Int64(data.count), md5: md5, sha256: sha256, options: options)
    }

    /// Refuses options S3 cannot store as given.
    func check(_ options: UploadOptions) throws {
        try options.validate()
        for (name, value) in options.metadata {
            guard name != S3Provider.legacyMD5Metadata else {
                throw BuckiaError(
                    .invalidConfiguration, "The metadata name \(name.debugDescription) is reserved: Buckia once kept an MD5 there, and reads it as one.",
                    operation: "upload")
            }
            guard value.utf8.allSatisfy({ (32...126).contains($0) }) else {
                throw BuckiaError(
                    .invalidConfiguration, "S3 metadata values travel as HTTP headers; the value of \(name.debugDescription) must be printable ASCII.",
                    operation: "upload")
            }
        }
    }

    /// A checksum the caller supplied, as a digest.
    static func knownDigest(_ options: UploadOptions, _ algorithm: ChecksumAlgorithm) throws -> Digest? {
        guard let hex = options.knownChecksums[algorithm] else { return nil }
        guard let bytes = Hex.decode(hex) else {
            throw BuckiaError(.invalidConfiguration, "The known \(algorithm) checksum is not hex.", operation: "upload")
        }
        return Digest(bytes: bytes)
    }

    /// The headers every write sends: content type and headers, user metadata, and rclone's
    /// mtime and MD5 metadata (the caller's own text where it says the same: ``RcloneMetadata``).
    func objectHeaders(md5: Digest?, options: UploadOptions) -> [String: String] {
        var headers = ["content-type": options.contentType ?? "application/octet-stream"]
        for (name, value) in options.contentHeaders.fields { headers[name] = value }
        for (name, value) in options.metadata where name != RcloneMetadata.mtime && name != RcloneMetadata.md5 {
            headers["x-amz-meta-\(name)"] = value
        }
        if let modified = options.modificationDate {
            headers["x-amz-meta-mtime"] = RcloneMetadata.mtimeText(for: modified, given: options.metadata[RcloneMetadata.mtime])
        } else if let given = options.metadata[RcloneMetadata.mtime] {
            headers["x-amz-meta-mtime"] = given
        }
        if let md5 {
            headers["x-amz-meta-md5chksum"] = RcloneMetadata.md5Text(for: md5.data, given: options.metadata[RcloneMetadata.md5])
        }
        return headers
    }

    /// PutObject with `Content-MD5`, the payload hash (or an unsigned payload when no SHA-256
    /// is known: `Content-MD5` still guards the bytes), metadata and the write condition.
    func putObject(_ key: ObjectKey, body: HTTPRequest.Body, size: Int64, md5: Digest?, sha256: Digest?, options: UploadOptions) async throws -> RemoteFile {
        var headers = objectHeaders(md5: md5, options: options)
        if let md5 { headers["content-md5"] = md5.base64 }
        var ifMatch: String?
        switch options.condition {
        case .ifNoneMatch: headers["if-none-match"] = "*"
        case .ifMatch(let etag): ifMatch = etag
        case nil: break
        }
        // A BadDigest for an MD5 computed here means bytes changed on the way, and the client
        // sends again; for a caller's MD5 it means the caller's MD5 is wrong.
        let response: HTTPResponse
        do {
            response = try await matching(ifMatch, key: key) { tag in
                var headers = headers
                headers["if-match"] = tag
                return try await send(
                    .put, key: key, headers: headers, body: body, payloadHash: sha256?.hex ?? SigV4Signer.unsignedPayload, operation: "upload",
                    retriesDigestMismatch: md5 != nil && options.knownChecksums[.md5] == nil)
            }
        } catch let error as BuckiaError {
            throw restate(error, key: key, options: options)
        }
        return RemoteFile(
            path: key, size: size, modificationDate: options.modificationDate, serverModified: nil,
            checksums: md5.map { [.md5: $0.hex] } ?? [:], contentType: headers["content-type"], etag: response.etag.map(S3Provider.quotedETag),
            metadata: options.metadata, contentHeaders: options.contentHeaders)
    }

    /// Says a failed conditional or checksummed write in the caller's terms.
    func restate(_ error: BuckiaError, key: ObjectKey, options: UploadOptions) -> BuckiaError {
        if error.code == .checksumMismatch, let expected = options.knownChecksums[.md5] {
            return BuckiaError.checksumMismatch(key, algorithm: .md5, expected: expected, actual: nil, operation: "upload")
        }
        if error.code == .notFound, case .ifMatch = options.condition {
            return BuckiaError.conditionNotMatch(key, operation: "upload", "No object exists at this key.")
        }
        if error.code == .conditionNotMatch {
            let detail = options.condition == .ifNoneMatch ? "An object already exists at this key." : "The object has changed since the entity tag was read."
            return BuckiaError.conditionNotMatch(key, operation: "upload", detail)
        }
        return error
    }

    /// The request headers for a read: its range and its condition (`ifMatch`, written in the
    /// server's form by ``matching(_:key:_:)``).
    private func readHeaders(_ options: ReadOptions, ifMatch: String?) -> [String: String] {
        var headers: [String: String] = [:]
        if let range = options.range, range.upperBound > range.lowerBound {
            headers["range"] = "bytes=\(range.lowerBound)-\(range.upperBound - 1)"
        }
        headers["if-match"] = ifMatch
        return headers
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        if let range = options.range, range.upperBound <= range.lowerBound {
            try AtomicFile.write(Data(), to: localURL)
            guard let file = try await stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "download") }
            return DownloadResult(file: file, localURL: localURL)
        }
        // A whole object is checked against the MD5 S3 declares for it while it arrives
        // (metadata or a single-part ETag): damaged bytes are retried and never reach
        // `localURL`, which keeps its old content until a verified body replaces it.
        let check = options.range == nil ? bodyCheck() : nil
        let response: HTTPResponse
        do {
            response = try await matching(options.ifMatch, key: remotePath) { tag in
                let headers = readHeaders(options, ifMatch: tag)
                do {
                    return try await client.download(to: localURL) { _ in
                        var request = try await self.request(.get, key: remotePath, headers: headers)
                        request.bodyCheck = check
                        return request
                    }
                } catch {
                    throw BuckiaError.wrapping(error, operation: "download", path: remotePath.rawValue)
                }
            }
        } catch {
            throw readError(error, key: remotePath, operation: "download")
        }
        var file = remoteFile(remotePath, response)
        if response.status == 206, let total = response.header("Content-Range")?.split(separator: "/").last.flatMap({ Int64($0) }) {
            file.size = total
        }
        // The source's time is part of the download's contract: a failure to set it is an error.
        if let modified = file.effectiveModificationDate { try LocalFile.setModificationDate(modified, of: localURL, operation: "download") }
        return DownloadResult(file: file, localURL: localURL)
    }

    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        if let range = options.range, range.upperBound <= range.lowerBound { return Data() }
        // 416: the range starts past the end of the object, which reads as no bytes.
        do {
            // A whole object is checked against its declared MD5 as it arrives, like a download.
            let response = try await matching(options.ifMatch, key: remotePath) { tag in
                try await send(
                    .get, key: remotePath, headers: readHeaders(options, ifMatch: tag), accepts: .successfulAnd([416]), operation: "read",
                    bodyCheck: options.range == nil ? bodyCheck() : nil)
            }
            return response.status == 416 ? Data() : response.data
        } catch {
            throw readError(error, key: remotePath, operation: "read")
        }
    }

    /// One GET, its body handed on as it arrives: `cat` of a GiB is one request. A whole
    /// object's body is checked against its declared MD5 as it streams (the stream ends with
    /// `checksumMismatch` when it fails), and every stream checks its byte count.
    public func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        if let range = options.range, range.upperBound <= range.lowerBound {
            guard let file = try await stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "read") }
            return .empty(of: file)
        }
        let check = options.range == nil ? bodyCheck() : nil
        let response: HTTPResponse
        do {
            response = try await matching(options.ifMatch, key: remotePath) { tag in
                let headers = readHeaders(options, ifMatch: tag)
                do {
                    return try await client.stream { _ in
                        var request = try await self.request(.get, key: remotePath, headers: headers, accepts: .successfulAnd([416]))
                        request.bodyCheck = check
                        return request
                    }
                } catch {
                    throw BuckiaError.wrapping(error, operation: "read", path: remotePath.rawValue)
                }
            }
        } catch {
            throw readError(error, key: remotePath, operation: "read")
        }
        // 416: the range starts past the end of the object, which reads as no bytes.
        guard response.status != 416 else {
            guard let file = try await stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "read") }
            return .empty(of: file)
        }
        var file = remoteFile(remotePath, response)
        if let total = response.contentRangeTotal { file.size = total }
        try capabilities.checkSize(of: file, operation: "read")
        return try response.objectStream(file: file, range: options.range, key: remotePath, provider: "S3")
    }

    private func readError(_ error: any Error, key: ObjectKey, operation: String) -> BuckiaError {
        let wrapped = BuckiaError.wrapping(error, operation: operation, path: key.rawValue)
        if wrapped.code == .conditionNotMatch {
            return BuckiaError.conditionNotMatch(key, operation: operation, "The object has changed since the entity tag was read.")
        }
        return wrapped
    }

    public func deleteFile(remotePath: ObjectKey) async throws {
        try await send(.delete, key: remotePath, accepts: .successfulAnd([404]), operation: "delete")
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        let response: HTTPResponse
        do {
            response = try await send(.head, key: remotePath, accepts: .successfulAnd([404]), operation: "stat")
        } catch let error as BuckiaError {
            throw await explainBodilessRefusal(error, key: remotePath)
        }
        return response.status == 404 ? nil : remoteFile(remotePath, response)
    }

    /// A refused HEAD has no body, so S3's error code (`InvalidToken`, `ExpiredToken`,
    /// `AuthorizationHeaderMalformed`, …) is missing and a 400 would read as a bad request.
    /// The same key is asked for its first byte, whose refusal carries the code; that error is
    /// the one reported. Anything else, or a GET that succeeds, leaves `error` as it was.
    private func explainBodilessRefusal(_ refusal: BuckiaError, key: ObjectKey) async -> BuckiaError {
        guard let failure = refusal.cause as? HTTPFailure, failure.body.isEmpty, failure.status == 400 || failure.status == 403 else { return refusal }
        do {
            _ = try await send(.get, key: key, headers: ["range": "bytes=0-0"], operation: "stat")
            return refusal
        } catch let explained as BuckiaError {
            return explained.cause is HTTPFailure ? explained : refusal
        } catch {
            return refusal
        }
    }

    /// Rewrites the object's metadata in place (CopyObject onto itself with
    /// `x-amz-metadata-directive: REPLACE`, guarded by the ETag just read), as rclone does:
    /// the bytes do not travel, and every other piece of metadata is kept.
    @discardableResult
    public func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        guard let current = try await stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "setModificationTime") }
        let options = UploadOptions(contentType: current.contentType, modificationDate: date, metadata: current.metadata, contentHeaders: current.contentHeaders)
        var headers = objectHeaders(md5: current.checksums[.md5].flatMap(Hex.decode).map(Digest.init(bytes:)), options: options)
        headers["x-amz-copy-source"] = copySource(remotePath)
        headers["x-amz-metadata-directive"] = "REPLACE"
        let response = try await matching(current.etag, key: remotePath) { tag in
            var headers = headers
            headers["x-amz-copy-source-if-match"] = tag
            return try await send(
                .put, key: remotePath, headers: headers, operation: "setModificationTime",
                check: { try S3Provider.errorInBody($0, operation: "setModificationTime") })
        }
        var file = current
        file.modificationDate = date
        file.etag = (try? XMLNode.parse(response.data, what: "copy").value("ETag")).map(S3Provider.quotedETag) ?? current.etag
        return file
    }

    /// The `x-amz-copy-source` value for a key of this bucket.
    func copySource(_ key: ObjectKey) -> String {
        "/" + settings.bucket + "/" + SigV4Canonical.encode(key.rawValue, keepSlash: true)
    }

    /// What a HEAD or GET response says about an object.
    /// The check of a whole object's body against the MD5 its headers declare, as
    /// ``remoteFile(_:_:)`` reads it.
    func bodyCheck() -> HTTPBodyCheck {
        HTTPBodyCheck { [self] headers in
            guard let hex = declaredMD5(headers), let bytes = Hex.decode(hex) else { return [:] }
            return [.md5: Digest(bytes: bytes)]
        }
    }

    /// The MD5 S3's headers declare for the object: rclone's `md5chksum` metadata, Buckia's
    /// older `md5` metadata, or a single-part ETag where ETags are MD5s.
    func declaredMD5(_ headers: HTTPHeaders) -> String? {
        if let md5 = headers["x-amz-meta-md5chksum"].flatMap({ Data(base64Encoded: $0) }), md5.count == 16 {
            return Hex.encode(md5)
        } else if let md5 = headers["x-amz-meta-md5"], md5.count == 32, Hex.decode(md5) != nil {
            return md5.lowercased()  // written by Buckia before it followed rclone
        } else if let md5 = etagMD5(headers["ETag"]), !["aws:kms", "aws:kms:dsse"].contains(headers["x-amz-server-side-encryption"] ?? ""),
                  headers["x-amz-server-side-encryption-customer-algorithm"] == nil
        {
            return md5
        }
        return nil
    }

    func remoteFile(_ key: ObjectKey, _ response: HTTPResponse) -> RemoteFile {
        var checksums: [ChecksumAlgorithm: String] = [:]
        if let md5 = declaredMD5(response.headers) { checksums[.md5] = md5 }
        var metadata: [String: String] = [:]
        for field in response.headers {
            let name = field.name.lowercased()
            guard name.hasPrefix("x-amz-meta-") else { continue }
            let short = String(name.dropFirst("x-amz-meta-".count))
            if short != S3Provider.legacyMD5Metadata { metadata[short] = field.value }
        }
        var contentHeaders = ContentHeaders()
        for name in ContentHeaders.names { contentHeaders[name] = response.header(name) }
        return RemoteFile(
            path: key, size: response.contentLength ?? 0,
            modificationDate: response.header("x-amz-meta-mtime").flatMap(RcloneMetadata.parseMtime),
            serverModified: response.header("Last-Modified").flatMap(S3Provider.parseHTTPDate), checksums: checksums,
            contentType: response.header("Content-Type"), etag: response.etag.map(S3Provider.quotedETag), metadata: metadata,
            contentHeaders: contentHeaders)
    }

    /// The MD5 an ETag spells, when ETags are MD5s here and this one is 32 hex digits (a
    /// multipart upload's ETag is `<hex>-<parts>` and is not one).
    func etagMD5(_ etag: String?) -> String? {
        guard settings.etagIsMD5, let tag = etag?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased(),
              tag.utf8.count == 32, Hex.decode(tag) != nil
        else { return nil }
        return tag
    }

    static func parseHTTPDate(_ text: String) -> Date? {
        RetryAfter.httpDate(text)
    }
}
