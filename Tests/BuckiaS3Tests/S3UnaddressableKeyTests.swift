import BuckiaConformance
import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

/// Keys a real bucket holds that are not valid object keys, written by boto3: listings report
/// them as unaddressable and tree operations go on without them, saying so.
@Suite("S3 keys Buckia cannot address")
struct S3UnaddressableKeyTests {
    static let put = """
        import sys, boto3
        endpoint, bucket = sys.argv[1:3]
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="x", aws_secret_access_key="y", region_name="us-east-1")
        for key in sys.argv[3:]:
            s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
        """
    static let good = ["tree/ok.txt", "tree/sub/also.txt"]
    static let bad = ["tree/marker/", "tree/a//b", "tree/./dot"]

    func seed() async throws -> (S3Provider, S3TestServer, String) {
        let (provider, server, bucket) = try await makeS3Provider(auth: false)
        _ = try runTool("python3", ["-c", Self.put, server.endpoint.absoluteString, bucket] + Self.good + Self.bad)
        return (provider, server, bucket)
    }

    @Test("A listing reports console folder markers and empty segments as unaddressable, with reasons, and every other key")
    func listing() async throws {
        let (other, _, _) = try await seed()
        var files: [String] = []
        var skipped: [UnaddressableKey] = []
        for try await entry in other.list(ListOptions(prefix: "tree/")) {
            if let file = entry.file { files.append(file.path.rawValue) }
            if let key = entry.unaddressable { skipped.append(key) }
        }
        #expect(files == Self.good)
        #expect(skipped.map(\.displayName).sorted() == Self.bad.sorted())
        #expect(skipped.allSatisfy { !$0.reason.isEmpty })
        var level: [String] = []
        for try await entry in other.list(ListOptions(prefix: "tree/", recursive: false)) { level.append(entry.path) }
        #expect(level == ["tree/./", "tree/a/", "tree/marker/", "tree/ok.txt", "tree/sub/"])
    }

    @Test("cp -r copies every addressable key, names each one it left out, and exits 7")
    func treeCopy() async throws {
        let (_, server, bucket) = try await seed()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-unaddressable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = [
            "BUCKIA_REMOTE_LAKE_PROVIDER": "s3", "BUCKIA_REMOTE_LAKE_BUCKET": bucket, "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": server.endpoint.absoluteString,
            "HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "PATH": "/usr/bin:/bin",
        ]
        let target = home.appendingPathComponent("copy")
        let buckia = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia")
        let run = try runProcess(buckia.path, ["cp", "-r", "lake:tree", target.path], environment: environment)
        #expect(run.status == 7, "\(run.stderr)")
        #expect(try Data(contentsOf: target.appendingPathComponent("ok.txt")) == Data("tree/ok.txt".utf8))
        #expect(try Data(contentsOf: target.appendingPathComponent("sub/also.txt")) == Data("tree/sub/also.txt".utf8))
        for key in Self.bad { #expect(run.stderr.contains(key.debugDescription), "\(run.stderr)") }
    }
}

/// Runs a program to completion (at most 5 minutes) and returns its status and both outputs.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let run = try ToolRun.run(path: URL(fileURLWithPath: executable), arguments, exactEnvironment: environment, limit: .seconds(300))
    return (run.status, run.output, run.errors)
}
