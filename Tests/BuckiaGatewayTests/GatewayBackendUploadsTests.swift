import BuckiaCore
@testable import BuckiaGateway
@testable import BuckiaMemory
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

/// Multipart uploads over a backend that keeps them itself (``Capability/partUploads``; here
/// the memory provider, S3's semantics in process): two gateways over one backend, as two
/// members of a fleet, serve one upload alike, because nothing of it lives in either gateway.
@Suite("S3 gateway: multipart uploads the backend keeps, served by any gateway over it")
struct GatewayBackendUploadsTests {
    typealias Multipart = GatewayMultipartTests
    static let crc32 = GatewayChecksumTests.Algorithm.crc32

    /// Two gateways over one memory backend, on one clock.
    static func pair(clock: Locked<Date>? = nil, lifetime: Duration? = .seconds(24 * 3600)) throws -> (GatewayHarness, GatewayHarness, MemoryProvider) {
        let backend = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        let configure: (inout S3GatewayOptions) -> Void = { options in
            options.minimumPartSize = 1
            options.abandonedUploadLifetime = lifetime
            if let clock { options.clock = { clock.withLock { $0 } } }
        }
        return (try GatewayHarness(provider: backend, configure: configure), try GatewayHarness(provider: backend, configure: configure), backend)
    }

    /// The gateway's records left in the backend, by key.
    static func records(_ backend: MemoryProvider) async throws -> [String] {
        var keys: [String] = []
        for try await entry in backend.list(ListOptions(prefix: ".buckia-s3/uploads/", recursive: true)) {
            if let file = entry.file { keys.append(file.path.rawValue) }
        }
        return keys
    }

