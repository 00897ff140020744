import BuckiaCore
import BuckiaGateway
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

/// The seed's user token made real: a temporary credential that reads and lists `alice/` and
/// writes `alice/inbound/` (in the bucket `home`) can do exactly that through the gateway and
/// nothing else — over a corpus of path tricks sent by boto3 (which encodes keys as clients do)
/// and as raw signed requests (which put any bytes on the wire), over every operation, and
/// over listings, copies, multipart parts and batch deletes at the grant's edge. Nothing
/// outside `alice/inbound/` changes.
@Suite("S3 gateway: grants enforced on every request")
struct GatewayGrantTests {
    /// Where a key lies, as the grant reads it.
    enum Place: String, Sendable {
        /// Under `alice/` but not `alice/inbound/`: read, not write.
        case alice
        /// Under `alice/inbound/`: read and write.
        case inbound
        /// Outside both (another folder, a look-alike spelling, a longer name): nothing.
        case outside
        /// A key no backend may be trusted to read as sent (`..`, `//`, a backslash, an encoded
        /// separator, a control character, a dot or space at a segment's end): nothing.
        case unsafe
    }

    /// Keys as boto3 sends them (it percent-encodes what it must).
    static let keys: [(String, Place)] = [
        ("alice/doc.txt", .alice), ("alice/sub/file", .alice), ("alice/.hidden", .alice), ("alice/..x", .alice), ("alice/inbound", .alice),
        ("alice/inbound2/x", .alice), ("alice/inboundx", .alice), ("alice/Inbound/x", .alice), ("alice/%41.txt", .alice),
        ("alice/\u{0430}lice", .alice), ("alice/inbound/new.txt", .inbound), ("alice/inbound/deep/er/file", .inbound),
        ("alice/inbound/\u{00FC}n\u{00EF}code.txt", .inbound), ("alice/inbound/a+b c&d=e?f#g.txt", .inbound), ("alice/inbound/\u{1F600}.txt", .inbound),
        ("alice/inbound/\u{0130}x", .inbound), ("alice/inbound/u\u{0308}.txt", .inbound), ("alice2/secret.txt", .outside), ("bob/secret.txt", .outside),
        ("alice", .outside), ("aliceinbound/x", .outside), ("Alice/doc.txt", .outside), ("ALICE/inbound/x", .outside), ("alicE/doc.txt", .outside),
        ("\u{FF41}lice/doc.txt", .outside), ("alice\u{0301}/x", .outside), ("\u{0430}lice/doc.txt", .outside), ("alice/../bob/secret.txt", .unsafe),
        ("alice/inbound/../../bob/x", .unsafe), ("alice/./doc.txt", .unsafe), ("alice//doc.txt", .unsafe), ("alice/inbound//x", .unsafe),
        ("./alice/doc.txt", .unsafe), ("../home/alice/doc.txt", .unsafe), ("alice/%2e%2e/bob/secret.txt", .unsafe),
        ("alice/inbound/%2e%2e/%2e%2e/bob/x", .unsafe), ("alice/..%2fbob", .unsafe), ("alice/inbound%2f..%2f..%2fbob", .unsafe),
        ("alice\\..\\bob\\secret.txt", .unsafe), ("alice/inbound\\x", .unsafe), ("alice/\u{2024}\u{2024}/bob/x", .unsafe),
        ("alice/inbound/\u{FF0E}\u{FF0E}/x", .unsafe), ("alice/x\u{0007}", .unsafe), ("alice/inbound/x\u{007F}", .unsafe),
        ("alice/inbound/x\u{0085}", .unsafe), ("alice/inbound/x\r\nSet-Cookie: a", .unsafe), ("alice/trailing.", .unsafe),
        ("alice/inbound/trailing ", .unsafe), ("alice /doc.txt", .unsafe), ("alice./doc.txt", .unsafe), ("alice/inbound./x", .unsafe),
        ("/alice/doc.txt", .unsafe), ("alice/inbound/", .unsafe), ("alice/", .unsafe), ("alice/inbound/..", .unsafe), ("alice/inbound/.", .unsafe),
        ("alice/inbound/x/..", .unsafe), ("alice/inbound/x%00", .unsafe), ("alice/inbound/%252e%252e/x", .unsafe),
        ("alice/inbound/x\u{0000}y", .unsafe),
    ]

