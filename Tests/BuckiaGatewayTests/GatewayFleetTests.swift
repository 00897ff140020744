import BuckiaCore
import BuckiaGateway
import BuckiaHTTP
import BuckiaLocal
import BuckiaS3
import BuckiaSecurity
import BuckiaTestSupport
import Foundation
import Testing

/// Three `buckia serve s3` processes over one local folder, as a fleet behind a load balancer
/// would be: conditional writes hold whichever gateway answers, because each is the backend's
/// own atomic step (a link that does not replace; a replacement under the folder's lock), and
/// a bucket made through one is there for the others.
@Suite("S3 gateway: three gateway processes over one folder")
struct GatewayFleetTests {
    struct Fleet {
        let gateways: [GatewayProcess]
        let root: URL

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-fleet-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let capabilities = try LocalProvider(root: root).capabilities
            var started: [GatewayProcess] = []
            do {
                for _ in 0..<3 {
                    started.append(
                        try GatewayProcess(
                            remoteJSON: #"{"provider": "local", "bucketName": "served", "options": {"root": "\#(root.path)"}}"#, capabilities: capabilities))
                }
            } catch {
                for gateway in started { gateway.stop() }
                throw error
            }
            gateways = started
        }

        func stop() {
            for gateway in gateways { gateway.stop() }
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// Sends `count` PUTs of `key` at once, writer `i` through gateway `i % 3` with body
    /// `writer i`, and returns each writer's status.
    static func race(_ fleet: Fleet, _ key: String, count: Int, headers: [String: String]) async throws -> [Int: Int] {
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for writer in 0..<count {
                group.addTask {
                    let gateway = fleet.gateways[writer % fleet.gateways.count]
                    return (writer, try await gateway.send("PUT", key, body: Data("writer \(writer)".utf8), headers: headers).0)
                }
            }
            var statuses: [Int: Int] = [:]
            for try await (writer, status) in group { statuses[writer] = status }
            return statuses
        }
    }

    @Test("2,000 creates with If-None-Match: * of 20 keys, 100 at once through three gateways: exactly one wins each key, and every gateway reads the winner's bytes")
    func creates() async throws {
        let fleet = try Fleet()
        defer { fleet.stop() }
        try await fleet.gateways[0].createBucket("race")
        for gateway in fleet.gateways.dropFirst() { #expect(try await gateway.send("HEAD", "/race").0 == 200, "a bucket made through another gateway") }
        for round in 0..<20 {
            let key = "/race/key-\(round)"
            let statuses = try await Self.race(fleet, key, count: 100, headers: ["If-None-Match": "*"])
            let winners = statuses.filter { $0.value == 200 }.map(\.key)
            #expect(winners.count == 1, "round \(round): \(winners.count) writers were told they created \(key)")
            #expect(statuses.values.allSatisfy { $0 == 200 || $0 == 412 }, "round \(round): \(Set(statuses.values).sorted())")
            guard let winner = winners.first else { continue }
            for gateway in fleet.gateways {
                #expect(try await gateway.send("GET", key).1 == Data("writer \(winner)".utf8), "round \(round): the stored bytes are the winner's")
            }
        }
    }

    @Test("If-Match on one version, 100 writers at once through three gateways, 10 rounds: exactly one replaces it each round")
    func replaces() async throws {
        let fleet = try Fleet()
        defer { fleet.stop() }
        try await fleet.gateways[1].createBucket("swap")
        #expect(try await fleet.gateways[2].send("PUT", "/swap/doc", body: Data("first".utf8)).0 == 200)
        for round in 0..<10 {
            let etag = try #require(try await fleet.gateways[round % 3].exchange("HEAD", "/swap/doc").headers["etag"])
            let statuses = try await Self.race(fleet, "/swap/doc", count: 100, headers: ["If-Match": etag])
            let winners = statuses.filter { $0.value == 200 }.map(\.key)
            #expect(winners.count == 1, "round \(round): \(winners.count) writers replaced the version \(etag)")
            #expect(statuses.values.allSatisfy { $0 == 200 || $0 == 412 }, "round \(round): \(Set(statuses.values).sorted())")
            if let winner = winners.first {
                #expect(try await fleet.gateways[(round + 1) % 3].send("GET", "/swap/doc").1 == Data("writer \(winner)".utf8))
            }
        }
    }
}

/// Three `buckia serve s3` processes behind HAProxy (round-robin, a balancing decision per
/// request, no stickiness), as a stateless fleet is deployed, over one Ceph RGW bucket and over
/// one local folder: every multipart upload is the backend's own (RGW's; the local provider's in
/// `.buckia/uploads`), and what the gateway adds is kept in the backend too, so parts land on
/// every gateway, one gateway dies half way, and the others finish the upload.
@Suite("S3 gateway: three gateways behind HAProxy in front of Ceph RGW or one folder")
struct GatewayBalancedFleetTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case cephRGW, folder
        var testDescription: String { self == .cephRGW ? "Ceph RGW" : "a local folder" }
    }

