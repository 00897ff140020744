import BuckiaConformance
import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// Runs a program and returns its standard output, failing on a non-zero exit.
func runTool(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
    let run = try ToolRun.run(executable, arguments, environment: environment, limit: .seconds(300))
    guard run.status == 0 else {
        throw BuckiaError(.io, "\(executable) exited with \(run.status): \(run.output)")
    }
    return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// What boto3 sees, and what curl does with presigned URLs, against the same moto server.
@Suite("S3 interoperability: boto3 and curl")
struct S3InteropTests {
    static let boto = """
        import sys, json, hashlib, base64, boto3
        endpoint, bucket, action, key, path = sys.argv[1:6]
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="x", aws_secret_access_key="y", region_name="us-east-1")
        if action == "get":
            obj = s3.get_object(Bucket=bucket, Key=key)
            body = obj["Body"].read()
            md5 = base64.b64decode(obj["Metadata"].get("md5chksum", "")).hex()
            print(json.dumps({"sha256": hashlib.sha256(body).hexdigest(), "md5": md5, "size": len(body), "mtime": obj["Metadata"].get("mtime", "")}))
        else:
            s3.upload_file(path, bucket, key)
            print("{}")
        """

    func boto(_ server: S3TestServer, _ bucket: String, _ action: String, _ key: String, _ path: String = "-") throws -> [String: Any] {
        let output = try runTool("python3", ["-c", Self.boto, server.endpoint.absoluteString, bucket, action, key, path])
        return (try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]) ?? [:]
    }

    @Test("Bytes and MD5 written by Buckia read back identically in boto3, single-part and multipart", arguments: [1_000, 12 * 1_048_576 + 5])
    func buckiaToBoto(_ size: Int) async throws {
        try await MemoryProbe.exclusively { try await buckiaToBotoBody(size) }
    }

    private func buckiaToBotoBody(_ size: Int) async throws {
        let (provider, server, bucket) = try await makeS3Provider(auth: false, options: ["multipartThresholdMiB": "5", "partSizeMiB": "5"])
        let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) })
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-interop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: source) }
        try data.write(to: source)
        try await provider.uploadFile(localURL: source, remotePath: "from buckia/data.bin")
        let seen = try boto(server, bucket, "get", "from buckia/data.bin")
        #expect(seen["sha256"] as? String == Hashing.sha256Hex(data))
        #expect(try seen["md5"] as? String == Hashing.digest(data, .md5).hex)
        #expect(seen["size"] as? Int == size)
    }

    @Test("Objects written by boto3 read back identically in Buckia, with their MD5", arguments: [1_000, 10 * 1_048_576])
    func botoToBuckia(_ size: Int) async throws {
        try await MemoryProbe.exclusively { try await botoToBuckiaBody(size) }
    }

    private func botoToBuckiaBody(_ size: Int) async throws {
        let (provider, server, bucket) = try await makeS3Provider(auth: false)
        let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 3) })
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-interop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: source) }
        try data.write(to: source)
        _ = try boto(server, bucket, "put", "from boto/data.bin", source.path)
        let target = source.appendingPathExtension("back")
        defer { try? FileManager.default.removeItem(at: target) }
        try await provider.downloadFile(remotePath: "from boto/data.bin", localURL: target)
        #expect(try Data(contentsOf: target) == data)
        #expect(try await provider.stat(remotePath: "from boto/data.bin")?.size == Int64(size))
    }

    @Test("A presigned GET URL works with plain curl, and a presigned PUT URL accepts curl's upload")
    func presignedWithCurl() async throws {
        let (provider, _, _) = try await makeS3Provider(auth: false)
        let data = Data("presigned bytes \(UUID().uuidString)\n".utf8)
        try await provider.uploadData(data, remotePath: "shared/file.txt")
        let get = try provider.presignedURL(for: ObjectKey("shared/file.txt"), method: .get, expires: .seconds(300))
        #expect(try runTool("curl", ["-sf", get.absoluteString]) + "\n" == String(decoding: data, as: UTF8.self))

        let upload = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-curl-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: upload) }
        try Data("sent by curl\n".utf8).write(to: upload)
        let put = try provider.presignedURL(for: ObjectKey("shared/upload.txt"), method: .put, expires: .seconds(300))
        _ = try runTool("curl", ["-sf", "-X", "PUT", "-H", "Content-Type: text/plain", "--data-binary", "@\(upload.path)", put.absoluteString])
        #expect(try await provider.readData(remotePath: "shared/upload.txt") == Data("sent by curl\n".utf8))
    }
}