    @Test("Started through one gateway, given parts through both, listed and completed through either: checksums, part reads and a retried completion's answer agree")
    func acrossGateways() async throws {
        let (first, second, backend) = try Self.pair()
        defer { first.stop(); second.stop() }
        try await first.createBucket("fleet")
        let (status, body) = try await first.send("POST", "/fleet/big.bin?uploads", headers: ["x-amz-checksum-algorithm": "CRC32"])
        try #require(status == 200)
        let id = try #require(Multipart.value(body, "UploadId"))
        let parts = [Multipart.bytes(300_000, seed: 1), Multipart.bytes(4_321, seed: 2)]
        var listed: [(Int, String)] = []
        for (index, data) in parts.enumerated() {
            let gateway = index == 0 ? second : first
            let tag = try await Multipart.part(gateway, "/fleet/big.bin", id, index + 1, data, headers: [Self.crc32.header: try Self.crc32.value(data)])
            listed.append((index + 1, try #require(tag, "part \(index + 1)")))
        }
        // Each part's checksum is listed through either gateway, whichever took the part.
        let listing = String(decoding: try await second.send("GET", "/fleet/big.bin?uploadId=\(id)").1, as: UTF8.self)
        for data in parts { #expect(listing.contains("<ChecksumCRC32>\(try Self.crc32.value(data))</ChecksumCRC32>"), "\(listing)") }
        var xml = "<CompleteMultipartUpload>"
        for ((number, tag), data) in zip(listed, parts) {
            xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\(tag)</ETag><ChecksumCRC32>\(try Self.crc32.value(data))</ChecksumCRC32></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let completed = try await first.send("POST", "/fleet/big.bin?uploadId=\(id)", body: Data(xml.utf8))
        try #require(completed.0 == 200, "\(String(decoding: completed.1, as: UTF8.self))")
        // The retry whose first answer was lost comes through the other gateway: the same answer.
        let again = try await second.send("POST", "/fleet/big.bin?uploadId=\(id)", body: Data(xml.utf8))
        #expect(again.0 == 200 && again.1 == completed.1)
        let fewer = try await second.send("POST", "/fleet/big.bin?uploadId=\(id)", body: Data(xml.replacingOccurrences(of: "<PartNumber>2", with: "<PartNumber>3").utf8))
        #expect(fewer.0 == 404 && String(decoding: fewer.1, as: UTF8.self).contains("NoSuchUpload"))
        let composite = try Self.crc32.value(parts.map { Data(base64Encoded: try Self.crc32.value($0)) ?? Data() }.reduce(Data(), +)) + "-2"
        let head = try await second.exchange("HEAD", "/fleet/big.bin", headers: ["x-amz-checksum-mode": "ENABLED"])
        #expect(head.headers["x-amz-checksum-crc32"] == composite, "\(head.headers)")
        let part = try await second.exchange("GET", "/fleet/big.bin?partNumber=2")
        #expect(part.status == 206 && part.body == parts[1] && part.headers["x-amz-mp-parts-count"] == "2")
        #expect(try await backend.readData(remotePath: ObjectKey("fleet/big.bin"), range: nil) == parts[0] + parts[1])
        // Of the upload's records only its completed answer remains.
        #expect(try await Self.records(backend) == [".buckia-s3/uploads/fleet/\(id)/completed"])
    }

    @Test("Another user can neither add a part to, list, complete, abort nor see an upload; a made-up id is NoSuchUpload")
    func owners() async throws {
        let (first, second, _) = try Self.pair()
        defer { first.stop(); second.stop() }
        try await first.createBucket("fleet")
        let id = try await Multipart.start(first, "/fleet/mine.bin")
        let issued = try second.credentials(user: "mallory", grants: [StoragePermissions.all.restrictToPath("fleet/")])
        let mallory = AWSCredentials(accessKeyId: issued.accessKeyId, secretAccessKey: issued.secretAccessKey, sessionToken: issued.sessionToken)
        let attempts: [(String, String, Data)] = [
            ("PUT", "/fleet/mine.bin?partNumber=1&uploadId=\(id)", Data("x".utf8)),
            ("GET", "/fleet/mine.bin?uploadId=\(id)", Data()),
            ("POST", "/fleet/mine.bin?uploadId=\(id)", Data("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>".utf8)),
            ("DELETE", "/fleet/mine.bin?uploadId=\(id)", Data()),
        ]
        for (method, target, body) in attempts {
            let answer = try await second.send(method, target, body: body, credentials: mallory)
            #expect(answer.0 == 404 && String(decoding: answer.1, as: UTF8.self).contains("NoSuchUpload"), "\(method) \(target): \(answer.0)")
        }
        let seen = String(decoding: try await second.send("GET", "/fleet?uploads", credentials: mallory).1, as: UTF8.self)
        #expect(!seen.contains(id), "\(seen)")
        for made in [String(repeating: "0", count: 32), "../../buckets/fleet", id.uppercased()] {
            let answer = try await second.send("GET", "/fleet/mine.bin?uploadId=\(made.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? made)")
            #expect(answer.0 == 404, "\(made): \(answer.0)")
        }
        // Its owner, through the other gateway, still can.
        #expect(try await Multipart.part(second, "/fleet/mine.bin", id, 1, Data("mine".utf8)) != nil)
    }

    @Test("ListMultipartUploads through either gateway shows uploads started through both; an abort through the other ends one; deleting the bucket aborts the rest")
    func listingAndAborts() async throws {
        let (first, second, backend) = try Self.pair()
        defer { first.stop(); second.stop() }
        try await first.createBucket("fleet")
        let one = try await Multipart.start(first, "/fleet/a.bin")
        let two = try await Multipart.start(second, "/fleet/b.bin")
        for gateway in [first, second] {
            let listing = String(decoding: try await gateway.send("GET", "/fleet?uploads").1, as: UTF8.self)
            #expect(listing.contains("<UploadId>\(one)</UploadId>") && listing.contains("<UploadId>\(two)</UploadId>"), "\(listing)")
        }
        #expect(try await second.send("DELETE", "/fleet/a.bin?uploadId=\(one)").0 == 204)
        #expect(try await first.send("PUT", "/fleet/a.bin?partNumber=1&uploadId=\(one)", body: Data("x".utf8)).0 == 404)
        #expect(try await Multipart.part(first, "/fleet/b.bin", two, 1, Data("b".utf8)) != nil)
        #expect(try await first.send("DELETE", "/fleet").0 == 204)
        #expect(try await Self.records(backend).isEmpty)
        #expect(backend.partUploads.withLock { $0.isEmpty }, "the backend's own uploads are aborted")
    }

    @Test("An upload started longer ago than the lifetime is aborted by the next start through any gateway; a completed answer goes after an hour")
    func sweep() async throws {
        let clock = Locked(Date())
        let (first, second, backend) = try Self.pair(clock: clock, lifetime: .seconds(24 * 3600))
        defer { first.stop(); second.stop() }
        try await first.createBucket("fleet")
        let old = try await Multipart.start(first, "/fleet/old.bin")
        let done = try await Multipart.start(first, "/fleet/done.bin")
        let tag = try #require(try await Multipart.part(first, "/fleet/done.bin", done, 1, Data("done".utf8)))
        #expect(try await Multipart.complete(first, "/fleet/done.bin", done, [(1, tag)]).0 == 200)
        clock.withLock { $0 += 2 * 3600 }
        _ = try await Multipart.start(second, "/fleet/new.bin")  // sweeps: the answer is two hours old
        #expect(try await Multipart.complete(second, "/fleet/done.bin", done, [(1, tag)]).0 == 404)
        #expect(try await !Self.records(backend).contains { $0.contains(done) }, "the sweep removed the hour-old answer")
        #expect(try await Multipart.part(second, "/fleet/old.bin", old, 1, Data("old".utf8)) != nil, "a day has not passed")
        clock.withLock { $0 += 23 * 3600 }
        _ = try await Multipart.start(second, "/fleet/newer.bin")
        #expect(try await second.send("PUT", "/fleet/old.bin?partNumber=2&uploadId=\(old)", body: Data("x".utf8)).0 == 404)
        let left = try await Self.records(backend)
        #expect(!left.contains { $0.contains(old) } && left.filter { $0.hasSuffix("/upload") }.count == 1, "\(left)")
    }

    @Test("A record in the backend the gateway did not write (garbage, nesting 100,000 deep, another shape) is no record: NoSuchUpload, never a crash or a 500")
    func hostileRecords() async throws {
        let (first, second, backend) = try Self.pair()
        defer { first.stop(); second.stop() }
        try await first.createBucket("fleet")
        let bodies = [Data("not json".utf8), Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8), Data(#"{"key": 1}"#.utf8)]
        for (index, body) in bodies.enumerated() {
            let id = String(repeating: String(index), count: 32)
            try await backend.uploadData(body, remotePath: ObjectKey(".buckia-s3/uploads/fleet/\(id)/upload"), options: UploadOptions())
            let answer = try await second.send("GET", "/fleet/x.bin?uploadId=\(id)")
            #expect(answer.0 == 404 && String(decoding: answer.1, as: UTF8.self).contains("NoSuchUpload"), "record \(index): \(answer.0)")
        }
    }

    /// A backend that drops conditions on multipart completions, as Ceph RGW 16 does, and says so.
    struct DroppingCompletionConditions: ForwardingStorageProvider {
        let base: any StorageProvider
        var capabilities: ProviderCapabilities {
            var capabilities = base.capabilities
            capabilities.features.remove(.conditionalCompletion)
            return capabilities
        }
        func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
            try await base.completePartUpload(upload, to: key, parts: parts, condition: nil)
        }
    }

    @Test("A conditional completion over a backend that drops completion conditions is NotImplemented and stores nothing; without the condition it completes")
    func droppedConditions() async throws {
        let backend = DroppingCompletionConditions(base: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
        let harness = try GatewayHarness(provider: backend, configure: { $0.minimumPartSize = 1 })
        defer { harness.stop() }
        try await harness.createBucket("fleet")
        #expect(try await harness.send("PUT", "/fleet/kept.txt", body: Data("kept".utf8)).0 == 200)
        let id = try await Multipart.start(harness, "/fleet/kept.txt")
        let tag = try #require(try await Multipart.part(harness, "/fleet/kept.txt", id, 1, Data("replacement".utf8)))
        let refused = try await Multipart.complete(harness, "/fleet/kept.txt", id, [(1, tag)], headers: ["If-None-Match": "*"])
        #expect(refused.0 == 501 && refused.1.contains("NotImplemented"), "\(refused)")
        #expect(try await backend.readData(remotePath: ObjectKey("fleet/kept.txt"), range: nil) == Data("kept".utf8))
        #expect(try await Multipart.complete(harness, "/fleet/kept.txt", id, [(1, tag)]).0 == 200)
        #expect(try await backend.readData(remotePath: ObjectKey("fleet/kept.txt"), range: nil) == Data("replacement".utf8))
    }
}
