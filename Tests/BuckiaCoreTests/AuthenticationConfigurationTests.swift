import BuckiaCore
import Foundation
import Testing

struct AuthenticationConfigurationTests {
    @Test(
        "The factories set the method and credential names",
        arguments: [
            (AuthenticationConfiguration.none, AuthenticationMethod.none, [], nil),
            (.apiKey("k", context: "ctx"), .apiKey, ["apiKey"], "ctx"),
            (.okta(domain: "example.okta.com", clientId: "c"), .okta, ["clientId", "domain"], nil),
            (.awsSignature(accessKeyId: "a", secretAccessKey: "s"), .awsSignature, ["accessKeyId", "secretAccessKey"], nil),
            (.awsSignature(accessKeyId: "a", secretAccessKey: "s", sessionToken: "t"), .awsSignature,
             ["accessKeyId", "secretAccessKey", "sessionToken"], nil),
            (.token("t"), .token, ["token"], nil),
            (.providerSpecific(type: .b2, credentials: ["applicationKeyId": "i", "applicationKey": "k"]), .token,
             ["applicationKey", "applicationKeyId"], "b2"),
        ] as [(AuthenticationConfiguration, AuthenticationMethod, [String], String?)])
    func factories(auth: AuthenticationConfiguration, method: AuthenticationMethod, names: [String], context: String?) throws {
        #expect(auth.method == method)
        #expect(auth.credentials.keys.sorted() == names)
        #expect(auth.tokenContext == context)
        let data = try JSONEncoder().encode(auth)
        #expect(try ConfigurationDecoding.decode(AuthenticationConfiguration.self, from: data) == auth)
    }

    @Test("Empty credentials and a missing token context are left out of the JSON")
    func compactJSON() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(AuthenticationConfiguration.none), as: UTF8.self) == #"{"method":"none"}"#)
        let apiKey = String(decoding: try encoder.encode(AuthenticationConfiguration.apiKey("k", context: "c")), as: UTF8.self)
        #expect(apiKey == #"{"credentials":{"apiKey":"k"},"method":"apiKey","tokenContext":"c"}"#)
    }

    @Test(
        "Decoding rejects unknown keys and wrong types with the path",
        arguments: [
            (#"{"method": "apiKey", "credential": {}}"#, "credential"),
            (#"{"method": "apiKey", "credentials": {"apiKey": 5}}"#, "credentials.apiKey"),
            (#"{"method": "apiKey", "credentials": ["k"]}"#, "credentials"),
            (#"{"method": "sso"}"#, "method"),
            (#"{"credentials": {}}"#, "method"),
            (#"{"method": "token", "tokenContext": 1}"#, "tokenContext"),
        ])
    func rejects(json: String, path: String) {
        let error = #expect(throws: BuckiaError.self) {
            try ConfigurationDecoding.decode(AuthenticationConfiguration.self, from: Data(json.utf8))
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.path == path)
        #expect(error?.message.contains(path) == true)
    }

    @Test("A present credential is returned; a missing or empty one names where it belongs", arguments: ["apiKey", "other"])
    func requireCredential(name: String) throws {
        let auth = AuthenticationConfiguration(method: .apiKey, credentials: ["apiKey": "k", "other": ""])
        if name == "apiKey" {
            #expect(try auth.requireCredential(name, for: .bunny).exposedValue == "k")
        } else {
            let error = #expect(throws: BuckiaError.self) { try auth.requireCredential(name, for: .bunny) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.path == "authConfig.credentials.\(name)")
            #expect(error?.message.contains("bunny") == true)
        }
        let missing = #expect(throws: BuckiaError.self) { try auth.requireCredential("absent", for: .s3) }
        #expect(missing?.path == "authConfig.credentials.absent")
    }

    @Test("Every method round-trips by name", arguments: AuthenticationMethod.allCases)
    func methods(method: AuthenticationMethod) throws {
        let json = Data(#"{"method": "\#(method.rawValue)"}"#.utf8)
        #expect(try ConfigurationDecoding.decode(AuthenticationConfiguration.self, from: json).method == method)
    }
}
