import BuckiaCore
import BuckiaHTTP
import BuckiaProviderKit
import Foundation

extension BunnyProvider {
    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options)
        let size: Int64
        let digests: [ChecksumAlgorithm: String]
        do {
            let reader = try FileReader(localURL)
            size = try reader.size()
            digests = try Self.checked(options.knownChecksums, key: remotePath) { algorithms in try reader.digests(of: 0..<size, algorithms) }
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: localURL.path)
        }
        return try await put(.file(localURL), key: remotePath, size: size, digests: digests, options: options)
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try check(options)
        let digests = try Self.checked(options.knownChecksums, key: remotePath) { algorithms in
            var out: [HashAlgorithm: Digest] = [:]
            for algorithm in algorithms { out[algorithm] = try Hashing.digest(data, algorithm) }
            return out
        }
        return try await put(.data(data), key: remotePath, size: Int64(data.count), digests: digests, options: options)
    }

    private func check(_ options: UploadOptions) throws {
        try options.validate()
        if options.condition != nil { throw BuckiaError.unsupported(.conditionalWrite, provider: .bunny, operation: "upload") }
        if !options.metadata.isEmpty { throw BuckiaError.unsupported(.userMetadata, provider: .bunny, operation: "upload") }
        if !options.contentHeaders.isEmpty { throw BuckiaError.unsupported(.contentHeaders, provider: .bunny, operation: "upload") }
    }

    /// The SHA-256 (which Bunny checks) and every checksum the caller gave, computed in one
    /// pass by `hash`; a known checksum that differs fails before anything is sent.
    static func checked(
        _ known: [ChecksumAlgorithm: String], key: ObjectKey, _ hash: ([HashAlgorithm]) throws -> [HashAlgorithm: Digest]
    ) throws -> [ChecksumAlgorithm: String] {
        var algorithms: [HashAlgorithm] = [.sha256]
        for local in try ChecksumAlgorithm.hashAlgorithms(verifying: known.keys) where !algorithms.contains(local) { algorithms.append(local) }
        var actual: [ChecksumAlgorithm: String] = [:]
        for (algorithm, digest) in try hash(algorithms) { actual[ChecksumAlgorithm(rawValue: algorithm.rawValue)] = digest.hex }
        for (algorithm, expected) in known.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where actual[algorithm] != expected.lowercased() {
            throw BuckiaError.checksumMismatch(key, algorithm: algorithm, expected: expected, actual: actual[algorithm], operation: "upload")
        }
        return actual
    }

    /// PUT with the body's SHA-256 as `Checksum`: Bunny refuses bytes that do not match, and a
    /// mismatch (bytes damaged on the way; the SHA-256 was computed here) is sent again.
    private func put(_ body: HTTPRequest.Body, key: ObjectKey, size: Int64, digests: [ChecksumAlgorithm: String], options: UploadOptions) async throws -> RemoteFile {
        let sha256 = digests[.sha256] ?? ""
        var request = try request(.put, key.rawValue, body: body)
        request.headers.set("Checksum", sha256.uppercased())
        request.headers.set("Content-Type", options.contentType ?? "application/octet-stream")
        request.retriesDigestMismatch = true
        _ = try await send(request, operation: "upload", path: key.rawValue)
        return RemoteFile(
            path: key, size: size, checksums: [.sha256: sha256], contentType: options.contentType ?? "application/octet-stream",
            etag: Self.entityTag(sha256))
    }

    // MARK: Reading

    /// A whole download is checked against the SHA-256 Bunny lists for the object.
    private static func check(sha256: String?) -> HTTPBodyCheck? {
        guard let sha256, let bytes = Hex.decode(sha256) else { return nil }
        let digest = Digest(bytes: bytes)
        return HTTPBodyCheck { _ in [.sha256: digest] }
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        if options.ifMatch != nil { throw BuckiaError.unsupported(.conditionalRead, provider: .bunny, operation: "download") }
        guard let object = try await describe(remotePath, operation: "download") else { throw BuckiaError.notFound(remotePath, operation: "download") }
        var file = Self.remoteFile(remotePath, object)
        if let range = options.range, range.upperBound <= range.lowerBound {
            try AtomicFile.write(Data(), to: localURL)
            return DownloadResult(file: file, localURL: localURL)
        }
        var request = try request(.get, remotePath.rawValue)
        if let range = options.range {
            request.headers.set("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
        } else {
            request.bodyCheck = Self.check(sha256: file.checksums[.sha256])
        }
        do {
            let response = try await client.download(request, to: localURL)
            if options.range != nil, response.status == 200 {
                throw BuckiaError(.unsupported, "Bunny answered a ranged download with the whole object.", operation: "download", path: remotePath.rawValue)
            }
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: remotePath.rawValue)
        }
        if options.range == nil { file.size = object.Length ?? file.size }
        return DownloadResult(file: file, localURL: localURL)
    }

    public func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        if options.ifMatch != nil { throw BuckiaError.unsupported(.conditionalRead, provider: .bunny, operation: "read") }
        if let range = options.range {
            if range.upperBound <= range.lowerBound { return Data() }
            var request = try request(.get, remotePath.rawValue, accepts: .successfulAnd([416]))
            request.headers.set("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
            let response = try await send(request, operation: "read", path: remotePath.rawValue)
            switch response.status {
            case 416: return Data()
            case 206: return response.data
            default:
                // A server that ignores Range sends the whole object: cut the range from it.
                let data = response.data
                let start = Int(clamping: min(range.lowerBound, Int64(data.count)))
                let end = Int(clamping: min(range.upperBound, Int64(data.count)))
                return data.subdata(in: start..<end)
            }
        }
        return try await readVerified(remotePath, operation: "read") { checksum in
            var request = try request(.get, remotePath.rawValue)
            request.bodyCheck = Self.check(sha256: checksum)
            return try await send(request, operation: "read", path: remotePath.rawValue).data
        }
    }

    /// Runs `read` with the SHA-256 Bunny lists for the object. The listed checksum and the
    /// bytes come from two requests, so an overwrite between them fails the check with bytes
    /// that are whole, only newer; when the listed checksum has changed meanwhile, the read
    /// is made again against the new one (three times at most). A mismatch the object's
    /// listing still stands behind is damage, and is thrown.
    private func readVerified<Result>(
        _ key: ObjectKey, operation: String, _ read: (_ sha256: String?) async throws -> Result
    ) async throws -> Result {
        guard var object = try await describe(key, operation: operation) else { throw BuckiaError.notFound(key, operation: operation) }
        var attempt = 1
        while true {
            do {
                return try await read(object.Checksum?.lowercased())
            } catch let error as BuckiaError where error.code == .checksumMismatch && attempt < 3 {
                guard let now = try await describe(key, operation: operation), now.Checksum?.lowercased() != object.Checksum?.lowercased() else { throw error }
                object = now
                attempt += 1
            }
        }
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        try await describe(remotePath, operation: "stat").map { Self.remoteFile(remotePath, $0) }
    }

    /// Deletes the object at `remotePath`; a key that names a directory (or nothing) is left
    /// alone, for Bunny would delete the whole directory.
    public func deleteFile(remotePath: ObjectKey) async throws {
        guard try await describe(remotePath, operation: "delete") != nil else { return }
        _ = try await send(request(.delete, remotePath.rawValue, accepts: .successfulAnd([404])), operation: "delete", path: remotePath.rawValue)
    }

    // MARK: Listing

    /// Walks the folders one level at a time (Bunny lists no deeper and pages nothing), in
    /// key order whatever order Bunny answers in. While the walk reads a folder, the next
    /// folders it will need are read ahead, ``BunnySettings/concurrency`` at a time, so a deep
    /// tree costs about its depth in round trips rather than its folder count.
    public func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        let provider = self
        let ahead = FolderReadAhead(width: settings.concurrency) { folder in
            try await provider.folder(folder)
        }
        return try FolderWalkLister(
            request: request, maxPageSize: 1000,
            readFolder: { folder in try await ahead.items(of: folder) },
            describe: { key in try await provider.stat(remotePath: key) })
    }

    // MARK: Access

    /// The object's URL on the pull zone, signed for ``BunnySettings/publicURLLifetime`` when a
    /// token key is configured.
    public func getPublicURL(remotePath: ObjectKey) throws -> URL {
        guard let pullZone = settings.pullZone else {
            throw BuckiaError.unsupported(.publicURL, provider: .bunny, operation: "getPublicURL")
        }
        let url = try Self.url(on: pullZone, remotePath, operation: "getPublicURL")
        guard let key = settings.tokenKey else { return url }
        return try BunnyTokenFactory(securityKey: key).sign(
            url, BunnySigningOptions(scheme: settings.tokenScheme, expires: now().addingTimeInterval(Double(settings.publicURLLifetime.components.seconds))))
    }

    /// The object's pull-zone URL signed with `options` (countries, address, token path, …),
    /// with the zone's token key.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` without `pullZoneURL` or
    ///   the credential `tokenKey`.
    public func signedURL(for key: ObjectKey, _ options: BunnySigningOptions) throws -> URL {
        try settings.signedURL(for: key, options)
    }

    /// `key`'s URL on the pull zone `base`.
    static func url(on base: URL, _ key: ObjectKey, operation: String) throws -> URL {
        var text = base.absoluteString
        if text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text + "/" + encode(key.rawValue)) else {
            throw BuckiaError(.invalidPath, "The key does not make a URL.", operation: operation, path: key.rawValue)
        }
        return url
    }

    /// A directory token for the pull zone: the `bcdn_token=…&token_path=…&expires=…` segment
    /// that, put first in a URL's path, opens every file under `pathPrefix` (the whole zone when
    /// nil) until `expiry`. Reading only: the CDN serves, it does not write.
    public func generateAccessToken(options: AccessTokenOptions) async throws -> AccessToken {
        guard let key = settings.tokenKey else {
            throw BuckiaError.unsupported(.accessToken, provider: .bunny, operation: "generateAccessToken")
        }
        return try BunnyTokenFactory(securityKey: key).directoryToken(options, scheme: settings.tokenScheme, now: now(), operation: "generateAccessToken")
    }
}
