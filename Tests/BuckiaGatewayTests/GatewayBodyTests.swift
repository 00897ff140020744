import BuckiaCore
import BuckiaGateway
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing


/// Every way an upload's body is checked by the gateway, through real requests: the signed
/// payload hash, `Content-MD5`, `x-amz-checksum-*` in a header, the aws-chunked forms (signed
/// chunks, signed chunks with a signed trailer, the unsigned body with a trailer) with their
/// signatures and trailing checksums, and the declared lengths. A body that passes is stored
/// byte for byte; one that fails any check answers the S3 error and stores nothing.
@Suite("S3 gateway: upload bodies and their checks")
struct GatewayBodyTests {
    static let payload = Data((0..<150_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) })

    /// An aws-chunked body: `chunks` signed in a chain from `seed` (or unsigned when nil), then
    /// the trailer fields (signed too when the chunks are).
    static func awsChunked(_ chunks: [Data], seed: String?, signer: SigV4Signer, date: Date, trailer: [(String, String)] = []) -> Data {
        var body = Data()
        var previous = seed ?? ""
        func sign(_ parts: [String]) -> String {
            let signature = signer.signature(stringToSign: parts.joined(separator: "\n"), date: date)
            previous = signature
            return signature
        }
        for chunk in chunks + [Data()] {
            var line = String(chunk.count, radix: 16)
            if seed != nil {
                let signature = sign(["AWS4-HMAC-SHA256-PAYLOAD", SigV4Date(date).timestamp, signer.scope(date), previous, SigV4Signer.emptyPayloadHash, Hashing.sha256Hex(chunk)])
                line += ";chunk-signature=\(signature)"
            }
            body.append(Data((line + "\r\n").utf8))
            if !chunk.isEmpty {
                body.append(chunk)
                body.append(Data("\r\n".utf8))
            }
        }
        for (name, value) in trailer { body.append(Data("\(name):\(value)\r\n".utf8)) }
        if seed != nil && !trailer.isEmpty {
            let canonical = trailer.map { "\($0.0):\($0.1)\n" }.joined()
            let signature = sign(["AWS4-HMAC-SHA256-TRAILER", SigV4Date(date).timestamp, signer.scope(date), previous, Hashing.sha256Hex(Data(canonical.utf8))])
            body.append(Data("x-amz-trailer-signature:\(signature)\r\n".utf8))
        }
        body.append(Data("\r\n".utf8))
        return body
    }

    @Test("The test's aws-chunked encoder reproduces AWS's published example")
    func encoderMatchesAWS() throws {
        let signer = SigV4Signer(
            credentials: AWSCredentials(accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: Secret("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")),
            region: "us-east-1", service: "s3")
        let body = Self.awsChunked(
            [Data(repeating: 97, count: 65_536), Data(repeating: 97, count: 1024)], seed: "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
            signer: signer, date: Date(timeIntervalSince1970: 1_369_353_600))
        #expect(body.count == 66_824)  // AWS's Content-Length for the example
        for signature in [
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648", "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
        ] {
            #expect(body.range(of: Data("chunk-signature=\(signature)\r\n".utf8)) != nil)
        }
    }

    /// How a case spoils the body or its headers.
    enum Case: String, CaseIterable, Sendable, CustomStringConvertible {
        case plainSigned, plainWrongHash, unsignedPayload, contentMD5, contentMD5Wrong, checksumHeader, checksumHeaderWrong, shortBody
        case signedChunks, signedChunksTampered, signedChunksReordered, signedChunksWrongSecret, signedTrailer, signedTrailerWrongSignature
        case signedTrailerWrongChecksum, unsignedTrailer, unsignedTrailerWrongChecksum, unsignedTrailerMissing, decodedLengthWrong
        case trailerUnannounced, framedUnderPlainHash

        var description: String { rawValue }

        /// The S3 error code expected, or nil for a stored object.
        var refusal: String? {
            switch self {
            case .plainSigned, .unsignedPayload, .contentMD5, .checksumHeader, .signedChunks, .signedTrailer, .unsignedTrailer: nil
            case .plainWrongHash: "XAmzContentSHA256Mismatch"
            case .contentMD5Wrong, .checksumHeaderWrong, .signedTrailerWrongChecksum, .unsignedTrailerWrongChecksum: "BadDigest"
            case .signedChunksTampered, .signedChunksReordered, .signedChunksWrongSecret, .signedTrailerWrongSignature: "SignatureDoesNotMatch"
            case .shortBody, .unsignedTrailerMissing, .decodedLengthWrong: "IncompleteBody"
            case .trailerUnannounced: "InvalidRequest"
            // aws-chunked framing sent under a plain SHA-256 of the framed bytes: stored, the
            // object would be the framing (issue 47, item 9).
            case .framedUnderPlainHash: "InvalidArgument"
            }
        }
    }

    @Test("Each body is stored whole when every check holds, and refused with nothing stored when one fails", arguments: Case.allCases)
    func body(_ bodyCase: Case) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("bodies")
        let key = "bodies/\(bodyCase).bin"
        guard let url = URL(string: harness.endpoint.absoluteString + "/" + key) else { throw BuckiaError(.invalidPath, key) }
        let credentials = AWSCredentials(accessKeyId: harness.accessKeyId, secretAccessKey: harness.secretAccessKey)
        let signer = SigV4Signer(credentials: credentials, region: "us-east-1", service: "s3")
        let date = Date()
        let payload = Self.payload
        let chunks = [payload.prefix(65_536), payload.dropFirst(65_536).prefix(65_536), payload.dropFirst(131_072)].map { Data($0) }
        let crc = Data(withUnsafeBytes(of: CRC32Test.checksum(payload).bigEndian, Array.init)).base64EncodedString()
        var headers: [String: String] = [:]
        var payloadHash = Hashing.sha256Hex(payload)
        var body = payload

        switch bodyCase {
        case .plainSigned: break
        case .plainWrongHash: payloadHash = Hashing.sha256Hex(Data("other".utf8))
        case .unsignedPayload: payloadHash = "UNSIGNED-PAYLOAD"
        case .contentMD5: headers["content-md5"] = try Hashing.digest(payload, .md5).base64
        case .contentMD5Wrong: headers["content-md5"] = try Hashing.digest(Data("other".utf8), .md5).base64
        case .checksumHeader: headers["x-amz-checksum-sha256"] = Hashing.sha256(payload).base64
        case .checksumHeaderWrong: headers["x-amz-checksum-sha256"] = Hashing.sha256(Data("other".utf8)).base64
        case .shortBody:
            payloadHash = "UNSIGNED-PAYLOAD"
            headers["x-amz-decoded-content-length"] = nil
        default:
            headers["content-encoding"] = "aws-chunked"
            headers["x-amz-decoded-content-length"] = String(payload.count)
        }
        let signed: Bool
        switch bodyCase {
        case .signedChunks, .signedChunksTampered, .signedChunksReordered, .signedChunksWrongSecret, .decodedLengthWrong:
            payloadHash = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
            signed = true
        case .signedTrailer, .signedTrailerWrongSignature, .signedTrailerWrongChecksum:
            payloadHash = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
            headers["x-amz-trailer"] = "x-amz-checksum-crc32"
            signed = true
        case .unsignedTrailer, .unsignedTrailerWrongChecksum, .unsignedTrailerMissing, .trailerUnannounced:
            payloadHash = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
            if bodyCase != .trailerUnannounced { headers["x-amz-trailer"] = "x-amz-checksum-crc32" }
            signed = false
        default:
            signed = false
        }
        if bodyCase == .decodedLengthWrong { headers["x-amz-decoded-content-length"] = String(payload.count + 1) }
        if bodyCase == .framedUnderPlainHash {
            body = Self.awsChunked(chunks, seed: nil, signer: signer, date: date)
            payloadHash = Hashing.sha256Hex(body)
        }
        let signedHeaders = signer.sign(method: "PUT", url: url, headers: headers, payloadHash: payloadHash, date: date)
        if payloadHash.hasPrefix("STREAMING-") {
            let seed = signedHeaders["authorization"].flatMap { $0.components(separatedBy: "Signature=").last }
            var chunkSigner = signer
            switch bodyCase {
            case .signedChunksWrongSecret:
                chunkSigner = SigV4Signer(credentials: AWSCredentials(accessKeyId: harness.accessKeyId, secretAccessKey: Secret("wrong")), region: "us-east-1", service: "s3")
            default: break
            }
            var trailer: [(String, String)] = []
            switch bodyCase {
            case .signedTrailer, .unsignedTrailer, .signedTrailerWrongSignature, .trailerUnannounced: trailer = [("x-amz-checksum-crc32", crc)]
            case .signedTrailerWrongChecksum, .unsignedTrailerWrongChecksum: trailer = [("x-amz-checksum-crc32", "AAAAAA==")]
            default: break
            }
            body = Self.awsChunked(chunks, seed: signed ? seed : nil, signer: chunkSigner, date: date, trailer: trailer)
            // Changed on the way, after signing: a byte of the second chunk, or the first two
            // chunks' bytes swapped under their own headers.
            let header = ";chunk-signature=".utf8.count + 64 + 2 + 5  // "10000" plus the signature line
            switch bodyCase {
            case .signedChunksTampered: body[header + 65_536 + 2 + header + 100] ^= 1
            case .signedChunksReordered:
                let first = body.subdata(in: header..<(header + 65_536))
                let secondStart = header + 65_536 + 2 + header
                let second = body.subdata(in: secondStart..<(secondStart + 65_536))
                body.replaceSubrange(header..<(header + 65_536), with: second)
                body.replaceSubrange(secondStart..<(secondStart + 65_536), with: first)
            default: break
            }
            if bodyCase == .signedTrailerWrongSignature, let range = body.range(of: Data("x-amz-trailer-signature:".utf8)) {
                body[range.upperBound] = body[range.upperBound] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            }
        }
        if bodyCase == .shortBody {
            // Declares the payload's length and sends less: the raw socket keeps the lie.
            let head = (["PUT /\(key) HTTP/1.1", "Host: 127.0.0.1:\(harness.server.port)", "Content-Length: \(payload.count)"]
                + signedHeaders.map { "\($0.key): \($0.value)" }).joined(separator: "\r\n") + "\r\n\r\n"
            let port = harness.server.port
            let answer = try await offPool {
                let client = try RawClient(port: port)
                client.send(head)
                client.send(Array(payload.prefix(1000)))
                shutdown(client.descriptor, Int32(SHUT_WR))
                return client.readAll()
            }
            #expect(answer.isEmpty || answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
        } else {
            let answer = try await RawHTTP.exchange(
                port: harness.server.port, method: "PUT", target: "/" + key, headers: signedHeaders.map { ($0.key, $0.value) }, body: body)
            let status = answer.status
            let text = String(decoding: answer.body, as: UTF8.self)
            if let refusal = bodyCase.refusal {
                #expect(status >= 400, "\(text)")
                #expect(text.contains("<Code>\(refusal)</Code>"), "\(text)")
            } else {
                #expect(status == 200, "\(text)")
            }
        }
        let stored = try await harness.provider.stat(remotePath: ObjectKey(key))
        if bodyCase.refusal == nil {
            #expect(try await harness.provider.readData(remotePath: ObjectKey(key), options: ReadOptions()) == payload)
        } else {
            #expect(stored == nil, "a refused body was stored")
        }
    }
}

/// CRC-32 as S3's `x-amz-checksum-crc32` computes it, written out here so the test does not
/// lean on the gateway's own.
enum CRC32Test {
    static func checksum(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
