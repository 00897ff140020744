import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaSecurity
import BuckiaSigV4
import Foundation
import Testing

/// A `deliver` grant through the gateway: u3 may put a new change file in u2's `inbound/` and
/// do nothing else there — not replace or delete what u1 delivered, not read, list, copy or
/// upload in parts, not reach a folder below, another user's folder, another name or a larger
/// body. Each hostile request is refused with S3's code, and u1's file is byte for byte what u1
/// put there afterwards.
@Suite("S3 gateway: deliver grants create new change files and nothing else")
struct GatewayDeliverTests {
    /// A local folder whose provider says it has no conditional writes, as B2 and Bunny have
    /// none: the gateway refuses deliveries there rather than emulate create-only racily.
    struct Unconditional: ForwardingStorageProvider {
        let base: any StorageProvider
        var capabilities: ProviderCapabilities {
            var capabilities = base.capabilities
            capabilities.features.remove(.conditionalWrite)
            return capabilities
        }
    }

    /// The backends behind the gateway: a local folder, and one without conditional writes.
    enum Backend: String, CaseIterable, Sendable { case conditional, unconditional }

    static func harness(_ backend: Backend) throws -> GatewayHarness {
        switch backend {
        case .conditional: return try GatewayHarness()
        case .unconditional:
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-deliver-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            return try GatewayHarness(provider: Unconditional(base: try LocalProvider(root: root)), removing: root)
        }
    }

    /// One request u3 sends, and what it must get.
    struct Attempt: Sendable, CustomTestStringConvertible {
        var note: String
        var method: String
        /// The target, with `EXISTING` for u1's delivered file's name, `FRESH` for a new change
        /// file's, and `PENDING` and `UPLOADID` for u1's multipart upload in progress.
        var target: String
        var headers: [String: String] = [:]
        var bodySize = 100
        var status: Int
        var code: String?

        var testDescription: String { "\(note): \(method) \(target) → \(status)\(code.map { " " + $0 } ?? "")" }
    }

