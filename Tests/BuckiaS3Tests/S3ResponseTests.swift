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

    /// Names that are not UTF-8 reach swift-corelibs-foundation's force-unwraps and trap the
    /// process (the first document is what `Tools/fuzz/fuzz` found: a processing instruction named
    /// `xml\u{DC}`); a body must be UTF-8 and say so, or it is refused before parsing.
    @Test("A body that is not UTF-8, declares another encoding, or holds a processing instruction, a document type or NUL is corrupt, never a trap", arguments: [
        Array("<?xml".utf8) + [0xDC] + Array(" version=\"1.0\"?><Error><Code>NoSuchKey</Code></Error>".utf8),
        Array("<a><".utf8) + [0xFF, 0xFE] + Array("/></a>".utf8),
        Array("<a><!-- ".utf8) + [0xC3] + Array(" --></a>".utf8),
        Array("<a ".utf8) + [0xE2, 0x82] + Array("=\"1\"/>".utf8),
        Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>x</a>".utf8),
        Array("<?xml version='1.0' encoding='UTF-16'?><a>x</a>".utf8),
        // A processing instruction without data: libxml2 hands the parser a null pointer.
        Array("<?x?><a>x</a>".utf8), Array("<a><?x?></a>".utf8),
        Array("<!DOCTYPE a [<!NOTATION n SYSTEM \"x\">]><a>x</a>".utf8),
        Array("<a>x\u{0}y</a>".utf8),
        // A declaration that does not end before a processing instruction's `?>`.
        Array("<?xml utodgc=n\"UTF-8r><Code>NoSuchKey</<?xmlUTF-8c?>\n<Eessag*e".utf8),
    ])
    func notUTF8(_ bytes: [UInt8]) {
        let error = #expect(throws: BuckiaError.self) { try XMLNode.parse(Data(bytes), what: "list") }
        #expect(error?.code == .corrupt)
    }

    @Test("UTF-8 bodies with a declaration, a byte-order mark and comments still parse", arguments: [
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>é</a>", "<?xml version='1.0' encoding='utf-8'?><a>é</a>", "<?xml version=\"1.0\"?><a>é</a>",
        "<a><!-- a comment: ü -->é</a>", "\u{FEFF}<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a>é</a>",
    ])
    func utf8Parses(_ text: String) throws {
        #expect(try XMLNode.parse(Data(text.utf8), what: "test").text == "é")
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
        let parsed = try #require(RcloneMetadata.parseMtime(RcloneMetadata.formatMtime(date)))
        #expect(abs(parsed.timeIntervalSince(date)) < 0.001)
    }

    @Test("AWS profile files: sections, [profile x] in config, comments")
    func profileFiles() {
        let config = AWSProfileFile(text: "# top\n[profile dev]\nregion = eu-north-1 # note\n[default]\nregion=us-west-2\n", isConfigFile: true)
        #expect(config.profile("dev")?["region"] == "eu-north-1")
        #expect(config.profile("default")?["region"] == "us-west-2")
    }
}
