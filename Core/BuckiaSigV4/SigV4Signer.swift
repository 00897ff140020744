import BuckiaCore
import Foundation

/// Signs requests with AWS Signature Version 4, in headers or in a presigned URL.
///
/// One signer serves one credential, region and service. It is pure: the date is an input,
/// so tests can replay AWS's published examples exactly.
///
/// ```swift
/// let signer = SigV4Signer(credentials: credentials, region: "us-east-1", service: "s3")
/// let headers = signer.sign(method: "GET", url: url, headers: [:], payloadHash: SigV4Signer.emptyPayloadHash, date: Date())
/// ```
public struct SigV4Signer: Sendable {
    /// How the path enters the canonical request.
    public enum PathEncoding: Sendable {
        /// S3: each segment URI-encoded once, no normalisation (`a//b/../c` stays as it is).
        case s3
        /// Every other service: `.` and `..` removed, empty segments collapsed, then the path as
        /// sent encoded once more (AWS's "encoded twice": `%20` on the wire signs as `%2520`).
        case standard
    }

    /// The payload hash for requests whose body is not signed (S3 only).
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// The SHA-256 of an empty body.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public let credentials: AWSCredentials
    public let region: String
    public let service: String
    public let pathEncoding: PathEncoding

    /// Creates a signer.
    public init(credentials: AWSCredentials, region: String, service: String, pathEncoding: PathEncoding? = nil) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.pathEncoding = pathEncoding ?? (service == "s3" ? .s3 : .standard)
    }

    /// The headers to send with a request: `x-amz-date`, `x-amz-content-sha256` (for S3),
    /// `x-amz-security-token` (for temporary credentials) and `authorization`, plus `headers`.
    ///
    /// Every header in `headers` is signed, with `host` taken from the URL. Header names in the
    /// result are lowercase; HTTP names are case-insensitive.
    public func sign(method: String, url: URL, headers: [String: String], payloadHash: String, date: Date) -> [String: String] {
        var signed = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        signed["host"] = SigV4Signer.hostHeader(url)
        signed["x-amz-date"] = SigV4Date(date).timestamp
        if service == "s3" { signed["x-amz-content-sha256"] = payloadHash }
        if let token = credentials.sessionToken { signed["x-amz-security-token"] = token.exposedValue }
        let canonical = canonicalRequest(method: method, url: url, headers: signed, payloadHash: payloadHash)
        let signature = self.signature(stringToSign: stringToSign(canonicalRequest: canonical.text, date: date), date: date)
        signed["authorization"] =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyId)/\(scope(date)), SignedHeaders=\(canonical.signedHeaders), Signature=\(signature)"
        signed.removeValue(forKey: "host")  // the HTTP client sets it from the URL
        return signed
    }

    /// A URL that performs `method` on `url` without other credentials until `expires` passes.
    ///
    /// - Parameters:
    ///   - expires: 1 second to 7 days, S3's range.
    ///   - headers: Headers the URL's user must send as signed (usually none).
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for an expiry out of range.
    public func presignedURL(
        method: String, url: URL, expires: Duration, date: Date, headers: [String: String] = [:],
        payloadHash: String = SigV4Signer.unsignedPayload
    ) throws -> URL {
        let seconds = expires.components.seconds
        guard (1...604_800).contains(seconds) else {
            throw BuckiaError(.invalidConfiguration, "A presigned URL must expire in 1 second to 7 days; \(seconds) s was asked for.")
        }
        var signedHeaders = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        signedHeaders["host"] = SigV4Signer.hostHeader(url)
        var query = SigV4Canonical.queryItems(of: url)
        query.append(("X-Amz-Algorithm", "AWS4-HMAC-SHA256"))
        query.append(("X-Amz-Credential", "\(credentials.accessKeyId)/\(scope(date))"))
        query.append(("X-Amz-Date", SigV4Date(date).timestamp))
        query.append(("X-Amz-Expires", String(seconds)))
        if let token = credentials.sessionToken { query.append(("X-Amz-Security-Token", token.exposedValue)) }
        query.append(("X-Amz-SignedHeaders", signedHeaders.keys.sorted().joined(separator: ";")))
        let unsigned = try SigV4Canonical.replacingQuery(of: url, with: query)
        let canonical = canonicalRequest(method: method, url: unsigned, headers: signedHeaders, payloadHash: payloadHash)
        let signature = self.signature(stringToSign: stringToSign(canonicalRequest: canonical.text, date: date), date: date)
        return try SigV4Canonical.replacingQuery(of: url, with: query + [("X-Amz-Signature", signature)])
    }

    // MARK: The steps, public for tests against AWS's published examples

    /// The canonical request, and the signed-header list that goes with it.
    ///
    /// Every header in `headers` is signed, `host` and `x-amz-date` included (``sign(method:url:headers:payloadHash:date:)``
    /// adds those). A header sent more than once is one entry, its values joined with `,` in order.
    ///
    /// - Parameters:
    ///   - url: The URL as sent; its percent-encoded path and query are canonicalised here.
    ///   - payloadHash: The hex SHA-256 of the body, or ``unsignedPayload``.
    /// - Returns: The canonical request text and the `;`-separated signed header names.
    public func canonicalRequest(method: String, url: URL, headers: [String: String], payloadHash: String) -> (text: String, signedHeaders: String) {
        canonicalRequest(
            method: method, path: SigV4Canonical.path(of: url, encoding: pathEncoding), query: SigV4Canonical.query(of: url), headers: headers,
            payloadHash: payloadHash)
    }

    /// The canonical request from a canonical path and query already made.
    func canonicalRequest(method: String, path: String, query: String, headers: [String: String], payloadHash: String) -> (text: String, signedHeaders: String) {
        let canonical = SigV4Canonical.headers(headers)
        let canonicalHeaders = canonical.map { "\($0.name):\($0.value)\n" }.joined()
        let signedHeaders = canonical.map(\.name).joined(separator: ";")
        let text = [method.uppercased(), path, query, canonicalHeaders, signedHeaders, payloadHash].joined(separator: "\n")
        return (text, signedHeaders)
    }

    /// The string to sign for a canonical request.
    public func stringToSign(canonicalRequest: String, date: Date) -> String {
        ["AWS4-HMAC-SHA256", SigV4Date(date).timestamp, scope(date), Hashing.sha256Hex(Data(canonicalRequest.utf8))].joined(separator: "\n")
    }

    /// The signature of a string to sign: hex HMAC-SHA256 under the derived signing key.
    public func signature(stringToSign: String, date: Date) -> String {
        HMAC.sha256(key: signingKey(date), message: Data(stringToSign.utf8)).hex
    }

    /// The credential scope: `date/region/service/aws4_request`.
    public func scope(_ date: Date) -> String {
        "\(SigV4Date(date).day)/\(region)/\(service)/aws4_request"
    }

    private func signingKey(_ date: Date) -> [UInt8] {
        let secret = Array(("AWS4" + credentials.secretAccessKey.exposedValue).utf8)
        let dated = HMAC.sha256(key: secret, message: Data(SigV4Date(date).day.utf8)).bytes
        let regional = HMAC.sha256(key: dated, message: Data(region.utf8)).bytes
        let serviced = HMAC.sha256(key: regional, message: Data(service.utf8)).bytes
        return HMAC.sha256(key: serviced, message: Data("aws4_request".utf8)).bytes
    }

    /// `host` or `host:port` when the port is not the scheme's default, as HTTP clients send it.
    public static func hostHeader(_ url: URL) -> String {
        let host = url.host ?? ""
        guard let port = url.port else { return host }
        let isDefault = (url.scheme == "https" && port == 443) || (url.scheme == "http" && port == 80)
        return isDefault ? host : "\(host):\(port)"
    }
}
