import BuckiaHTTP
import Testing

/// The byte count a `Content-Range` names: what a ranged body held in memory or streamed is
/// checked against (a body one byte short under a matching `Content-Length` passed before; the
/// fault matrix found it).
@Suite("Content-Range spans")
struct ContentRangeTests {
    @Test("A Content-Range's span, or nil when it is not bytes FIRST-LAST/TOTAL", arguments: [
        ("bytes 0-9/1234", Int64?(10)), ("bytes 1000-29999/40000", 29_000), ("bytes 5-5/*", 1), ("Bytes 0-0/1", 1), (" bytes 2-3/4 ", 2),
        ("bytes 9-0/10", nil), ("bytes -1-5/10", nil), ("bytes */10", nil), ("items 0-9/10", nil), ("bytes 0-/10", nil), ("", nil),
        ("bytes 0-99999999999999999999/1", nil),
    ])
    func span(_ value: String, _ expected: Int64?) {
        #expect(HTTPResponse.span(ofContentRange: value) == expected)
    }
}
