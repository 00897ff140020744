import BuckiaCore
import BuckiaSigV4
import BuckiaHTTP
import Foundation
import Testing

@testable import BuckiaS3

@Suite("S3 responses")
struct S3ResponseTests {
    @Test("Malformed, truncated or empty XML is corrupt, never an empty result", arguments: [
        "", "<ListBucketResult><Contents><Key>a</Key>", "<ListBucketResult>&bogus;</ListBucketResult>", "not xml at all",
    ])
    func badXML(_ text: String) {
        let error = #expect(throws: BuckiaError.self) { try XMLNode.parse(Data(text.utf8), what: "list") }
        #expect(error?.code == .corrupt)
    }

    @Test("XML nested past the depth bound is refused, not a stack overflow; the bound itself parses", arguments: [70_000, XMLNode.maximumDepth + 1])
    func deepXML(_ depth: Int) throws {
        let text = "<ListBucketResult>" + String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth) + "</ListBucketResult>"
        #expect { try XMLNode.parse(Data(text.utf8), what: "list") } throws: { error in
            (error as? BuckiaError)?.code == .corrupt && (error as? BuckiaError)?.message.contains("deeper than") == true
        }
        let allowed = XMLNode.maximumDepth - 1
        let fits = "<ListBucketResult>" + String(repeating: "<a>", count: allowed) + String(repeating: "</a>", count: allowed) + "</ListBucketResult>"
        #expect(try XMLNode.parse(Data(fits.utf8), what: "list").name == "ListBucketResult")
    }

    @Test("Malformed XML says where it breaks, not NSXMLParserErrorDomain")
    func malformedMessage() throws {
        #expect { try XMLNode.parse(Data("<a>\n<b></c></a>".utf8), what: "list") } throws: { error in
            let message = (error as? BuckiaError)?.message ?? ""
            return message.contains("line 2") && !message.contains("NSXMLParserErrorDomain")
        }
    }

    @Test("Text split by entities and CDATA is joined")
    func textPieces() throws {
        let root = try XMLNode.parse(Data("<a><b>x &amp; y<![CDATA[ <z> ]]>w</b></a>".utf8), what: "test")
        #expect(root.value("b") == "x & y <z> w")
    }

    @Test("S3 error codes map to Buckia codes", arguments: [
        ("NoSuchKey", 404, BuckiaError.Code.notFound), ("NoSuchBucket", 404, .notFound), ("AccessDenied", 403, .permissionDenied),
        ("SignatureDoesNotMatch", 403, .unauthorized), ("InvalidAccessKeyId", 403, .unauthorized), ("ExpiredToken", 400, .unauthorized),
        ("InvalidToken", 400, .unauthorized),
        ("SlowDown", 503, .rateLimited), ("BadDigest", 400, .checksumMismatch), ("InternalError", 500, .transient),
        ("PreconditionFailed", 412, .conditionNotMatch), ("NotImplemented", 501, .unsupported), ("SomethingNew", 400, .invalidConfiguration),
        ("SomethingNew", 502, .transient),
    ])
    func errorCodes(_ code: String, _ status: Int, _ expected: BuckiaError.Code) {
        let body = "<?xml version=\"1.0\"?><Error><Code>\(code)</Code><Message>Because.</Message><Key>a/b.txt</Key></Error>"
        let failure = HTTPFailure(
            method: "GET", url: "http://127.0.0.1/b/a/b.txt", status: status, headers: HTTPHeaders(), body: Data(body.utf8),
            isBodyTruncated: false, retryAfter: nil, attempts: 1)
        let error = S3ErrorMapping.map(failure)
        #expect(error?.code == expected)
        #expect(error?.message.contains(code) == true)
        // S3's own message ends with a period; it must not double the message's ("Because..").
        #expect(error?.message.contains("..") == false, "\(error?.message ?? "")")
        #expect(error?.path == "a/b.txt")
    }

    @Test("A non-XML error body falls back to the status mapping")
    func nonXMLError() {
        let failure = HTTPFailure(
            method: "GET", url: "http://127.0.0.1/b", status: 500, headers: HTTPHeaders(), body: Data("oops".utf8),
            isBodyTruncated: false, retryAfter: nil, attempts: 1)
        #expect(S3ErrorMapping.map(failure) == nil)
    }

    @Test("Modification times round-trip through rclone's mtime metadata format")
    func mtime() throws {
        let date = Date(timeIntervalSince1970: 981_173_106.25)
        let parsed = try #require(S3Provider.parseMtime(S3Provider.formatMtime(date)))
        #expect(abs(parsed.timeIntervalSince(date)) < 0.001)
    }

    @Test("AWS profile files: sections, [profile x] in config, comments")
    func profileFiles() {
        let config = AWSProfileFile(text: "# top\n[profile dev]\nregion = eu-north-1 # note\n[default]\nregion=us-west-2\n", isConfigFile: true)
        #expect(config.profile("dev")?["region"] == "eu-north-1")
        #expect(config.profile("default")?["region"] == "us-west-2")
    }
}