    static let attempts: [Attempt] = [
        Attempt(note: "a new change file", method: "PUT", target: "/home/u2/inbound/FRESH.sqlite", status: 200),
        Attempt(note: "a new change file, If-None-Match sent", method: "PUT", target: "/home/u2/inbound/FRESH.sqlite", headers: ["If-None-Match": "*"], status: 200),
        Attempt(note: "overwrite u1's file", method: "PUT", target: "/home/u2/inbound/EXISTING.sqlite", status: 412, code: "PreconditionFailed"),
        Attempt(note: "overwrite u1's file with If-Match", method: "PUT", target: "/home/u2/inbound/EXISTING.sqlite", headers: ["If-Match": "*"], status: 403, code: "AccessDenied"),
        Attempt(note: "overwrite u1's file with a wrong If-None-Match", method: "PUT", target: "/home/u2/inbound/EXISTING.sqlite", headers: ["If-None-Match": "\"x\""], status: 412, code: "PreconditionFailed"),
        Attempt(note: "a name that is no change file's", method: "PUT", target: "/home/u2/inbound/notes.txt", status: 403, code: "AccessDenied"),
        Attempt(note: "a KSUID with another extension", method: "PUT", target: "/home/u2/inbound/FRESH.exe", status: 403, code: "AccessDenied"),
        Attempt(note: "a KSUID with no extension", method: "PUT", target: "/home/u2/inbound/FRESH", status: 403, code: "AccessDenied"),
        Attempt(note: "a folder below inbound", method: "PUT", target: "/home/u2/inbound/sub/FRESH.sqlite", status: 403, code: "AccessDenied"),
        Attempt(note: "another user's inbound", method: "PUT", target: "/home/u1/inbound/FRESH.sqlite", status: 403, code: "AccessDenied"),
        Attempt(note: "u2's own folder beside inbound", method: "PUT", target: "/home/u2/FRESH.sqlite", status: 403, code: "AccessDenied"),
        Attempt(note: "climbing out through ..", method: "PUT", target: "/home/u2/inbound/../FRESH.sqlite", status: 403, code: "AccessDenied"),
        Attempt(note: "an encoded slash", method: "PUT", target: "/home/u2/inbound/x%2FFRESH.sqlite", status: 403, code: "AccessDenied"),
        Attempt(note: "a body past the delivery limit", method: "PUT", target: "/home/u2/inbound/FRESH.sqlite", bodySize: (4 << 20) + 1, status: 400, code: "EntityTooLarge"),
        Attempt(note: "read u1's file", method: "GET", target: "/home/u2/inbound/EXISTING.sqlite", status: 403, code: "AccessDenied"),
        Attempt(note: "a range of u1's file", method: "GET", target: "/home/u2/inbound/EXISTING.sqlite", headers: ["Range": "bytes=0-3"], status: 403, code: "AccessDenied"),
        Attempt(note: "HEAD u1's file", method: "HEAD", target: "/home/u2/inbound/EXISTING.sqlite", status: 403),
        Attempt(note: "list inbound", method: "GET", target: "/home?list-type=2&prefix=u2%2Finbound%2F", status: 403, code: "AccessDenied"),
        Attempt(note: "list inbound (v1)", method: "GET", target: "/home?prefix=u2%2Finbound%2F", status: 403, code: "AccessDenied"),
        // S3 answers with what the caller may see: u1's upload in progress is not in it.
        Attempt(note: "list unfinished uploads in inbound", method: "GET", target: "/home?uploads&prefix=u2%2Finbound%2F", status: 200),
        Attempt(note: "list the parts of u1's upload", method: "GET", target: "/home/u2/inbound/PENDING.sqlite?uploadId=UPLOADID", status: 403, code: "AccessDenied"),
        Attempt(note: "add a part to u1's upload", method: "PUT", target: "/home/u2/inbound/PENDING.sqlite?partNumber=2&uploadId=UPLOADID", status: 403, code: "AccessDenied"),
        Attempt(note: "abort u1's upload", method: "DELETE", target: "/home/u2/inbound/PENDING.sqlite?uploadId=UPLOADID", status: 403, code: "AccessDenied"),
        Attempt(note: "delete u1's file", method: "DELETE", target: "/home/u2/inbound/EXISTING.sqlite", status: 403, code: "AccessDenied"),
        Attempt(
            note: "copy u3's own file over u1's", method: "PUT", target: "/home/u2/inbound/EXISTING.sqlite",
            headers: ["x-amz-copy-source": "/home/u3/mine.sqlite"], bodySize: 0, status: 403, code: "AccessDenied"),
        Attempt(
            note: "copy u3's own file in as a new name", method: "PUT", target: "/home/u2/inbound/FRESH.sqlite",
            headers: ["x-amz-copy-source": "/home/u3/mine.sqlite"], bodySize: 0, status: 403, code: "AccessDenied"),
        Attempt(
            note: "copy u1's file out to u3's folder", method: "PUT", target: "/home/u3/stolen.sqlite",
            headers: ["x-amz-copy-source": "/home/u2/inbound/EXISTING.sqlite"], bodySize: 0, status: 403, code: "AccessDenied"),
        Attempt(note: "start a multipart upload over u1's file", method: "POST", target: "/home/u2/inbound/EXISTING.sqlite?uploads", bodySize: 0, status: 403, code: "AccessDenied"),
        Attempt(note: "start a multipart upload of a new file", method: "POST", target: "/home/u2/inbound/FRESH.sqlite?uploads", bodySize: 0, status: 403, code: "AccessDenied"),
        Attempt(note: "read u1's file's attributes", method: "GET", target: "/home/u2/inbound/EXISTING.sqlite?attributes", status: 403, code: "AccessDenied"),
        // What the gateway does not implement it answers so to everyone, and changes nothing.
        Attempt(note: "set u1's file's tags", method: "PUT", target: "/home/u2/inbound/EXISTING.sqlite?tagging", status: 501, code: "NotImplemented"),
    ]

