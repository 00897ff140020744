import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaOAuth
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

/// STS's `AssumeRoleWithWebIdentity` at the gateway: a login's ID token (from the OAuth
/// emulator, RS256) is traded for temporary S3 credentials whose grants come from a template
/// with the login's `sub` filled in. boto3 gets and uses them exactly as from AWS; every forged
/// token, hostile subject and malformed call is an STS error and issues nothing.
@Suite("S3 gateway: AssumeRoleWithWebIdentity trades a login for scoped credentials")
struct GatewaySTSTests {
    static let role = "arn:aws:iam::000000000000:role/buckia-user"
    static let template = ["read,list,write,delete:home/${sub}/", "deliver:home/*/inbound/"]

    /// The emulator, and a gateway trusting it whose clock is `now` (whole seconds).
    struct Setup {
        let emulator: OAuthEmulator
        let gateway: GatewayHarness
        let now: Date

        func stop() {
            gateway.stop()
            emulator.stop()
        }
    }

    static func setUp(roleArn: String? = nil, trusting: Bool = true) async throws -> Setup {
        let emulator = try await OAuthEmulator.start()
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let policy: WebIdentityPolicy?
        if trusting {
            let keys = try await IssuerKeys.discover(issuer: emulator.issuer)
            // Fetched now, not inside the first STS call, whose answer a test waits for.
            _ = try await keys.keySet(refresh: false)
            let verifier = try WebIdentityVerifier(issuer: emulator.issuer.absoluteString, audiences: [emulator.clientId], keys: keys)
            policy = try WebIdentityPolicy(verifier: verifier, grants: try GrantTemplate(parsing: template), roleArn: roleArn)
        } else {
            policy = nil
        }
        let gateway = try GatewayHarness { options in
            options.webIdentity = policy
            options.clock = { now }
        }
        try await gateway.createBucket("home")
        return Setup(emulator: emulator, gateway: gateway, now: now)
    }

    /// What an STS call answered: the credentials, or the error's code.
    struct STSAnswer {
        var status: Int
        var body: String
        var code: String? { Self.element("Code", in: body) }
        var credentials: AWSCredentials? {
            guard let id = Self.element("AccessKeyId", in: body), let secret = Self.element("SecretAccessKey", in: body),
                  let token = Self.element("SessionToken", in: body)
            else { return nil }
            return AWSCredentials(accessKeyId: id, secretAccessKey: Secret(secret), sessionToken: Secret(token))
        }

