import BuckiaCore
import BuckiaSigV4
import Foundation

/// An upload's body as the gateway reads it: the bytes a client meant, decoded from
/// `aws-chunked` when it is streamed that way, with every check the request asks for made as
/// they pass — the signed payload hash, each chunk's signature, `Content-MD5`, the
/// `x-amz-checksum-*` value (in a header or in the trailer), the declared length. The last
/// check happens before ``next()`` returns nil, so a consumer that stores only a stream that
/// ended normally never stores a body that failed one.
final class S3UploadBody {
    private enum Mode {
        case plain
        case chunked(signed: Bool, trailer: Bool)
    }

    private let body: HTTPRequestBody
    private let mode: Mode
    private var chunkVerifier: SigV4ChunkVerifier?
    /// The length the request declares for the decoded body, when it declares one.
    let expectedLength: Int64?
    private let payloadHash: String?
    private let contentMD5: [UInt8]?
    /// The MD5 `x-amz-meta-md5chksum` declares (rclone's metadata), checked here with the same
    /// pass instead of by the backend with another.
    private let declaredMD5: [UInt8]?
    /// The `x-amz-checksum-*` algorithm and its expected value (nil until the trailer brings it).
    private var checksumName: String?
    private var checksumValue: String?
    private let digests: DigestSet
    /// Computes the checksum sent, or the one a multipart upload asks every part for.
    private let checksum: S3ChecksumComputer?
    private(set) var count: Int64 = 0
    private var buffer = Data()
    private var chunkLeft: Int64 = 0
    private var chunkHasher: DigestHasher?
    private var chunkSignature = ""
    private var finished = false
    /// The MD5 of the bytes, once they have all been read.
    private(set) var md5: Digest?
    /// The checksum header (name and base64 value) the client sent, once checked.
    private(set) var checkedChecksum: (name: String, value: String)?
    /// The checksum computed of the bytes (the one sent, else the one asked for), once read.
    private(set) var computedChecksum: (algorithm: S3ChecksumAlgorithm, value: [UInt8])?
    /// The checksum the client sent in a header (not in a trailer): known before the body.
    private(set) var headerChecksum: (algorithm: S3ChecksumAlgorithm, value: String)?

    /// Every checksum S3 accepts, by header name, with its length in bytes.
    static let checksumLengths = Dictionary(uniqueKeysWithValues: S3ChecksumAlgorithm.allCases.map { ($0.header, $0.length) })
    static let checksumNames = checksumLengths.keys.sorted()
    /// The `x-amz-checksum-*` headers that are not a checksum value.
    static let checksumSettings: Set<String> = ["x-amz-checksum-algorithm", "x-amz-checksum-type", "x-amz-checksum-mode"]

