import BuckiaCore
import Foundation

/// Completing a multipart upload: the parts listed, checked against those received, become the
/// object — the upload's own file when the parts fill it in order (``MultipartUpload``), else
/// the pieces streamed in order — and a completion sent again gets the answer it was given.
extension S3Gateway {
    /// What a CompleteMultipartUpload asks: the parts listed (ascending, each with its ETag and
    /// checksums), the object's checksum header if sent, and the write condition.
    struct CompletionRequest {
        var listed: [(number: Int, etag: String, checksums: [S3ChecksumAlgorithm: String])]
        var sentChecksum: (S3ChecksumAlgorithm, String)?
        var condition: WriteCondition?
        /// The parts as a retry must list them again to get the first answer.
        var asked: [String] { listed.map { "\($0.number) \(S3Gateway.bareTag($0.etag))" } }
    }

    func completionRequest(_ context: inout RequestContext, body: HTTPRequestBody) throws -> CompletionRequest {
        // A completion's checksum header is the object's (checked below), not its body's.
        let request = try S3UploadBody(context, body: body, maximumSize: 4 << 20, checksumsDescribeBody: false)
        var data = Data()
        while let chunk = try request.next() { data.append(chunk) }
        context.bytesIn = request.count
        let document = try Self.parseXML(data, what: "CompleteMultipartUpload")
        guard document.name == "CompleteMultipartUpload" else {
            throw S3Failure("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
        }
        var listed: [(number: Int, etag: String, checksums: [S3ChecksumAlgorithm: String])] = []
        for part in document.children("Part") {
            guard let numberText = part.value("PartNumber"), let number = Int(numberText.trimmingCharacters(in: .whitespacesAndNewlines)),
                  let etag = part.value("ETag")
            else { throw S3Failure("MalformedXML", "Each Part needs a PartNumber and an ETag.") }
            var checksums: [S3ChecksumAlgorithm: String] = [:]
            for algorithm in S3ChecksumAlgorithm.allCases {
                if let value = part.value(algorithm.xmlName) { checksums[algorithm] = value.trimmingCharacters(in: .whitespacesAndNewlines) }
            }
            listed.append((number, etag, checksums))
        }
        let sentChecksums = try S3ChecksumAlgorithm.allCases.compactMap { algorithm in try context.header(algorithm.header).map { (algorithm, $0) } }
        guard sentChecksums.count <= 1 else { throw S3Failure("InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.") }
        guard !listed.isEmpty else { throw S3Failure("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.") }
        for (previous, next) in zip(listed, listed.dropFirst()) where next.number <= previous.number {
            throw S3Failure("InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.")
        }
        return CompletionRequest(listed: listed, sentChecksum: sentChecksums.first, condition: try uploadOptions(context).condition)
    }

    func completeUpload(_ context: inout RequestContext, uploadId: String, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .write)
        if provider.capabilities.supports(.partUploads) { return try completeBackendUpload(&context, uploadId: uploadId, key: key, body: body) }
        let request = try completionRequest(&context, body: body)
        let listed = request.listed
        var options = UploadOptions(condition: request.condition)
        let asked = request.asked
        let now = self.options.clock()
        // Take the upload for completing: parts arriving now are refused. The same request
        // again, for an upload completed here, gets the answer it was given (its client lost it).
        let (claimed, replay): (MultipartUpload?, String?) = try state.withLock { state in
            guard var upload = state.uploads[uploadId], upload.bucket == context.bucket, upload.key == context.key,
                  upload.owner == context.principal?.name
            else {
                guard let done = state.completed[uploadId], now.timeIntervalSince(done.at) < 3_600, done.bucket == context.bucket,
                      done.key == context.key, done.owner == context.principal?.name, done.parts == asked
                else { return (nil, nil) }
                return (nil, done.answer)
            }
            guard !upload.completing else { throw S3Failure("OperationAborted", "The upload is already being completed.") }
            upload.completing = true
            state.uploads[uploadId] = upload
            return (upload, nil)
        }
        if let replay { return Self.xml(replay) }
        guard let upload = claimed else { throw S3Failure("NoSuchUpload", "The specified multipart upload does not exist.") }
        let release = { [state] in state.withLock { $0.uploads[uploadId]?.completing = false } }
        var pieces: [(location: MultipartUpload.Location, size: Int64)] = []
        var objectChecksum: S3StoredChecksum?
        do {
            for (index, item) in listed.enumerated() {
                guard let part = upload.parts[item.number], Self.bareTag(item.etag) == part.md5 else {
                    throw S3Failure(
                        "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
                }
                if index < listed.count - 1 && part.size < self.options.minimumPartSize {
                    throw S3Failure("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
                }
                pieces.append((part.location, part.size))
            }
            objectChecksum = try Self.objectChecksum(
                upload.checksumAlgorithm, composite: upload.compositeChecksum, parts: upload.parts.mapValues { ($0.size, $0.checksum) },
                listed: listed.map { ($0.number, $0.checksums) }, sent: request.sentChecksum)
        } catch {
            release()
            throw error
        }
        options.contentType = upload.options.contentType
        options.modificationDate = upload.options.modificationDate
        options.metadata = upload.options.metadata
        options.contentHeaders = upload.options.contentHeaders
        options.knownChecksums = listed.count == 1 ? upload.options.knownChecksums : [:]
        // The parts' sizes and the object's checksum, for part reads and checksum mode.
        if provider.capabilities.supports(.userMetadata) {
            options.metadata[S3ObjectRecord.metadataName] = S3ObjectRecord(partSizes: pieces.map(\.size), checksum: objectChecksum).text
        }
        let stored: RemoteFile
        do {
            if let size = Self.wholeObjectSize(listed.map(\.number), pieces, upload) {
                stored = try storeAssembly(upload, size: size, key: key, options: options)
            } else {
                let stream = Self.concatenation(pieces.map { piece in
                    switch piece.location {
                    case .assembly(let offset): (upload.assembly.url, offset..<(offset + piece.size))
                    case .file(let url): (url, 0..<piece.size)
                    }
                })
                let finalOptions = options
                stored = try Blocking.wait { [provider] in try await provider.upload(from: stream, remotePath: key, options: finalOptions) }
            }
        } catch {
            if Self.isLinkedElsewhere(upload.assembly) {
                // The backend placed the file and failed after (syncing its folder): the
                // object shares the upload's bytes, so no part may be written there again.
                state.withLock { _ = $0.uploads.removeValue(forKey: uploadId) }
                Self.removeQuietly(upload.folder)
            } else {
                release()
            }
            throw error
        }
        let answer =
            "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>/\(context.bucket.xmlEscaped)/\(context.key.xmlEscaped)</Location><Bucket>\(context.bucket.xmlEscaped)</Bucket><Key>\(context.key.xmlEscaped)</Key><ETag>\(Self.etag(of: stored).xmlEscaped)</ETag>\(Self.checksumElements(objectChecksum))</CompleteMultipartUploadResult>"
        let owner = context.principal?.name
        state.withLock { state in
            _ = state.uploads.removeValue(forKey: uploadId)
            if state.completed.count >= Self.completedMemory {
                // The oldest half goes: a retry comes seconds after its first try, not hours.
                let kept = state.completed.sorted { $0.value.at > $1.value.at }.prefix(Self.completedMemory / 2)
                state.completed = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
            }
            state.completed[uploadId] = CompletedUpload(
                bucket: context.bucket, key: context.key, owner: owner, parts: asked, answer: answer, at: now)
        }
        Self.removeQuietly(upload.folder)
        return Self.xml(answer)
    }

    /// The object's checksum in the upload's algorithm, from its parts' (each listed with the
    /// value it was given): of their checksums for `COMPOSITE` (`…-N`), combined into the CRC of
    /// the bytes for `FULL_OBJECT`. A checksum header on the completion must match it.
    static func objectChecksum(
        _ algorithm: S3ChecksumAlgorithm?, composite: Bool, parts: [Int: (size: Int64, checksum: [UInt8]?)],
        listed: [(number: Int, checksums: [S3ChecksumAlgorithm: String])], sent: (S3ChecksumAlgorithm, String)?
    ) throws -> S3StoredChecksum? {
        guard let algorithm else {
            if let sent { throw S3Failure("InvalidRequest", "The upload was created without a checksum, so the \(sent.0.header) header cannot be checked.") }
            return nil
        }
        var values: [[UInt8]] = []
        var sizes: [Int64] = []
        for item in listed {
            guard let given = item.checksums[algorithm] else {
                throw S3Failure(
                    "InvalidRequest",
                    "The upload was created using a \(algorithm.rawValue) checksum. The complete request must include the checksum for each part. It was missing for part \(item.number) in the request.")
            }
            guard let part = parts[item.number], let value = part.checksum, Data(base64Encoded: given).map(Array.init) == value else {
                throw S3Failure("InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified checksum may not match the part's checksum.")
            }
            values.append(value)
            sizes.append(part.size)
        }
        let checksum: S3StoredChecksum
        if composite {
            let value = Data(try algorithm.digest(Data(values.joined()))).base64EncodedString()
            checksum = S3StoredChecksum(algorithm: algorithm, value: "\(value)-\(values.count)", composite: true)
        } else {
            guard var combined = values.first else { return nil }
            for (value, size) in zip(values.dropFirst(), sizes.dropFirst()) {
                guard let next = algorithm.combine(combined, value, secondLength: size) else { return nil }
                combined = next
            }
            checksum = S3StoredChecksum(algorithm: algorithm, value: Data(combined).base64EncodedString(), composite: false)
        }
        if let (sentAlgorithm, sentValue) = sent {
            guard sentAlgorithm == algorithm else {
                throw S3Failure("InvalidRequest", "The upload was created using a \(algorithm.rawValue) checksum; the completion sent \(sentAlgorithm.header).")
            }
            let bare = checksum.value.split(separator: "-").first.map(String.init) ?? checksum.value
            guard sentValue.trimmingCharacters(in: .whitespaces) == checksum.value || sentValue.trimmingCharacters(in: .whitespaces) == bare else {
                throw S3Failure("BadDigest", "The \(algorithm.rawValue.uppercased()) you specified did not match the calculated checksum.")
            }
        }
        return checksum
    }

    /// A checksum as S3's XML answers give it: its value and its type.
    static func checksumElements(_ checksum: S3StoredChecksum?) -> String {
        guard let checksum else { return "" }
        return checksum.algorithm.element(checksum.value) + "<ChecksumType>\(checksum.type)</ChecksumType>"
    }

    /// The object's size when the upload's file already is the object: the parts listed are
    /// 1…K, all in their places in the file, every one but the last as long as the stride,
    /// and no other place is taken (no part past K, none being written), so cutting the file
    /// after part K leaves exactly the object and loses no part.
    static func wholeObjectSize(_ numbers: [Int], _ pieces: [(location: MultipartUpload.Location, size: Int64)], _ upload: MultipartUpload) -> Int64? {
        guard let stride = upload.stride, let last = pieces.last, numbers == Array(1...numbers.count),
              upload.places == Set(numbers)
        else { return nil }
        for (index, piece) in pieces.enumerated() {
            guard piece.location == .assembly(offset: Int64(index) * stride), index == pieces.count - 1 || piece.size == stride else { return nil }
        }
        return Int64(pieces.count - 1) * stride + last.size
    }

    /// Stores the upload's file, cut to `size`, as `key`: a hard link into the backend's own
    /// temporary area when it keeps files on this machine (a copy when that is another file
    /// system), then its rename into place; otherwise one `uploadFile` from it, the backend's
    /// own transfer of a local file. The upload's file stays until the backend has the
    /// object, so a completion refused by its condition can be sent again.
    private func storeAssembly(_ upload: MultipartUpload, size: Int64, key: ObjectKey, options: UploadOptions) throws -> RemoteFile {
        try upload.assembly.file.truncate(to: size)
        // Known checksums are the backend's to check, so those go through its upload.
        if provider.capabilities.supports(.localFiles), options.knownChecksums.isEmpty {
            let source = upload.assembly
            return try Blocking.wait { [provider] in
                try await provider.receiveFile(at: key, options: options) { url in
                    try Self.place(source, size: size, at: url, modified: options.modificationDate)
                }
            }
        }
        return try Blocking.wait { [provider] in try await provider.uploadFile(localURL: upload.assembly.url, remotePath: key, options: options) }
    }

    /// Puts the upload's file at `url`: a hard link, or a copy across file systems; then its
    /// modification time, and `fsync`, as the backend's own upload would leave it.
    static func place(_ source: AssemblyFile, size: Int64, at url: URL, modified: Date?) throws {
        let placed: LocalFile
        if link(source.url.path, url.path) == 0 {
            placed = try LocalFile.openForReading(url)
        } else {
            let code = errno
            guard code == EXDEV || code == EPERM || code == EMLINK else {
                throw BuckiaError.posix(code, operation: "link", path: url.path)
            }
            placed = try LocalFile.createExclusive(url)
            try source.file.copy(0..<size, to: placed)
        }
        if let modified { try placed.setModificationDate(modified) }
        try placed.sync()
        try placed.close()
    }

    /// Whether the upload's file has a name besides its own (a link the backend kept), or
    /// cannot be told not to.
    static func isLinkedElsewhere(_ assembly: AssemblyFile) -> Bool {
        do {
            return try assembly.file.statRecord().st_nlink > 1
        } catch {
            return true
        }
    }

    /// The pieces' bytes one after another, read a piece at a time.
    static func concatenation(_ files: [(url: URL, range: Range<Int64>)]) -> ByteStream {
        ByteStream.concatenating(files.count) { try ByteStream.file(files[$0].url, range: files[$0].range) }
    }
}
