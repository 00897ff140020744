import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaTestSupport
import Foundation
import Testing

/// The S3 operations that are not a plain get or put: listings grouped by any delimiter,
/// UploadPartCopy, `partNumber` on a GET, and options the backend cannot keep.
@Suite("S3 gateway: delimiters, part copies, part numbers, unsupported options")
struct GatewayOperationTests {
    static func keys(_ xml: String, _ element: String) -> [String] {
        xml.components(separatedBy: "<\(element)>").dropFirst().compactMap { $0.components(separatedBy: "</\(element)>").first }
    }

    @Test("A delimiter other than / groups keys into common prefixes, each once, across pages")
    func otherDelimiter() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("grouped")
        for key in ["d/a-1", "d/a-2", "d/b-1", "d/b-2", "d/c", "e/x-1"] {
            #expect(try await harness.send("PUT", "/grouped/\(key)", body: Data(key.utf8)).0 == 200)
        }
        let (status, body) = try await harness.send("GET", "/grouped?list-type=2&prefix=d%2F&delimiter=-")
        let xml = String(decoding: body, as: UTF8.self)
        #expect(status == 200)
        #expect(Self.keys(xml, "Prefix").dropFirst() == ["d/a-", "d/b-"], "\(xml)")
        #expect(Self.keys(xml, "Key") == ["d/c"])
        // One entry a page: a prefix, the next prefix, then the key; never a prefix twice.
        var seen: [String] = []
        var token: String?
        for _ in 0..<10 {
            let query = "list-type=2&prefix=d%2F&delimiter=-&max-keys=1" + (token.map { "&continuation-token=\($0)" } ?? "")
            let page = String(decoding: try await harness.send("GET", "/grouped?" + query).1, as: UTF8.self)
            seen += Self.keys(page, "Key") + Self.keys(page, "Prefix").dropFirst()
            token = Self.keys(page, "NextContinuationToken").first
            if token == nil { break }
        }
        #expect(seen == ["d/a-", "d/b-", "d/c"])
    }

    @Test("UploadPartCopy builds an object from ranges of another; a range past its end is InvalidRange")
    func uploadPartCopy() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("parts")
        let source = Data((0..<(6 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 11) })
        #expect(try await harness.send("PUT", "/parts/source.bin", body: source).0 == 200)
        let started = String(decoding: try await harness.send("POST", "/parts/copy.bin?uploads").1, as: UTF8.self)
        let id = try #require(Self.keys(started, "UploadId").first)
        var etags: [String] = []
        for (number, range) in [(1, "bytes=0-5242879"), (2, "bytes=5242880-6291455")] {
            let (status, body) = try await harness.send(
                "PUT", "/parts/copy.bin?partNumber=\(number)&uploadId=\(id)",
                headers: ["x-amz-copy-source": "/parts/source.bin", "x-amz-copy-source-range": range])
            let xml = String(decoding: body, as: UTF8.self)
            #expect(status == 200 && xml.contains("<CopyPartResult>"), "\(xml)")
            etags += Self.keys(xml, "ETag")
        }
        let past = try await harness.send(
            "PUT", "/parts/copy.bin?partNumber=3&uploadId=\(id)", headers: ["x-amz-copy-source": "/parts/source.bin", "x-amz-copy-source-range": "bytes=0-6291456"])
        #expect(past.0 == 416 && String(decoding: past.1, as: UTF8.self).contains("InvalidRange"))
        let complete = "<CompleteMultipartUpload>" + etags.enumerated().map { "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\($0.element)</ETag></Part>" }.joined()
            + "</CompleteMultipartUpload>"
        let (status, body) = try await harness.send("POST", "/parts/copy.bin?uploadId=\(id)", body: Data(complete.replacingOccurrences(of: "&quot;", with: "\"").utf8))
        #expect(status == 200, "\(String(decoding: body, as: UTF8.self))")
        #expect(try await harness.provider.readData(remotePath: ObjectKey("parts/copy.bin"), options: ReadOptions()) == source)
    }

    @Test("partNumber on a GET: part 1 is the whole object, any other part does not exist")
    func partNumber() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("whole")
        #expect(try await harness.send("PUT", "/whole/a.txt", body: Data("whole".utf8)).0 == 200)
        let first = try await harness.send("GET", "/whole/a.txt?partNumber=1")
        #expect(first.0 == 200 && first.1 == Data("whole".utf8))
        let second = try await harness.send("GET", "/whole/a.txt?partNumber=2")
        #expect(second.0 == 416 && String(decoding: second.1, as: UTF8.self).contains("InvalidPartNumber"))
        #expect(try await harness.send("GET", "/whole/a.txt?partNumber=0").0 == 400)
    }

    @Test("Metadata a folder provider does not keep (metadata=false) is refused through its own check, and nothing is stored")
    func unsupportedMetadata() async throws {
        let root = try TestFolder.make("buckia-gateway-nometa")
        let harness = try GatewayHarness(provider: LocalProvider(root: root, keepsMetadata: false), removing: root)
        defer { harness.stop() }
        try await harness.createBucket("meta")
        let (status, body) = try await harness.send("PUT", "/meta/a.txt", body: Data("x".utf8), headers: ["x-amz-meta-colour": "blue"])
        #expect(status == 501 && String(decoding: body, as: UTF8.self).contains("NotImplemented"))
        #expect(try await harness.provider.stat(remotePath: ObjectKey("meta/a.txt")) == nil)
    }
}
