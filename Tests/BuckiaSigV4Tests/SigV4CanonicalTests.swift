import BuckiaCore
import BuckiaSigV4
import Foundation
import Testing

/// The encoding and canonicalisation rules, one row per rule.
@Suite("SigV4: canonical encoding")
struct SigV4CanonicalTests {
    struct EncodeRow: Sendable, CustomTestStringConvertible {
        let input: String
        let keepSlash: Bool
        let expected: String
        var testDescription: String { "\(input.debugDescription) keepSlash: \(keepSlash)" }
    }

    static let encodeRows: [EncodeRow] = [
        EncodeRow(input: "AZaz09-_.~", keepSlash: false, expected: "AZaz09-_.~"),
        EncodeRow(input: "a b", keepSlash: false, expected: "a%20b"),
        EncodeRow(input: "a+b", keepSlash: false, expected: "a%2Bb"),
        EncodeRow(input: "a/b", keepSlash: false, expected: "a%2Fb"),
        EncodeRow(input: "a/b", keepSlash: true, expected: "a/b"),
        EncodeRow(input: "%", keepSlash: true, expected: "%25"),
        EncodeRow(input: "=&?#*$", keepSlash: false, expected: "%3D%26%3F%23%2A%24"),
        EncodeRow(input: "\u{1234}", keepSlash: false, expected: "%E1%88%B4"),
        EncodeRow(input: "é€😀", keepSlash: true, expected: "%C3%A9%E2%82%AC%F0%9F%98%80"),
        EncodeRow(input: "", keepSlash: false, expected: ""),
    ]

    @Test("encode keeps only unreserved bytes and writes the rest as uppercase %XX", arguments: encodeRows)
    func encode(_ row: EncodeRow) {
        #expect(SigV4Canonical.encode(row.input, keepSlash: row.keepSlash) == row.expected)
    }

    struct PathRow: Sendable, CustomTestStringConvertible {
        let path: String
        let standard: String
        let s3: String
        var testDescription: String { path }
    }

    /// What each service signs for a path as sent; S3's column is the object key encoded once.
    static let pathRows: [PathRow] = [
        PathRow(path: "/example/$delete", standard: "/example/%24delete", s3: "/example/%24delete"),
        PathRow(path: "/a%20b", standard: "/a%2520b", s3: "/a%20b"),
        PathRow(path: "/a%2a", standard: "/a%252a", s3: "/a%2A"),
        PathRow(path: "/%7E", standard: "/%257E", s3: "/~"),
        PathRow(path: "/a//b/../c/./", standard: "/a/c/", s3: "/a//b/../c/./"),
        PathRow(path: "", standard: "/", s3: "/"),
    ]

    @Test("A path is signed as the service sees it: encoded once more, or decoded and encoded for S3", arguments: pathRows)
    func path(_ row: PathRow) throws {
        let url = try #require(URL(string: "https://example.amazonaws.com\(row.path)"))
        for (encoding, expected) in [(SigV4Signer.PathEncoding.standard, row.standard), (.s3, row.s3)] {
            let signer = SigV4Signer(credentials: SuiteCase.signer.credentials, region: "us-east-1", service: "service", pathEncoding: encoding)
            let text = signer.canonicalRequest(method: "GET", url: url, headers: [:], payloadHash: SigV4Signer.emptyPayloadHash).text
            #expect(text.split(separator: "\n", omittingEmptySubsequences: false)[1] == expected[...])
        }
    }

    @Test("Query pairs are decoded, encoded and sorted by name then value; a bare name gets '='")
    func query() throws {
        let url = try #require(URL(string: "https://example.amazonaws.com/?b=2&a=z&a=A&flag&x=a+b&e=%7e"))
        let text = SuiteCase.signer.canonicalRequest(method: "GET", url: url, headers: [:], payloadHash: SigV4Signer.emptyPayloadHash).text
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false)[2] == "a=A&a=z&b=2&e=~&flag=&x=a%2Bb")
    }

    @Test("Header keys that differ only in case are one signed header, values in a fixed order")
    func caseVariantHeaders() throws {
        let url = try #require(URL(string: "https://example.amazonaws.com/"))
        let headers = ["X-Custom": " b ", "x-custom": "a\t\tc", "Host": "example.amazonaws.com"]
        let canonical = SuiteCase.signer.canonicalRequest(method: "GET", url: url, headers: headers, payloadHash: SigV4Signer.emptyPayloadHash)
        #expect(canonical.signedHeaders == "host;x-custom")
        #expect(canonical.text.contains("\nx-custom:b,a c\n"))
    }
}