    /// The backend the fleet serves, its remote's JSON, and whether it holds no unfinished
    /// multipart upload of its own.
    static func backend(_ kind: Backend, work: URL) async throws -> (provider: any StorageProvider, remote: String, settled: @Sendable () async throws -> Bool) {
        switch kind {
        case .cephRGW:
            let server = try await S3TestServer.shared(.cephRGW)
            let bucket = "fleet-" + UUID().uuidString.lowercased().prefix(12)
            _ = try await HTTPClient().send(server.signedRequest(.put, bucket: bucket))
            let options = [
                "endpoint": server.endpoint.absoluteString, "region": server.region, "vendor": "ceph", "stateDirectory": work.appendingPathComponent("state").path,
            ]
            let configuration = BuckiaConfiguration(
                provider: .s3, bucketName: bucket, authConfig: .awsSignature(accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey.exposedValue),
                options: options)
            let backend = S3Provider(settings: try S3Settings.resolve(configuration, environment: [:], home: TestHome.empty))
            return (backend, String(decoding: try JSONEncoder().encode(configuration), as: UTF8.self), { try await backend.unfinishedUploads(prefix: "").isEmpty })
        case .folder:
            let root = work.appendingPathComponent("served", isDirectory: true)
            let backend = try LocalProvider(root: root)
            let configuration = BuckiaConfiguration(provider: .local, bucketName: "served", options: ["root": root.path])
            let uploads = root.appendingPathComponent(".buckia/uploads")
            // An upload under way has its record, `upload`; a completed one keeps only its marker.
            return (backend, String(decoding: try JSONEncoder().encode(configuration), as: UTF8.self), {
                try FileManager.default.contentsOfDirectory(atPath: uploads.path).allSatisfy {
                    !FileManager.default.fileExists(atPath: uploads.appendingPathComponent($0).appendingPathComponent("upload").path)
                }
            })
        }
    }

    @Test("boto3 and the AWS CLI upload in parts spread over three gateways behind HAProxy, one killed half way; the listing, a copy and a create-only PUT agree whichever gateway answers", arguments: Backend.allCases)
    func balanced(_ kind: Backend) async throws {
        // 64 MiB here (8 parts); BUCKIA_FLEET_MIB=1024 is the 1 GiB form a person runs.
        let mib = Int(ProcessInfo.processInfo.environment["BUCKIA_FLEET_MIB"] ?? "") ?? 64
        let work = try TestFolder.make("buckia-balanced-fleet")
        defer { TestFolder.remove(work) }
        let (backend, remote, settled) = try await Self.backend(kind, work: work)
        let secret = Secret("fleet-secret-\(UUID().uuidString)")
        var gateways: [GatewayProcess] = []
        defer { for gateway in gateways { gateway.stop() } }
        for _ in 0..<3 {
            gateways.append(try GatewayProcess(remoteJSON: remote, capabilities: backend.capabilities, arguments: ["--json"], secret: secret))
        }
        let balancer = try HAProxyServer(servers: gateways.map(\.port))
        defer { balancer.stop() }
        try await gateways[2].createBucket("shared")
        try Data("[default]\ns3 =\n    addressing_style = path\n    multipart_chunksize = 8MB\n".utf8).write(to: work.appendingPathComponent("aws-config"))
        let environment = [
            "AWS_ACCESS_KEY_ID": gateways[0].accessKeyId, "AWS_SECRET_ACCESS_KEY": secret.exposedValue, "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": work.appendingPathComponent("aws-config").path, "AWS_SHARED_CREDENTIALS_FILE": work.appendingPathComponent("none").path,
            "AWS_EC2_METADATA_DISABLED": "true", "HOME": work.path,
            // A folder's entity tags are its own (inode, times, size), not S3's multipart form.
            "FLEET_MULTIPART_ETAG": kind == .folder ? "0" : "1",
        ]
        let victim = gateways[1]
        let run = try await runTool(
            "python3",
            [GatewayClientTests.clients.appendingPathComponent("fleet_client.py").path, balancer.endpoint.absoluteString, "shared", String(mib),
             String(victim.process.pid), work.path] + gateways.map(\.endpoint.absoluteString),
            environment: environment, limit: .seconds(1_200))
        try #require(run.status == 0, "the fleet client failed: \(run.errors.suffix(3000)) HAProxy: \(balancer.errors.suffix(1000))")
        let report = try #require(JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        print("fleet client (\(mib) MiB): \(report["seconds"] ?? "?") s")
        #expect(report["killed"] as? Bool == true, "a gateway was killed half way")
        #expect(report["listed"] as? Bool == true, "ListParts through the fleet shows every part with its ETag and checksum")
        #expect(report["boto3"] as? Bool == true, "boto3's upload reads back whole, with a multipart ETag where the backend makes one")
        #expect(report["checksum"] as? Bool == true, "the object's composite CRC32 is the parts'")
        #expect(report["cli"] as? Bool == true, "the AWS CLI's upload reads back whole")
        #expect(report["conditional"] as? Bool == true, "a second create-only PUT through another gateway is refused")
        let size = mib << 20
        let heads = report["heads"] as? [Any] ?? []
        #expect(heads.count == 3 && heads[0] as? Int == size && heads[2] as? Int == size && !(heads[1] is Int), "\(heads)")
        let listings = report["listings"] as? [Any] ?? []
        let expected = ["fleet/boto3.bin", "fleet/cli.bin", "fleet/copy.bin"]
        #expect(listings.count == 3 && listings[0] as? [String] == expected && listings[2] as? [String] == expected, "\(listings)")
        // Every gateway, the killed one too, took parts: the balancer spread the upload.
        for (index, gateway) in gateways.enumerated() {
            let parts = gateway.accessLog.split(separator: "\n").filter { $0.contains("\"UploadPart\"") }.count
            #expect(parts > 0, "gateway \(index) served no part")
        }
        // Nothing of either upload is left unfinished in the backend, and of the gateway's
        // records only the completed answers (kept an hour for retries) remain.
        #expect(try await settled())
        var records: [String] = []
        for try await entry in backend.list(ListOptions(prefix: ".buckia-s3/uploads/shared/", recursive: true)) {
            if let file = entry.file { records.append(file.path.rawValue) }
        }
        #expect(!records.isEmpty && records.allSatisfy { $0.hasSuffix("/completed") }, "\(records)")
    }
}