    /// Request targets (after `/home/`) exactly as they go on the wire.
    static let rawTargets: [(String, Place)] = [
        ("alice/doc.txt", .alice), ("%61lice/doc.txt", .alice), ("alice/inbound/%C3%BC.txt", .inbound), ("alice/inbound/u%CC%88.txt", .inbound),
        ("alice%2Finbound%2Fencoded.txt", .inbound), ("alice/../bob/secret.txt", .unsafe), ("alice/inbound/../../bob/x", .unsafe),
        ("alice/%2E%2E/bob/secret.txt", .unsafe), ("alice/inbound/%2e%2e/%2e%2e/bob/x", .unsafe), ("alice%2F..%2F..%2Fbob/secret.txt", .unsafe),
        ("alice/./doc.txt", .unsafe), ("alice//doc.txt", .unsafe), ("alice/inbound/%2e/x", .unsafe), ("alice/inbound/%252e%252e/x", .unsafe),
        ("alice%5C..%5Cbob%5Csecret.txt", .unsafe), ("alice/inbound/x%00", .unsafe), ("alice/inbound/x%0D%0AHost:%20evil", .unsafe),
        ("alice/doc.txt%20", .unsafe), ("ALICE/doc.txt", .outside), ("alice/%E2%80%A4%E2%80%A4/bob/x", .unsafe), ("%EF%BD%81lice/doc.txt", .outside),
        ("bob/secret.txt", .outside), ("alice2/secret.txt", .outside), ("alice", .outside), ("alice/inbound/%EF%BC%8E%EF%BC%8E/x", .unsafe),
    ]

    /// `key` with every byte but the unreserved ones and `/` percent-encoded.
    static func wireEncoded(_ key: String) -> String {
        var output = ""
        for byte in key.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "/"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                output += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return output
    }

    static func mayRead(_ place: Place) -> Bool { place == .alice || place == .inbound }
    static func mayWrite(_ place: Place) -> Bool { place == .inbound }

    static let grants: StorageGrants = [StorageGrant([.read, .list], prefix: "home/alice/"), StorageGrant(.write, prefix: "home/alice/inbound/")]

    /// A gateway over a local folder holding alice's, alice2's and bob's files, and a credential for alice.
    static func setUp() async throws -> (GatewayHarness, TemporaryS3Credentials) {
        let harness = try GatewayHarness()
        for key in ["home/alice/doc.txt", "home/alice/inbound/existing.txt", "home/alice2/secret.txt", "home/bob/secret.txt", "home/aliceinbound/x", "other/thing.txt"] {
            try await harness.provider.uploadData(Data("contents of \(key)".utf8), remotePath: ObjectKey(key), options: UploadOptions())
        }
        return (harness, try harness.credentials(user: "alice", grants: grants))
    }

    /// Every object of the backend outside `home/alice/inbound/`, with what identifies its version.
    static func outsideInbound(_ provider: any StorageProvider) async throws -> [String: String] {
        var objects: [String: String] = [:]
        for try await entry in provider.list(ListOptions()) {
            // The gateway's own records of multipart uploads (`.buckia-s3/`) are no user's objects.
            guard let file = entry.file, !file.path.rawValue.hasPrefix("home/alice/inbound/"), !file.path.rawValue.hasPrefix(".buckia-s3/") else { continue }
            objects[file.path.rawValue] = "\(file.size) \(file.etag ?? "")"
        }
        return objects
    }

    @Test("The corpus is large enough to mean something")
    func corpusSize() {
        #expect(Self.keys.count >= 50)
        #expect(Set(Self.keys.map(\.0)).count == Self.keys.count)
        #expect(Self.rawTargets.count >= 20)
    }