    /// Reads `body` as the request in `context` declares it. The MD5 of the bytes is computed
    /// when `computeMD5` asks for it (a part's ETag) or a check needs it (`Content-MD5`,
    /// `declaredMD5`), and not otherwise: on a large PUT each hash pass costs more than the write.
    ///
    /// `computing` names a checksum to compute when none is sent (a multipart upload's
    /// algorithm, which every part has); a different one sent is refused. With
    /// `checksumsDescribeBody` false the `x-amz-checksum-*` headers describe something else (a
    /// completion's object) and are not checked against this body.
    ///
    /// - Throws: ``S3Failure`` for a body the request's headers describe wrongly or not at all.
    init(
        _ context: S3Gateway.RequestContext, body: HTTPRequestBody, maximumSize: Int64, computeMD5: Bool = false, declaredMD5: String? = nil,
        computing: S3ChecksumAlgorithm? = nil, checksumsDescribeBody: Bool = true
    ) throws {
        self.body = body
        guard let authentication = context.authentication else { throw S3Failure("AccessDenied", "Access Denied") }
        let declaredHash = authentication.authorization.payloadHash
        switch declaredHash {
        case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD": mode = .chunked(signed: true, trailer: false)
        case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER": mode = .chunked(signed: true, trailer: true)
        case "STREAMING-UNSIGNED-PAYLOAD-TRAILER": mode = .chunked(signed: false, trailer: true)
        default: mode = .plain
        }
        if case .chunked(let signed, _) = mode {
            guard let decoded = try context.header("x-amz-decoded-content-length"), !decoded.isEmpty, decoded.utf8.count <= 18,
                  decoded.utf8.allSatisfy({ (48...57).contains($0) }), let length = Int64(decoded)
            else { throw S3Failure("MissingContentLength", "A streamed upload needs x-amz-decoded-content-length.", status: 411) }
            expectedLength = length
            if signed {
                guard !authentication.authorization.isPresigned else { throw S3Failure("InvalidArgument", "A presigned URL cannot stream signed chunks.") }
                chunkVerifier = SigV4ChunkVerifier(authorization: authentication.authorization, secret: authentication.secret)
            }
        } else {
            // The decoded length belongs to aws-chunked framing. With a plain payload hash the
            // body would be stored as it came, framing and all, and its hash never match.
            guard try context.header("x-amz-decoded-content-length") == nil else {
                throw S3Failure(
                    "InvalidArgument",
                    "x-amz-decoded-content-length describes an aws-chunked body, but the payload hash is not a STREAMING-… one; send the body plain without it, or sign it as aws-chunked.")
            }
            expectedLength = body.declaredLength
        }
        if let expectedLength, expectedLength > maximumSize {
            throw S3Failure("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size (\(maximumSize) bytes).")
        }
        payloadHash = declaredHash.utf8.count == 64 ? declaredHash : nil
        if let text = try context.header("content-md5") {
            guard let bytes = Data(base64Encoded: text), bytes.count == 16 else {
                throw S3Failure("InvalidDigest", "The Content-MD5 you specified was invalid.")
            }
            contentMD5 = Array(bytes)
        } else {
            contentMD5 = nil
        }
        self.declaredMD5 = declaredMD5.flatMap { Hex.decode($0) }
        // A checksum the gateway cannot check is refused, never stored unchecked.
        if let unknown = context.request.headers.map({ $0.name.lowercased() }).first(where: {
            $0.hasPrefix("x-amz-checksum-") && Self.checksumLengths[$0] == nil && !Self.checksumSettings.contains($0)
        }) {
            throw S3Failure("InvalidRequest", "The checksum \(unknown) is not one S3 accepts (CRC32, CRC32C, CRC64NVME, SHA1, SHA256).")
        }
        let sent = checksumsDescribeBody ? try Self.checksumNames.compactMap { name in try context.header(name).map { (name, $0) } } : []
        guard sent.count <= 1 else { throw S3Failure("InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.") }
        if let (name, value) = sent.first {
            checksumName = name
            checksumValue = value
            if let algorithm = S3ChecksumAlgorithm(name: name) { headerChecksum = (algorithm, value) }
        }
        if let trailer = try context.header("x-amz-trailer") {
            let name = trailer.trimmingCharacters(in: .whitespaces).lowercased()
            guard case .chunked(_, true) = mode else { throw S3Failure("InvalidRequest", "x-amz-trailer needs a streamed body with a trailer.") }
            guard Self.checksumNames.contains(name), checksumName == nil else {
                throw S3Failure("InvalidRequest", "The trailer may carry one x-amz-checksum-* value, and only when no header does.")
            }
            checksumName = name
        }
        var algorithms: [HashAlgorithm] = computeMD5 || contentMD5 != nil || self.declaredMD5 != nil ? [.md5] : []
        if payloadHash != nil { algorithms.append(.sha256) }
        digests = try DigestSet(algorithms)
        let named = checksumName.flatMap { S3ChecksumAlgorithm(name: $0) }
        if let computing, let named, named != computing {
            throw S3Failure("InvalidRequest", "Checksum Type mismatch occurred, expected checksum Type: \(computing.rawValue), actual checksum Type: \(named.rawValue)")
        }
        checksum = try (named ?? computing).map(S3ChecksumComputer.init)
    }

    /// The next decoded bytes, or nil once every byte has arrived and every check held.
    ///
    /// - Throws: ``S3Failure`` (`IncompleteBody`, `SignatureDoesNotMatch`, `BadDigest`,
    ///   `XAmzContentSHA256Mismatch`, `InvalidRequest`) or the connection's ``HTTPRefusal``.
    func next() throws -> Data? {
        if finished { return nil }
        let chunk: Data?
        switch mode {
        case .plain: chunk = try body.read(upTo: 256 * 1024)
        case .chunked(let signed, let trailer): chunk = try nextChunked(signed: signed, trailer: trailer)
        }
        guard let chunk, !chunk.isEmpty else {
            try finish()
            return nil
        }
        count += Int64(chunk.count)
        if let expectedLength, count > expectedLength {
            throw S3Failure("IncompleteBody", "The body is longer than its declared length.")
        }
        digests.update(chunk)
        checksum?.update(chunk)
        return chunk
    }

