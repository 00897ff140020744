import BuckiaCore
import Foundation
import Testing

/// Every way a value can be turned into text by a log line, a print or a test failure.
private func renderings(of value: Any) -> [String: String] {
    var dumped = ""
    dump(value, to: &dumped)
    var printed = ""
    print(value, to: &printed)
    var debugPrinted = ""
    debugPrint(value, to: &debugPrinted)
    return [
        "String(describing:)": String(describing: value),
        "String(reflecting:)": String(reflecting: value),
        "interpolation": "\(value)",
        "dump": dumped,
        "print": printed,
        "debugPrint": debugPrinted,
        "Mirror": Mirror(reflecting: value).children.map { "\($0.label ?? ""): \($0.value)" }.joined(separator: ", "),
        "array": String(describing: [value]),
        "optional": String(describing: Optional(value)),
    ]
}

/// Checks no rendering holds the secret, neither as written nor with string escapes.
private func expectRedacted(_ value: Any, secret: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let escaped = String(secret.debugDescription.dropFirst().dropLast())
    for (name, text) in renderings(of: value) {
        // The failure message names the rendering, never the text that leaked.
        #expect(!text.contains(secret) && !text.contains(escaped), "\(name) leaks the secret", sourceLocation: sourceLocation)
    }
}

struct SecretTests {
    static let secrets = [
        "hunter2-correct-horse", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AKIAIOSFODNN7EXAMPLE",
        "tok-ünïcødé-🔑-秘密", "quote\"and\\backslash", "    spaced secret    ",
    ]

    @Test("A Secret never prints its value", arguments: secrets)
    func secret(value: String) {
        let secret = Secret(value)
        expectRedacted(secret, secret: value)
        #expect(secret.description == "<REDACTED>")
        #expect(secret.debugDescription == "<REDACTED>")
        #expect(secret.exposedValue == value)
    }

    @Test("An authentication configuration never prints a credential", arguments: secrets)
    func authentication(value: String) {
        let configurations: [AuthenticationConfiguration] = [
            .apiKey(value), .token(value, context: "ctx"), .okta(domain: value, clientId: value),
            .awsSignature(accessKeyId: value, secretAccessKey: value, sessionToken: value),
            .providerSpecific(type: .b2, credentials: ["applicationKey": value]),
        ]
        for auth in configurations {
            expectRedacted(auth, secret: value)
            #expect(auth.description.contains("<REDACTED>"))
        }
    }

    @Test("A configuration never prints a credential, but its JSON holds it", arguments: secrets)
    func configuration(value: String) throws {
        let configuration = BuckiaConfiguration(
            provider: .s3, bucketName: "b",
            authConfig: .awsSignature(accessKeyId: "AKIA-PUBLIC", secretAccessKey: value, sessionToken: value))
        expectRedacted(configuration, secret: value)
        #expect(configuration.description.contains("secretAccessKey: <REDACTED>"))

        let json = try configuration.encodedJSON()
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let auth = try #require(object["authConfig"] as? [String: Any])
        let credentials = try #require(auth["credentials"] as? [String: String])
        #expect(credentials["secretAccessKey"] == value)
        #expect(credentials["sessionToken"] == value)
        #expect(try BuckiaConfiguration.decode(from: json).authConfig.credentials["secretAccessKey"]?.exposedValue == value)
    }

    @Test("An access token never prints its value", arguments: secrets)
    func accessToken(value: String) {
        let token = AccessToken(
            value: Secret(value), expiresAt: Date(timeIntervalSince1970: 1_700_000_000), permissions: .readOnly,
            pathPrefix: "users/1/")
        expectRedacted(token, secret: value)
        #expect(token.description.contains("read+list"))
        #expect(token.description.contains("users/1/"))
    }

    @Test("A missing credential's error names the credential, not a value")
    func missingCredentialError() {
        let auth = AuthenticationConfiguration.awsSignature(accessKeyId: "AKIA-SECRET-ID", secretAccessKey: "")
        let error = #expect(throws: BuckiaError.self) { try auth.requireCredential("secretAccessKey", for: .s3) }
        #expect(error?.description.contains("secretAccessKey") == true)
        #expect(error.map { renderings(of: $0).values.allSatisfy { !$0.contains("AKIA-SECRET-ID") } } == true)
    }

    @Test("Secrets compare and decode by value")
    func valueSemantics() throws {
        #expect(Secret("a") == "a")
        #expect(Secret("a") != Secret("b"))
        #expect(Secret("").isEmpty)
        let decoded = try JSONDecoder().decode([Secret].self, from: Data(#"["x\/y"]"#.utf8))
        #expect(decoded.first?.exposedValue == "x/y")
    }
}
