import BuckiaCore
import BuckiaSigV4
import Foundation
import Testing

/// The signer's own rules around the suite: presigned-URL lifetimes and temporary credentials.
@Suite("SigV4: presign bounds and session tokens")
struct SigV4SignerTests {
    /// The session token of the suite's `post-sts-token` cases.
    static let token = try? SuiteCase("post-sts-header-before").headers["x-amz-security-token"]

    static func temporarySigner() throws -> SigV4Signer {
        let token = try #require(Self.token)
        let credentials = AWSCredentials(
            accessKeyId: "AKIDEXAMPLE", secretAccessKey: Secret("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"), sessionToken: Secret(token))
        return SigV4Signer(credentials: credentials, region: "us-east-1", service: "service")
    }

    struct ExpiryRow: Sendable, CustomTestStringConvertible {
        let seconds: Int64
        let accepted: Bool
        var testDescription: String { "\(seconds) s" }
    }

    static let expiryRows: [ExpiryRow] = [
        ExpiryRow(seconds: -1, accepted: false),
        ExpiryRow(seconds: 0, accepted: false),
        ExpiryRow(seconds: 1, accepted: true),
        ExpiryRow(seconds: 604_800, accepted: true),
        ExpiryRow(seconds: 604_801, accepted: false),
    ]

    @Test("A presigned URL lives 1 second to 7 days; anything else is an invalid configuration", arguments: expiryRows)
    func presignExpiry(_ row: ExpiryRow) throws {
        let url = try #require(URL(string: "https://example.amazonaws.com/object"))
        let presign = { try SuiteCase.signer.presignedURL(method: "GET", url: url, expires: .seconds(row.seconds), date: SuiteCase.date) }
        if row.accepted {
            let presigned = try presign()
            #expect(presigned.absoluteString.contains("X-Amz-Expires=\(row.seconds)&"))
        } else {
            let error = try #require(throws: BuckiaError.self) { try presign() }
            #expect(error.code == .invalidConfiguration)
        }
    }

    @Test("A session token is sent as x-amz-security-token and signed, as in post-sts-header-before")
    func sessionTokenHeader() throws {
        let signer = try Self.temporarySigner()
        let url = try #require(URL(string: "https://example.amazonaws.com/"))
        let headers = signer.sign(method: "POST", url: url, headers: [:], payloadHash: SigV4Signer.emptyPayloadHash, date: SuiteCase.date)
        #expect(headers["x-amz-security-token"] == Self.token)
        #expect(headers["authorization"] == (try SuiteCase("post-sts-header-before").authz))
        #expect(headers["authorization"]?.contains("SignedHeaders=host;x-amz-date;x-amz-security-token,") == true)
    }

    @Test("A presigned URL of temporary credentials carries the token in its signed query")
    func sessionTokenPresigned() throws {
        let signer = try Self.temporarySigner()
        let url = try #require(URL(string: "https://example.amazonaws.com/object"))
        let presigned = try signer.presignedURL(method: "GET", url: url, expires: .seconds(60), date: SuiteCase.date)
        let items = try #require(URLComponents(url: presigned, resolvingAgainstBaseURL: false)?.queryItems)
        #expect(items.first { $0.name == "X-Amz-Security-Token" }?.value == Self.token)
        let position = try #require(items.firstIndex { $0.name == "X-Amz-Security-Token" })
        #expect(position < (items.firstIndex { $0.name == "X-Amz-Signature" } ?? 0))
    }

    @Test("Credentials never print their secret or token")
    func redaction() throws {
        let credentials = try Self.temporarySigner().credentials
        let token = try #require(Self.token)
        for text in ["\(credentials)", String(reflecting: credentials), String(describing: try Self.temporarySigner())] {
            #expect(!text.contains(token.prefix(16)))
            #expect(!text.contains("wJalrXUtnFEMI"))
        }
        #expect("\(credentials)".contains("sessionToken: <REDACTED>"))
    }
}