    private func finish() throws {
        finished = true
        if let expectedLength, count != expectedLength {
            throw S3Failure("IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header (\(count) of \(expectedLength)).")
        }
        let computed = digests.finalize()
        md5 = computed[.md5]
        if let payloadHash, computed[.sha256]?.hex != payloadHash {
            throw S3Failure("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
        }
        if let contentMD5, computed[.md5]?.bytes != contentMD5 {
            throw S3Failure("BadDigest", "The Content-MD5 you specified did not match what we received.")
        }
        if let declaredMD5, computed[.md5]?.bytes != declaredMD5 {
            throw S3Failure("BadDigest", "The MD5 in x-amz-meta-md5chksum does not match what we received.")
        }
        let actual = checksum?.finalize() ?? []
        if let checksum { computedChecksum = (checksum.algorithm, actual) }
        if let checksumName {
            guard let checksumValue else { throw S3Failure("IncompleteBody", "The trailer did not carry the \(checksumName) it announced.") }
            guard let expected = Data(base64Encoded: checksumValue), expected.count == Self.checksumLengths[checksumName] else {
                throw S3Failure("InvalidRequest", "Value for \(checksumName) header is invalid.")
            }
            guard Array(expected) == actual else {
                let algorithm = checksumName.dropFirst("x-amz-checksum-".count).uppercased()
                throw S3Failure("BadDigest", "The \(algorithm) you specified did not match the calculated checksum.")
            }
            checkedChecksum = (checksumName, checksumValue)
        }
    }

    // MARK: - aws-chunked

    private func nextChunked(signed: Bool, trailer: Bool) throws -> Data? {
        if chunkLeft == 0 {
            let line = try readLine(limit: 4096, what: "a chunk header")
            let parts = line.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
            let sizeText = parts[0].trimmingCharacters(in: .whitespaces)
            guard !sizeText.isEmpty, sizeText.utf8.count <= 15, let size = Int64(sizeText, radix: 16), size >= 0 else {
                throw S3Failure("InvalidRequest", "A chunk of the aws-chunked body has no size.")
            }
            if signed {
                guard parts.count == 2, parts[1].hasPrefix("chunk-signature=") else {
                    throw S3Failure("InvalidRequest", "A chunk of a signed aws-chunked body has no chunk-signature.")
                }
                chunkSignature = String(parts[1].dropFirst("chunk-signature=".count))
                chunkHasher = try DigestHasher(.sha256)
            }
            if size == 0 {
                if signed { try verifyChunk() }
                try readTrailer(signed: signed && trailer)
                guard try fill() == false else { throw S3Failure("InvalidRequest", "Bytes follow the end of the aws-chunked body.") }
                return nil
            }
            chunkLeft = size
        }
        if buffer.isEmpty {
            guard try fill() else { throw S3Failure("IncompleteBody", "The body ended inside a chunk.") }
        }
        let take = Int(min(Int64(buffer.count), chunkLeft))
        let bytes = buffer.prefix(take)
        buffer.removeFirst(take)
        chunkLeft -= Int64(take)
        chunkHasher?.update(bytes)
        if chunkLeft == 0 {
            guard try readLine(limit: 2, what: "a chunk's end").isEmpty else { throw S3Failure("InvalidRequest", "A chunk does not end with CRLF.") }
            if signed { try verifyChunk() }
        }
        return Data(bytes)
    }

    private func verifyChunk() throws {
        guard var verifier = chunkVerifier, let hasher = chunkHasher else { return }
        try verifier.verifyChunk(sha256: hasher.finalize(), signature: chunkSignature)
        chunkVerifier = verifier
        chunkHasher = nil
    }

    private func readTrailer(signed: Bool) throws {
        var fields: [(name: String, value: String)] = []
        var signature: String?
        var bytes = 0
        while true {
            let line = try readLine(limit: 8192, what: "the trailer")
            if line.isEmpty { break }
            bytes += line.utf8.count
            guard bytes <= 16_384, fields.count < 16, let colon = line.firstIndex(of: ":") else {
                throw S3Failure("InvalidRequest", "The aws-chunked trailer is malformed.")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "x-amz-trailer-signature" {
                signature = value
            } else {
                fields.append((name, value))
            }
        }
        if signed {
            guard var verifier = chunkVerifier, let signature else {
                throw S3Failure("SignatureDoesNotMatch", "The trailer of a signed aws-chunked body carries no x-amz-trailer-signature.")
            }
            try verifier.verifyTrailer(fields, signature: signature)
            chunkVerifier = verifier
        }
        for (name, value) in fields where name.hasPrefix("x-amz-checksum-") {
            guard name == checksumName, checksumValue == nil else {
                throw S3Failure("InvalidRequest", "The trailer carries \(name), which x-amz-trailer did not announce.")
            }
            checksumValue = value
        }
    }

    /// Appends what the connection has; false at the body's end.
    private func fill() throws -> Bool {
        guard let more = try body.read(upTo: 256 * 1024), !more.isEmpty else { return false }
        buffer.append(more)
        return true
    }

    private func readLine(limit: Int, what: String) throws -> String {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let lineEnd = newline > buffer.startIndex && buffer[buffer.index(before: newline)] == UInt8(ascii: "\r") ? buffer.index(before: newline) : newline
                guard lineEnd - buffer.startIndex <= limit else { throw S3Failure("InvalidRequest", "\(what) of the aws-chunked body is too long.") }
                let line = String(decoding: buffer[buffer.startIndex..<lineEnd], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            guard buffer.count <= limit + 2 else { throw S3Failure("InvalidRequest", "\(what) of the aws-chunked body is too long.") }
            guard try fill() else { throw S3Failure("IncompleteBody", "The body ended inside \(what).") }
        }
    }
}

/// Hands an upload's bytes from the connection's thread to the backend's upload task, a few
/// chunks at a time: the thread blocks while the task is behind (backpressure), and the task
/// waits while the client is slow.
final class BodyPipe: Sendable {
    private struct State: Sendable {
        var chunks: [Data] = []
        var end: Result<Void, any Error>?
        var closed = false
        var waiter: CheckedContinuation<Data?, any Error>?
    }

    private let state = Locked(State())
    private let slots: DispatchSemaphore

    init(capacity: Int = 4) {
        slots = DispatchSemaphore(value: capacity)
    }

    /// The stream the backend reads.
    var stream: ByteStream {
        ByteStream(next: { [self] in try await self.next() }, onCancel: { [self] in self.close() })
    }

    /// Hands over `data`, waiting for room; false when the reader has gone.
    func push(_ data: Data) -> Bool {
        slots.wait()
        enum Outcome { case closed, handed(CheckedContinuation<Data?, any Error>), queued }
        let outcome = state.withLock { state -> Outcome in
            if state.closed { return .closed }
            if let waiter = state.waiter {
                state.waiter = nil
                return .handed(waiter)
            }
            state.chunks.append(data)
            return .queued
        }
        switch outcome {
        case .closed:
            slots.signal()
            return false
        case .handed(let waiter):
            slots.signal()
            waiter.resume(returning: data)
            return true
        case .queued:
            return true
        }
    }

    /// Ends the stream: normally, or with `error`.
    func finish(_ error: (any Error)?) {
        let waiter = state.withLock { state in
            state.end = error.map { .failure($0) } ?? .success(())
            defer { state.waiter = nil }
            return state.waiter
        }
        if let waiter {
            if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
        }
    }

    private func next() async throws -> Data? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
            enum Outcome { case chunk(Data), end(Result<Void, any Error>), closed, waiting }
            let outcome = state.withLock { state -> Outcome in
                if !state.chunks.isEmpty { return .chunk(state.chunks.removeFirst()) }
                if let end = state.end { return .end(end) }
                if state.closed { return .closed }
                state.waiter = continuation
                return .waiting
            }
            switch outcome {
            case .chunk(let data):
                slots.signal()
                continuation.resume(returning: data)
            case .end(.success), .closed:
                continuation.resume(returning: nil)
            case .end(.failure(let error)):
                continuation.resume(throwing: error)
            case .waiting:
                break
            }
        }
    }