    @Test("The table has at least 25 attempts")
    func tableSize() { #expect(Self.attempts.count >= 25) }

    @Test("Each attempt by a deliver-only user gets its answer, and u1's delivered file stays as it was", arguments: attempts)
    func attempt(_ attempt: Attempt) async throws {
        let harness = try Self.harness(.conditional)
        defer { harness.stop() }
        try await harness.createBucket("home")
        let existing = try KSUID(date: Date(timeIntervalSince1970: 1_800_000_000)).description
        let delivered = Data("u1's change for u2".utf8)
        #expect(try await harness.send("PUT", "/home/u2/inbound/\(existing).sqlite", body: delivered).0 == 200)
        #expect(try await harness.send("PUT", "/home/u3/mine.sqlite", body: Data("u3's own".utf8)).0 == 200)
        let pending = try KSUID(date: Date(timeIntervalSince1970: 1_800_000_100)).description
        let started = String(decoding: try await harness.send("POST", "/home/u2/inbound/\(pending).sqlite?uploads").1, as: UTF8.self)
        let uploadId = try #require(started.components(separatedBy: "<UploadId>").dropFirst().first?.components(separatedBy: "</UploadId>").first)
        let firstPart = Data(repeating: 1, count: 5 << 20)
        #expect(try await harness.send("PUT", "/home/u2/inbound/\(pending).sqlite?partNumber=1&uploadId=\(uploadId)", body: firstPart).0 == 200)
        let grants: StorageGrants = [
            StoragePermissions.all.restrictToPath("home/u3/"),
            StoragePermissions.deliver.restrictToPath("home/u2/inbound/"),
        ]
        let issued = try harness.credentials(user: "u3", grants: grants)
        let u3 = AWSCredentials(accessKeyId: issued.accessKeyId, secretAccessKey: issued.secretAccessKey, sessionToken: issued.sessionToken)
        let fresh = try KSUID().description
        let target = attempt.target.replacingOccurrences(of: "EXISTING", with: existing).replacingOccurrences(of: "FRESH", with: fresh)
            .replacingOccurrences(of: "PENDING", with: pending).replacingOccurrences(of: "UPLOADID", with: uploadId)
        let body = Data(repeating: 0x5A, count: attempt.bodySize)
        let (status, answer) = try await harness.send(attempt.method, target, body: body, headers: attempt.headers, credentials: u3)
        let text = String(decoding: answer, as: UTF8.self)
        #expect(status == attempt.status, "\(text)")
        if let code = attempt.code { #expect(text.contains("<Code>\(code)</Code>"), "\(text)") }
        // (An error may name the key and upload u3 asked about; nothing else may show them.)
        if !target.contains(pending) { #expect(!text.contains(pending) && !text.contains(uploadId), "u1's upload in progress was shown to u3: \(text)") }
        // u1's file is as u1 delivered it, and only a delivery that succeeded added a file.
        #expect(try await harness.provider.readData(remotePath: ObjectKey("home/u2/inbound/\(existing).sqlite"), options: ReadOptions()) == delivered)
        var inbound: [String] = []
        for try await entry in harness.provider.list(ListOptions(prefix: "home/u2/inbound/", recursive: true)) {
            if let file = entry.file { inbound.append(file.path.rawValue) }
        }
        let expected = ["home/u2/inbound/\(existing).sqlite"] + (status == 200 && attempt.method == "PUT" ? ["home/u2/inbound/\(fresh).sqlite"] : [])
        #expect(inbound.sorted() == expected.sorted())
        #expect(try await harness.provider.readData(remotePath: ObjectKey("home/u3/mine.sqlite"), options: ReadOptions()) == Data("u3's own".utf8))
        if status == 200 && attempt.method == "PUT" {
            #expect(try await harness.provider.readData(remotePath: ObjectKey("home/u2/inbound/\(fresh).sqlite"), options: ReadOptions()) == body)
        }
        // u1's upload in progress still has its one part, and can be completed by u1.
        let parts = String(decoding: try await harness.send("GET", "/home/u2/inbound/\(pending).sqlite?uploadId=\(uploadId)").1, as: UTF8.self)
        #expect(parts.components(separatedBy: "<Part>").count == 2, "\(parts)")
    }

    @Test("Batch delete by a deliver-only user removes nothing it delivered to or found there")
    func batchDelete() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("home")
        let existing = try KSUID().description
        #expect(try await harness.send("PUT", "/home/u2/inbound/\(existing).sqlite", body: Data("u1".utf8)).0 == 200)
        let issued = try harness.credentials(user: "u3", grants: [StoragePermissions.deliver.restrictToPath("home/u2/inbound/")])
        let u3 = AWSCredentials(accessKeyId: issued.accessKeyId, secretAccessKey: issued.secretAccessKey, sessionToken: issued.sessionToken)
        let xml = Data("<Delete><Object><Key>u2/inbound/\(existing).sqlite</Key></Object></Delete>".utf8)
        let md5 = try Hashing.digest(xml, .md5).data.base64EncodedString()
        let (status, answer) = try await harness.send("POST", "/home?delete", body: xml, headers: ["Content-MD5": md5], credentials: u3)
        let text = String(decoding: answer, as: UTF8.self)
        #expect(status == 403 || text.contains("<Code>AccessDenied</Code>"), "\(status) \(text)")
        #expect(try await harness.provider.stat(remotePath: ObjectKey("home/u2/inbound/\(existing).sqlite")) != nil)
    }

    /// A gateway over `backend` with the bucket `home`, u3's credentials to deliver into u2's
    /// inbound and nothing else, and a new delivery's name there.
    static func deliverer(_ backend: Backend) async throws -> (GatewayHarness, AWSCredentials, String) {
        let harness = try Self.harness(backend)
        do {
            try await harness.createBucket("home")
            let issued = try harness.credentials(user: "u3", grants: [StoragePermissions.deliver.restrictToPath("home/u2/inbound/")])
            let u3 = AWSCredentials(accessKeyId: issued.accessKeyId, secretAccessKey: issued.secretAccessKey, sessionToken: issued.sessionToken)
            return (harness, u3, "/home/u2/inbound/\(try KSUID().description).sqlite")
        } catch {
            harness.stop()
            throw error
        }
    }

    @Test("Two deliveries to one new name: the first is stored, the second is PreconditionFailed")
    func secondDelivery() async throws {
        let (harness, u3, name) = try await Self.deliverer(.conditional)
        defer { harness.stop() }
        #expect(try await harness.send("PUT", name, body: Data("first".utf8), credentials: u3).0 == 200)
        #expect(try await harness.send("PUT", name, body: Data("second".utf8), credentials: u3).0 == 412)
        #expect(try await harness.provider.readData(remotePath: ObjectKey(String(name.dropFirst())), options: ReadOptions()) == Data("first".utf8))
    }

    @Test("Over a backend without conditional writes a delivery is refused, saying why, and stores nothing: create-only would hold in one gateway only")
    func unconditional() async throws {
        let (harness, u3, name) = try await Self.deliverer(.unconditional)
        defer { harness.stop() }
        for headers in [[:], ["If-None-Match": "*"]] {
            let (status, body) = try await harness.send("PUT", name, body: Data("change".utf8), headers: headers, credentials: u3)
            let text = String(decoding: body, as: UTF8.self)
            #expect(status == 501 && text.contains("NotImplemented") && text.contains("no conditional writes"), "\(text)")
        }
        #expect(try await harness.provider.stat(remotePath: ObjectKey(String(name.dropFirst()))) == nil)
    }
}
