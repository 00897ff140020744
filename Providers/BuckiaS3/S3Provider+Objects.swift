import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

extension S3Provider {
    @discardableResult
    public func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        let size: Int64
        let modified: Date
        let digests: [HashAlgorithm: Digest]
        do {
            let file = try LocalFile.openForReading(localURL)
            defer { try? file.close() }
            (size, modified) = try file.status()
            // One streaming pass: MD5 for Content-MD5 and metadata, SHA-256 to sign a single
            // PUT (each part of a multipart upload is hashed on its own).
            digests = try Hashing.digests(of: file, size >= settings.multipartThreshold ? [.md5] : [.md5, .sha256])
        } catch {
            throw BuckiaError.wrapping(error, operation: "upload", path: localURL.path)
        }
        if size >= settings.multipartThreshold, let md5 = digests[.md5] {
            return try await multipartUpload(
                localURL, key: remotePath, size: size, modified: options.modificationDate ?? modified, md5: md5, contentType: options.contentType)
        }
        return try await putObject(
            remotePath, body: .file(localURL), size: size, md5: digests[.md5], sha256: digests[.sha256],
            modified: options.modificationDate ?? modified, contentType: options.contentType)
    }

    @discardableResult
    public func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await putObject(
            remotePath, body: .data(data), size: Int64(data.count), md5: Hashing.digest(data, .md5), sha256: Hashing.digest(data, .sha256),
            modified: options.modificationDate ?? now(), contentType: options.contentType)
    }

    /// PutObject with `Content-MD5`, a signed payload hash, and the MD5 and mtime as metadata.
    func putObject(
        _ key: ObjectKey, body: HTTPRequest.Body, size: Int64, md5: Digest?, sha256: Digest?, modified: Date, contentType: String?
    ) async throws -> RemoteFile {
        var headers = [
            "content-type": contentType ?? "application/octet-stream",
            "x-amz-meta-mtime": S3Provider.formatMtime(modified),
        ]
        if let md5 {
            headers["content-md5"] = md5.base64
            headers["x-amz-meta-md5"] = md5.hex
        }
        let response = try await send(
            .put, key: key, headers: headers, body: body, payloadHash: sha256?.hex ?? SigV4Signer.unsignedPayload, operation: "upload")
        return RemoteFile(
            path: key.rawValue, size: size, modificationDate: modified, checksums: md5.map { [.md5: $0.hex] } ?? [:],
            contentType: headers["content-type"], etag: response.etag)
    }

    @discardableResult
    public func downloadFile(remotePath: ObjectKey, localURL: URL) async throws -> DownloadResult {
        let response: HTTPResponse
        do {
            response = try await client.download(request(.get, key: remotePath), to: localURL)
        } catch {
            throw BuckiaError.wrapping(error, operation: "download", path: remotePath.rawValue)
        }
        let file = remoteFile(remotePath, response)
        if let expected = file.checksums[.md5] {
            let actual = try Hashing.digests(ofFile: localURL, [.md5])[.md5]?.hex
            guard actual == expected else {
                try? FileManager.default.removeItem(at: localURL)
                throw BuckiaError(
                    .checksumMismatch, "The downloaded bytes do not match the object's MD5; the partial file was removed. Retry the download.",
                    operation: "download", path: remotePath.rawValue)
            }
        }
        if let modified = file.modificationDate {
            try? FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: localURL.path)
        }
        return DownloadResult(file: file, localURL: localURL)
    }

    public func readData(remotePath: ObjectKey, range: Range<Int64>?) async throws -> Data {
        var headers: [String: String] = [:]
        if let range {
            guard range.upperBound > range.lowerBound else { return Data() }
            headers["range"] = "bytes=\(range.lowerBound)-\(range.upperBound - 1)"
        }
        // 416: the range starts past the end of the object, which reads as no bytes.
        let response = try await send(.get, key: remotePath, headers: headers, accepts: .successfulAnd([416]), operation: "read")
        return response.status == 416 ? Data() : response.data
    }

    public func deleteFile(remotePath: ObjectKey) async throws {
        try await send(.delete, key: remotePath, accepts: .successfulAnd([404]), operation: "delete")
    }

    public func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        let response = try await send(.head, key: remotePath, accepts: .successfulAnd([404]), operation: "stat")
        return response.status == 404 ? nil : remoteFile(remotePath, response)
    }

    /// What a HEAD or GET response says about an object.
    func remoteFile(_ key: ObjectKey, _ response: HTTPResponse) -> RemoteFile {
        let modified = response.header("x-amz-meta-mtime").flatMap(S3Provider.parseMtime)
            ?? response.header("Last-Modified").flatMap(S3Provider.parseHTTPDate)
        var checksums: [ChecksumAlgorithm: String] = [:]
        if let md5 = response.header("x-amz-meta-md5"), md5.count == 32 {
            checksums[.md5] = md5.lowercased()
        } else if let etag = response.etag?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")),
                  etag.count == 32, Hex.decode(etag) != nil, response.header("x-amz-server-side-encryption") != "aws:kms"
        {
            checksums[.md5] = etag.lowercased()
        }
        return RemoteFile(
            path: key.rawValue, size: response.contentLength ?? 0, modificationDate: modified, checksums: checksums,
            contentType: response.header("Content-Type"), etag: response.etag)
    }

    /// Seconds since 1970 with nanoseconds, rclone's `mtime` metadata format.
    static func formatMtime(_ date: Date) -> String {
        String(format: "%.9f", date.timeIntervalSince1970)
    }

    static func parseMtime(_ text: String) -> Date? {
        Double(text).map { Date(timeIntervalSince1970: $0) }
    }

    static func parseHTTPDate(_ text: String) -> Date? {
        RetryAfter.httpDate(text)
    }
}
