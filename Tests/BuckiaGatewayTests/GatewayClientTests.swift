import BuckiaB2
import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaSecurity
import BuckiaTestSupport
import Foundation
import Testing

/// The peers a user would point at `buckia serve s3` — boto3, the AWS CLI and rclone, all from
/// PyPI — copy, list, sync and delete through it with temporary credentials scoped to one
/// folder, in front of a local folder and in front of the B2 emulator. What each tool reports
/// is checked, and so is what the backend holds afterwards.
@Suite("Clients through buckia serve s3")
struct GatewayClientTests {
    enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
        case local, b2
        var description: String { rawValue }
    }

    /// `buckia serve s3` in a process of its own over `backend`, a bucket in it, and temporary
    /// credentials for alice, made the way a user makes them (`buckia token issue --s3`), that
    /// may do everything under `BUCKET/alice/` and nothing else. The server runs in its own
    /// process so the suite's load on this one (CLI tests hold the cooperative pool) cannot
    /// stall it; its access log (`--json`) says what it served.
    struct Setup {
        let server: GatewayProcess
        let backend: any StorageProvider
        let bucket: String
        let emulator: B2Emulator?
        let work: URL

        var environment: [String: String] {
            [
                "AWS_ACCESS_KEY_ID": server.temporary?.accessKeyId ?? "", "AWS_SECRET_ACCESS_KEY": server.temporary?.secretAccessKey ?? "",
                "AWS_SESSION_TOKEN": server.temporary?.sessionToken ?? "", "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_CONFIG_FILE": work.appendingPathComponent("aws-config").path, "AWS_SHARED_CREDENTIALS_FILE": work.appendingPathComponent("absent-aws-credentials").path, "HOME": work.path,
                "AWS_EC2_METADATA_DISABLED": "true",
            ]
        }

        func stop() {
            server.stop()
            emulator?.stop()
            try? FileManager.default.removeItem(at: work)
        }

        /// The access log's entries so far.
        var log: [S3AccessLogEntry] {
            server.accessLog.split(separator: "\n").compactMap { try? JSONDecoder.iso8601.decode(S3AccessLogEntry.self, from: Data($0.utf8)) }
        }

        /// The keys under `prefix` the backend holds, read there directly.
        func backendKeys(_ prefix: String) async throws -> [String: Int64] {
            var keys: [String: Int64] = [:]
            for try await entry in backend.list(ListOptions(prefix: bucket + "/" + prefix)) {
                if let file = entry.file { keys[String(file.path.rawValue.dropFirst(bucket.count + 1))] = file.size }
            }
            return keys
        }
    }

    static func setUp(_ backend: Backend) async throws -> Setup {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-gateway-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try Data("[default]\ns3 =\n    addressing_style = path\n".utf8).write(to: work.appendingPathComponent("aws-config"))
        let bucket = freshBucket()
        let grants = ["read,write,delete,list:\(bucket)/alice/"]
        var emulator: B2Emulator?
        let provider: any StorageProvider
        let server: GatewayProcess
        switch backend {
        case .local:
            let root = work.appendingPathComponent("served")
            provider = try LocalProvider(root: root)
            server = try GatewayProcess(
                remoteJSON: #"{"provider": "local", "bucketName": "served", "options": {"root": "\#(root.path)"}}"#, capabilities: provider.capabilities,
                arguments: ["--json"], temporaryFor: ("alice", grants))
        case .b2:
            let started = try await B2Emulator.start(buckets: ["gateway"])
            emulator = started
            provider = try B2Provider(configuration: started.configuration(bucket: "gateway"))
            server = try GatewayProcess(
                remoteJSON: #"{"provider": "b2", "bucketName": "gateway", "options": {"endpoint": "\#(started.endpoint.absoluteString)"}}"#,
                capabilities: provider.capabilities, arguments: ["--json"],
                environment: ["B2_APPLICATION_KEY_ID": started.keyId, "B2_APPLICATION_KEY": started.key], temporaryFor: ("alice", grants))
        }
        try await server.createBucket(bucket)
        return Setup(server: server, backend: provider, bucket: bucket, emulator: emulator, work: work)
    }

    static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients")

    /// How boto3 sends its checksums: in a header over a signed body (what it does over plain
    /// HTTP), or in an aws-chunked trailer over an unsigned body (what it does over TLS).
    enum ChecksumPlace: String, CaseIterable, Sendable, CustomStringConvertible {
        case header, trailer
        var description: String { rawValue }
    }

    @Test("boto3: put, multipart upload, paginated list, ranged and whole download, copy, replace, delete", arguments: Backend.allCases, ChecksumPlace.allCases)
    func boto3(_ backend: Backend, _ checksums: ChecksumPlace) async throws {
        let setup = try await Self.setUp(backend)
        defer { setup.stop() }
        let run = try await runTool(
            "python3",
            [Self.clients.appendingPathComponent("boto3_client.py").path, setup.server.endpoint.absoluteString, setup.bucket, "alice/b3/", setup.work.path]
                + (checksums == .trailer ? ["--trailer"] : []),
            environment: setup.environment, limit: .seconds(120))
        try #require(run.status == 0, "boto3 failed: \(run.errors.suffix(2000))")
        let report = try #require(JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        let listed = (report["listed"] as? [[Any]])?.compactMap { $0.first as? String } ?? []
        #expect(listed == ["alice/b3/big.bin", "alice/b3/small-0.txt", "alice/b3/small-1.txt", "alice/b3/small-2.txt"])
        #expect(report["big_ok"] as? Bool == true)
        #expect(report["ranged"] as? Bool == true)
        #expect(report["copied"] as? Bool == true)
        #expect(report["replaced"] as? Bool == true)
        #expect(report["after"] as? [String] == ["alice/b3/small-1.txt", "alice/b3/small-2.txt"])
        #expect(try await setup.backendKeys("alice/b3/") == ["alice/b3/small-1.txt": 9, "alice/b3/small-2.txt": 39])
        let log = setup.log
        let operations = Set(log.map(\.operation))
        #expect(operations.isSuperset(of: ["PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "ListObjectsV2", "GetObject", "CopyObject", "DeleteObjects", "DeleteObject"]))
        #expect(log.allSatisfy { $0.principal == "alice" || $0.principal == setup.server.accessKeyId })
        // The bodies came the way this case is about.
        let uploads = log.filter { $0.operation == "PutObject" || $0.operation == "UploadPart" }
        let expected = checksums == .trailer ? "STREAMING-UNSIGNED-PAYLOAD-TRAILER" : "signed"
        #expect(!uploads.isEmpty && uploads.allSatisfy { $0.payload == expected }, "\(uploads.map(\.payload))")
    }

    @Test("boto3: a multipart upload with CRC32 checksums read back by part number, in checksum mode and by GetObjectAttributes; a PUT's SHA-256", arguments: Backend.allCases)
    func boto3Parts(_ backend: Backend) async throws {
        let setup = try await Self.setUp(backend)
        defer { setup.stop() }
        let run = try await runTool(
            "python3", [Self.clients.appendingPathComponent("parts_client.py").path, setup.server.endpoint.absoluteString, setup.bucket, "alice/parts/"],
            environment: setup.environment, limit: .seconds(120))
        try #require(run.status == 0, "boto3 failed: \(run.errors.suffix(2000))")
        let report = try #require(JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        for check in ["composite", "part", "attributes", "sha256"] {
            #expect(report[check] as? Bool == true, "\(check): \(run.output)")
        }
    }

    /// A tree of files: small ones in folders, and one past the AWS CLI's 8 MiB multipart threshold.
    static func makeTree(_ root: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for index in 0..<6 { files["docs/note-\(index).txt"] = Data("note \(index)\n".utf8) }
        files["photos/2026/a b+c.jpg"] = Data(repeating: 7, count: 70_000)
        files["big/archive.bin"] = Data((0..<(9 * 1024 * 1024 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for (path, data) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
        return files
    }

    static func readTree(_ root: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = walker?.nextObject() as? URL {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            files[String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1))] = try Data(contentsOf: url)
        }
        return files
    }

    /// The AWS CLI from PyPI (current, with the SDKs' default checksums) and Debian's 2.9 (older,
    /// from before them), installed by Tools/test.
    enum AWSCLI: String, CaseIterable, Sendable, CustomStringConvertible {
        case current, debian
        var description: String { rawValue }
        var executable: String { self == .current ? "aws" : "/usr/bin/aws" }
    }

    @Test("The AWS CLI: s3 sync up (only what changed the second time), ls, sync down, rm --recursive", arguments: Backend.allCases, AWSCLI.allCases)
    func awsCLI(_ backend: Backend, _ cli: AWSCLI) async throws {
        let setup = try await Self.setUp(backend)
        defer { setup.stop() }
        let source = setup.work.appendingPathComponent("source")
        var tree = try Self.makeTree(source)
        let remote = "s3://\(setup.bucket)/alice/cli/"
        func aws(_ arguments: String...) async throws -> ToolRun.Result {
            let run = try await runTool(
                cli.executable, ["--endpoint-url", setup.server.endpoint.absoluteString] + arguments, environment: setup.environment, limit: .seconds(120))
            try #require(run.status == 0, "aws \(arguments.joined(separator: " ")) failed: \(run.errors.suffix(2000))")
            return run
        }
        let first = try await aws("s3", "sync", source.path, remote)
        #expect(first.output.components(separatedBy: "upload:").count - 1 == tree.count)
        #expect(try await setup.backendKeys("alice/cli/").count == tree.count)

        // Change one file: the second sync sends that one alone.
        tree["docs/note-3.txt"] = Data("note 3, changed and longer\n".utf8)
        try tree["docs/note-3.txt"]?.write(to: source.appendingPathComponent("docs/note-3.txt"))
        let second = try await aws("s3", "sync", source.path, remote)
        #expect(second.output.components(separatedBy: "upload:").count - 1 == 1)
        #expect(second.output.contains("docs/note-3.txt"))

        let listing = try await aws("s3", "ls", "--recursive", remote)
        #expect(listing.output.split(separator: "\n").count == tree.count)

        // Metadata and a content type given to sync come back from every object it sent.
        let labelled = "s3://\(setup.bucket)/alice/labelled/"
        _ = try await aws("s3", "sync", source.appendingPathComponent("docs").path, labelled, "--metadata", "colour=blue,owner=Alice Smith", "--content-type", "text/x-note")
        let head = try await aws("s3api", "head-object", "--bucket", setup.bucket, "--key", "alice/labelled/note-1.txt")
        let described = try JSONSerialization.jsonObject(with: Data(head.output.utf8)) as? [String: Any]
        #expect(described?["Metadata"] as? [String: String] == ["colour": "blue", "owner": "Alice Smith"], "\(head.output)")
        #expect(described?["ContentType"] as? String == "text/x-note", "\(head.output)")
        _ = try await aws("s3", "rm", "--recursive", labelled)
        #expect(listing.output.contains("alice/cli/photos/2026/a b+c.jpg"))

        let destination = setup.work.appendingPathComponent("destination")
        _ = try await aws("s3", "sync", remote, destination.path)
        #expect(try Self.readTree(destination) == tree)

        _ = try await aws("s3", "rm", "--recursive", remote + "docs/")
        #expect(try await setup.backendKeys("alice/cli/").keys.sorted() == ["alice/cli/big/archive.bin", "alice/cli/photos/2026/a b+c.jpg"])

        // Outside the grant, the CLI is refused and the backend unchanged.
        let refused = try await runTool(
            cli.executable, ["--endpoint-url", setup.server.endpoint.absoluteString, "s3", "cp", source.appendingPathComponent("docs/note-1.txt").path, "s3://\(setup.bucket)/bob/x.txt"],
            environment: setup.environment, limit: .seconds(60))
        #expect(refused.status != 0)
        #expect(refused.errors.contains("AccessDenied"))
        #expect(try await setup.backendKeys("bob/").isEmpty)
    }

    @Test("rclone: copy, ls, sync (deleting what the source lacks), copy back, delete", arguments: Backend.allCases)
    func rclone(_ backend: Backend) async throws {
        let setup = try await Self.setUp(backend)
        defer { setup.stop() }
        let source = setup.work.appendingPathComponent("source")
        var tree = try Self.makeTree(source)
        let environment = [
            "RCLONE_CONFIG_GW_TYPE": "s3", "RCLONE_CONFIG_GW_PROVIDER": "Other", "RCLONE_CONFIG_GW_ENDPOINT": setup.server.endpoint.absoluteString,
            "RCLONE_CONFIG_GW_ACCESS_KEY_ID": setup.server.temporary?.accessKeyId ?? "",
            "RCLONE_CONFIG_GW_SECRET_ACCESS_KEY": setup.server.temporary?.secretAccessKey ?? "",
            "RCLONE_CONFIG_GW_SESSION_TOKEN": setup.server.temporary?.sessionToken ?? "", "RCLONE_CONFIG_GW_REGION": "us-east-1",
            "RCLONE_CONFIG_GW_FORCE_PATH_STYLE": "true", "HOME": setup.work.path,
        ]
        let remote = "gw:\(setup.bucket)/alice/rc"
        func rclone(_ arguments: String...) async throws -> ToolRun.Result {
            let run = try await runTool("rclone", arguments + ["--retries", "1", "--low-level-retries", "1"], environment: environment, limit: .seconds(120))
            try #require(run.status == 0, "rclone \(arguments.joined(separator: " ")) failed: \(run.errors.suffix(2000))")
            return run
        }
        _ = try await rclone("copy", source.path, remote, "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M")
        #expect(try await setup.backendKeys("alice/rc/").mapValues { Int($0) } == tree.mapValues { $0.count }.reduce(into: [:]) { $0["alice/rc/" + $1.key] = $1.value })

        let listing = try await rclone("ls", remote)
        #expect(listing.output.split(separator: "\n").count == tree.count)

        // Nothing changed: a sync sends nothing, as rclone's mtime metadata comes back to the
        // nanosecond it wrote (it once came back to the microsecond, and rclone, with no MD5
        // ETag to compare, copied every file again).
        let unchanged = try await rclone("sync", source.path, remote, "-v")
        let copies = unchanged.errors.components(separatedBy: "\n").filter { $0.contains("Copied") || $0.contains("Updated modification time") }
        #expect(copies.isEmpty, "a sync of an unchanged tree sent: \(copies)")

        // The source loses a file and changes another: sync deletes and replaces.
        try FileManager.default.removeItem(at: source.appendingPathComponent("docs/note-0.txt"))
        tree["docs/note-0.txt"] = nil
        tree["docs/note-2.txt"] = Data("note 2, changed\n".utf8)
        try tree["docs/note-2.txt"]?.write(to: source.appendingPathComponent("docs/note-2.txt"))
        _ = try await rclone("sync", source.path, remote)
        #expect(try await setup.backendKeys("alice/rc/").count == tree.count)
        _ = try await rclone("check", source.path, remote, "--size-only")

        let destination = setup.work.appendingPathComponent("destination")
        _ = try await rclone("copy", remote, destination.path)
        #expect(try Self.readTree(destination) == tree)

        _ = try await rclone("delete", remote + "/docs")
        #expect(try await setup.backendKeys("alice/rc/").keys.sorted() == ["alice/rc/big/archive.bin", "alice/rc/photos/2026/a b+c.jpg"])
    }
}
