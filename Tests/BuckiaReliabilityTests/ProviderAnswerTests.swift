import BuckiaB2
import BuckiaBunny
import BuckiaCore
import BuckiaHTTP
import BuckiaS3
import Foundation
import Testing

/// What the `b2-answer`, `bunny-answer` and `s3-xml` fuzz targets found in the providers'
/// reading of hostile answers, each as the case that would have caught it: server text in an
/// error's code or body reached a terminal unescaped, and Bunny took any 64 characters as a
/// SHA-256, which then verified nothing, and a `LastChanged` of `..` trapped Bunny's date reading.
@Suite("Providers' reading of hostile answers")
struct ProviderAnswerTests {
    /// A failed request's answer: which provider, the status, the body.
    struct FailedAnswer: CustomTestStringConvertible, Sendable {
        let name: String
        let provider: String
        let status: Int
        let body: String
        var testDescription: String { name }

        /// The error the provider's client throws for it.
        var error: BuckiaError {
            let data = Data(body.utf8)
            switch provider {
            case "b2": return B2Provider.error(status: status, body: data)
            case "bunny": return BunnyProvider.error(status: status, body: data)
            default: return S3Provider.error(status: status, method: "PUT", body: data)
            }
        }
    }

    static let failedAnswers: [FailedAnswer] = [
        FailedAnswer(name: "B2: an escape in the error code", provider: "b2", status: 503, body: #"{"status":503,"code":"busy\u001b[2J","message":"later"}"#),
        FailedAnswer(name: "B2: DEL in the error code", provider: "b2", status: 400, body: #"{"status":400,"code":"bad\u007frequest"}"#),
        FailedAnswer(name: "B2: an escape in a body that is no error document", provider: "b2", status: 502, body: "<html>\u{1B}]0;owned\u{07}</html>"),
        FailedAnswer(name: "S3: a line break in the error code", provider: "s3", status: 400, body: "<Error><Code>NoSuch\nKey</Code><Message>gone</Message></Error>"),
        FailedAnswer(name: "S3: a carriage return in the error code", provider: "s3", status: 503, body: "<Error><Code>Slow&#13;Down</Code></Error>"),
        FailedAnswer(name: "S3: an escape in a body that is no XML", provider: "s3", status: 500, body: "oops \u{1B}[31m red"),
        FailedAnswer(name: "Bunny: a bell in a body that is no JSON", provider: "bunny", status: 418, body: "teapot\u{07}\u{1B}[5m"),
        FailedAnswer(name: "Bunny: an escape in the message", provider: "bunny", status: 503, body: #"{"HttpCode":503,"Message":"down\u001b[2J"}"#),
    ]

    @Test("Server text in an error reaches no terminal: every control character in its description is escaped", arguments: failedAnswers)
    func errorsEscapeServerText(_ answer: FailedAnswer) {
        let description = "\(answer.error)"
        let control = description.unicodeScalars.filter { $0.properties.generalCategory == .control }
        #expect(control.isEmpty, "\(description.debugDescription)")
        // The server's words are still there, escaped, for a person to read.
        #expect(["\\e", "\\x", "\\n", "\\r"].contains { description.contains($0) }, "\(description.debugDescription)")
    }

    @Test("Bunny's Checksum is a SHA-256 only when it is 64 hex digits; other text verifies nothing and names no content", arguments: [
        ("9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
        ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2j0b822cd15d6c15b0f00a08", nil),
        ("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", nil),
        ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0\u{1B}", nil),
    ] as [(String, String?)])
    func bunnyChecksums(_ checksum: String, _ expected: String?) throws {
        let object: [String: Any] = ["ObjectName": "object.bin", "Length": 4, "IsDirectory": false, "Checksum": checksum]
        let key = try ObjectKey("fuzz/object.bin")
        let described = try #require(try BunnyProvider.described(answer: try JSONSerialization.data(withJSONObject: object), key: key))
        #expect(described.checksums[.sha256] == expected)
        #expect(described.etag == expected.map { "\"\($0)\"" })

        let listed = try BunnyProvider.folderItems(answer: try JSONSerialization.data(withJSONObject: [object]), folder: "fuzz/")
        guard case .file(let file?)? = listed.first?.kind else {
            Issue.record("the listing's file has no description")
            return
        }
        #expect(file.path == key)
        #expect(file.checksums[.sha256] == expected)
    }

    @Test("Bunny's LastChanged is a date only in Bunny's form; anything else is no date, never a trap", arguments: [
        ("2023-04-20T15:32:08.004", 1_682_004_728_004),
        ("2023-04-20T15:32:08", 1_682_004_728_000),
        ("2023-04-20T15:32:08.5", 1_682_004_728_500),
        ("2023-04-20T15:32:08.0049999", 1_682_004_728_004),
        ("..", nil),  // found by the bunny-answer fuzz target: an index out of range
        (".", nil),
        ("", nil),
        (".004", nil),
        ("2023-04-20T15:32:08.", nil),
        ("2023-04-20T15:32:08.+12", nil),
        ("2023-04-20T15:32:08.-1", nil),
        ("2023-04-20T15:32:08.12345678", nil),
        ("2023-04-20T15:32:08.004.5", nil),
        ("yesterday", nil),
    ] as [(String, Int64?)])
    func bunnyDates(_ text: String, _ milliseconds: Int64?) throws {
        let object: [String: Any] = ["ObjectName": "object.bin", "Length": 4, "IsDirectory": false, "LastChanged": text]
        let described = try #require(try BunnyProvider.described(answer: try JSONSerialization.data(withJSONObject: object), key: try ObjectKey("fuzz/object.bin")))
        #expect(described.serverModified == milliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) })
    }
}
