import Buckia
import BuckiaSigV4
import Foundation
import Testing

@Suite("buckia token and buckia secrets")
struct SecurityCommandTests {
    @Test("keygen, issue, inspect, verify and jwks: a token issued by the command line verifies, and a changed one does not")
    func tokenRoundTrip() throws {
        let harness = try CLIHarness()
        let keygen = try harness.run("token", "keygen", "--key-id", "cli-1")
        #expect(keygen.status == 0, "\(keygen.stderr)")
        #expect(keygen.stdout.contains(#""kty":"OKP""#) && keygen.stdout.contains(#""kid":"cli-1""#))
        #expect(try harness.run("token", "keygen", "--key-id", "cli-1").status == 1)  // never over an existing key

        let issue = try harness.run("token", "issue", "--user", "u1", "--grant", "read,list:u1/", "--grant", "write:u1/inbound/", "--expires", "2h")
        #expect(issue.status == 0, "\(issue.stderr)")
        let token = issue.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.split(separator: ".").count == 3)

        let verify = try harness.run("token", "verify", token)
        #expect(verify.status == 0)
        #expect(verify.stdout.hasPrefix("valid: Buckia token for u1"))
        #expect(verify.stdout.contains("grant    write on u1/inbound/"))

        let json = try harness.run("token", "verify", token, "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["valid"] as? Bool == true && object["sub"] as? String == "u1" && object["kid"] as? String == "cli-1")

        var tampered = Array(token)
        tampered[tampered.count / 2] = tampered[tampered.count / 2] == "A" ? "B" : "A"
        let refused = try harness.run("token", "verify", String(tampered))
        #expect(refused.status == 1)
        #expect(refused.stdout.hasPrefix("invalid ("))

        let expired = try harness.run("token", "verify", token, "--at", String(Int(Date().timeIntervalSince1970) + 3 * 3600))
        #expect(expired.status == 1)
        #expect(expired.stdout.hasPrefix("invalid (expired)"))

        let inspect = try harness.run("token", "inspect", String(tampered))
        #expect(inspect.stdout.hasPrefix("NOT VERIFIED") || inspect.status == 1)

        // A verifier with only the public key, from jwks.
        let jwks = try harness.run("token", "jwks")
        let keys = try #require((try JSONSerialization.jsonObject(with: Data(jwks.stdout.utf8)) as? [String: Any])?["keys"] as? [[String: Any]])
        let jwk = try JSONSerialization.data(withJSONObject: try #require(keys.first))
        let file = try harness.write(String(decoding: jwk, as: UTF8.self), to: "key.jwk")
        let other = try CLIHarness()
        #expect(try other.run("token", "verify", token).status == 5)  // no keys saved there
        #expect(try other.run("token", "verify", token, "--public-key", "@" + file.path).status == 0)
    }

    @Test(
        "Bad grants and options are usage errors",
        arguments: [
            ["token", "issue", "--user", "u1", "--grant", "read:../"], ["token", "issue", "--user", "u1", "--grant", "root:u1/"],
            ["token", "issue", "--user", "u1", "--grant", "u1/"], ["token", "issue", "--user", "u1"],
            ["token", "issue", "--grant", "read:u1/"], ["token", "issue", "--user", "u1", "--grant", "read:u1/", "--expires", "400d"],
            ["token", "keygen", "--key-id", "k", "--algorithm", "RS256"], ["token", "keygen"], ["secrets", "frobnicate"],
        ])
    func usage(_ arguments: [String]) throws {
        let harness = try CLIHarness()
        #expect(try harness.run("token", "keygen", "--key-id", "k0").status == 0)
        let result = try harness.runArray(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
    }

    @Test("secrets list shows names and dates; the store is 0600 in a 0700 folder under XDG_CONFIG_HOME")
    func secretsList() throws {
        let harness = try CLIHarness()
        #expect(try harness.run("token", "keygen", "--key-id", "k1", "--algorithm", "HS256").status == 0)
        let list = try harness.run("secrets", "list")
        #expect(list.stdout.hasPrefix("buckia.signing-key/k1  saved "))
        let folder = harness.home.appendingPathComponent("config/buckia/secrets")
        let folderMode = try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("secrets.json").path)[.posixPermissions] as? Int
        #expect(folderMode == 0o700 && fileMode == 0o600)
        #expect(try harness.run("secrets", "delete", "buckia.signing-key/k1").status == 0)
        #expect(try harness.run("secrets", "delete", "buckia.signing-key/k1").status == 3)
        #expect(try harness.run("secrets", "list").stdout.isEmpty)
    }

    /// Known fake secrets, configured every way Buckia reads credentials.
    static let fakeSecrets = [
        "FAKE-S3-SECRET-9f8e7d", "FAKE-B2-APPKEY-6c5b4a", "FAKE-BUNNY-ACCESS-3a2b1c", "FAKE-BUNNY-TOKENKEY-0d9e8f", "FAKE-PASSPHRASE-7a6b5c",
    ]
    static let leakEnvironment = [
        "BUCKIA_REMOTE_LAKE_PROVIDER": "s3", "BUCKIA_REMOTE_LAKE_BUCKET": "lake", "BUCKIA_REMOTE_LAKE_ENDPOINT": "http://127.0.0.1:9",
        "BUCKIA_REMOTE_LAKE_CREDENTIAL_ACCESS_KEY_ID": "AKIDLEAK", "BUCKIA_REMOTE_LAKE_CREDENTIAL_SECRET_ACCESS_KEY": fakeSecrets[0],
        "BUCKIA_REMOTE_BEE_PROVIDER": "b2", "BUCKIA_REMOTE_BEE_BUCKET": "bee-bucket", "BUCKIA_REMOTE_BEE_ENDPOINT": "http://127.0.0.1:9",
        "BUCKIA_REMOTE_BEE_CREDENTIAL_APPLICATION_KEY_ID": "KEYIDLEAK", "BUCKIA_REMOTE_BEE_CREDENTIAL_APPLICATION_KEY": fakeSecrets[1],
        "BUCKIA_REMOTE_ZONE_PROVIDER": "bunny", "BUCKIA_REMOTE_ZONE_BUCKET": "zone", "BUCKIA_REMOTE_ZONE_ENDPOINT": "http://127.0.0.1:9",
        "BUCKIA_REMOTE_ZONE_CREDENTIAL_ACCESS_KEY": fakeSecrets[2], "BUCKIA_REMOTE_ZONE_CREDENTIAL_TOKEN_KEY": fakeSecrets[3],
        "BUCKIA_REMOTE_ZONE_PULL_ZONE_URL": "https://zone.b-cdn.net", "BUCKIA_SECRETS_PASSPHRASE": fakeSecrets[4], "BUNNY_TOKEN_KEY": fakeSecrets[3],
        "BUCKIA_REMOTE_LAKE_MAX_ATTEMPTS": "1", "BUCKIA_REMOTE_BEE_MAX_ATTEMPTS": "1", "BUCKIA_REMOTE_ZONE_MAX_ATTEMPTS": "1",
    ]

    static let leakRuns: [[String]] = [
        ["providers"], ["providers", "--json"], ["ls", "lake:"], ["ls", "bee:", "--verbose"], ["ls", "zone:", "--json"],
        ["cp", "lake:a", "./a", "--verbose"], ["cat", "bee:a"], ["rm", "zone:a", "--verbose"], ["url", "lake:a"], ["url", "zone:a", "--verbose"],
        ["sync", "./missing", "lake:x", "--json"], ["check", "./missing", "bee:x"], ["token", "keygen", "--key-id", "leak-1"],
        ["token", "keygen", "--key-id", "leak-2", "--algorithm", "HS256", "--verbose"], ["token", "issue", "--user", "u1", "--grant", "read:u1/", "--key-id", "leak-1", "--json"],
        ["token", "verify", "https://zone.b-cdn.net/a?token=x&expires=1"], ["token", "verify", "not.a.token", "--json"], ["token", "jwks"],
        ["secrets", "list"], ["secrets", "list", "--json"], ["secrets", "delete", "nothing"], ["conformance", "lake:", "--json"],
    ]

    @Test("Known fake secrets never appear in any command's output, with --verbose, --json or failing, nor in any file but the secret store")
    func noLeaks() throws {
        let harness = try CLIHarness()
        var outputs: [([String], String)] = []
        for arguments in Self.leakRuns {
            let result = try harness.runArray(arguments, extraEnvironment: Self.leakEnvironment)
            outputs.append((arguments, result.stdout + result.stderr))
        }
        // The signing keys the runs made are secrets too: read them back from the sealed store.
        let store = FileSecretStore(folder: harness.home.appendingPathComponent("config/buckia/secrets"), encryption: .passphrase(Secret(Self.fakeSecrets[4])))
        let signingKeys = try ["leak-1", "leak-2"].map { try #require(try store.load("buckia.signing-key/" + $0)).value.exposedValue }
        for (arguments, output) in outputs {
            for secret in Self.fakeSecrets + signingKeys {
                #expect(!output.contains(secret), "\(arguments) printed a secret")
            }
        }
        // Every file Buckia wrote under the private home: only the (encrypted) store may hold secrets,
        // and it holds none in the clear.
        let files = FileManager.default.enumerator(at: harness.home, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        #expect(files.contains { $0.lastPathComponent == "secrets.json" })
        for file in files {
            guard let data = FileManager.default.contents(atPath: file.path) else { continue }
            let text = String(decoding: data, as: UTF8.self)
            for secret in Self.fakeSecrets + signingKeys { #expect(!text.contains(secret), "\(file.path) holds a secret") }
            if file.lastPathComponent == "secrets.json" { #expect(text.contains("AES-256-GCM") && !text.contains("signing-key")) }
        }
    }
}

@Suite("buckia token issue --s3")
struct S3CredentialCommandTests {
    @Test("Prints credential_process JSON whose credentials sign requests the gateway attributes to the user and grants")
    func credentialProcess() throws {
        let harness = try CLIHarness()
        #expect(try harness.run("token", "keygen", "--key-id", "gw-1").status == 0)
        let before = Date()
        let issued = try harness.run("token", "issue", "--user", "alice", "--grant", "read,list:alice/", "--grant", "write:alice/inbound/", "--s3", "--expires", "2h")
        let after = Date()
        #expect(issued.status == 0, "\(issued.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(issued.stdout.utf8)) as? [String: Any])
        #expect(object["Version"] as? Int == 1)
        let accessKeyId = try #require(object["AccessKeyId"] as? String)
        let secret = try #require(object["SecretAccessKey"] as? String)
        let token = try #require(object["SessionToken"] as? String)
        #expect(accessKeyId.hasPrefix("BK"))
        // Two hours from when the command ran: between the times before and after it (whole seconds).
        let expiration = try Date(try #require(object["Expiration"] as? String), strategy: .iso8601)
        #expect(expiration >= before.addingTimeInterval(7200 - 1) && expiration <= after.addingTimeInterval(7200))
        #expect(try harness.run("token", "issue", "--user", "alice", "--grant", "read:alice/", "--s3", "--expires", "13h").status == 2)

        // The gateway, with the keys from the same store, accepts a request signed with them.
        let store = FileSecretStore(folder: harness.home.appendingPathComponent("config/buckia/secrets"))
        let keys = try GatewayKeys.stored(in: TokenManager(store: store), create: false)
        let signer = SigV4Signer(
            credentials: AWSCredentials(accessKeyId: accessKeyId, secretAccessKey: Secret(secret), sessionToken: Secret(token)), region: "us-east-1", service: "s3")
        let url = try #require(URL(string: "http://127.0.0.1:9000/alice/inbound/x.sqlite"))
        let headers = signer.sign(method: "PUT", url: url, headers: [:], payloadHash: SigV4Signer.unsignedPayload, date: Date())
        let request = SigV4Request(method: "PUT", target: "/alice/inbound/x.sqlite", headers: [("host", "127.0.0.1:9000")] + headers.map { (name: $0.key, value: $0.value) })
        let principal = try GatewayAuthenticator(keys: keys).authenticate(request)
        #expect(principal.name == "alice")
        #expect(principal.grants.permits(.write, key: "alice/inbound/x.sqlite"))
        #expect(!principal.grants.permits(.write, key: "alice/x.sqlite"))
    }
}
