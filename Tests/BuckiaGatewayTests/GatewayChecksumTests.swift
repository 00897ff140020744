import BuckiaCore
import BuckiaGateway
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

/// Every checksum S3 accepts is checked by the gateway, in a header and in an aws-chunked
/// trailer: the right value stores the object, a wrong one is `BadDigest` with nothing stored.
/// CRC64NVME is what the AWS SDKs send by default since 2025.
@Suite("S3 gateway: every x-amz-checksum-* algorithm, in headers and trailers")
struct GatewayChecksumTests {
    enum Algorithm: String, CaseIterable, CustomTestStringConvertible {
        case crc32, crc32c, crc64nvme, sha1, sha256
        var testDescription: String { rawValue }
        var header: String { "x-amz-checksum-\(rawValue)" }

        /// The value, computed here bit by bit from each CRC's definition (not the gateway's tables).
        func value(_ data: Data) throws -> String {
            func reflected(_ polynomial: UInt64, width: Int) -> [UInt8] {
                let mask: UInt64 = width == 64 ? .max : (1 << UInt64(width)) - 1
                var crc = mask
                for byte in data {
                    crc ^= UInt64(byte)
                    for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
                }
                crc ^= mask
                return (0..<(width / 8)).reversed().map { UInt8(truncatingIfNeeded: crc >> UInt64(8 * $0)) }
            }
            let bytes: [UInt8]
            switch self {
            case .crc32: bytes = reflected(0xEDB8_8320, width: 32)
            case .crc32c: bytes = reflected(0x82F6_3B78, width: 32)
            case .crc64nvme: bytes = reflected(0x9A6C_9329_AC4B_C9B5, width: 64)
            case .sha1: bytes = try Hashing.digest(data, .sha1).bytes
            case .sha256: bytes = Hashing.sha256(data).bytes
            }
            return Data(bytes).base64EncodedString()
        }
    }

    enum Place: String, CaseIterable, CustomTestStringConvertible {
        case header, trailer
        var testDescription: String { rawValue }
    }

    @Test("The right value stores the object; another is BadDigest and stores nothing", arguments: Algorithm.allCases, Place.allCases)
    func checked(_ algorithm: Algorithm, _ place: Place) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("sums")
        let payload = GatewayBodyTests.payload
        #expect(try await put(harness, "sums/right.bin", payload, algorithm, try algorithm.value(payload), place).status == 200)
        #expect(try await harness.provider.readData(remotePath: ObjectKey("sums/right.bin"), options: ReadOptions()) == payload)

        let wrong = try await put(harness, "sums/wrong.bin", payload, algorithm, try algorithm.value(payload.dropLast()), place)
        #expect(wrong.status == 400 && String(decoding: wrong.body, as: UTF8.self).contains("BadDigest"), "\(String(decoding: wrong.body, as: UTF8.self))")
        #expect(try await harness.provider.stat(remotePath: ObjectKey("sums/wrong.bin")) == nil)
    }

    @Test("A checksum header the gateway cannot check, or a value of the wrong length, is refused before anything is stored")
    func unknownChecksums() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("sums")
        for (name, value) in [("x-amz-checksum-crc128", "AAAA"), ("x-amz-checksum-crc64nvme", "AAAAAA==")] {
            let (status, body) = try await harness.send("PUT", "/sums/x.bin", body: Data("x".utf8), headers: [name: value])
            #expect(status == 400 && String(decoding: body, as: UTF8.self).contains("InvalidRequest"), "\(name): \(String(decoding: body, as: UTF8.self))")
        }
        #expect(try await harness.provider.stat(remotePath: ObjectKey("sums/x.bin")) == nil)
    }

    @Test("CreateMultipartUpload echoes the checksum algorithm and type; an unknown algorithm is refused")
    func multipartAlgorithm() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("sums")
        let started = try await harness.exchange("POST", "/sums/big.bin?uploads", headers: ["x-amz-checksum-algorithm": "CRC64NVME"])
        #expect(started.status == 200)
        #expect(started.headers["x-amz-checksum-algorithm"] == "CRC64NVME" && started.headers["x-amz-checksum-type"] == "FULL_OBJECT")
        let composite = try await harness.exchange("POST", "/sums/big.bin?uploads", headers: ["x-amz-checksum-algorithm": "sha256"])
        #expect(composite.headers["x-amz-checksum-algorithm"] == "SHA256" && composite.headers["x-amz-checksum-type"] == "COMPOSITE")
        #expect(try await harness.send("POST", "/sums/big.bin?uploads", headers: ["x-amz-checksum-algorithm": "MD4"]).0 == 400)
    }

    /// A PUT of `payload` with its checksum in a header (signed body) or in an unsigned
    /// aws-chunked trailer, as boto3 sends it over plain HTTP and over TLS.
    func put(_ harness: GatewayHarness, _ key: String, _ payload: Data, _ algorithm: Algorithm, _ value: String, _ place: Place) async throws -> RawHTTP.Answer {
        let url = try #require(URL(string: harness.endpoint.absoluteString + "/" + key))
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyId: harness.accessKeyId, secretAccessKey: harness.secretAccessKey), region: "us-east-1", service: "s3")
        let date = Date()
        var headers: [String: String] = [:]
        var body = payload
        let payloadHash: String
        switch place {
        case .header:
            headers[algorithm.header] = value
            payloadHash = Hashing.sha256Hex(payload)
        case .trailer:
            headers["content-encoding"] = "aws-chunked"
            headers["x-amz-decoded-content-length"] = String(payload.count)
            headers["x-amz-trailer"] = algorithm.header
            payloadHash = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
            let chunks = [payload.prefix(65_536), payload.dropFirst(65_536)].map { Data($0) }
            body = GatewayBodyTests.awsChunked(chunks, seed: nil, signer: signer, date: date, trailer: [(algorithm.header, value)])
        }
        let signed = signer.sign(method: "PUT", url: url, headers: headers, payloadHash: payloadHash, date: date)
        return try await RawHTTP.exchange(port: harness.server.port, method: "PUT", target: "/" + key, headers: signed.map { ($0.key, $0.value) }, body: body)
    }
}