    private func close() {
        let waiter = state.withLock { state in
            state.closed = true
            state.chunks.removeAll()
            defer { state.waiter = nil }
            return state.waiter
        }
        slots.signal()
        waiter?.resume(returning: nil)
    }
}

extension S3Gateway {
    /// Streams `upload`'s bytes into `store` (which reads them as a ``ByteStream`` and stores
    /// them only if the stream ends normally) and returns what `store` returns.
    func streamUpload<T: Sendable>(_ upload: S3UploadBody, into store: @escaping @Sendable (ByteStream) async throws -> T) throws -> T {
        try streamUpload(reading: { try upload.next() }, into: store)
    }

    /// As ``streamUpload(_:into:)``, over any reader; `finishing` runs after its last bytes and
    /// before the stream ends, so a check that fails there keeps the backend from storing it.
    func streamUpload<T: Sendable>(
        reading next: () throws -> Data?, into store: @escaping @Sendable (ByteStream) async throws -> T, before finishing: () throws -> Void = {}
    ) throws -> T {
        let pipe = BodyPipe()
        let outcome = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let stream = pipe.stream
        Blocking.start {
            let result: Result<T, any Error>
            do { result = .success(try await store(stream)) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        var readFailure: (any Error)?
        do {
            var open = true
            while open, let chunk = try next() {
                open = pipe.push(chunk)
            }
            if open { try finishing() }
        } catch {
            readFailure = error
        }
        pipe.finish(readFailure)
        done.wait()
        // The body's own failure says more than the backend's report of the stream ending.
        if let readFailure { throw readFailure }
        guard let result = outcome.withLock({ $0 }) else { throw BuckiaError(.io, "The gateway lost the result of an upload.") }
        return try result.get()
    }
}
