import BuckiaCore
import BuckiaGateway
import BuckiaSecurity
import BuckiaTestSupport
import Foundation
import Testing

/// Browser form uploads (POST Object with a signed policy), signed by boto3's own
/// `generate_presigned_post` and posted as a browser posts them: the policy's conditions, its
/// expiry and the grants of the credential that signed it all hold, and what they refuse is
/// never stored.
@Suite("S3 gateway: presigned POST (browser form uploads)")
struct GatewayPostObjectTests {
    struct Outcome {
        var status: Int
        var body: String
    }

    static func post(
        _ harness: GatewayHarness, key: String, size: Int, maximum: Int = 1024, expires: Int = 600, tamper: String = "",
        credentials: TemporaryS3Credentials? = nil, signatureVersion: String = "s3v4"
    ) async throws -> Outcome {
        let environment = [
            "AWS_ACCESS_KEY_ID": credentials?.accessKeyId ?? harness.accessKeyId,
            "AWS_SECRET_ACCESS_KEY": credentials?.secretAccessKey.exposedValue ?? harness.secretAccessKey.exposedValue,
            "AWS_SESSION_TOKEN": credentials?.sessionToken.exposedValue ?? "", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
            "AWS_EC2_METADATA_DISABLED": "true", "POST_SIGNATURE_VERSION": signatureVersion == "s3v4" ? "s3v4" : "",
        ].filter { !$0.value.isEmpty }
        let script = GatewayClientTests.clients.appendingPathComponent("presigned_post.py").path
        let run = try await runTool(
            "python3", [script, harness.endpoint.absoluteString, "forms", key, String(size), String(maximum), String(expires)] + (tamper.isEmpty ? [] : [tamper]),
            environment: environment, limit: .seconds(120))
        try #require(run.status == 0, "presigned_post.py failed: \(run.errors.suffix(2000))")
        let report = try #require(JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        return Outcome(status: report["status"] as? Int ?? 0, body: report["body"] as? String ?? "")
    }

    static func stored(_ harness: GatewayHarness, _ key: String) async throws -> RemoteFile? {
        try await harness.provider.stat(remotePath: ObjectKey("forms/" + key))
    }

    @Test("A form within its policy is stored with its type and metadata, and answered as success_action_status asks", arguments: ["s3v4", "s3"])
    func accepted(_ signatureVersion: String) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("forms")
        let outcome = try await Self.post(harness, key: "uploads/note.txt", size: 100, signatureVersion: signatureVersion)
        #expect(outcome.status == 201 && outcome.body.contains("<Key>uploads/note.txt</Key>"), "\(outcome.body)")
        let file = try #require(try await Self.stored(harness, "uploads/note.txt"))
        #expect(file.size == 100 && file.contentType == "text/plain" && file.metadata["colour"] == "blue")
    }

    @Test("What the policy or the grants refuse is refused and nothing is stored", arguments: [
        ("a file over content-length-range", 2048, 600, "", "EntityTooLarge", 400),
        ("an empty file under it", 0, 600, "", "EntityTooSmall", 400),
        ("an expired policy", 10, -60, "", "Policy expired", 403),
        ("a key outside the policy's starts-with", 10, 600, "key", "Policy Condition failed", 403),
        ("a field the policy does not name", 10, 600, "extra", "Extra input fields", 403),
        ("a policy changed after signing", 10, 600, "policy", "SignatureDoesNotMatch", 403),
    ] as [(String, Int, Int, String, String, Int)])
    func refused(_ what: String, _ size: Int, _ expires: Int, _ tamper: String, _ words: String, _ status: Int) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("forms")
        let outcome = try await Self.post(harness, key: "uploads/note.txt", size: size, expires: expires, tamper: tamper)
        #expect(outcome.status == status && outcome.body.contains(words), "\(what): \(outcome.status) \(outcome.body)")
        let here = try await Self.stored(harness, "uploads/note.txt")
        let elsewhere = try await Self.stored(harness, "elsewhere/note.txt")
        #expect(here == nil && elsewhere == nil, "\(what) stored")
    }

    @Test("A form signed with temporary credentials writes only where their grants allow, whatever its policy says")
    func grants() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("forms")
        let alice = try harness.credentials(grants: [StorageGrant(.write, prefix: "forms/alice/")])
        #expect(try await Self.post(harness, key: "alice/note.txt", size: 10, credentials: alice).status == 201)
        let outside = try await Self.post(harness, key: "bob/note.txt", size: 10, credentials: alice)
        #expect(outside.status == 403 && outside.body.contains("AccessDenied"), "\(outside.body)")
        #expect(try await Self.stored(harness, "bob/note.txt") == nil)
    }
}