    @Test("boto3: every operation on every key of the corpus, listings, copies, parts and batch deletes")
    func boto3() async throws {
        let (harness, credentials) = try await Self.setUp()
        defer { harness.stop() }
        let before = try await Self.outsideInbound(harness.provider)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-grant-cases-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        let casesFile = folder.appendingPathComponent("grant-cases.json")
        try JSONSerialization.data(withJSONObject: Self.keys.map(\.0)).write(to: casesFile)
        let environment = [
            "AWS_ACCESS_KEY_ID": credentials.accessKeyId, "AWS_SECRET_ACCESS_KEY": credentials.secretAccessKey.exposedValue,
            "AWS_SESSION_TOKEN": credentials.sessionToken.exposedValue,
        ]
        let script = GatewayClientTests.clients.appendingPathComponent("grant_probe.py")
        let run = try await runTool("python3", [script.path, harness.endpoint.absoluteString, "home", casesFile.path], environment: environment, limit: .seconds(300))
        try #require(run.status == 0, "the probe failed: \(run.errors.suffix(3000))")
        let report = try #require(JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        let results = try #require(report["keys"] as? [String: [String: [Any]]])

        var checked = 0
        for (key, place) in Self.keys {
            let row = try #require(results[key], "no result for \(key.debugDescription)")
            let expectations: [(String, Bool)] = [
                ("get", Self.mayRead(place)), ("head", Self.mayRead(place)), ("put", Self.mayWrite(place)), ("delete", false),
                ("copy_from", Self.mayRead(place)), ("copy_to", Self.mayWrite(place)), ("multipart", Self.mayWrite(place)),
            ]
            for (operation, allowed) in expectations {
                let status = row[operation]?.first as? Int ?? 0
                let code = row[operation]?.last as? String
                if allowed {
                    #expect(status != 403 && status != 400 && status != 0, "\(operation) \(key.debugDescription) (\(place)) should be allowed: \(status) \(code ?? "")")
                } else {
                    // A HEAD answer has no body, so boto3 names its code by the status.
                    let expectedCode = operation == "head" ? "403" : "AccessDenied"
                    #expect(status == 403 && code == expectedCode, "\(operation) \(key.debugDescription) (\(place)) should be denied: \(status) \(code ?? "")")
                }
                checked += 1
            }
        }
        #expect(checked == Self.keys.count * 7)

        let lists = try #require(report["lists"] as? [String: [Any]])
        func entries(_ name: String) -> [String]? { lists[name]?.last as? [String] }
        func status(_ name: String) -> Int? { lists[name]?.first as? Int }
        // Listing the bucket, or `alice` without the slash, shows only what is under alice/.
        for name in ["all", "prefix alice", "prefix ali", "prefix alice/"] {
            #expect(status(name) == 200)
            #expect(entries(name)?.isEmpty == false && entries(name)?.allSatisfy { $0.hasPrefix("alice/") } == true, "\(name): \(lists[name] ?? [])")
        }
        #expect(entries("delimiter") == ["alice/"])
        #expect(entries("start-after")?.contains("alice/doc.txt") == false)
        for name in ["prefix alice2/", "prefix bob/", "prefix alice/../bob/"] {
            #expect(status(name) == 403, "\(name): \(lists[name] ?? [])")
        }
        #expect(report["buckets"] as? [String] == ["home"])

        let multipart = try #require(report["multipart"] as? [String: [Any]])
        #expect(multipart["part elsewhere"]?.first as? Int == 403)
        #expect(multipart["complete elsewhere"]?.first as? Int == 403)
        #expect(multipart["complete"]?.first as? Int == 200)
        let batch = try #require(report["batch"] as? [String: Any])
        #expect((batch["deleted"] as? [String])?.isEmpty == true)
        #expect((batch["errors"] as? [[String]]) == [["alice/inbound/existing.txt", "AccessDenied"], ["bob/secret.txt", "AccessDenied"]])

        // Nothing outside alice/inbound/ changed; inside it, only what the grant allowed arrived.
        #expect(try await Self.outsideInbound(harness.provider) == before)
        #expect(try await harness.provider.stat(remotePath: ObjectKey("home/alice/inbound/mp.bin"))?.size == 1024)
    }

