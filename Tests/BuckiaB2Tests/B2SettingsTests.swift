import BuckiaCore
import BuckiaHTTP
import Foundation
import Testing

@testable import BuckiaB2

/// Configuration resolution and B2's error documents, without a server.
@Suite("B2 settings and errors")
struct B2SettingsTests {
    static func configuration(bucket: String = "my-bucket-1", options: [String: String] = [:], credentials: [String: String]? = ["applicationKeyId": "000abc", "applicationKey": "K000secret"]) -> BuckiaConfiguration {
        BuckiaConfiguration(
            provider: .b2, bucketName: bucket, authConfig: credentials.map { .providerSpecific(type: .b2, credentials: $0) } ?? .none, options: options)
    }

    @Test("Defaults: rclone's sizes, B2's endpoint, not public")
    func defaults() throws {
        let settings = try B2Settings.resolve(Self.configuration(), environment: [:])
        #expect(settings.endpoint.absoluteString == "https://api.backblazeb2.com")
        #expect(settings.largeFileThreshold == 200 << 20 && settings.partSize == 96 << 20)
        #expect(!settings.isPublic && settings.downloadURL == nil)
        #expect(settings.keyId == "000abc" && settings.applicationKey.exposedValue == "K000secret")
    }

    @Test("The key comes from the b2 tool's variables when the configuration has none")
    func environmentKey() throws {
        let settings = try B2Settings.resolve(
            Self.configuration(credentials: nil), environment: ["B2_APPLICATION_KEY_ID": "000env", "B2_APPLICATION_KEY": "K000env"])
        #expect(settings.keyId == "000env" && settings.applicationKey.exposedValue == "K000env")
        let half = #expect(throws: BuckiaError.self) {
            try B2Settings.resolve(Self.configuration(credentials: nil), environment: ["B2_APPLICATION_KEY_ID": "000env"])
        }
        #expect(half?.code == .invalidConfiguration)
        let none = #expect(throws: BuckiaError.self) { try B2Settings.resolve(Self.configuration(credentials: nil), environment: [:]) }
        #expect(none?.code == .unauthorized)
        #expect(none?.message.contains("B2_APPLICATION_KEY_ID") == true)
    }

    @Test("Sizes take bytes or binary units", arguments: [("65536", 65_536), ("64K", 65_536), ("5M", 5 << 20), ("5MiB", 5 << 20), ("1G", 1 << 30), ("2gb", 2 << 30)])
    func sizes(_ text: String, _ bytes: Int) throws {
        #expect(try B2Settings.size(text, default: 0, name: "partSize") == Int64(bytes))
    }

    @Test("Bad configurations are refused with a message naming the setting", arguments: [
        (configuration(bucket: "ab"), "bucketName"),
        (configuration(bucket: "b2-reserved"), "bucketName"),
        (configuration(bucket: "has space x"), "bucketName"),
        (configuration(bucket: "../../etc"), "bucketName"),
        (configuration(options: ["partSize": "0"]), "partSize"),
        (configuration(options: ["partSize": "-5M"]), "partSize"),
        (configuration(options: ["partSize": "9999999999G"]), "partSize"),
        (configuration(options: ["largeFileThreshold": "6G"]), "largeFileThreshold"),
        (configuration(options: ["endpoint": "http://b2.example.com"]), "endpoint"),
        (configuration(options: ["endpoint": "ftp://b2.example.com"]), "endpoint"),
        (configuration(options: ["endpoint": "not a url"]), "endpoint"),
        (configuration(options: ["publicBucket": "yes"]), "publicBucket"),
        (configuration(options: ["regoin": "x"]), "regoin"),
        (configuration(credentials: ["applicationKeyId": "000abc"]), "applicationKey"),
    ])
    func refused(_ configuration: BuckiaConfiguration, _ setting: String) {
        let error = #expect(throws: BuckiaError.self) { try B2Settings.resolve(configuration, environment: [:]) }
        #expect(error?.code == .invalidConfiguration)
        #expect("\(String(describing: error))".contains(setting), "\(String(describing: error))")
        #expect(!"\(String(describing: error))".contains("K000secret"))
    }

    @Test("Plain http is allowed to loopback, and elsewhere only with allowHTTP")
    func plainHTTP() throws {
        #expect(try B2Settings.resolve(Self.configuration(options: ["endpoint": "http://127.0.0.1:9000"]), environment: [:]).endpoint.port == 9000)
        #expect(try B2Settings.resolve(Self.configuration(options: ["endpoint": "http://b2.lan", "allowHTTP": "true"]), environment: [:]).endpoint.host == "b2.lan")
    }

    @Test("B2's error codes map to Buckia's", arguments: [
        (401, "expired_auth_token", BuckiaError.Code.transient),
        (401, "bad_auth_token", .transient),
        (401, "unauthorized", .permissionDenied),
        (401, "unsupported", .unsupported),
        (403, "access_denied", .permissionDenied),
        (403, "transaction_cap_exceeded", .permissionDenied),
        (403, "storage_cap_exceeded", .permissionDenied),
        (404, "not_found", .notFound),
        (400, "file_not_present", .notFound),
        (400, "no_such_file", .notFound),
        (429, "too_many_requests", .rateLimited),
        (408, "request_timeout", .transient),
        (500, "internal_error", .transient),
        (503, "service_unavailable", .transient),
        (400, "invalid_bucket_id", .invalidConfiguration),
        (400, "bad_request", .invalidConfiguration),
        (400, "out_of_range", .invalidConfiguration),
    ])
    func errorCodes(_ status: Int, _ code: String, _ expected: BuckiaError.Code) throws {
        let body = Data(#"{"status": \#(status), "code": "\#(code)", "message": "Something."}"#.utf8)
        let failure = HTTPFailure(method: "POST", url: "https://api.example/b2api/v3/b2_x", status: status, headers: HTTPHeaders(), body: body, attempts: 1)
        let error = try #require(B2ErrorMapping.map(failure))
        #expect(error.code == expected)
        #expect(error.message.contains(code))
    }

    @Test("A SHA-1 mismatch is a checksum mismatch; a body that is not B2's JSON is left to the status")
    func specialCases() throws {
        let sha1 = Data(#"{"status": 400, "code": "bad_request", "message": "Sha1 did not match data received"}"#.utf8)
        let mismatch = HTTPFailure(method: "POST", url: "u", status: 400, headers: HTTPHeaders(), body: sha1, attempts: 1)
        #expect(B2ErrorMapping.map(mismatch)?.code == .checksumMismatch)
        let html = HTTPFailure(method: "GET", url: "u", status: 502, headers: HTTPHeaders(), body: Data("<html>bad gateway</html>".utf8), attempts: 1)
        #expect(B2ErrorMapping.map(html) == nil)
        let timeout = HTTPFailure(method: "GET", url: "u", status: 408, headers: HTTPHeaders(), body: Data(), attempts: 1)
        #expect(B2ErrorMapping.map(timeout)?.code == .transient)
    }

    @Test("Names and file info are percent-encoded as B2 reads them, + included", arguments: [
        ("a/b c.txt", "a/b%20c.txt"), ("plus+sign", "plus%2Bsign"), ("café", "caf%C3%A9"), ("~tilde_-.", "~tilde_-."), ("100%", "100%25"),
        ("?#&=", "%3F%23%26%3D"),
    ])
    func encoding(_ raw: String, _ encoded: String) {
        #expect(b2Encode(raw) == encoded)
    }
}
