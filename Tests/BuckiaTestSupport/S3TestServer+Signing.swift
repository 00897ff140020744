import BuckiaCore
import BuckiaHTTP
import BuckiaSigV4
import Foundation

extension S3TestServer {
    /// A path-style request to this server, signed in headers with SigV4 for `s3` in its region.
    ///
    /// - Parameters:
    ///   - secret: The secret to sign with; nil signs with the right one.
    ///   - accepts: Which statuses ``HTTPClient`` returns rather than throws.
    public func signedRequest(
        _ method: HTTPRequest.Method, bucket: String, key: String? = nil, body: Data = Data(), secret: Secret? = nil,
        accepts: HTTPRequest.AcceptedStatuses = .successful
    ) -> HTTPRequest {
        let url = url(bucket: bucket, key: key)
        let credentials = AWSCredentials(accessKeyId: accessKeyId, secretAccessKey: secret ?? secretAccessKey)
        let signer = SigV4Signer(credentials: credentials, region: region, service: "s3")
        // FoundationNetworking adds `application/x-www-form-urlencoded` to bodies without a
        // Content-Type, and moto mishandles that: always send (and sign) one.
        let extra = body.isEmpty ? [:] : ["content-type": "application/octet-stream"]
        let headers = signer.sign(
            method: method.rawValue, url: url, headers: extra, payloadHash: Hashing.sha256Hex(body), date: Date())
        var request = HTTPRequest(method, url, body: body.isEmpty ? .none : .data(body), timeout: .seconds(30), accepts: accepts)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            if name == "authorization" {
                request.headers.set(name, secret: Secret(value))
            } else {
                request.headers.set(name, value)
            }
        }
        return request
    }
}

/// A bucket name no other test uses (S3 rules: 3–63 lowercase letters, digits and hyphens).
public func uniqueBucketName(_ prefix: String = "buckia") -> String {
    "\(prefix)-\(UUID().uuidString.lowercased())"
}

/// An HTTP client for harness checks: no retries (moto answers 500 to unsigned requests in
/// auth mode) and a bounded timeout.
public func harnessClient() -> HTTPClient {
    HTTPClient(configuration: HTTPClient.Configuration(timeout: .seconds(30), retryPolicy: .none), resources: .tests)
}
