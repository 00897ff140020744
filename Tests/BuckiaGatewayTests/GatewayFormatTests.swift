import BuckiaCore
@testable import BuckiaGateway
import Foundation
import Testing

/// The gateway's hand-written formats (written by hand because Foundation's formatters, made per
/// response, cost a quarter of a small GET): dates as HTTP and S3 write them, and the
/// percent-decoding of request targets.
@Suite("S3 gateway: dates, percent-decoding and request ids")
struct GatewayFormatTests {
    @Test("A log line's milliseconds have one decimal, as %.1f writes them", arguments: [0, 0.04, 0.06, 0.94, 0.96, 1.25, 9.99, 12.34, 99.95001, 123_456.78, 1e14, 2e15, -1, .infinity, .nan])
    func tenths(_ value: Double) {
        #expect(S3AccessLogEntry.tenths(value) == String(format: "%.1f", value))
    }

    @Test("Request ids are sixteen upper-case hex digits, all different, this process's half first")
    func requestIds() {
        let ids = (0..<1000).map { _ in S3Gateway.RequestContext.nextRequestId() }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { id in id.utf8.count == 16 && id.utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) } })
        #expect(Set(ids.map { $0.prefix(8) }).count == 1)
    }

    @Test("HTTP dates (IMF-fixdate) and S3's listing dates", arguments: [
        (1_369_353_600.0, "Fri, 24 May 2013 00:00:00 GMT", "2013-05-24T00:00:00.000Z"),
        (0.0, "Thu, 01 Jan 1970 00:00:00 GMT", "1970-01-01T00:00:00.000Z"),
        (1_795_737_106.25, "Thu, 26 Nov 2026 23:51:46 GMT", "2026-11-26T23:51:46.250Z"),
        (951_782_400.999, "Tue, 29 Feb 2000 00:00:00 GMT", "2000-02-29T00:00:00.999Z"),
    ])
    func dates(_ seconds: Double, _ http: String, _ iso: String) {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(S3Gateway.httpDate(date) == http)
        #expect(S3Gateway.isoDate(date) == iso)
        #expect(S3Gateway.parseHTTPDate(http) == Date(timeIntervalSince1970: seconds.rounded(.down)))
    }

    @Test("A date past any calendar is written as the epoch, never trapped on", arguments: [Double.infinity, -Double.infinity, Double.nan, 1e300])
    func absurdDates(_ seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(S3Gateway.httpDate(date) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(S3Gateway.isoDate(date) == "1970-01-01T00:00:00.000Z")
        _ = RcloneMetadata.formatMtime(date)
        _ = S3Gateway.etag(of: RemoteFile(path: try ObjectKey("a"), size: 1, modificationDate: date))
    }

    @Test("Percent-decoding: escapes of any case, UTF-8 checked, malformed escapes refused", arguments: [
        ("/plain/key", "/plain/key"), ("%41%62c", "Abc"), ("a%2fb%2Fc", "a/b/c"), ("%C3%BC", "\u{00FC}"), ("a+b", "a+b"),
        ("%", nil), ("%4", nil), ("%zz", nil), ("%FF", nil), ("%C3", nil), ("ok%20then%", nil),
    ] as [(String, String?)])
    func decoding(_ text: String, _ expected: String?) {
        #expect(S3Gateway.percentDecoded(text[...]) == expected)
    }
}
