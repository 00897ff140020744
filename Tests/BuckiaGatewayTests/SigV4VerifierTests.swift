import BuckiaCore
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaGateway

/// Requests signed by botocore (boto3's signer, from PyPI), as a gateway receives them.
enum Botocore {
    static let script = #"""
import json, sys
from urllib.parse import quote, urlencode, urlsplit
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
request = json.load(sys.stdin)
creds = Credentials(request["akid"], request["secret"], request.get("token"))
out = []
for case in request["cases"]:
    url = "http://" + request["host"] + quote(case["path"], safe="/~")
    if case.get("query"):
        url += "?" + urlencode(case["query"], quote_via=quote)
    r = AWSRequest(method=case["method"], url=url, data=case.get("body", "").encode(), headers=case.get("headers", {}))
    if case.get("unsigned"):
        r.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    if case.get("presign"):
        S3SigV4QueryAuth(creds, "s3", "us-east-1", expires=case["presign"]).add_auth(r)
    else:
        S3SigV4Auth(creds, "s3", "us-east-1").add_auth(r)
    prepared = r.prepare()
    parts = urlsplit(prepared.url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    headers = [["host", request["host"]]] + [[k, v.decode() if isinstance(v, bytes) else v] for k, v in prepared.headers.items()]
    out.append({"method": case["method"], "target": target, "headers": headers})
print(json.dumps(out))
"""#

    struct Case: Encodable, Sendable {
        var method: String
        var path: String
        var query: [String: String]? = nil
        var headers: [String: String]? = nil
        var body: String? = nil
        var presign: Int? = nil
        var unsigned: Bool? = nil
    }

    /// Signs `cases` with `credentials` for host `127.0.0.1:9000`.
    static func sign(_ cases: [Case], credentials: AWSCredentials) throws -> [SigV4Request] {
        struct Input: Encodable {
            var akid: String
            var secret: String
            var token: String?
            var host: String
            var cases: [Case]
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-botocore-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let scriptFile = folder.appendingPathComponent("sign.py")
        try Data(script.utf8).write(to: scriptFile)
        let input = folder.appendingPathComponent("input.json")
        try JSONEncoder().encode(
            Input(
                akid: credentials.accessKeyId, secret: credentials.secretAccessKey.exposedValue, token: credentials.sessionToken?.exposedValue,
                host: "127.0.0.1:9000", cases: cases)
        ).write(to: input)
        let run = try ToolRun.run("sh", ["-c", "python3 \"$0\" < \"$1\"", scriptFile.path, input.path], limit: .seconds(60))
        guard run.status == 0 else { throw BuckiaError(.io, "botocore failed: \(run.errors)") }
        let signed = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [[String: Any]] ?? []
        return signed.map { object in
            let headers = (object["headers"] as? [[String]] ?? []).map { (name: $0[0], value: $0[1]) }
            return SigV4Request(method: object["method"] as? String ?? "", target: object["target"] as? String ?? "", headers: headers)
        }
    }

    static let cases: [Case] = [
        Case(method: "GET", path: "/alice/a.txt"),
        Case(method: "GET", path: "/alice/a b.txt", headers: ["Range": "bytes=0-99"]),
        Case(method: "GET", path: "/alice/\u{FC}n\u{EF}c\u{F6}d\u{E9}/\u{DF}"),
        Case(method: "GET", path: "/alice/x+y=z&w;v"),
        Case(method: "GET", path: "/alice/~tilde_-.dots"),
        Case(method: "GET", path: "/alice/%41 literal percent"),
        Case(method: "GET", path: "/alice", query: ["list-type": "2", "prefix": "alice/in box/", "delimiter": "/", "encoding-type": "url", "max-keys": "100"]),
        Case(method: "PUT", path: "/alice/inbound/2Abc.sqlite", headers: ["x-amz-meta-mtime": "1800000000.5", "Content-Type": "application/x-sqlite3"], body: "diff bytes"),
        Case(method: "PUT", path: "/alice/inbound/unsigned.bin", body: "unsigned body", unsigned: true),
        Case(method: "DELETE", path: "/alice/tmp/x"),
        Case(method: "POST", path: "/alice/big.bin", query: ["uploads": ""]),
        Case(method: "GET", path: "/alice/shared.pdf", presign: 300),
        Case(method: "PUT", path: "/alice/inbound/presigned.bin", presign: 3600),
    ]
}

@Suite("SigV4 verification of botocore's requests")
struct SigV4VerifierTests {
    static let credentials = AWSCredentials(accessKeyId: "AKIDGATEWAYTEST", secretAccessKey: "gateway-test-secret-0123456789")

    @Test("Every request botocore signs verifies: header and query auth, signed and unsigned payloads, odd keys")
    func botocoreRequests() throws {
        let requests = try Botocore.sign(Botocore.cases, credentials: Self.credentials)
        #expect(requests.count == Botocore.cases.count)
        for (request, signed) in zip(Botocore.cases, requests) {
            let authorization = try SigV4Verifier.parse(signed)
            #expect(authorization.accessKeyId == "AKIDGATEWAYTEST")
            #expect(authorization.isPresigned == (request.presign != nil))
            do {
                try SigV4Verifier.verify(signed, authorization, secret: Self.credentials.secretAccessKey, now: Date())
            } catch {
                Issue.record("\(request.method) \(request.path): \(error)")
            }
        }
        #expect(try SigV4Verifier.parse(requests[8]).payloadHash == "UNSIGNED-PAYLOAD")
    }

    /// Each change a request may suffer on the way, and whether it is checked.
    static let tampers: [(String, @Sendable (SigV4Request) -> SigV4Request)] = [
        ("method", { var r = $0; r.method = r.method == "GET" ? "HEAD" : "GET"; return r }),
        ("path", { var r = $0; r.target = r.target.replacingOccurrences(of: "/alice", with: "/alicf"); return r }),
        ("extra query", { var r = $0; r.target += r.target.contains("?") ? "&versionId=1" : "?versionId=1"; return r }),
        ("host", { var r = $0; r.headers = r.headers.map { $0.name == "host" ? ($0.name, "127.0.0.1:9001") : $0 }; return r }),
        ("a signed header's value", {
            var r = $0
            r.headers = r.headers.map { $0.name.lowercased() == "x-amz-date" || $0.name.lowercased() == "x-amz-content-sha256" ? ($0.name, "0" + $0.value.dropFirst()) : $0 }
            if !r.target.contains("X-Amz-Signature") { return r }
            r.target = r.target.replacingOccurrences(of: "X-Amz-Expires=", with: "X-Amz-Expires=9")
            return r
        }),
        ("an unsigned x-amz header added", { var r = $0; r.headers.append((name: "x-amz-acl", value: "public-read")); return r }),
        ("the signature", {
            var r = $0
            r.headers = r.headers.map { $0.name.lowercased() == "authorization" ? ($0.name, String($0.value.dropLast()) + ($0.value.hasSuffix("0") ? "1" : "0")) : $0 }
            if let range = r.target.range(of: "X-Amz-Signature=") {
                let start = range.upperBound
                let first = r.target[start]
                r.target.replaceSubrange(start...start, with: first == "0" ? "1" : "0")
            }
            return r
        }),
    ]

    @Test("A request changed on the way is refused", arguments: 0..<7)
    func tampered(_ index: Int) throws {
        let (name, tamper) = Self.tampers[index]
        for (request, signed) in zip(Botocore.cases, try Botocore.sign(Botocore.cases, credentials: Self.credentials)) {
            let changed = tamper(signed)
            do {
                let authorization = try SigV4Verifier.parse(changed)
                try SigV4Verifier.verify(changed, authorization, secret: Self.credentials.secretAccessKey, now: Date())
                // An unsigned header is a change only header-signed requests can notice; a presigned URL
                // has its own query to protect.
                if !(name == "an unsigned x-amz header added" && request.presign != nil) {
                    Issue.record("\(name) on \(request.method) \(request.path) was accepted")
                }
            } catch {
                #expect(["SignatureDoesNotMatch", "AccessDenied", "RequestTimeTooSkewed", "AuthorizationHeaderMalformed", "InvalidArgument", "AuthorizationQueryParametersError"].contains(error.code))
            }
        }
    }

    @Test("A wrong secret, a skewed clock and an expired presigned URL are refused with S3's codes")
    func refusals() throws {
        let requests = try Botocore.sign(Botocore.cases, credentials: Self.credentials)
        let header = requests[0], presigned = requests[11]
        let headerAuth = try SigV4Verifier.parse(header), queryAuth = try SigV4Verifier.parse(presigned)
        #expect(throws: SigV4Refusal("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")) {
            try SigV4Verifier.verify(header, headerAuth, secret: "another-secret", now: Date())
        }
        #expect((#expect(throws: SigV4Refusal.self) { try SigV4Verifier.verify(header, headerAuth, secret: Self.credentials.secretAccessKey, now: Date().addingTimeInterval(16 * 60)) })?.code == "RequestTimeTooSkewed")
        #expect((#expect(throws: SigV4Refusal.self) { try SigV4Verifier.verify(presigned, queryAuth, secret: Self.credentials.secretAccessKey, now: Date().addingTimeInterval(301)) })?.message == "Request has expired.")
        try SigV4Verifier.verify(presigned, queryAuth, secret: Self.credentials.secretAccessKey, now: Date().addingTimeInterval(290))
    }

    @Test(
        "Malformed authorizations are refused before any secret is looked up",
        arguments: [
            "AWS4-HMAC-SHA256 Credential=AKID/20261126/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc",
            "AWS4-HMAC-SHA256 Credential=AKID/2026112/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + String(repeating: "a", count: 64),
            "AWS4-HMAC-SHA256 Credential=AKID/20261126/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=" + String(repeating: "a", count: 64),
            "AWS4-HMAC-SHA256 Credential=AKID/20261126/us-east-1/s3/aws4_request, SignedHeaders=x-amz-date;host, Signature=" + String(repeating: "a", count: 64),
            "AWS4-HMAC-SHA256 Credential=AKID/20261126/us-east-1/s3/aws4_request, Credential=X, SignedHeaders=host, Signature=" + String(repeating: "a", count: 64),
            "AWS4-HMAC-SHA256 Credential=AKID/20261126/us-east-1/s3/aws4_request, SignedHeaders=x-amz-content-sha256;x-amz-date, Signature="
                + String(repeating: "a", count: 64),
            "AWS AKID:signature", "",
        ])
    func malformed(_ header: String) {
        let request = SigV4Request(
            method: "GET", target: "/a",
            headers: [("host", "h"), ("authorization", header), ("x-amz-date", "20261126T120000Z"), ("x-amz-content-sha256", "UNSIGNED-PAYLOAD")])
        #expect(throws: SigV4Refusal.self) { try SigV4Verifier.parse(request) }
    }

    @Test("Dates are read strictly", arguments: ["20261126T120000Z", "20261126T120000", "2026-11-26T12:00:00Z", "20261326T120000Z", "20260230T120000Z", "99991231T235959Z", "20261126T246000Z"])
    func dates(_ text: String) {
        let parsed = SigV4Verifier.parseDate(text)
        #expect((parsed != nil) == (text == "20261126T120000Z" || text == "99991231T235959Z"))
    }
}

@Suite("Temporary S3 credentials")
struct TemporaryCredentialsTests {
    static func keys() throws -> GatewayKeys {
        try GatewayKeys(signingKey: try UserTokenSigningKey.generate(keyId: "gw-1"), derivationKey: Secret(String(repeating: "d", count: 32)))
    }

    static let grants: StorageGrants = [StoragePermissions.readOnly.restrictToPath("alice/"), StoragePermissions.write.restrictToPath("alice/inbound/")]

    @Test("Credentials minted for a user sign requests that botocore makes and the gateway attributes to that user and grants")
    func roundTrip() throws {
        let keys = try Self.keys()
        let credentials = try keys.issue(userId: "alice", grants: Self.grants, lifetime: .seconds(3600))
        #expect(credentials.accessKeyId.hasPrefix("BK"))
        #expect(!"\(credentials)".contains(credentials.secretAccessKey.exposedValue))
        let requests = try Botocore.sign(Botocore.cases, credentials: credentials.awsCredentials)
        let gateway = GatewayAuthenticator(keys: keys)
        for request in requests {
            let principal = try gateway.authenticate(request)
            #expect(principal.name == "alice")
            #expect(principal.grants == Self.grants)
        }
    }

    @Test("A session token that is tampered, from another gateway, expired, or paired with another key id is refused")
    func refusals() throws {
        let keys = try Self.keys()
        let credentials = try keys.issue(userId: "alice", grants: Self.grants, lifetime: .seconds(600))
        let other = try keys.issue(userId: "bob", grants: [StoragePermissions.all.restrictToPath("")], lifetime: .seconds(600))
        let request = try Botocore.sign([Botocore.cases[0]], credentials: credentials.awsCredentials)[0]

        // Bob's token with Alice's key id and signature: the key id does not belong to it.
        var swapped = request
        swapped.headers = swapped.headers.map { $0.name.lowercased() == "x-amz-security-token" ? ($0.name, other.sessionToken.exposedValue) : $0 }
        #expect((#expect(throws: SigV4Refusal.self) { try GatewayAuthenticator(keys: keys).authenticate(swapped) })?.code == "InvalidAccessKeyId")

        // A gateway with other keys cannot read the token at all.
        #expect((#expect(throws: SigV4Refusal.self) { try GatewayAuthenticator(keys: try Self.keys()).authenticate(request) })?.code == "InvalidToken")

        // Expired: the gateway's clock past the token's end.
        let later = GatewayAuthenticator(keys: keys, clock: { Date().addingTimeInterval(3600) })
        #expect((#expect(throws: SigV4Refusal.self) { try later.authenticate(request) })?.code == "ExpiredToken")

        // The right token but a secret derived for another: the signature does not match.
        let forged = try Botocore.sign(
            [Botocore.cases[0]],
            credentials: AWSCredentials(accessKeyId: credentials.accessKeyId, secretAccessKey: other.secretAccessKey, sessionToken: credentials.sessionToken))[0]
        #expect((#expect(throws: SigV4Refusal.self) { try GatewayAuthenticator(keys: keys).authenticate(forged) })?.code == "SignatureDoesNotMatch")

        // Static keys: full access, and an unknown one refused.
        let staticRequest = try Botocore.sign([Botocore.cases[0]], credentials: AWSCredentials(accessKeyId: "ADMIN", secretAccessKey: "admin-secret"))[0]
        #expect(try GatewayAuthenticator(keys: nil, staticKeys: ["ADMIN": "admin-secret"]).authenticate(staticRequest).grants == .everything)
        #expect((#expect(throws: SigV4Refusal.self) { try GatewayAuthenticator(keys: nil, staticKeys: [:]).authenticate(staticRequest) })?.code == "InvalidAccessKeyId")
        #expect(throws: BuckiaError.self) { try keys.issue(userId: "alice", grants: Self.grants, lifetime: .seconds(43_201)) }
    }
}
