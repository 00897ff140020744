import BuckiaCore
import BuckiaProviderKit
import BuckiaSecurity
import BuckiaSigV4
import Foundation

/// Multipart uploads: every one is the backend's own (``BuckiaCore/Capability/partUploads``),
/// or kept in the backend by ``BuckiaCore/PartStagingProvider`` where it has none, so nothing
/// of an upload lives in the gateway's process (S3Gateway+BackendUploads.swift). What is here
/// reads the requests: part numbers, a part's bytes (the body, or a range of an object), and
/// the listings of parts and uploads.
extension S3Gateway {
    func createUpload(_ context: inout RequestContext) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .write)
        try requireBucket(context.bucket)
        var uploadOptions = try uploadOptions(context)
        uploadOptions.condition = nil  // a condition is CompleteMultipartUpload's to give
        // The checksum the parts will carry (each part's is checked as it arrives), echoed as S3 does.
        var echoed: [(name: String, value: String)] = []
        var checksumAlgorithm: S3ChecksumAlgorithm?
        var composite = false
        if let name = try context.header("x-amz-checksum-algorithm")?.uppercased() {
            guard let algorithm = S3ChecksumAlgorithm(name: name) else {
                throw S3Failure("InvalidRequest", "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
            }
            echoed.append(("x-amz-checksum-algorithm", name))
            let type = try context.header("x-amz-checksum-type")?.uppercased() ?? (algorithm == .crc64nvme ? "FULL_OBJECT" : "COMPOSITE")
            guard type == "COMPOSITE" || type == "FULL_OBJECT" else { throw S3Failure("InvalidRequest", "The x-amz-checksum-type header must be COMPOSITE or FULL_OBJECT.") }
            // A whole-object checksum is combined from the parts' CRCs; a hash cannot be.
            guard type == "COMPOSITE" || algorithm.isCRC else {
                throw S3Failure("InvalidRequest", "The FULL_OBJECT checksum type cannot be used with the \(name.lowercased()) checksum algorithm.")
            }
            guard type == "FULL_OBJECT" || algorithm != .crc64nvme else {
                throw S3Failure("InvalidRequest", "The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.")
            }
            echoed.append(("x-amz-checksum-type", type))
            checksumAlgorithm = algorithm
            composite = type == "COMPOSITE"
        } else if try context.header("x-amz-checksum-type") != nil {
            throw S3Failure("InvalidRequest", "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
        }
        sweepBackendUploads()
        let id = try startBackendUpload(context, key: key, options: uploadOptions, checksumAlgorithm: checksumAlgorithm, composite: composite)
        return initiated(context, id: id, echoed: echoed)
    }

    private func initiated(_ context: RequestContext, id: String, echoed: [(name: String, value: String)]) -> HTTPServerResponse {
        var response = Self.xml(
            "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><UploadId>\(id)</UploadId></InitiateMultipartUploadResult>"
        )
        response.headers += echoed
        return response
    }

    func uploadPart(_ context: inout RequestContext, uploadId: String, body: HTTPRequestBody) throws -> HTTPServerResponse {
        _ = try remoteKey(context, for: .write)
        guard let text = context.query["partNumber"], text.utf8.count <= 5, text.utf8.allSatisfy({ (48...57).contains($0) }), let number = Int(text),
              (1...10_000).contains(number)
        else { throw S3Failure("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.") }
        return try uploadBackendPart(&context, uploadId: uploadId, number: number, body: body)
    }

    /// Where a part's bytes come from, read once: `next` hands them out, `finish` gives their
    /// count, MD5 and checksum once they are all read.
    struct PartSource {
        var next: () throws -> Data?
        var finish: () throws -> (count: Int64, md5: String?, checksum: (algorithm: S3ChecksumAlgorithm, value: [UInt8])?)
        /// The length declared (the body's) or known (a copied range); nil for a body of unknown length.
        var length: Int64?
        /// Whether the bytes are copied from an object (UploadPartCopy) rather than sent.
        var copied: Bool
    }

    /// The part's bytes: the body, or with x-amz-copy-source (UploadPartCopy) a range of an
    /// object the grants let this user read, read from the backend; each part's checksum is
    /// computed in the upload's algorithm.
    func partSource(_ context: inout RequestContext, body: HTTPRequestBody, checksumAlgorithm: S3ChecksumAlgorithm?) throws -> PartSource {
        let copied = context.request.values("x-amz-copy-source").isEmpty ? nil : try copySource(context)
        var next: () throws -> Data?
        var finish: () throws -> (count: Int64, md5: String?, checksum: (algorithm: S3ChecksumAlgorithm, value: [UInt8])?)
        let length: Int64?
        if let (source, file) = copied {
            context.operation = "UploadPartCopy"
            let range = try Self.copyRange(try context.header("x-amz-copy-source-range"), size: file.size)
            guard range.upperBound - range.lowerBound <= options.maximumPartSize else {
                throw S3Failure("InvalidArgument", "A copied part may be at most \(options.maximumPartSize) bytes.")
            }
            let conditional = provider.capabilities.supports(.conditionalRead) ? file.etag : nil
            let stream = try Blocking.wait { [provider] in
                try await provider.openRead(remotePath: source, options: ReadOptions(range: range.isEmpty ? nil : range, ifMatch: conditional))
            }.bytes
            let hasher = try DigestHasher(.md5)
            let checksum = try checksumAlgorithm.map(S3ChecksumComputer.init)
            var count: Int64 = 0
            next = {
                guard !range.isEmpty, let chunk = try Blocking.wait({ try await stream.next() }) else { return nil }
                hasher.update(chunk)
                checksum?.update(chunk)
                count += Int64(chunk.count)
                return chunk
            }
            finish = { (count, hasher.finalize().hex, checksum.map { ($0.algorithm, $0.finalize()) }) }
            length = range.upperBound - range.lowerBound
        } else {
            let body = try S3UploadBody(context, body: body, maximumSize: options.maximumPartSize, computeMD5: true, computing: checksumAlgorithm)
            next = { try body.next() }
            finish = { (body.count, body.md5?.hex, body.computedChecksum) }
            length = body.expectedLength
        }
        return PartSource(next: next, finish: finish, length: length, copied: copied != nil)
    }

    /// Aborts every upload into `bucket` (the bucket is going).
    func abortUploads(inBucket bucket: String) throws { try abortBackendUploads(inBucket: bucket) }

    /// `x-amz-copy-source-range: bytes=FIRST-LAST` (both given, inside the object), or the whole
    /// object when absent.
    static func copyRange(_ header: String?, size: Int64) throws -> Range<Int64> {
        guard let header else { return 0..<size }
        let invalid = S3Failure("InvalidArgument", "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
        let spec = header.trimmingCharacters(in: .whitespaces)
        guard spec.hasPrefix("bytes=") else { throw invalid }
        let parts = spec.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 18 && $0.utf8.allSatisfy { (48...57).contains($0) } }),
              let first = Int64(parts[0]), let last = Int64(parts[1]), first <= last
        else { throw invalid }
        guard last < size else { throw S3Failure("InvalidRange", "The requested range is not satisfiable.") }
        return first..<(last + 1)
    }

    func abortUpload(_ context: RequestContext, uploadId: String) throws -> HTTPServerResponse {
        _ = try remoteKey(context, for: .write)
        return try abortBackendUpload(context, uploadId: uploadId)
    }

    func listParts(_ context: RequestContext, uploadId: String) throws -> HTTPServerResponse {
        _ = try remoteKey(context, for: .write)
        let record = try backendUpload(uploadId, context)
        let parts = try backendParts(context, uploadId: uploadId, record: record)
        let (algorithm, composite) = (record.algorithm, record.composite)
        let byNumber = Dictionary(parts.map { ($0.number, $0) }, uniquingKeysWith: { $1 })
        var maxParts = 1000
        if let text = context.query["max-parts"] {
            guard text.utf8.count <= 6, let value = Int(text), value >= 0 else { throw S3Failure("InvalidArgument", "max-parts must be a number.") }
            maxParts = min(value, 1000)
        }
        let marker = context.query["part-number-marker"].flatMap { Int($0) } ?? 0
        let numbers = byNumber.keys.sorted().filter { $0 > marker }
        let shown = numbers.prefix(maxParts)
        let truncated = numbers.count > shown.count
        var xml = "<ListPartsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><UploadId>\(uploadId)</UploadId>"
        xml += "<PartNumberMarker>\(marker)</PartNumberMarker><NextPartNumberMarker>\(shown.last ?? marker)</NextPartNumberMarker><MaxParts>\(maxParts)</MaxParts><IsTruncated>\(truncated)</IsTruncated>"
        if let algorithm {
            xml += "<ChecksumAlgorithm>\(algorithm.rawValue.uppercased())</ChecksumAlgorithm><ChecksumType>\(composite ? "COMPOSITE" : "FULL_OBJECT")</ChecksumType>"
        }
        for number in shown {
            guard let part = byNumber[number] else { continue }
            var checksumElement = ""
            if let algorithm, let value = part.checksum { checksumElement = algorithm.element(Data(value).base64EncodedString()) }
            xml += "<Part><PartNumber>\(number)</PartNumber><LastModified>\(Self.isoDate(part.modified))</LastModified><ETag>\"\(part.etag)\"</ETag><Size>\(part.size)</Size>\(checksumElement)</Part>"
        }
        return Self.xml(xml + "</ListPartsResult>")
    }

    func listUploads(_ context: RequestContext) throws -> HTTPServerResponse {
        try requireBucketVisible(context)
        try requireBucket(context.bucket)
        let prefix = context.query["prefix"] ?? ""
        var maxUploads = 1000
        if let text = context.query["max-uploads"] {
            guard text.utf8.count <= 6, let value = Int(text), value >= 0 else { throw S3Failure("InvalidArgument", "max-uploads must be a number.") }
            maxUploads = min(value, 1000)
        }
        let keyMarker = context.query["key-marker"] ?? ""
        let idMarker = context.query["upload-id-marker"] ?? ""
        let principal = context.principal
        let all = try backendUploads(inBucket: context.bucket).map {
            (key: $0.record.key, id: $0.id, owner: $0.record.owner, initiated: Date(timeIntervalSince1970: $0.record.initiated))
        }
        let uploads = all
            .filter { $0.owner == principal?.name ?? "" && $0.key.utf8HasPrefix(prefix) }
            .filter { principal?.grants.permits(.write, key: context.bucket + "/" + $0.key) == true }
            .sorted { ($0.key, $0.id) < ($1.key, $1.id) }
            .filter { keyMarker.isEmpty || $0.key > keyMarker || ($0.key == keyMarker && !idMarker.isEmpty && $0.id > idMarker) }
        let shown = uploads.prefix(maxUploads)
        let truncated = uploads.count > shown.count
        var xml = "<ListMultipartUploadsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>\(context.bucket.xmlEscaped)</Bucket>"
        xml += "<KeyMarker>\(keyMarker.xmlEscaped)</KeyMarker><UploadIdMarker>\(idMarker.xmlEscaped)</UploadIdMarker><Prefix>\(prefix.xmlEscaped)</Prefix>"
        if truncated, let last = shown.last {
            xml += "<NextKeyMarker>\(last.key.xmlEscaped)</NextKeyMarker><NextUploadIdMarker>\(last.id)</NextUploadIdMarker>"
        }
        xml += "<MaxUploads>\(maxUploads)</MaxUploads><IsTruncated>\(truncated)</IsTruncated>"
        for upload in shown {
            let owner = upload.owner.xmlEscaped
            xml += "<Upload><Key>\(upload.key.xmlEscaped)</Key><UploadId>\(upload.id)</UploadId><Initiator><ID>\(owner)</ID><DisplayName>\(owner)</DisplayName></Initiator>"
            xml += "<Owner><ID>\(owner)</ID><DisplayName>\(owner)</DisplayName></Owner><StorageClass>STANDARD</StorageClass><Initiated>\(Self.isoDate(upload.initiated))</Initiated></Upload>"
        }
        return Self.xml(xml + "</ListMultipartUploadsResult>")
    }

    /// Removes a spooled part; a failure leaves it for ``close()``, which removes the whole staging folder.
    static func removeQuietly(_ url: URL) {
        do {
            try FileManager.default.removeItem(at: url)
        } catch {
            // Left for close(): the staging folder goes as a whole when the gateway stops.
        }
    }
}
