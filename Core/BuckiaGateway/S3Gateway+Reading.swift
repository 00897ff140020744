import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import Foundation

extension S3Gateway {
    func getObject(_ context: RequestContext, head: Bool) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .read)
        var partNumber: Int?
        if let part = context.query["partNumber"] {
            guard part.utf8.count <= 5, let number = Int(part), (1...10_000).contains(number) else {
                throw S3Failure("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.")
            }
            guard try context.header("range") == nil else { throw S3Failure("InvalidRequest", "Cannot specify both Range header and partNumber query parameter") }
            partNumber = number
        }
        // A whole small object is read with its status, in one trip to the backend's threads:
        // a 4 KiB GET is mostly the cost of those trips. Over a remote backend a whole object
        // is opened at once, its status coming with its bytes (one GET, not a HEAD and a GET).
        let whole = try !head && partNumber == nil && context.header("range") == nil
        let conditionalReads = provider.capabilities.supports(.conditionalRead)
        let opensAtOnce = whole && !provider.capabilities.supports(.localFiles)
        let (found, small, opened) = try Blocking.wait { [provider] () -> (RemoteFile?, Data?, ObjectReadStream?) in
            if opensAtOnce { return try await Self.openWhole(key, provider) }
            guard let file = try await provider.stat(remotePath: key) else { return (nil, nil, nil) }
            guard whole, file.size > 0, file.size <= Self.smallObjectBytes else { return (file, nil, nil) }
            let data = try await provider.readData(remotePath: key, options: ReadOptions(ifMatch: conditionalReads ? file.etag : nil))
            return (file, data, nil)
        }
        // A stream opened here and not answered with is closed.
        var handedOn = false
        defer { if !handedOn { opened?.bytes.cancel() } }
        guard let file = found else {
            throw S3Failure("NoSuchKey", "The specified key does not exist.")
        }
        let etag = Self.etag(of: file)
        if let notModified = try checkConditions(context, file: file, etag: etag, prefix: "") { return notModified }
        var headers = objectHeaders(file, etag: etag)
        headers.append(("Accept-Ranges", "bytes"))
        // Read only when asked for: over a backend's multipart objects it may take a request.
        let checksumMode = try context.header("x-amz-checksum-mode")?.uppercased() == "ENABLED"
        let record = partNumber != nil || checksumMode ? try objectRecord(file) : S3ObjectRecord(metadata: file.metadata)
        var range: Range<Int64>?
        var status = 200
        if let partNumber {
            // A part of an object a multipart upload made (its sizes kept in the record); an
            // object uploaded whole is one part, all of it.
            guard let part = record.range(ofPart: partNumber, objectSize: file.size) else {
                throw S3Failure("InvalidPartNumber", "The requested partnumber is not satisfiable", status: 416)
            }
            if let count = record.partsCount {
                headers.append(("x-amz-mp-parts-count", String(count)))
                range = part
                status = 206
                headers.append(("Content-Range", part.isEmpty ? "bytes */\(file.size)" : "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(file.size)"))
            }
        }
        if checksumMode, let checksum = record.checksum, range == nil,
           try context.header("range") == nil
        {
            headers.append((checksum.algorithm.header, checksum.value))
            headers.append(("x-amz-checksum-type", checksum.type))
        }
        for (parameter, header) in Self.responseOverrides {
            if let value = context.query[parameter] {
                headers.removeAll { $0.name.lowercased() == header.lowercased() }
                headers.append((header, value))
            }
        }
        if let text = try context.header("range"), let requested = try Self.parseRange(text, size: file.size) {
            range = requested
            status = 206
            headers.append(("Content-Range", "bytes \(requested.lowerBound)-\(requested.upperBound - 1)/\(file.size)"))
        }
        let length = range.map { $0.upperBound - $0.lowerBound } ?? file.size
        if head {
            headers.append(("Content-Length", String(length)))
            return HTTPServerResponse(status: status, headers: headers)
        }
        if length == 0 {
            return HTTPServerResponse(status: status, headers: headers)
        }
        if range == nil, let small, Int64(small.count) == file.size {
            return HTTPServerResponse(status: status, headers: headers, body: .data(small))
        }
        let stream: ObjectReadStream
        if range == nil, let opened {
            stream = opened
            handedOn = true
        } else {
            let conditional = conditionalReads ? file.etag : nil
            stream = try Blocking.wait { [provider, range] in
                try await provider.openRead(remotePath: key, options: ReadOptions(range: range, ifMatch: conditional))
            }
        }
        let bytes = stream.bytes
        return HTTPServerResponse(
            status: status, headers: headers,
            body: .stream(length: length) { writer in
                defer { bytes.cancel() }
                while let chunk = try Blocking.wait({ try await bytes.next() }) {
                    try writer.write(chunk)
                }
            })
    }

    /// The largest object a GET reads whole with its status instead of streaming it.
    static let smallObjectBytes: Int64 = 64 * 1024

    /// A whole object opened for reading: its status, and its bytes when it is small (else the
    /// open stream); nothing when there is no such object.
    private static func openWhole(_ key: ObjectKey, _ provider: any StorageProvider) async throws -> (RemoteFile?, Data?, ObjectReadStream?) {
        let stream: ObjectReadStream
        do {
            stream = try await provider.openRead(remotePath: key, options: ReadOptions())
        } catch let error as BuckiaError where error.code == .notFound {
            return (nil, nil, nil)
        }
        guard stream.file.size <= smallObjectBytes else { return (stream.file, nil, stream) }
        var data = Data()
        do {
            while let chunk = try await stream.bytes.next() {
                data.append(chunk)
                guard Int64(data.count) <= smallObjectBytes else {
                    throw BuckiaError(.corrupt, "The backend sent more of \(key.rawValue) than its size, \(stream.file.size) bytes.", operation: "read", path: key.rawValue)
                }
            }
        } catch {
            stream.bytes.cancel()
            throw error
        }
        return (stream.file, data, nil)
    }

    /// The query parameters that override a GET's response headers.
    static let responseOverrides: [(String, String)] = [
        ("response-content-type", "Content-Type"), ("response-content-language", "Content-Language"), ("response-expires", "Expires"),
        ("response-cache-control", "Cache-Control"), ("response-content-disposition", "Content-Disposition"),
        ("response-content-encoding", "Content-Encoding"),
    ]

    /// An object's ETag as S3 clients see it: the backend's own tag, quoted, or one made from
    /// what is known of the object, never a bare MD5 unless it is one.
    static func etag(of file: RemoteFile) -> String {
        if let tag = file.etag, !tag.isEmpty {
            let stripped = tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
            return stripped.hasPrefix("\"") ? stripped : "\"\(stripped)\""
        }
        if let md5 = file.checksums[.md5] { return "\"\(md5)\"" }
        let seconds = file.effectiveModificationDate.map(Self.microseconds) ?? 0
        return "\"\(String(file.size, radix: 16))-\(String(seconds, radix: 16))\""
    }

    /// A tag as a condition names it, compared without quotes or a weak marker.
    static func bareTag(_ tag: String) -> String {
        var text = tag.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("W/") { text = String(text.dropFirst(2)) }
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        return text
    }

    /// Whether a list of tags (`If-Match: "a", "b"` or `*`) names `etag`.
    static func tagsMatch(_ header: String, _ etag: String) -> Bool {
        let wanted = bareTag(etag)
        return header.split(separator: ",").contains { candidate in
            let tag = bareTag(String(candidate))
            return tag == "*" || tag == wanted
        }
    }

    /// An object's headers: its tag, type, times, content headers and the metadata stored
    /// with it, each as it was written; nothing a client did not set (the backend's own
    /// time is `Last-Modified`, not metadata).
    func objectHeaders(_ file: RemoteFile, etag: String) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [
            ("ETag", etag), ("Content-Type", file.contentType ?? "binary/octet-stream"),
        ]
        if let modified = file.serverModified ?? file.modificationDate { headers.append(("Last-Modified", Self.httpDate(modified))) }
        for (name, value) in file.contentHeaders.fields { headers.append((Self.headerName(name), value)) }
        for (name, value) in file.metadata.sorted(by: { $0.key < $1.key }) where name != S3ObjectRecord.metadataName {
            headers.append(("x-amz-meta-\(name)", value))
        }
        return headers
    }

    /// `cache-control` as HTTP writes it: `Cache-Control`.
    static func headerName(_ name: String) -> String {
        name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: "-")
    }

    /// Microseconds since 1970, clamped: a backend's date past any calendar is not trapped on.
    static func microseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard value.isFinite else { return 0 }
        return Int64(exactly: value) ?? (value < 0 ? -Int64(1) << 62 : Int64(1) << 62)
    }

    /// The conditional headers of a read (`prefix` "") or of a copy's source
    /// (`x-amz-copy-source-`), evaluated as S3 does: a response to send instead (304), nil to
    /// go on, or a `PreconditionFailed` thrown.
    func checkConditions(_ context: RequestContext, file: RemoteFile, etag: String, prefix: String) throws -> HTTPServerResponse? {
        let modified = file.serverModified ?? file.modificationDate
        let ifMatch = try context.header(prefix + "if-match")
        let ifNoneMatch = try context.header(prefix + "if-none-match")
        let ifModifiedSince = try context.header(prefix + "if-modified-since").flatMap(Self.parseHTTPDate)
        let ifUnmodifiedSince = try context.header(prefix + "if-unmodified-since").flatMap(Self.parseHTTPDate)
        let precondition = S3Failure("PreconditionFailed", "At least one of the pre-conditions you specified did not hold.")
        if let ifMatch {
            guard Self.tagsMatch(ifMatch, etag) else { throw precondition }
        } else if let ifUnmodifiedSince, let modified, modified.timeIntervalSince(ifUnmodifiedSince) >= 1 {
            throw precondition
        }
        func notModified() -> HTTPServerResponse {
            HTTPServerResponse(status: 304, headers: [("ETag", etag)] + (modified.map { [("Last-Modified", Self.httpDate($0))] } ?? []))
        }
        if let ifNoneMatch {
            if Self.tagsMatch(ifNoneMatch, etag) {
                if prefix.isEmpty { return notModified() }
                throw precondition
            }
        } else if let ifModifiedSince, let modified, modified.timeIntervalSince(ifModifiedSince) < 1 {
            if prefix.isEmpty { return notModified() }
            throw precondition
        }
        return nil
    }

    /// A `Range: bytes=…` header against an object of `size` bytes: the range, nil to send the
    /// whole object (a form S3 ignores), or `InvalidRange` when nothing of it is in the object.
    static func parseRange(_ text: String, size: Int64) throws -> Range<Int64>? {
        let value = text.trimmingCharacters(in: .whitespaces)
        guard value.hasPrefix("bytes="), !value.contains(",") else { return nil }
        let spec = value.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash]
        let last = spec[spec.index(after: dash)...]
        func number(_ text: Substring) -> Int64? {
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return Int64(text)
        }
        let unsatisfiable = S3Failure("InvalidRange", "The requested range is not satisfiable.")
        if first.isEmpty {
            guard let suffix = number(last) else { return nil }
            guard suffix > 0, size > 0 else { throw unsatisfiable }
            return max(0, size - suffix)..<size
        }
        guard let start = number(first) else { return nil }
        guard start < size else { throw unsatisfiable }
        if last.isEmpty { return start..<size }
        guard let end = number(last), end >= start else { return nil }
        return start..<(min(end, size - 1) + 1)
    }
}
