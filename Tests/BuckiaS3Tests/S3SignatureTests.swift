import BuckiaConformance
import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// Every S3 operation the provider uses, against moto with signature checking on, with keys
/// and prefixes moto can verify. A signing bug in any request shape fails here.
@Suite("S3 provider against signature-checking moto")
struct S3SignatureTests {
    @Test("Put, head, get, ranged get, list, copy, batch delete and delete are all signed correctly")
    func everyOperation() async throws {
        let (provider, server, _) = try await makeS3Provider(auth: true)
        #expect(server.checksSignatures)
        let data = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0) })
        try await provider.uploadData(data, remotePath: "alpha.bin")
        try await provider.uploadData(Data("beta".utf8), remotePath: "beta.txt", options: UploadOptions(contentType: "text/plain"))
        #expect(try await provider.stat(remotePath: "alpha.bin")?.size == 5000)
        #expect(try await provider.stat(remotePath: "missing") == nil)
        #expect(try await provider.readData(remotePath: "alpha.bin") == data)
        #expect(try await provider.readData(remotePath: "alpha.bin", range: 10..<20) == data.subdata(in: 10..<20))
        #expect(try await provider.list(ListOptions(prefix: "al")).reduce(into: []) { $0.append($1.path) } == ["alpha.bin"])
        #expect(try await provider.listFiles().map(\.path.rawValue) == ["alpha.bin", "beta.txt"])
        try await provider.copyFile(from: ObjectKey("alpha.bin"), to: ObjectKey("gamma.bin"))
        #expect(try await provider.readData(remotePath: "gamma.bin") == data)
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-sig-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: target) }
        try await provider.downloadFile(remotePath: "gamma.bin", localURL: target)
        #expect(try Data(contentsOf: target) == data)
        try await provider.deleteFiles([ObjectKey("alpha.bin"), ObjectKey("gamma.bin"), ObjectKey("never")])
        try await provider.deleteFile(remotePath: "beta.txt")
        #expect(try await provider.listFiles().isEmpty)
        #expect(try await provider.testConnection().isConnected)
    }

    @Test(
        "User metadata with an empty value, spaces and repeated spaces is signed as sent (libcurl dropped an empty header)",
        arguments: [S3TestServer.Kind.moto, .cephRGW])
    func headerShapes(_ kind: S3TestServer.Kind) async throws {
        let (provider, server, _) = try await makeS3Provider(on: S3TestServer.shared(kind), options: ["vendor": kind == .moto ? "moto" : "ceph"])
        #expect(server.checksSignatures)
        let metadata = ["empty": "", "spaced": "a  b", "padded": "x y z", "edges": " t "]
        // `buckia chunk put` without a transform stored an empty transforms entry: every such
        // PUT failed with SignatureDoesNotMatch at a server that checks.
        try await provider.uploadData(Data("m".utf8), remotePath: "meta.bin", options: UploadOptions(metadata: metadata))
        let stored = try #require(try await provider.stat(remotePath: "meta.bin"))
        #expect(stored.metadata["empty"] == "", "metadata read back: \(stored.metadata)")
        #expect(stored.metadata["spaced"] != nil)
    }

    @Test("A multipart upload is signed correctly part by part, and its MD5 is kept")
    func multipart() async throws {
        try await MemoryProbe.exclusively { try await multipartBody() }
    }

    private func multipartBody() async throws {
        let (provider, _, _) = try await makeS3Provider(auth: true, options: ["multipartThresholdMiB": "5", "partSizeMiB": "5"])
        let size = 11 * 1024 * 1024 + 7
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-mp-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: source) }
        let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) })
        try data.write(to: source)
        let stored = try await provider.uploadFile(localURL: source, remotePath: "big.bin")
        #expect(stored.etag?.hasSuffix("-3\"") == true, "three parts: \(stored.etag ?? "no etag")")
        let expected = try Hashing.digest(data, .md5).hex
        #expect(try await provider.stat(remotePath: "big.bin")?.checksums[.md5] == expected)
        #expect(try await provider.readData(remotePath: "big.bin") == data)
    }
}
