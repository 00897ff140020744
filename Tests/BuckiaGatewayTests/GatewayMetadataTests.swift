import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaMemory
import BuckiaTestSupport
import Foundation
import Testing

/// What a client sets on an object comes back as it was written, over a local folder (kept in
/// extended attributes, as rclone keeps it) and over the memory backend; nothing it did not
/// set is added.
@Suite("S3 gateway: metadata and content headers come back byte for byte")
struct GatewayMetadataTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case folder, memory
        var testDescription: String { rawValue }

        func harness() throws -> GatewayHarness {
            switch self {
            case .folder: try GatewayHarness()
            case .memory: try GatewayHarness(provider: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
            }
        }
    }

    /// What rclone, the AWS CLI and a browser's uploader set, with values a reformatting would change.
    static let written: [String: String] = [
        "x-amz-meta-mtime": "1700000000.123456789", "x-amz-meta-md5chksum": "YJXXWXeOJwMEBulK0qT2KQ==",
        "x-amz-meta-colour": "Blue  Sky, \"quoted\"", "x-amz-meta-btime": "2023-11-14T22:13:20.123456789Z",
        "content-type": "image/png; charset=binary", "cache-control": "public, max-age=31536000, immutable",
        "content-disposition": "attachment; filename=\"photo 1.png\"", "content-encoding": "gzip", "content-language": "de-CH",
        "expires": "Thu, 01 Dec 2994 16:00:00 GMT",
    ]
    /// The bytes whose MD5 `x-amz-meta-md5chksum` above names.
    static let body = Data("metadata round trip\n".utf8)

    static func metadata(_ headers: [String: String]) -> [String: String] {
        headers.filter { $0.key.hasPrefix("x-amz-meta-") }
    }

    static func expectWritten(_ headers: [String: String], _ what: String) {
        for (name, value) in written {
            #expect(headers[name] == value, "\(what): \(name)")
        }
        #expect(metadata(headers).count == metadata(written).count, "\(what): extra metadata \(metadata(headers))")
    }

    @Test("PUT then HEAD and GET: every x-amz-meta-* and content header as sent", arguments: Backend.allCases)
    func roundTrip(_ backend: Backend) async throws {
        try #require(Hashing.digest(Self.body, .md5).data.base64EncodedString() == Self.written["x-amz-meta-md5chksum"])
        let harness = try backend.harness()
        defer { harness.stop() }
        try await harness.createBucket("meta")
        let put = try await harness.exchange("PUT", "/meta/photo.png", body: Self.body, headers: Self.written)
        try #require(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        Self.expectWritten(try await harness.exchange("HEAD", "/meta/photo.png").headers, "HEAD")
        let get = try await harness.exchange("GET", "/meta/photo.png")
        Self.expectWritten(get.headers, "GET")
        #expect(get.body == Self.body)
    }

    @Test("An object written with no metadata reads back with none: no mtime or md5chksum made up", arguments: Backend.allCases)
    func nothingAdded(_ backend: Backend) async throws {
        let harness = try backend.harness()
        defer { harness.stop() }
        try await harness.createBucket("plain")
        #expect(try await harness.send("PUT", "/plain/a.txt", body: Data("plain".utf8)).0 == 200)
        let head = try await harness.exchange("HEAD", "/plain/a.txt")
        #expect(head.status == 200)
        #expect(Self.metadata(head.headers).isEmpty, "\(Self.metadata(head.headers))")
        for name in ContentHeaders.names { #expect(head.headers[name] == nil, "\(name)") }
    }

    @Test("aws-chunked names the request's framing, not the object's coding: it is not stored", arguments: Backend.allCases)
    func awsChunkedIsNotStored(_ backend: Backend) async throws {
        let harness = try backend.harness()
        defer { harness.stop() }
        try await harness.createBucket("framing")
        // Only the list's other codings are the object's (S3 keeps `gzip` of `aws-chunked,gzip`).
        #expect(try await harness.send("PUT", "/framing/z.gz", body: Data("z".utf8), headers: ["content-encoding": "aws-chunked, gzip"]).0 == 200)
        #expect(try await harness.exchange("HEAD", "/framing/z.gz").headers["content-encoding"] == "gzip")
        #expect(try await harness.send("PUT", "/framing/plain", body: Data("p".utf8), headers: ["content-encoding": "AWS-Chunked"]).0 == 200)
        #expect(try await harness.exchange("HEAD", "/framing/plain").headers["content-encoding"] == nil)
    }

    @Test("CopyObject keeps everything with COPY and replaces everything with REPLACE", arguments: Backend.allCases)
    func copies(_ backend: Backend) async throws {
        let harness = try backend.harness()
        defer { harness.stop() }
        try await harness.createBucket("copy")
        try #require(try await harness.send("PUT", "/copy/source.png", body: Self.body, headers: Self.written).0 == 200)
        #expect(try await harness.send("PUT", "/copy/kept.png", headers: ["x-amz-copy-source": "/copy/source.png"]).0 == 200)
        Self.expectWritten(try await harness.exchange("HEAD", "/copy/kept.png").headers, "COPY")
        let replaced = try await harness.send(
            "PUT", "/copy/replaced.png",
            headers: ["x-amz-copy-source": "/copy/source.png", "x-amz-metadata-directive": "REPLACE", "x-amz-meta-colour": "red", "content-type": "text/plain"])
        #expect(replaced.0 == 200, "\(String(decoding: replaced.1, as: UTF8.self))")
        let head = try await harness.exchange("HEAD", "/copy/replaced.png").headers
        #expect(Self.metadata(head) == ["x-amz-meta-colour": "red"])
        #expect(head["content-type"] == "text/plain" && head["cache-control"] == nil)
    }

    @Test("A self-copy that sets rclone's mtime (its SetModTime) keeps the client's text", arguments: Backend.allCases)
    func setModTime(_ backend: Backend) async throws {
        let harness = try backend.harness()
        defer { harness.stop() }
        try await harness.createBucket("touch")
        try #require(try await harness.send("PUT", "/touch/a.bin", body: Self.body, headers: ["x-amz-meta-mtime": "1600000000.5"]).0 == 200)
        let copied = try await harness.send(
            "PUT", "/touch/a.bin",
            headers: ["x-amz-copy-source": "/touch/a.bin", "x-amz-metadata-directive": "REPLACE", "x-amz-meta-mtime": "1700000000.987654321"])
        #expect(copied.0 == 200, "\(String(decoding: copied.1, as: UTF8.self))")
        #expect(try await harness.exchange("HEAD", "/touch/a.bin").headers["x-amz-meta-mtime"] == "1700000000.987654321")
    }

    @Test("A multipart upload stores what its start carried", arguments: Backend.allCases)
    func multipart(_ backend: Backend) async throws {
        let harness = try backend.harness()
        defer { harness.stop() }
        try await harness.createBucket("multi")
        let started = try await harness.exchange("POST", "/multi/big.png?uploads", headers: Self.written.filter { $0.key != "x-amz-meta-md5chksum" })
        try #require(started.status == 200)
        let id = try #require(GatewayMultipartTests.value(started.body, "UploadId"))
        let data = GatewayMultipartTests.bytes(5 << 20, seed: 3)
        let tag = try #require(try await GatewayMultipartTests.part(harness, "/multi/big.png", id, 1, data))
        let (status, body) = try await GatewayMultipartTests.complete(harness, "/multi/big.png", id, [(1, tag)])
        #expect(status == 200, "\(body)")
        let head = try await harness.exchange("HEAD", "/multi/big.png").headers
        for (name, value) in Self.written where name != "x-amz-meta-md5chksum" { #expect(head[name] == value, "\(name)") }
    }

    @Test("Over a folder: metadata is in user.* attributes as rclone keeps it, and a time the file no longer has is not reported")
    func folderAttributes() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        let root = try #require(harness.root)
        try await harness.createBucket("attrs")
        try #require(try await harness.send("PUT", "/attrs/a.png", body: Self.body, headers: Self.written).0 == 200)
        let file = root.appendingPathComponent("attrs/a.png")
        // Read by another program (Python's os.getxattr), as rclone or getfattr would.
        let listed = try await runTool(
            "/usr/bin/env", ["python3", "-c", "import os, sys; [print(n + '=' + os.getxattr(sys.argv[1], n).decode()) for n in sorted(os.listxattr(sys.argv[1]))]", file.path])
        for name in ["mtime", "md5chksum", "colour", "content-type", "cache-control"] {
            let line = "user.\(name)=" + (Self.written["x-amz-meta-" + name] ?? Self.written[name] ?? "?")
            #expect(listed.output.components(separatedBy: "\n").contains(line), "\(line) in \(listed.output)")
        }
        // The file changed by another tool: its new time stands, and the MD5 recorded beside
        // the old one is no longer claimed; the rest of the metadata stays.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_800_000_000)], ofItemAtPath: file.path)
        let head = try await harness.exchange("HEAD", "/attrs/a.png").headers
        #expect(head["x-amz-meta-mtime"] == nil && head["x-amz-meta-md5chksum"] == nil)
        #expect(head["x-amz-meta-colour"] == Self.written["x-amz-meta-colour"] && head["content-type"] == Self.written["content-type"])
    }
}