    @Test("Raw signed requests: any bytes on the wire are held to the same grant")
    func raw() async throws {
        let (harness, credentials) = try await Self.setUp()
        defer { harness.stop() }
        let before = try await Self.outsideInbound(harness.provider)
        let signer = SigV4Signer(credentials: credentials.awsCredentials, region: "us-east-1", service: "s3")
        let port = harness.server.port
        // The hand-written targets, and every key of the boto3 corpus on the wire as it is
        // (only what a request line cannot hold escaped, so `..`, `.` and `//` go literally).
        let derived = Self.keys.map { (key, place) in (Self.wireEncoded(key), place) }
        let targets = Self.rawTargets + derived
        #expect(targets.count >= 80)
        for (raw, place) in targets {
            for method in ["GET", "PUT"] {
                let target = "/home/" + raw
                let url = try #require(URL(string: "http://127.0.0.1:\(port)\(target)"), "\(target)")
                let body = Data("raw".utf8)
                let headers = signer.sign(method: method, url: url, headers: [:], payloadHash: Hashing.sha256Hex(method == "PUT" ? body : Data()), date: Date())
                var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
                for (name, value) in headers { request += "\(name): \(value)\r\n" }
                request += "Content-Length: \(method == "PUT" ? body.count : 0)\r\n\r\n"
                let wire = Array(request.utf8) + (method == "PUT" ? Array(body) : [])
                let answer = try await offPool {
                    let client = try RawClient(port: port)
                    client.send(wire)
                    return client.readAll()
                }
                let status = Int(answer.dropFirst("HTTP/1.1 ".count).prefix(3)) ?? 0
                let allowed = method == "GET" ? Self.mayRead(place) : Self.mayWrite(place)
                if allowed {
                    #expect(status == 200 || status == 404, "\(method) \(target) (\(place)) should be allowed: \(answer.prefix(400))")
                } else {
                    #expect(status == 403 && answer.contains("<Code>AccessDenied</Code>"), "\(method) \(target) (\(place)) should be denied: \(answer.prefix(400))")
                }
            }
        }
        #expect(try await Self.outsideInbound(harness.provider) == before)
        #expect(try await harness.provider.stat(remotePath: ObjectKey("home/alice/inbound/encoded.txt"))?.size == 3)
        #expect(try await harness.provider.stat(remotePath: ObjectKey("home/alice/inbound/deep/er/file"))?.size == 3)
    }

    @Test("Another user's credential cannot add parts to alice's upload, even inside a grant it holds")
    func uploadOwnership() async throws {
        let (harness, alice) = try await Self.setUp()
        defer { harness.stop() }
        let bob = try harness.credentials(user: "bob", grants: [StorageGrant(.all, prefix: "home/alice/inbound/")])
        let (status, body) = try await harness.send("POST", "/home/alice/inbound/shared.bin?uploads", credentials: alice.awsCredentials)
        #expect(status == 200)
        let text = String(decoding: body, as: UTF8.self)
        let id = try #require(text.components(separatedBy: "<UploadId>").last?.components(separatedBy: "</UploadId>").first)
        let (bobStatus, bobBody) = try await harness.send(
            "PUT", "/home/alice/inbound/shared.bin?partNumber=1&uploadId=\(id)", body: Data("bob".utf8), credentials: bob.awsCredentials)
        #expect(bobStatus == 404 && String(decoding: bobBody, as: UTF8.self).contains("NoSuchUpload"))
        let (aliceStatus, _) = try await harness.send(
            "PUT", "/home/alice/inbound/shared.bin?partNumber=1&uploadId=\(id)", body: Data("alice".utf8), credentials: alice.awsCredentials)
        #expect(aliceStatus == 200)
    }
}
