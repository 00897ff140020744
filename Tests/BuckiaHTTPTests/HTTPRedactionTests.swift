import BuckiaCore
import BuckiaHTTP
import Foundation
import Testing

@Suite("Redaction")
struct HTTPRedactionTests {
    static let secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
    static let signature = "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
    static let sensitiveHeaders = [
        "Authorization", "proxy-authorization", "Cookie", "Set-Cookie", "X-Amz-Security-Token", "AccessKey",
        "X-Api-Key", "X-Bz-Upload-Auth-Token", "x-amz-server-side-encryption-customer-key",
    ]
    static let sensitiveQueryNames = [
        "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "Signature", "token", "Authorization", "key",
        "sig",
    ]

    @Test("A request's description hides every credential header", arguments: sensitiveHeaders)
    func requestDescriptionHidesHeader(name: String) throws {
        var request = HTTPRequest(.get, try #require(URL(string: "https://example.com/bucket/key")))
        request.headers[name] = Self.secret
        request.headers["Content-Type"] = "text/plain"
        #expect(!request.description.contains(Self.secret))
        #expect(request.description.contains("\(name): <REDACTED>"))
        #expect(request.description.contains("Content-Type: text/plain"))
        #expect(!String(reflecting: request).contains(Self.secret))
        var dumped = ""
        dump(request, to: &dumped)
        #expect(!dumped.contains(Self.secret))
    }

    @Test("A header set from a Secret is hidden whatever its name")
    func secretHeaderIsHidden() throws {
        var headers = HTTPHeaders()
        headers.set("X-Custom", secret: Secret(Self.secret))
        #expect(headers.description == "[X-Custom: <REDACTED>]")
        #expect(headers["x-custom"] == Self.secret)
    }

    @Test("A URL prints without its sensitive query values", arguments: sensitiveQueryNames)
    func urlHidesQueryValue(name: String) throws {
        let url = try #require(URL(string: "https://example.com/b/k?prefix=a%2Fb&\(name)=\(Self.signature)&x-id=GetObject"))
        let redacted = HTTPRedaction.default.redact(url)
        #expect(!redacted.contains(Self.signature))
        #expect(redacted == "https://example.com/b/k?prefix=a%2Fb&\(name)=<REDACTED>&x-id=GetObject")
        #expect(!HTTPRequest(.get, url).description.contains(Self.signature))
    }

    @Test("A URL prints without userinfo or fragment")
    func urlHidesUserinfo() throws {
        let url = try #require(URL(string: "https://user:\(Self.secret)@example.com:8443/path?a=1#frag"))
        #expect(HTTPRedaction.default.redact(url) == "https://example.com:8443/path?a=1#<REDACTED>")
    }

    @Test("Names can be added to the default rules")
    func extensibleRules() {
        let redaction = HTTPRedaction.default.adding(headers: ["X-Tenant"], queryParameters: ["session"])
        #expect(redaction.isSensitiveHeader("x-tenant"))
        #expect(redaction.isSensitiveQueryParameter("Session"))
        #expect(!HTTPRedaction.default.isSensitiveHeader("X-Tenant"))
        #expect(!redaction.isSensitiveHeader("Content-Type"))
    }

    @Test("Error bodies lose echoed signatures but keep their error codes")
    func bodyRedaction() {
        let body = """
            <Error><Code>SignatureDoesNotMatch</Code><AWSAccessKeyId>AKIDEXAMPLE</AWSAccessKeyId>\
            <StringToSign>AWS4-HMAC-SHA256\n20150830T123600Z</StringToSign>\
            <SignatureProvided>\(Self.signature)</SignatureProvided></Error>
            {"code": "bad_auth_token", "token": "\(Self.secret)", "status": 401}
            """
        let redacted = HTTPRedaction.default.redact(text: body, secrets: [])
        #expect(!redacted.contains(Self.signature))
        #expect(!redacted.contains(Self.secret))
        #expect(!redacted.contains("AKIDEXAMPLE"))
        #expect(redacted.contains("<Code>SignatureDoesNotMatch</Code>"))
        #expect(redacted.contains(#""code": "bad_auth_token""#))
    }

    @Test("Known secrets and their long pieces are scrubbed from server text")
    func secretScrubbing() {
        let authorization = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request, Signature=\(Self.signature)"
        let text = "the server saw \(Self.signature) and \(authorization)"
        let redacted = HTTPRedaction.default.redact(text: text, secrets: [authorization])
        #expect(!redacted.contains(Self.signature))
        #expect(!redacted.contains("AKIDEXAMPLE/20150830"))
    }

    @Test("Errors and log lines never hold a credential the request carried", arguments: sensitiveHeaders)
    func errorsAndLogsHideCredentials(name: String) async throws {
        try await withTestServer { server in
            let log = LogRecorder()
            let client = HTTPClient(configuration: .init(retryPolicy: SleepRecorder().policy(maxAttempts: 2), log: log.hook), resources: .tests)
            let authorization = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request, Signature=\(Self.signature)"
            var request = HTTPRequest(
                .get, try server.url("/status/503?echo_secrets=1&X-Amz-Signature=\(Self.signature)&X-Amz-Security-Token=\(Self.secret)"))
            request.headers["Authorization"] = authorization
            request.headers[name] = name.lowercased() == "authorization" ? authorization : Self.secret
            let error = await #expect(throws: BuckiaError.self) { try await client.send(request) }
            let texts = [String(describing: error), String(reflecting: error), error.map { "\($0.cause!)" } ?? ""] + log.recorded
            #expect(log.recorded.count == 4)
            for text in texts {
                #expect(!text.contains(Self.signature), "\(text)")
                #expect(!text.contains(Self.secret), "\(text)")
                #expect(!text.contains("AKIDEXAMPLE/20150830"), "\(text)")
            }
            #expect((error?.cause as? HTTPFailure)?.bodyText.contains("SignatureDoesNotMatch") == true)
        }
    }

    @Test("Transport errors do not carry the URL's secrets")
    func transportErrorsHideURLSecrets() async throws {
        let server = try await TestServer.start()
        let url = try server.url("/echo?X-Amz-Signature=\(Self.signature)")
        server.stop()
        let log = LogRecorder()
        let client = HTTPClient(configuration: .init(retryPolicy: .none, log: log.hook), resources: .tests)
        let error = await #expect(throws: BuckiaError.self) { try await client.send(HTTPRequest(.get, url)) }
        #expect(error?.cause is HTTPTransportFailure)
        for text in [String(describing: error), String(reflecting: error)] + log.recorded {
            #expect(!text.contains(Self.signature), "\(text)")
        }
    }
}
