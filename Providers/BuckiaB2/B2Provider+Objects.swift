import BuckiaCore
import BuckiaHTTP
import Foundation

extension B2Provider {
    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options, key: remotePath)
        let size: Int64
        let modified: Date
        do {
            (size, modified) = try FileReader(localURL).status()
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: localURL.path)
        }
        var options = options
        options.modificationDate = options.modificationDate ?? modified
        if size >= settings.largeFileThreshold {
            return try await largeFileUpload(localURL, key: remotePath, size: size, fileModified: modified, options: options)
        }
        // One pass computes the SHA-1 B2 checks, and verifies any other checksum the caller
        // gave; with only a known SHA-1, B2's own check is the verification and nothing is read here.
        let digests = try await hashes(of: localURL, range: 0..<size, options: options, key: remotePath)
        return try await uploadSmall(.file(localURL), key: remotePath, size: size, sha1: digests.sha1, callersSHA1: digests.callers, options: options)
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options, key: remotePath)
        var options = options
        options.modificationDate = options.modificationDate ?? now()
        if Int64(data.count) >= settings.largeFileThreshold {
            // In parts straight from memory, as a stream of it would go, with the whole SHA-1
            // (known here, unlike a stream's) stored for readers to check.
            return try await upload(from: .of(data), remotePath: remotePath, options: options, wholeSHA1: try Hashing.digest(data, .sha1).hex)
        }
        return try await uploadSmallData(data, key: remotePath, options: options)
    }

    /// b2_upload_file of bytes in memory, with their SHA-1; known checksums verified first.
    func uploadSmallData(_ data: Data, key remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        var actual: [ChecksumAlgorithm: String] = [:]
        for algorithm in try ChecksumAlgorithm.hashAlgorithms(verifying: Set(options.knownChecksums.keys).union([.sha1])) {
            actual[ChecksumAlgorithm(rawValue: algorithm.rawValue)] = try Hashing.digest(data, algorithm).hex
        }
        try Self.verify(options.knownChecksums, against: actual, key: remotePath, except: [])
        let sha1 = actual[.sha1] ?? ""
        return try await uploadSmall(
            .data(data), key: remotePath, size: Int64(data.count), sha1: sha1, callersSHA1: options.knownChecksums[.sha1] != nil, options: options)
    }

    /// Refuses what B2 cannot store as given, before any request.
    func check(_ options: UploadOptions, key: ObjectKey) throws {
        try options.validate()
        try Self.check(key, operation: "upload")
        if options.condition != nil {
            throw BuckiaError.unsupported(.conditionalWrite, provider: .b2, operation: "upload")
        }
        for (name, value) in options.metadata {
            guard !Self.reservedInfo.contains(name), !name.hasPrefix("b2-") else {
                throw BuckiaError(
                    .invalidConfiguration, "The metadata name \(name.debugDescription) is reserved by B2 and its tools.", operation: "upload")
            }
            guard name == name.lowercased(), (1...50).contains(name.utf8.count),
                name.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 95 || $0 == 46 })
            else {
                throw BuckiaError(
                    .invalidConfiguration,
                    "B2 keeps file info names in lowercase; the metadata name \(name.debugDescription) must be 1 to 50 lowercase letters, digits, '-', '_' or '.'.",
                    operation: "upload")
            }
            _ = value
        }
    }

    /// The SHA-1 of a file range and whether it is the caller's; any other known checksum is
    /// computed in the same pass and compared, so a wrong one fails before anything is sent.
    func hashes(of url: URL, range: Range<Int64>, options: UploadOptions, key: ObjectKey) async throws -> (sha1: String, callers: Bool) {
        let known = options.knownChecksums
        let others = Set(known.keys).subtracting([.sha1])
        if let sha1 = known[.sha1], others.isEmpty { return (sha1.lowercased(), true) }
        let algorithms = try ChecksumAlgorithm.hashAlgorithms(verifying: others.union(known[.sha1] == nil ? [.sha1] : []))
        var actual: [ChecksumAlgorithm: String] = [:]
        do {
            let reader = try FileReader(url)
            for (algorithm, digest) in try reader.digests(of: range, algorithms) { actual[ChecksumAlgorithm(rawValue: algorithm.rawValue)] = digest.hex }
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: url.path)
        }
        try Self.verify(known, against: actual, key: key, except: [.sha1])
        if let sha1 = known[.sha1] { return (sha1.lowercased(), true) }
        return (actual[.sha1] ?? "", false)
    }

    static func verify(_ known: [ChecksumAlgorithm: String], against actual: [ChecksumAlgorithm: String], key: ObjectKey, except: Set<ChecksumAlgorithm>) throws {
        for (algorithm, expected) in known.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where !except.contains(algorithm) {
            guard let value = actual[algorithm], value == expected.lowercased() else {
                throw BuckiaError.checksumMismatch(key, algorithm: algorithm, expected: expected, actual: actual[algorithm], operation: "upload")
            }
        }
    }

    /// The file-info headers of an upload (``fileInfo(_:)``).
    func infoHeaders(_ options: UploadOptions) -> [(String, String)] {
        Self.fileInfo(options).sorted { $0.key < $1.key }.map { ("X-Bz-Info-\($0.key)", b2Encode($0.value)) }
    }

    /// The file info an upload stores: user metadata, the content headers under B2's own
    /// names (`b2-cache-control`, …, which B2 serves as those headers), and the modification time.
    static func fileInfo(_ options: UploadOptions) -> [String: String] {
        var info = options.metadata
        for (name, value) in options.contentHeaders.fields { info["b2-" + name] = value }
        if let modified = options.modificationDate { info[modificationTimeInfo] = millis(modified) }
        return info
    }

    /// b2_upload_file, on an upload URL of its own. A failed attempt drops its URL and the
    /// retry fetches a new one; a URL that served is kept for the next upload.
    func uploadSmall(
        _ body: HTTPRequest.Body, key: ObjectKey, size: Int64, sha1: String, callersSHA1: Bool, options: UploadOptions
    ) async throws -> RemoteFile {
        let bucketId = try await bucketId()
        var headers = [("X-Bz-File-Name", b2Encode(key.rawValue)), ("Content-Type", options.contentType ?? "application/octet-stream"),
                       ("X-Bz-Content-Sha1", sha1)]
        headers += infoHeaders(options)
        let fixed = headers
        let response: HTTPResponse
        do {
            response = try await upload(scope: bucketId, fetch: { try await self.newUploadURL(bucketId: bucketId) }) { target in
                var request = HTTPRequest(.post, target.url, body: body)
                request.headers.set("Authorization", secret: target.token)
                for (name, value) in fixed { request.headers.set(name, value) }
                // A SHA-1 computed here that B2 finds wrong means bytes changed on the way: send again.
                request.retriesDigestMismatch = !callersSHA1
                return request
            }
        } catch let error as BuckiaError where error.code == .checksumMismatch && callersSHA1 {
            throw BuckiaError.checksumMismatch(key, algorithm: .sha1, expected: sha1, actual: nil, operation: "upload")
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: key.rawValue)
        }
        return try Self.describedFile(answer: response.data, key: key, call: "b2_upload_file")
    }

    /// Sends a request to an upload URL taken from the pool for `scope` (or fetched), one per
    /// attempt: an attempt after a failure never reuses the URL that failed.
    func upload(
        scope: String, fetch: @escaping @Sendable () async throws -> B2UploadURLPool.Target,
        _ build: @escaping @Sendable (B2UploadURLPool.Target) throws -> HTTPRequest
    ) async throws -> HTTPResponse {
        let pool = uploadURLs
        let counters = counters
        let holding = Locked<B2UploadURLPool.Target?>(nil)
        let response = try await client.send(interpret: { $0 }) { attempt in
            if attempt.number > 1 {
                counters.withLock {
                    $0.retries += 1
                    $0.uploadURLRenewals += 1
                }
            }
            var target = attempt.number == 1 ? await pool.take(scope) : nil
            if target == nil {
                target = try await fetch()
                counters.withLock { $0.uploadURLsFetched += 1 }
            }
            guard let target else { throw BuckiaError(.transient, "No upload URL.", operation: "upload") }
            holding.withLock { $0 = target }
            return try build(target)
        }
        if let target = holding.withLock({ $0 }) { await pool.giveBack(target, scope: scope) }
        return response
    }

    func newUploadURL(bucketId: String) async throws -> B2UploadURLPool.Target {
        let answer = try await api("b2_get_upload_url", ["bucketId": bucketId], as: B2API.UploadURL.self, operation: "upload")
        guard let url = URL(string: answer.uploadUrl), url.host != nil else {
            throw BuckiaError(.corrupt, "B2 answered b2_get_upload_url with an unusable URL.", operation: "upload")
        }
        try checkServerURL(url, settings: settings, what: "upload URL")
        return B2UploadURLPool.Target(url: url, token: Secret(answer.authorizationToken))
    }

    // MARK: Reading

    /// The download URL of a name: `{downloadUrl}/file/{bucket}/{name}`, both percent-encoded.
    func downloadURL(base: URL, key: ObjectKey) throws -> URL {
        var text = base.absoluteString
        if text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text + "/file/" + b2Encode(settings.bucket) + "/" + b2Encode(key.rawValue)) else {
            throw BuckiaError(.invalidPath, "No download URL can address \(key.rawValue.debugDescription) at \(base.host ?? "the download host").", operation: "address", path: key.rawValue)
        }
        return url
    }

    /// A request to the download host, authorized with the account's token.
    func downloadRequest(_ method: HTTPRequest.Method, key: ObjectKey, range: Range<Int64>?, attempt: HTTPAttempt, used: Locked<Secret?>) async throws -> HTTPRequest {
        let account = try await account(for: attempt, used: used)
        var request = HTTPRequest(method, try downloadURL(base: account.downloadURL, key: key))
        request.headers.set("Authorization", secret: account.token)
        if let range { request.headers.set("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)") }
        return request
    }

    /// A whole-file download is checked against the SHA-1 B2 declares for it as it arrives.
    static let bodyCheck = HTTPBodyCheck { headers in
        var info: [String: String] = [:]
        if let large = headers["x-bz-info-\(largeFileSHA1Info)"] { info[largeFileSHA1Info] = large }
        guard let hex = sha1(declared: headers["x-bz-content-sha1"], info: info), let bytes = Hex.decode(hex) else { return [:] }
        return [.sha1: Digest(bytes: bytes)]
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        try Self.check(remotePath, operation: "download")
        if options.ifMatch != nil { throw BuckiaError.unsupported(.conditionalRead, provider: .b2, operation: "download") }
        if let range = options.range, range.upperBound <= range.lowerBound {
            guard let file = try await stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "download") }
            try AtomicFile.write(Data(), to: localURL)
            return DownloadResult(file: file, localURL: localURL)
        }
        let used = Locked<Secret?>(nil)
        let response: HTTPResponse
        do {
            response = try await client.download(to: localURL) { attempt in
                var request = try await self.downloadRequest(.get, key: remotePath, range: options.range, attempt: attempt, used: used)
                if options.range == nil { request.bodyCheck = Self.bodyCheck }
                return request
            }
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: remotePath.rawValue)
        }
        let file = Self.remoteFile(remotePath, headers: response.headers, status: response.status)
        // The source's time is part of the download's contract: a failure to set it is an error.
        if let modified = file.modificationDate { try LocalFile.setModificationDate(modified, of: localURL, operation: "download") }
        return DownloadResult(file: file, localURL: localURL)
    }

    /// One download by name, its body handed on as it arrives (checked against the SHA-1 B2
    /// declares for a whole file as it streams): one version, one request, however large.
    public func openRead(remotePath: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        try Self.check(remotePath, operation: "read")
        if options.ifMatch != nil { throw BuckiaError.unsupported(.conditionalRead, provider: .b2, operation: "read") }
        if let range = options.range, range.upperBound <= range.lowerBound {
            guard let file = try await stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "read") }
            return .empty(of: file)
        }
        let used = Locked<Secret?>(nil)
        let response: HTTPResponse
        do {
            response = try await client.stream { attempt in
                var request = try await self.downloadRequest(.get, key: remotePath, range: options.range, attempt: attempt, used: used)
                request.accepts = .successfulAnd([416])
                if options.range == nil { request.bodyCheck = Self.bodyCheck }
                return request
            }
        } catch {
            throw BuckiaError.wrapping(error, operation: "read", path: remotePath.rawValue)
        }
        // 416: the range starts past the end of the file, which reads as no bytes.
        guard response.status != 416 else {
            guard let file = try await stat(remotePath: remotePath) else { throw BuckiaError.notFound(remotePath, operation: "read") }
            return .empty(of: file)
        }
        let file = Self.remoteFile(remotePath, headers: response.headers, status: response.status)
        try capabilities.checkSize(of: file, operation: "read")
        return try response.objectStream(file: file, range: options.range, key: remotePath, provider: "B2")
    }

    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try Self.check(remotePath, operation: "read")
        if options.ifMatch != nil { throw BuckiaError.unsupported(.conditionalRead, provider: .b2, operation: "read") }
        if let range = options.range, range.upperBound <= range.lowerBound { return Data() }
        let used = Locked<Secret?>(nil)
        do {
            let response = try await client.send(interpret: { $0 }) { attempt in
                var request = try await self.downloadRequest(.get, key: remotePath, range: options.range, attempt: attempt, used: used)
                request.accepts = .successfulAnd([416])
                if options.range == nil { request.bodyCheck = Self.bodyCheck }
                return request
            }
            // 416: the range starts past the end of the file, which reads as no bytes.
            return response.status == 416 ? Data() : response.data
        } catch {
            throw BuckiaError.wrapping(error, operation: "read", path: remotePath.rawValue)
        }
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        try Self.check(remotePath, operation: "stat")
        let used = Locked<Secret?>(nil)
        do {
            let response = try await client.send(interpret: { $0 }) { attempt in
                var request = try await self.downloadRequest(.head, key: remotePath, range: nil, attempt: attempt, used: used)
                request.accepts = .successfulAnd([404])
                return request
            }
            return response.status == 404 ? nil : Self.remoteFile(remotePath, headers: response.headers, status: response.status)
        } catch {
            throw BuckiaError.wrapping(error, operation: "stat", path: remotePath.rawValue)
        }
    }

    /// A file as a download's headers describe it.
    static func remoteFile(_ key: ObjectKey, headers: HTTPHeaders, status: Int) -> RemoteFile {
        var info: [String: String] = [:]
        for field in headers {
            let name = field.name.lowercased()
            guard name.hasPrefix("x-bz-info-") else { continue }
            info[String(name.dropFirst("x-bz-info-".count))] = field.value.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? field.value
        }
        var size = headers["content-length"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        if status == 206, let total = headers["content-range"]?.split(separator: "/").last.flatMap({ Int64($0) }) { size = total }
        let file = B2API.File(
            action: "upload", fileId: headers["x-bz-file-id"], fileName: key.rawValue, contentLength: size,
            contentSha1: headers["x-bz-content-sha1"], contentType: headers["content-type"], fileInfo: info,
            uploadTimestamp: headers["x-bz-upload-timestamp"].flatMap { Int64($0) })
        return remoteFile(key, file)
    }

    // MARK: Deleting and copying

    /// Deletes every version of the name (and hide markers), so the file is gone rather than
    /// hidden; an unfinished large file of the name is left to its upload.
    public func deleteFile(remotePath: ObjectKey) async throws {
        try Self.check(remotePath, operation: "delete")
        let bucketId = try await bucketId()
        var start: (name: String, id: String?)? = (remotePath.rawValue, nil)
        while let from = start {
            var fields: [String: any Sendable] = [
                "bucketId": bucketId, "prefix": remotePath.rawValue, "startFileName": from.name, "maxFileCount": 100,
            ]
            if let id = from.id { fields["startFileId"] = id }
            let page = try await api("b2_list_file_versions", fields, as: B2API.FileVersions.self, operation: "delete", path: remotePath.rawValue)
            for version in page.files where version.fileName == remotePath.rawValue && version.action != "start" && version.action != "folder" {
                guard let id = version.fileId else { continue }
                do {
                    _ = try await api(
                        "b2_delete_file_version", ["fileName": version.fileName, "fileId": id], operation: "delete", path: remotePath.rawValue)
                } catch let error as BuckiaError where error.code == .notFound {
                    continue  // deleted meanwhile (or by an attempt whose answer was lost)
                }
            }
            guard let next = page.nextFileName, next == remotePath.rawValue else { break }
            start = (next, page.nextFileId)
        }
    }

    @discardableResult
    public func copyFile(from source: ObjectKey, to destination: ObjectKey) async throws -> RemoteFile {
        try Self.check(destination, operation: "copy")
        guard let file = try await stat(remotePath: source) else { throw BuckiaError.notFound(source, operation: "copy") }
        guard let id = file.etag else {
            throw BuckiaError(.corrupt, "B2 described the source without a file id.", operation: "copy", path: source.rawValue)
        }
        guard file.size <= B2Settings.maximumPartSize else {
            throw BuckiaError(
                .unsupported, "B2 copies files of at most 5 GB in one request; this one has \(file.size) bytes.", operation: "copy", path: source.rawValue)
        }
        let copied = try await api(
            "b2_copy_file", ["sourceFileId": id, "fileName": destination.rawValue, "metadataDirective": "COPY"], as: B2API.File.self,
            operation: "copy", path: destination.rawValue)
        return Self.remoteFile(destination, copied)
    }

    /// Sets the time by copying the file onto its own name with new file info (B2 changes no
    /// file info in place; the copy is made on the server), then deleting the old version.
    @discardableResult
    public func setModificationTime(remotePath: ObjectKey, to date: Date) async throws -> RemoteFile {
        guard let file = try await stat(remotePath: remotePath), let id = file.etag else {
            throw BuckiaError.notFound(remotePath, operation: "setModificationTime")
        }
        guard file.size <= B2Settings.maximumPartSize else {
            throw BuckiaError(
                .unsupported, "B2 copies files of at most 5 GB in one request, and changes file info only by a copy; this file has \(file.size) bytes.",
                operation: "setModificationTime", path: remotePath.rawValue)
        }
        var info = file.metadata
        info[modificationTimeInfo] = Self.millis(date)
        if let sha1 = file.checksums[.sha1] { info[largeFileSHA1Info] = sha1 }
        let copied = try await api(
            "b2_copy_file",
            ["sourceFileId": id, "fileName": remotePath.rawValue, "metadataDirective": "REPLACE",
             "contentType": file.contentType ?? "application/octet-stream", "fileInfo": info],
            as: B2API.File.self, operation: "setModificationTime", path: remotePath.rawValue)
        // Only the version the copy replaced goes: a version another writer stored meanwhile
        // stays (the contract's last writer wins), and so do versions the bucket keeps.
        if copied.fileId != nil, copied.fileId != id {
            do {
                _ = try await api("b2_delete_file_version", ["fileName": remotePath.rawValue, "fileId": id], operation: "setModificationTime", path: remotePath.rawValue)
            } catch let error as BuckiaError where error.code == .notFound {
                // Deleted meanwhile.
            }
        }
        return Self.remoteFile(remotePath, copied)
    }
}
