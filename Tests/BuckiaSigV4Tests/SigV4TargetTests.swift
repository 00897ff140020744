import BuckiaCore
import Foundation
import Testing

@testable import BuckiaSigV4

/// A request target read for its canonical path and query without making a URL must give
/// exactly what the URL gives, and must hand every target it cannot read that way to the URL.
@Suite("SigV4: request targets read without a URL")
struct SigV4TargetTests {
    /// The canonical path (both encodings) and query of `target` through `URL`, or nil when no URL can be made of it.
    static func throughURL(_ target: String) -> [String]? {
        guard let url = URL(string: "http://gateway.invalid" + target) else { return nil }
        return [SigV4Canonical.path(of: url, encoding: .s3), SigV4Canonical.path(of: url, encoding: .standard), SigV4Canonical.query(of: url)]
    }

    /// The same, from the target read directly; nil when it is handed to the URL.
    static func direct(_ target: String) -> [String]? {
        guard let (path, query) = SigV4Canonical.pathAndQuery(ofTarget: target) else { return nil }
        return [
            SigV4Canonical.path(percentEncoded: path, encoding: .s3), SigV4Canonical.path(percentEncoded: path, encoding: .standard),
            SigV4Canonical.query(percentEncoded: query),
        ]
    }

    @Test("Targets of plain URI characters are read directly, as the URL reads them", arguments: [
        "/", "/b/k", "/b/a%20b?x-id=1", "/b/k?uploads", "/b/k?a=1&b=2&a=0", "/b//k/../x?%41=%62", "/b/k?q=a?b", "/b/k?", "/b/k?&&=",
        "/b/k;x=1@:", "/b/k'()*+,!$", "/b/%7e%7E%2F", "/b/k?X-Amz-Expires=60&X-Amz-Date=20261207T000000Z", "//double", "/b/k?=v&n=",
    ])
    func plainTargets(_ target: String) throws {
        let direct = try #require(Self.direct(target), "read directly")
        #expect(direct == Self.throughURL(target))
    }

    @Test("Targets a URL does not carry as they are go through the URL", arguments: [
        "/a b", "/a#b", "/é", "/%zz", "/%4", "/a%", "a/b", "", "/a[b]", "/a\"b", "/a<b>", "/a{b}", "/a|b", "/a^b", "/a`b", "/a\\b", "/a\u{7F}",
    ])
    func otherTargets(_ target: String) {
        #expect(Self.direct(target) == nil)
    }

    @Test("Random targets: whatever is read directly is what the URL reads")
    func randomTargets() {
        var generator = SplitMix64(seed: 0x5167_0004)
        let alphabet = Array((0x20...0x7E).map { Character(Unicode.Scalar(UInt8($0))) }) + ["é", "%", "%", "/", "/", "?", "&", "="]
        var readDirectly = 0
        for _ in 0..<4_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let target = "/" + String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
            guard let direct = Self.direct(target) else { continue }
            readDirectly += 1
            #expect(direct == Self.throughURL(target), "\(target.debugDescription)")
        }
        #expect(readDirectly > 100, "too few random targets were plain enough to compare: \(readDirectly)")
    }
}

@Suite("SigV4: a request's header values")
struct SigV4RequestValuesTests {
    @Test("Header values are found whatever the case of either name, in the order sent", arguments: ["x-amz-date", "X-Amz-Date", "X-AMZ-DATE"])
    func values(_ name: String) {
        let request = SigV4Request(method: "GET", target: "/", headers: [("X-Amz-Date", "1"), ("host", "h"), ("x-amz-date", "2"), ("x-amz-datf", "3")])
        #expect(request.values(name) == ["1", "2"])
        #expect(request.single(name) == nil && request.single("HOST") == "h")
    }
}