        static func element(_ name: String, in text: String) -> String? {
            guard let start = text.range(of: "<\(name)>"), let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex) else { return nil }
            return String(text[start.upperBound..<end.lowerBound])
        }
    }

    /// POSTs `fields` as a form to the gateway's root, as SDKs call STS.
    static func call(_ gateway: GatewayHarness, _ fields: [(String, String)], contentType: String = "application/x-www-form-urlencoded; charset=utf-8")
        async throws -> STSAnswer
    {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        let answer = try await RawHTTP.exchange(
            port: UInt16(gateway.endpoint.port ?? 0), method: "POST", target: "/", headers: [("Content-Type", contentType)], body: Data(body.utf8),
            timeout: 300)
        return STSAnswer(status: answer.status, body: String(decoding: answer.body, as: UTF8.self))
    }

    static func fields(token: String, _ extra: [(String, String)] = []) -> [(String, String)] {
        [("Action", "AssumeRoleWithWebIdentity"), ("Version", "2011-06-15"), ("RoleArn", role), ("RoleSessionName", "app"), ("WebIdentityToken", token)] + extra
    }

    @Test("boto3 trades an ID token for credentials, explicitly and through AWS's environment variables, and they reach only the user's folder", arguments: ["explicit", "environment"])
    func boto3(_ mode: String) async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let token = try await setup.emulator.idToken(sub: "u1")
        let folder = try TestFolder.make("buckia-sts")
        defer { TestFolder.remove(folder) }
        let tokenFile = folder.appendingPathComponent("id-token")
        try Data(token.utf8).write(to: tokenFile)
        #expect(try await setup.gateway.send("PUT", "/home/u2/secret.txt", body: Data("u2's".utf8)).0 == 200)
        let endpoint = setup.gateway.endpoint.absoluteString
        var environment = ["ID_TOKEN_FILE": tokenFile.path]
        if mode == "environment" {
            environment.merge([
                "AWS_WEB_IDENTITY_TOKEN_FILE": tokenFile.path, "AWS_ROLE_ARN": Self.role, "AWS_ROLE_SESSION_NAME": "buckia-app",
                "AWS_ENDPOINT_URL_STS": endpoint, "AWS_ENDPOINT_URL_S3": endpoint, "AWS_DEFAULT_REGION": "us-east-1",
            ]) { $1 }
        }
        let run = try await runTool(
            "python3", [GatewayClientTests.clients.appendingPathComponent("sts_client.py").path, endpoint, "u1", Self.role, mode],
            environment: environment, limit: .seconds(120))
        try #require(run.status == 0, "boto3 failed: \(run.errors.suffix(2000))")
        let report = try #require(JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect(report["read"] as? String == "mine\n")
        #expect(report["listed"] as? [String] == ["u1/notes-\(mode).txt"])
        #expect(report["other_put"] as? String == "AccessDenied")
        #expect(report["other_get"] as? String == "AccessDenied")
        #expect(report["other_list"] as? String == "AccessDenied")
        #expect(report["bucket_list"] as? [String] == ["u1/notes-\(mode).txt"], "u2's file shows in u1's listing of the bucket")
        #expect((report["access_key_id"] as? String)?.hasPrefix("BK") == true)
        if mode == "explicit" {
            #expect(report["subject"] as? String == "u1")
            #expect(report["provider"] as? String == setup.emulator.issuer.absoluteString)
            #expect(report["audience"] as? String == setup.emulator.clientId)
            #expect(report["arn"] as? String == "arn:aws:sts::000000000000:assumed-role/buckia-user/buckia-app")
            // 900 s from the gateway's clock, as STS counts it.
            let expected = ISO8601DateFormatter().string(from: setup.now.addingTimeInterval(900)).replacingOccurrences(of: "Z", with: "+00:00")
            #expect(report["expiration"] as? String == expected)
        } else {
            #expect(report["method"] as? String == "assume-role-with-web-identity")
        }
        let calls = setup.gateway.log.withLock { $0.filter { $0.operation == "AssumeRoleWithWebIdentity" } }
        #expect(calls.count == 1 && calls.first?.principal == "u1" && calls.first?.status == 200)
    }

    @Test("the credentials carry the template's grants for the login's subject, and expire when STS says")
    func grants() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let token = try await setup.emulator.idToken(sub: "u3")
        let answer = try await Self.call(setup.gateway, Self.fields(token: token, [("DurationSeconds", "1800")]))
        try #require(answer.status == 200, "\(answer.body)")
        let credentials = try #require(answer.credentials)
        #expect(STSAnswer.element("Expiration", in: answer.body) == ISO8601DateFormatter().string(from: setup.now.addingTimeInterval(1800)))
        #expect(!answer.body.contains(token), "the answer echoes the token")
        let gateway = setup.gateway
        #expect(try await gateway.send("PUT", "/home/u3/own.txt", body: Data("x".utf8), credentials: credentials).0 == 200)
        #expect(try await gateway.send("GET", "/home/u3/own.txt", credentials: credentials).0 == 200)
        #expect(try await gateway.send("PUT", "/home/u2/own.txt", body: Data("x".utf8), credentials: credentials).0 == 403)
        #expect(try await gateway.send("GET", "/home/u3", credentials: credentials).0 == 403, "an object beside the folder")
        // deliver:home/*/inbound/: a new change file in u2's inbound, and nothing there after.
        let delivery = "/home/u2/inbound/\(try KSUID().description).sqlite"
        #expect(try await gateway.send("PUT", delivery, body: Data("diff".utf8), credentials: credentials).0 == 200)
        #expect(try await gateway.send("PUT", delivery, body: Data("over".utf8), credentials: credentials).0 == 412)
        #expect(try await gateway.send("GET", delivery, credentials: credentials).0 == 403)
        #expect(try await gateway.send("DELETE", delivery, credentials: credentials).0 == 403)
    }

    /// A call that must be refused, with the STS error it gets.
    struct Refusal: Sendable, CustomTestStringConvertible {
        let name: String
        /// The token's claims (`sub` among them) and the emulator's header or key overrides.
        var claims: [String: String] = [:]
        var numbers: [String: Int] = [:]
        /// Changes to the call's fields: a nil value removes the field.
        var fields: [String: String?] = [:]
        var extra: [(String, String)] = []
        let status: Int
        let code: String
        /// What is done to the token text after signing.
        var alter: (@Sendable (String) -> String)? = nil
        var testDescription: String { "\(name) → \(status) \(code)" }
    }

    static let now = Int(Date().timeIntervalSince1970)

    static let refusals: [Refusal] = [
        // Template injection through the subject: the issuer signed it, and it is still refused.
        Refusal(name: "sub ../u2", claims: ["sub": "../u2"], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub u2/inbound", claims: ["sub": "u2/inbound"], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub ..", claims: ["sub": ".."], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub .", claims: ["sub": "."], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub *", claims: ["sub": "*"], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub with an encoded slash", claims: ["sub": "u2%2Finbound"], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub with a backslash", claims: ["sub": "..\\u2"], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub with a newline", claims: ["sub": "u1\nu2"], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub with a space", claims: ["sub": "u 1"], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub that ends with a dot", claims: ["sub": "u1."], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub in full-width letters", claims: ["sub": "ｕ１"], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub of 256 bytes", claims: ["sub": String(repeating: "u", count: 256)], status: 403, code: "IDPRejectedClaim"),
        Refusal(name: "sub that is a template variable", claims: ["sub": "${sub}"], status: 403, code: "IDPRejectedClaim"),
        // Forged or unusable tokens.
        Refusal(name: "an empty sub", claims: ["sub": ""], status: 400, code: "InvalidIdentityToken"),
        Refusal(name: "alg none", claims: ["alg": "none"], status: 400, code: "InvalidIdentityToken"),
        Refusal(name: "HS256 keyed with the issuer's public key", claims: ["alg": "HS256"], status: 400, code: "InvalidIdentityToken"),
        Refusal(name: "a key the issuer does not publish", claims: ["key": "new"], status: 400, code: "InvalidIdentityToken"),
        Refusal(name: "a key id the issuer does not publish", claims: ["kid": "k9"], status: 400, code: "InvalidIdentityToken"),
        Refusal(name: "another issuer", claims: ["iss": "http://127.0.0.1:1"], status: 400, code: "InvalidIdentityToken"),
        Refusal(name: "another audience", claims: ["aud": "another-app"], status: 400, code: "InvalidIdentityToken"),
        Refusal(name: "expired", numbers: ["exp": now - 3600, "iat": now - 7200], status: 400, code: "ExpiredTokenException"),
        Refusal(name: "not yet valid", numbers: ["nbf": now + 3600], status: 400, code: "InvalidIdentityToken"),
        Refusal(
            name: "u2's claims under u1's signature", status: 400, code: "InvalidIdentityToken",
            alter: { token in
                let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                guard parts.count == 3, let payload = Data(base64URLEncoded: parts[1]),
                      let text = String(data: payload, encoding: .utf8)?.replacingOccurrences(of: "\"u1\"", with: "\"u2\"")
                else { return token }
                return [parts[0], Data(text.utf8).base64URLEncodedString(), parts[2]].joined(separator: ".")
            }),
        Refusal(name: "a token that is not a JWT", status: 400, code: "InvalidIdentityToken", alter: { _ in "opaque-access-token" }),
        // Malformed calls.
        Refusal(name: "no WebIdentityToken", fields: ["WebIdentityToken": nil], status: 400, code: "MissingParameter"),
        Refusal(name: "no RoleArn", fields: ["RoleArn": nil], status: 400, code: "ValidationError"),
        Refusal(name: "no RoleSessionName", fields: ["RoleSessionName": nil], status: 400, code: "ValidationError"),
        Refusal(name: "a one-letter session name", fields: ["RoleSessionName": "a"], status: 400, code: "ValidationError"),
        Refusal(name: "a session name with a slash", fields: ["RoleSessionName": "a/b"], status: 400, code: "ValidationError"),
        Refusal(name: "DurationSeconds 899", extra: [("DurationSeconds", "899")], status: 400, code: "ValidationError"),
        Refusal(name: "DurationSeconds past the role's hour", extra: [("DurationSeconds", "3601")], status: 400, code: "ValidationError"),
        Refusal(name: "DurationSeconds that is no number", extra: [("DurationSeconds", "1e3")], status: 400, code: "ValidationError"),
        Refusal(name: "a session policy", extra: [("Policy", #"{"Version":"2012-10-17"}"#)], status: 400, code: "ValidationError"),
        Refusal(name: "a managed session policy", extra: [("PolicyArns.member.1.arn", "arn:aws:iam::aws:policy/ReadOnly")], status: 400, code: "ValidationError"),
        Refusal(name: "the token twice", extra: [("WebIdentityToken", "x")], status: 400, code: "ValidationError"),
        Refusal(name: "another action", fields: ["Action": "AssumeRole"], status: 400, code: "InvalidAction"),
        Refusal(name: "GetSessionToken", fields: ["Action": "GetSessionToken"], status: 400, code: "InvalidAction"),
        Refusal(name: "no action", fields: ["Action": nil], status: 400, code: "MissingAction"),
        Refusal(name: "another API version", fields: ["Version": "2099-01-01"], status: 400, code: "InvalidParameterValue"),
    ]

    @Test("a forged token, a hostile subject or a malformed call is an STS error, and no credential is issued", arguments: refusals)
    func refused(_ refusal: Refusal) async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        var claims: [String: any Sendable] = refusal.claims
        for (name, value) in refusal.numbers { claims[name] = value }
        let sub = refusal.claims["sub"] ?? "u1"
        claims.removeValue(forKey: "sub")
        var token = try await setup.emulator.idToken(sub: sub, claims)
        if let alter = refusal.alter { token = alter(token) }
        var fields = Self.fields(token: token, refusal.extra)
        for (name, value) in refusal.fields {
            fields.removeAll { $0.0 == name }
            if let value { fields.append((name, value)) }
        }
        let answer = try await Self.call(setup.gateway, fields)
        #expect(answer.status == refusal.status, "\(answer.body)")
        #expect(answer.code == refusal.code, "\(answer.body)")
        #expect(answer.body.hasPrefix(S3GatewayXML.header + "<ErrorResponse"), "not STS's error form: \(answer.body)")
        #expect(answer.credentials == nil)
        #expect(!answer.body.contains(token) || token.count < 20, "the error echoes the token")
        // The same call with a good token is answered: each case fails for its own change.
        if refusal.fields.isEmpty && refusal.extra.isEmpty {
            let good = try await Self.call(setup.gateway, Self.fields(token: try await setup.emulator.idToken(sub: "u1")))
            #expect(good.status == 200 && good.credentials != nil, "\(good.body)")
        }
    }

    @Test("a body over 32 KiB, a GET with the call in its query, and a gateway that trusts no issuer")
    func edges() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let big = try await Self.call(setup.gateway, Self.fields(token: String(repeating: "a", count: 40_000)))
        #expect(big.status == 400 && big.code == "ValidationError")
        let token = try await setup.emulator.idToken(sub: "u1")
        let query = Self.fields(token: token).map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
        let viaGet = try await RawHTTP.exchange(port: UInt16(setup.gateway.endpoint.port ?? 0), method: "GET", target: "/?" + query, headers: [], timeout: 300)
        #expect(viaGet.status == 200 && STSAnswer(status: 200, body: String(decoding: viaGet.body, as: UTF8.self)).credentials != nil)

        let untrusting = try await Self.setUp(trusting: false)
        defer { untrusting.stop() }
        let answer = try await Self.call(untrusting.gateway, Self.fields(token: try await untrusting.emulator.idToken(sub: "u1")))
        #expect(answer.status == 400 && answer.code == "InvalidAction")
        // S3 requests to the service root are still S3's.
        #expect(try await untrusting.gateway.send("GET", "/").0 == 200)
    }

    @Test("a gateway with a role names it: another role is AccessDenied")
    func role() async throws {
        let setup = try await Self.setUp(roleArn: Self.role)
        defer { setup.stop() }
        let token = try await setup.emulator.idToken(sub: "u1")
        let other = try await Self.call(setup.gateway, Self.fields(token: token).map { $0.0 == "RoleArn" ? ($0.0, "arn:aws:iam::000000000000:role/admin") : $0 })
        #expect(other.status == 403 && other.code == "AccessDenied")
        #expect(try await Self.call(setup.gateway, Self.fields(token: token)).status == 200)
    }
}

/// The XML declaration every gateway answer starts with.
enum S3GatewayXML {
    static let header = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
}

extension Data {
    init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }

    func base64URLEncodedString() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

/// `buckia serve s3 --web-identity FILE`: the policy file, read strictly.
@Suite("serve s3 --web-identity: the policy file")
struct ServeWebIdentityTests {
    /// A home with a local remote `served` and a saved signing key, and the policy file `policy`.
    struct Home {
        let folder: URL
        let root: URL
        var environment: [String: String] { ["HOME": folder.path, "XDG_CONFIG_HOME": folder.appendingPathComponent("config").path, "PATH": "/usr/bin:/bin"] }
        var config: URL { folder.appendingPathComponent("config.json") }

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-web-identity-\(UUID().uuidString)", isDirectory: true)
            root = folder.appendingPathComponent("served", isDirectory: true)
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            try Data(#"{"remotes": {"served": {"provider": "local", "bucketName": "served", "options": {"root": "\#(root.path)"}}}}"#.utf8).write(to: config)
            let keygen = try ToolRun.run(path: GatewayProcess.executable, ["token", "keygen", "--key-id", "gw"], exactEnvironment: environment, limit: .seconds(60))
            guard keygen.status == 0 else { throw BuckiaError(.io, "token keygen failed: \(keygen.errors)") }
        }

        func write(_ name: String, _ text: String) throws -> URL {
            let url = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url
        }

        func remove() { TestFolder.remove(folder) }
    }

    @Test("a served remote answers AssumeRoleWithWebIdentity for the issuer its policy names, keys found by discovery")
    func serves() async throws {
        let emulator = try await OAuthEmulator.start()
        defer { emulator.stop() }
        let (remote, root) = try GatewayCommandTests.localRemote()
        defer { TestFolder.remove(root) }
        let policyFolder = try TestFolder.make("buckia-policy")
        defer { TestFolder.remove(policyFolder) }
        let policy = policyFolder.appendingPathComponent("web-identity.json")
        try Data(#"{"issuer": "\#(emulator.issuer.absoluteString)", "audiences": ["\#(emulator.clientId)"], "grants": ["read,list,write:home/${sub}/"]}"#.utf8)
            .write(to: policy)
        let server = try GatewayProcess(
            remoteJSON: remote, capabilities: try LocalProvider(root: root).capabilities, arguments: ["--web-identity", policy.path],
            temporaryFor: (user: "admin", grants: ["read:*"]))
        defer { server.stop() }
        #expect(server.errorLines.withLock { $0 }.contains { $0.contains("STS AssumeRoleWithWebIdentity at /") })
        try await server.createBucket("home")
        let token = try await emulator.idToken(sub: "u1")
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = GatewaySTSTests.fields(token: token).map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        let raw = try await RawHTTP.exchange(
            port: UInt16(server.port), method: "POST", target: "/", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Data(body.utf8),
            timeout: 300)
        let answer = GatewaySTSTests.STSAnswer(status: raw.status, body: String(decoding: raw.body, as: UTF8.self))
        let credentials = try #require(answer.credentials, "\(answer.body)")
        #expect(try await server.send("PUT", "/home/u1/a.txt", body: Data("a".utf8), credentials: credentials).0 == 200)
        #expect(try await server.send("PUT", "/home/u2/a.txt", body: Data("a".utf8), credentials: credentials).0 == 403)
        #expect(!server.accessLog.contains(token), "the access log holds the token")
        #expect(!server.accessLog.contains(credentials.secretAccessKey.exposedValue), "the access log holds the secret")
    }

    struct BadPolicy: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let status: Int32
        let says: String
        var testDescription: String { name }
    }

    static let issuer = "http://127.0.0.1:1"

    @Test("a policy that cannot be read, or reads loosely, is refused before anything is served", arguments: [
        BadPolicy(name: "not JSON", text: "issuer: x", status: 2, says: "it is not JSON"),
        BadPolicy(name: "a misspelt member", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/${sub}/"], "jwks": "JWKS", "grant": []}"#, status: 2, says: #""grant" is not a member"#),
        BadPolicy(name: "a member twice", text: #"{"issuer": "\#(issuer)", "issuer": "x", "audiences": ["a"], "grants": ["read:home/${sub}/"], "jwks": "JWKS"}"#, status: 2, says: "without a member twice"),
        BadPolicy(name: "no audiences", text: #"{"issuer": "\#(issuer)", "audiences": [], "grants": ["read:home/${sub}/"], "jwks": "JWKS"}"#, status: 2, says: "audiences must list"),
        BadPolicy(name: "an empty audience", text: #"{"issuer": "\#(issuer)", "audiences": [""], "grants": ["read:home/${sub}/"], "jwks": "JWKS"}"#, status: 2, says: "none of them empty"),
        BadPolicy(name: "no grants", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "jwks": "JWKS"}"#, status: 2, says: "grants must list"),
        BadPolicy(name: "a variable inside a folder name", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/x${sub}/"], "jwks": "JWKS"}"#, status: 2, says: "starting a folder or file name"),
        BadPolicy(name: "an unknown variable", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/${email}/"], "jwks": "JWKS"}"#, status: 2, says: "the one variable is ${sub}"),
        BadPolicy(name: "an empty grant prefix", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:"], "jwks": "JWKS"}"#, status: 2, says: "empty prefix"),
        BadPolicy(name: "a grant climbing out", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/../${sub}/"], "jwks": "JWKS"}"#, status: 2, says: "is refused"),
        BadPolicy(name: "a duration past 12 hours", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/${sub}/"], "jwks": "JWKS", "maxDurationSeconds": 43201}"#, status: 2, says: "maxDurationSeconds must be"),
        BadPolicy(name: "a leeway past 5 minutes", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/${sub}/"], "jwks": "JWKS", "leewaySeconds": 301}"#, status: 2, says: "leewaySeconds must be"),
        BadPolicy(name: "a jwks file that is missing", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/${sub}/"], "jwks": "/nonexistent-buckia/jwks.json"}"#, status: 3, says: "there is no file there"),
        BadPolicy(name: "a jwks file with no usable key", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/${sub}/"], "jwks": "EMPTYJWKS"}"#, status: 1, says: "holds no keys"),
        BadPolicy(name: "a jwks URL that is not https", text: #"{"issuer": "\#(issuer)", "audiences": ["a"], "grants": ["read:home/${sub}/"], "jwks": "http://example.com/jwks"}"#, status: 5, says: "is not https"),
    ])
    func refused(_ bad: BadPolicy) throws {
        let home = try Home()
        defer { home.remove() }
        let jwks = try home.write("jwks.json", #"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"e1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#)
        let empty = try home.write("empty-jwks.json", #"{"keys":[]}"#)
        let policy = try home.write("policy.json", bad.text.replacingOccurrences(of: "EMPTYJWKS", with: empty.path).replacingOccurrences(of: "JWKS", with: jwks.path))
        let run = try ToolRun.run(
            path: GatewayProcess.executable, ["serve", "s3", "served:", "--config", home.config.path, "--addr", "127.0.0.1:0", "--web-identity", policy.path],
            exactEnvironment: home.environment, limit: .seconds(60))
        #expect(run.status == bad.status, "\(run.errors)")
        #expect(run.errors.contains(bad.says), "\(run.errors)")
        #expect(!run.errors.contains("serving"), "it started serving")
    }
}
