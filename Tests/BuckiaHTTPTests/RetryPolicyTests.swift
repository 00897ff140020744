import BuckiaHTTP
import Foundation
import Testing

@Suite("RetryPolicy and Retry-After")
struct RetryPolicyTests {
    @Test(
        "Backoff grows exponentially to the cap, scaled by the jitter",
        arguments: [
            (1, 1.0, Duration.milliseconds(100)), (2, 1.0, .milliseconds(200)), (3, 1.0, .milliseconds(400)),
            (6, 1.0, .seconds(2)), (40, 1.0, .seconds(2)), (3, 0.5, .milliseconds(200)), (3, 0.0, .zero),
        ])
    func backoff(retry: Int, random: Double, expected: Duration) {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(2), random: { random })
        #expect(policy.backoff(retry: retry) == expected)
    }

    @Test("No delay is offered once the attempts are used up")
    func attemptsAreBounded() {
        let policy = RetryPolicy(maxAttempts: 3, random: { 1.0 })
        #expect(policy.delay(beforeRetry: 1, retryAfter: nil) != nil)
        #expect(policy.delay(beforeRetry: 2, retryAfter: nil) != nil)
        #expect(policy.delay(beforeRetry: 3, retryAfter: nil) == nil)
        #expect(RetryPolicy.none.delay(beforeRetry: 1, retryAfter: nil) == nil)
    }

    @Test("Retry-After replaces the backoff, up to the policy's limit")
    func retryAfterLimit() {
        let policy = RetryPolicy(maxRetryAfter: .seconds(30))
        #expect(policy.delay(beforeRetry: 1, retryAfter: .seconds(30)) == .seconds(30))
        #expect(policy.delay(beforeRetry: 1, retryAfter: .seconds(31)) == nil)
    }

    @Test("Only the documented statuses and URL errors are retryable")
    func retryableSets() {
        let policy = RetryPolicy.standard
        for status in [408, 429, 500, 502, 503, 504] { #expect(policy.isRetryable(status: status)) }
        for status in [200, 304, 400, 401, 403, 404, 409, 412, 501, 505, 507] { #expect(!policy.isRetryable(status: status)) }
        for code in [URLError.Code.timedOut, .networkConnectionLost, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
            .notConnectedToInternet, .secureConnectionFailed]
        {
            #expect(policy.isRetryable(code))
        }
        for code in [URLError.Code.cancelled, .badURL, .serverCertificateUntrusted, .fileDoesNotExist] {
            #expect(!policy.isRetryable(code))
        }
    }

    static let now = Date(timeIntervalSince1970: 784_111_747)  // Sun, 06 Nov 1994 08:49:07 GMT

    @Test(
        "Retry-After parses delta-seconds and all three HTTP-date forms",
        arguments: [
            ("120", Duration?.some(.seconds(120))),
            (" 5 ", .seconds(5)),
            ("0", .zero),
            ("Sun, 06 Nov 1994 08:49:37 GMT", .seconds(30)),
            ("Sunday, 06-Nov-94 08:49:37 GMT", .seconds(30)),
            ("Sun Nov  6 08:49:37 1994", .seconds(30)),
            ("Sun, 06 Nov 1994 08:00:00 GMT", .zero),
            ("99999999999999999999999", RetryAfter.ceiling),
            ("soon", nil),
            ("-5", nil),
            ("", nil),
        ])
    func parsesRetryAfter(value: String, expected: Duration?) {
        #expect(RetryAfter.parse(value, now: Self.now) == expected)
    }
}

@Suite("HTTP dates")
struct HTTPDateTests {
    /// What Foundation's formatter makes of an IMF-fixdate, the reference for the hand parser.
    static func reference(_ seconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    @Test("IMF-fixdates parse to the instant Foundation formats them from", arguments: [
        0, 784_111_777, 951_782_400, 951_868_799, 1_709_164_800, 2_147_483_647, 4_102_444_800, 253_402_300_799, -2_203_891_200, -1,
    ] as [Int64])
    func imfFixdate(_ seconds: Int64) {
        let text = Self.reference(seconds)
        #expect(RetryAfter.httpDate(text) == Date(timeIntervalSince1970: TimeInterval(seconds)), "\(text)")
    }

    @Test("Impossible dates in the IMF shape are refused, not rolled over", arguments: [
        "Fri, 30 Feb 2024 00:00:00 GMT", "Thu, 29 Feb 1900 00:00:00 GMT", "Sun, 31 Apr 2024 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nox 1994 08:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 19a4 08:49:37 GMT",
    ])
    func impossible(_ text: String) {
        #expect(RetryAfter.httpDate(text) == nil)
    }
}

@Suite("HTTPHeaders")
struct HTTPHeadersTests {
    @Test("Names match ignoring ASCII letter case only", arguments: [
        ("ETag", "etag", true), ("Content-Length", "CONTENT-LENGTH", true), ("x-amz-meta-a1", "X-Amz-Meta-A1", true),
        ("etag", "etags", false), ("etags", "etag", false), ("[", "{", false), ("a@", "a`", false), ("Ä", "ä", false), ("", "", true),
    ])
    func asciiCase(_ stored: String, _ asked: String, _ matches: Bool) {
        #expect((HTTPHeaders([(stored, "v")]).first(asked) != nil) == matches)
    }

    @Test("Lookups ignore case and setting replaces every field of the name")
    func caseInsensitive() {
        var headers = HTTPHeaders([("ETag", "\"abc\""), ("x-amz-meta-a", "1")])
        #expect(headers["etag"] == "\"abc\"")
        #expect(headers["ETAG"] == "\"abc\"")
        headers.add("X-Amz-Meta-A", "2")
        #expect(headers.values("x-amz-meta-a") == ["1", "2"])
        headers["X-AMZ-META-A"] = "3"
        #expect(headers.values("x-amz-meta-a") == ["3"])
        headers["etag"] = nil
        #expect(!headers.contains("ETag"))
    }

    @Test("Response header lookups ignore the server's casing")
    func responseHeaders() async throws {
        try await withTestServer { server in
            let response = try await HTTPClient().send(HTTPRequest(.get, try server.url("/download?size=10")))
            #expect(response.header("content-length") == "10")
            #expect(response.header("CONTENT-TYPE") == "application/octet-stream")
            #expect(response.headers["Content-Type"] == "application/octet-stream")
        }
    }
}
