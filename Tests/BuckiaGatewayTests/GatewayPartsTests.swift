import BuckiaCore
@testable import BuckiaGateway
import BuckiaMemory
import BuckiaTestSupport
import Foundation
import Testing

/// What S3 keeps of a multipart upload and of a checksum after the object is stored: part
/// reads (`partNumber`, `x-amz-mp-parts-count`), the checksum returned with
/// `x-amz-checksum-mode: ENABLED` (of a PUT's header, or of the parts: composite or combined
/// into the whole object's CRC), and GetObjectAttributes. The gateway keeps them with the object
/// in one metadata entry clients neither see nor set.
@Suite("S3 gateway: part reads, stored checksums, GetObjectAttributes")
struct GatewayPartsTests {
    typealias Algorithm = GatewayChecksumTests.Algorithm

    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case folder, memory
        var testDescription: String { rawValue }

        func harness() throws -> GatewayHarness {
            switch self {
            case .folder: try GatewayHarness(configure: { $0.minimumPartSize = 1 })
            case .memory: try GatewayHarness(provider: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)), configure: { $0.minimumPartSize = 1 })
            }
        }
    }

    static let parts = [Data(repeating: 1, count: 300_000), Data(repeating: 2, count: 300_000), Data((0..<12_345).map { UInt8(truncatingIfNeeded: $0) })]

    static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    /// Uploads `parts` as a multipart upload of `path`, with `algorithm`'s checksum on each part
    /// when given, and returns the completion's answer.
    static func upload(
        _ harness: GatewayHarness, _ path: String, _ parts: [Data], algorithm: Algorithm? = nil, type: String? = nil,
        listChecksums: Bool = true, completionHeaders: [String: String] = [:], corruptPart: Int? = nil
    ) async throws -> (Int, String) {
        var headers: [String: String] = [:]
        if let algorithm { headers["x-amz-checksum-algorithm"] = algorithm.rawValue.uppercased() }
        if let type { headers["x-amz-checksum-type"] = type }
        let (status, body) = try await harness.send("POST", "\(path)?uploads", headers: headers)
        try #require(status == 200, "\(text(body))")
        let id = try #require(GatewayMultipartTests.value(body, "UploadId"))
        var xml = "<CompleteMultipartUpload>"
        for (index, data) in parts.enumerated() {
            let number = index + 1
            // Odd parts carry their checksum; even ones leave it to the gateway, which computes
            // the upload's algorithm for every part.
            var partHeaders: [String: String] = [:]
            if let algorithm, number % 2 == 1 { partHeaders[algorithm.header] = try algorithm.value(data) }
            let answer = try await harness.exchange("PUT", "\(path)?partNumber=\(number)&uploadId=\(id)", body: data, headers: partHeaders)
            try #require(answer.status == 200, "part \(number): \(text(answer.body))")
            xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\(try #require(answer.headers["etag"]))</ETag>"
            if let algorithm, listChecksums {
                let value = try algorithm.value(number == corruptPart ? data.dropLast() : data)
                #expect(number == corruptPart || answer.headers[algorithm.header] == value, "part \(number) echoes its checksum")
                xml += "<Checksum\(algorithm.rawValue.uppercased())>\(value)</Checksum\(algorithm.rawValue.uppercased())>"
            }
            xml += "</Part>"
        }
        let completed = try await harness.send("POST", "\(path)?uploadId=\(id)", body: Data((xml + "</CompleteMultipartUpload>").utf8), headers: completionHeaders)
        return (completed.0, text(completed.1))
    }

    @Test("A multipart object reads by part number: each part's bytes, 206, the parts count; past the last part 416; a copy keeps its parts", arguments: Backend.allCases)
    func partReads(_ backend: Backend) async throws {
        let harness = try backend.harness()
        defer { harness.stop() }
        try await harness.createBucket("parts")
        let (status, body) = try await Self.upload(harness, "/parts/big.bin", Self.parts)
        try #require(status == 200, "\(body)")
        var offset = 0
        for (index, part) in Self.parts.enumerated() {
            let answer = try await harness.exchange("GET", "/parts/big.bin?partNumber=\(index + 1)")
            #expect(answer.status == 206 && answer.body == part, "part \(index + 1)")
            #expect(answer.headers["x-amz-mp-parts-count"] == "3")
            #expect(answer.headers["content-range"] == "bytes \(offset)-\(offset + part.count - 1)/\(Self.parts.reduce(0) { $0 + $1.count })")
            let head = try await harness.exchange("HEAD", "/parts/big.bin?partNumber=\(index + 1)")
            #expect(head.status == 206 && head.headers["content-length"] == String(part.count) && head.headers["x-amz-mp-parts-count"] == "3")
            offset += part.count
        }
        let past = try await harness.send("GET", "/parts/big.bin?partNumber=4")
        #expect(past.0 == 416 && Self.text(past.1).contains("InvalidPartNumber"))
        let both = try await harness.send("GET", "/parts/big.bin?partNumber=1", headers: ["Range": "bytes=0-9"])
        #expect(both.0 == 400 && Self.text(both.1).contains("InvalidRequest"))
        // The whole object is still one read, and its record never shows as metadata.
        let whole = try await harness.exchange("GET", "/parts/big.bin")
        #expect(whole.status == 200 && whole.body == Self.parts.reduce(Data(), +) && whole.headers["x-amz-mp-parts-count"] == nil)
        #expect(!whole.headers.keys.contains { $0.hasPrefix("x-amz-meta-") }, "\(whole.headers)")
        let copy = try await harness.send("PUT", "/parts/copy.bin", headers: ["x-amz-copy-source": "/parts/big.bin"])
        #expect(copy.0 == 200, "\(Self.text(copy.1))")
        let copiedPart = try await harness.exchange("GET", "/parts/copy.bin?partNumber=2")
        #expect(copiedPart.status == 206 && copiedPart.body == Self.parts[1] && copiedPart.headers["x-amz-mp-parts-count"] == "3")
        let replaced = try await harness.send(
            "PUT", "/parts/replaced.bin", headers: ["x-amz-copy-source": "/parts/big.bin", "x-amz-metadata-directive": "REPLACE", "x-amz-meta-colour": "blue"])
        #expect(replaced.0 == 200, "\(Self.text(replaced.1))")
        let replacedPart = try await harness.exchange("GET", "/parts/replaced.bin?partNumber=3")
        #expect(replacedPart.status == 206 && replacedPart.body == Self.parts[2] && replacedPart.headers["x-amz-meta-colour"] == "blue")

        // An object uploaded whole is one part: part 1 is all of it, with no parts count.
        #expect(try await harness.send("PUT", "/parts/small.txt", body: Data("small".utf8)).0 == 200)
        let first = try await harness.exchange("GET", "/parts/small.txt?partNumber=1")
        #expect(first.status == 200 && first.body == Data("small".utf8) && first.headers["x-amz-mp-parts-count"] == nil)
        #expect(try await harness.send("GET", "/parts/small.txt?partNumber=2").0 == 416)

        // A multipart object replaced by a PUT of the same size is one part again: what was kept
        // of the first (beside it, over a backend that holds uploads itself) is not the new one's.
        #expect(try await harness.send("PUT", "/parts/big.bin", body: Self.parts.reduce(Data(), +)).0 == 200)
        let replacedWhole = try await harness.exchange("GET", "/parts/big.bin?partNumber=1")
        #expect(replacedWhole.status == 200 && replacedWhole.headers["x-amz-mp-parts-count"] == nil && replacedWhole.body.count == Self.parts.reduce(0) { $0 + $1.count })
        #expect(try await harness.send("GET", "/parts/big.bin?partNumber=2").0 == 416)
    }

    @Test("Clients cannot set or see the gateway's own metadata entry")
    func reservedMetadata() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("parts")
        let forged = try await harness.send("PUT", "/parts/x.bin", body: Data("x".utf8), headers: ["x-amz-meta-buckia-s3": "v1;parts=1x3"])
        #expect(forged.0 == 400 && Self.text(forged.1).contains("kept by the gateway"), "\(Self.text(forged.1))")
        #expect(try await harness.provider.stat(remotePath: ObjectKey("parts/x.bin")) == nil)
    }

    @Test("A checksum sent in a PUT's header comes back with x-amz-checksum-mode: ENABLED, and only then, and not for a range", arguments: Algorithm.allCases)
    func putChecksum(_ algorithm: Algorithm) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("parts")
        let payload = Data("checksummed body\n".utf8)
        let value = try algorithm.value(payload)
        #expect(try await harness.send("PUT", "/parts/a.txt", body: payload, headers: [algorithm.header: value]).0 == 200)
        let plain = try await harness.exchange("HEAD", "/parts/a.txt")
        #expect(plain.headers[algorithm.header] == nil)
        for method in ["HEAD", "GET"] {
            let enabled = try await harness.exchange(method, "/parts/a.txt", headers: ["x-amz-checksum-mode": "ENABLED"])
            #expect(enabled.headers[algorithm.header] == value && enabled.headers["x-amz-checksum-type"] == "FULL_OBJECT", "\(method): \(enabled.headers)")
            // The record that keeps the checksum is the gateway's, never the client's metadata.
            let answer = try await harness.exchange(method, "/parts/a.txt")
            #expect(answer.status == 200 && !answer.headers.keys.contains { $0.hasPrefix("x-amz-meta-") }, "\(method): \(answer.headers)")
        }
        let ranged = try await harness.exchange("GET", "/parts/a.txt", headers: ["x-amz-checksum-mode": "ENABLED", "Range": "bytes=0-3"])
        #expect(ranged.status == 206 && ranged.headers[algorithm.header] == nil)
        // A replace without a checksum replaces the stored one too.
        #expect(try await harness.send("PUT", "/parts/a.txt", body: Data("other".utf8)).0 == 200)
        #expect(try await harness.exchange("HEAD", "/parts/a.txt", headers: ["x-amz-checksum-mode": "ENABLED"]).headers[algorithm.header] == nil)
    }

    /// The composite checksum of parts as S3 defines it: the checksum of their checksums, `-N`.
    static func composite(_ algorithm: Algorithm, _ parts: [Data]) throws -> String {
        let joined = try parts.map { try #require(Data(base64Encoded: try algorithm.value($0))) }.reduce(Data(), +)
        return try algorithm.value(joined) + "-\(parts.count)"
    }

    @Test("A multipart upload's checksum: COMPOSITE of the parts' (-N) or FULL_OBJECT (the CRC of all the bytes), checked against the completion's header, returned in checksum mode", arguments: [
        (Algorithm.crc32, "COMPOSITE"), (.crc32c, "COMPOSITE"), (.sha1, "COMPOSITE"), (.sha256, "COMPOSITE"),
        (.crc32, "FULL_OBJECT"), (.crc32c, "FULL_OBJECT"), (.crc64nvme, "FULL_OBJECT"),
    ])
    func multipartChecksum(_ algorithm: Algorithm, _ type: String) async throws {
        let harness = try Backend.folder.harness()
        defer { harness.stop() }
        try await harness.createBucket("parts")
        let whole = Self.parts.reduce(Data(), +)
        let expected = type == "COMPOSITE" ? try Self.composite(algorithm, Self.parts) : try algorithm.value(whole)
        // A wrong whole-object value in the completion's header is BadDigest, and stores nothing.
        let wrongValue = type == "COMPOSITE" ? try Self.composite(algorithm, Array(Self.parts.dropLast())) : try algorithm.value(whole.dropLast())
        let wrong = try await Self.upload(harness, "/parts/wrong.bin", Self.parts, algorithm: algorithm, type: type, completionHeaders: [algorithm.header: wrongValue])
        #expect(wrong.0 == 400 && wrong.1.contains("BadDigest"), "\(wrong.1)")
        #expect(try await harness.provider.stat(remotePath: ObjectKey("parts/wrong.bin")) == nil)

        let (status, body) = try await Self.upload(harness, "/parts/big.bin", Self.parts, algorithm: algorithm, type: type, completionHeaders: [algorithm.header: expected])
        try #require(status == 200, "\(body)")
        #expect(body.contains("<Checksum\(algorithm.rawValue.uppercased())>\(expected)</") && body.contains("<ChecksumType>\(type)</ChecksumType>"), "\(body)")
        let head = try await harness.exchange("HEAD", "/parts/big.bin", headers: ["x-amz-checksum-mode": "ENABLED"])
        #expect(head.headers[algorithm.header] == expected && head.headers["x-amz-checksum-type"] == type, "\(head.headers)")
        let attributes = try await harness.exchange("GET", "/parts/big.bin?attributes", headers: ["x-amz-object-attributes": "Checksum,ObjectSize"])
        #expect(Self.text(attributes.body).contains("<Checksum><Checksum\(algorithm.rawValue.uppercased())>\(expected)</"), "\(Self.text(attributes.body))")
        #expect(Self.text(attributes.body).contains("<ObjectSize>\(whole.count)</ObjectSize>"))
    }

    @Test("A completion must list each part's checksum, and the one it was given: missing is InvalidRequest, another is InvalidPart")
    func completionChecksums() async throws {
        let harness = try Backend.folder.harness()
        defer { harness.stop() }
        try await harness.createBucket("parts")
        let missing = try await Self.upload(harness, "/parts/m.bin", Self.parts, algorithm: .sha256, listChecksums: false)
        #expect(missing.0 == 400 && missing.1.contains("It was missing for part 1"), "\(missing.1)")
        let other = try await Self.upload(harness, "/parts/o.bin", Self.parts, algorithm: .crc32, corruptPart: 2)
        #expect(other.0 == 400 && other.1.contains("InvalidPart"), "\(other.1)")
        // A part sent with another algorithm than the upload's is refused as S3 refuses it.
        let (_, started) = try await harness.send("POST", "/parts/x.bin?uploads", headers: ["x-amz-checksum-algorithm": "CRC32"])
        let id = try #require(GatewayMultipartTests.value(started, "UploadId"))
        let mismatch = try await harness.send("PUT", "/parts/x.bin?partNumber=1&uploadId=\(id)", body: Self.parts[0], headers: [Algorithm.sha1.header: try Algorithm.sha1.value(Self.parts[0])])
        #expect(mismatch.0 == 400 && Self.text(mismatch.1).contains("Checksum Type mismatch"), "\(Self.text(mismatch.1))")
        let hashFull = try await harness.send("POST", "/parts/x.bin?uploads", headers: ["x-amz-checksum-algorithm": "SHA256", "x-amz-checksum-type": "FULL_OBJECT"])
        #expect(hashFull.0 == 400)
    }

    @Test("GetObjectAttributes answers what is asked: ETag without quotes, size, storage class, parts paged by x-amz-max-parts; nothing asked or an unknown name is InvalidArgument")
    func attributes() async throws {
        let harness = try Backend.folder.harness()
        defer { harness.stop() }
        try await harness.createBucket("parts")
        let (status, body) = try await Self.upload(harness, "/parts/big.bin", Self.parts)
        try #require(status == 200, "\(body)")
        let etag = try #require(try await harness.exchange("HEAD", "/parts/big.bin").headers["etag"])
        let all = try await harness.exchange("GET", "/parts/big.bin?attributes", headers: ["x-amz-object-attributes": "ETag,ObjectParts,StorageClass,ObjectSize", "x-amz-max-parts": "2"])
        let xml = Self.text(all.body)
        #expect(all.status == 200 && xml.contains("<ETag>\(etag.replacingOccurrences(of: "\"", with: ""))</ETag>"), "\(xml)")
        #expect(xml.contains("<PartsCount>3</PartsCount>") && xml.contains("<IsTruncated>true</IsTruncated>") && xml.contains("<NextPartNumberMarker>2</NextPartNumberMarker>"))
        #expect(GatewayS3AnswersTests.values(xml, "Size") == ["300000", "300000"])
        #expect(xml.contains("<StorageClass>STANDARD</StorageClass>") && xml.contains("<ObjectSize>612345</ObjectSize>") && !xml.contains("<Checksum>"))
        let rest = try await harness.exchange("GET", "/parts/big.bin?attributes", headers: ["x-amz-object-attributes": "ObjectParts", "x-amz-part-number-marker": "2"])
        #expect(GatewayS3AnswersTests.values(Self.text(rest.body), "Size") == ["12345"] && !Self.text(rest.body).contains("<ETag>"))
        for asked in ["", "ETag,Colour"] {
            let refused = try await harness.send("GET", "/parts/big.bin?attributes", headers: asked.isEmpty ? [:] : ["x-amz-object-attributes": asked])
            #expect(refused.0 == 400 && Self.text(refused.1).contains("InvalidArgument"), "\(asked): \(Self.text(refused.1))")
        }
        #expect(try await harness.send("GET", "/parts/none.bin?attributes", headers: ["x-amz-object-attributes": "ETag"]).0 == 404)
    }

    @Test("CRCs combine as zlib's crc32_combine: the CRC of A then B from theirs and B's length", arguments: [S3ChecksumAlgorithm.crc32, .crc32c, .crc64nvme])
    func combine(_ algorithm: S3ChecksumAlgorithm) throws {
        let data = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) })
        for split in [0, 1, 7, 8, 1_000, 4_999, 5_000] {
            let (first, second) = (data.prefix(split), data.dropFirst(split))
            let combined = algorithm.combine(try algorithm.digest(Data(first)), try algorithm.digest(Data(second)), secondLength: Int64(second.count))
            #expect(combined == (try algorithm.digest(data)), "split at \(split)")
        }
        #expect(S3ChecksumAlgorithm.sha256.combine([], [], secondLength: 1) == nil)
    }

    @Test("The record's text: runs of part sizes, a checksum; anything else in the entry is read as no record", arguments: [
        "v2", "v1;parts=-1", "v1;parts=5x0", "v1;parts=5x10001", "v1;parts=1x9999999999999999999", "v1;colour=red",
        "v1;checksum=crc32:AAAA:FULL_OBJECT", "v1;checksum=md5:AAAAAA==:FULL_OBJECT", "v1;checksum=crc32:AAAAAA==:SIDEWAYS", "v1;parts",
    ])
    func hostileRecords(_ text: String) {
        #expect(S3ObjectRecord(metadata: [S3ObjectRecord.metadataName: text]).isEmpty, "\(text)")
    }

    @Test("The record's text round-trips, runs compressed; part sizes that would not fit are left out")
    func recordText() throws {
        let record = S3ObjectRecord(
            partSizes: [8, 8, 8, 3], checksum: S3StoredChecksum(algorithm: .crc32, value: "AAAAAA==-4", composite: true))
        #expect(record.text == "v1;checksum=crc32:AAAAAA==-4:COMPOSITE;parts=8x3,3")
        #expect(S3ObjectRecord(metadata: [S3ObjectRecord.metadataName: record.text]) == record)
        #expect(record.range(ofPart: 4, objectSize: 27) == 24..<27 && record.range(ofPart: 5, objectSize: 27) == nil)
        #expect(record.range(ofPart: 4, objectSize: 26) == nil, "a part past the object's end is no part")
        let scattered = S3ObjectRecord(partSizes: (1...2_000).map { Int64($0) })
        #expect(scattered.text == "v1" && scattered.text.utf8.count <= S3ObjectRecord.maximumLength)
    }
}
