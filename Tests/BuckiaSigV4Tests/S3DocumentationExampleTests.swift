import BuckiaCore
import BuckiaSigV4
import Foundation
import Testing

/// The worked examples in the Amazon S3 API Reference ("Signature Calculations for the
/// Authorization Header" and "Authenticating Requests: Using Query Parameters"), with AWS's
/// documented example credentials and date.
@Suite("SigV4: S3 documentation examples")
struct S3DocumentationExampleTests {
    static let signer = SigV4Signer(
        credentials: AWSCredentials(accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: Secret("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")),
        region: "us-east-1", service: "s3")
    /// 2013-05-24T00:00:00Z.
    static let date = Date(timeIntervalSince1970: 1_369_353_600)

    @Test("GET Object with a Range header")
    func getObject() throws {
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/test.txt"))
        let headers = Self.signer.sign(method: "GET", url: url, headers: ["Range": "bytes=0-9"], payloadHash: SigV4Signer.emptyPayloadHash, date: Self.date)
        #expect(headers["authorization"] == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test("PUT Object with storage class and date headers")
    func putObject() throws {
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/test$file.text"))
        let headers = Self.signer.sign(
            method: "PUT", url: url, headers: ["Date": "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY"],
            payloadHash: "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072", date: Self.date)
        #expect(headers["authorization"]?.hasSuffix("Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd") == true)
    }

    @Test("GET Bucket lifecycle (a query parameter without a value)")
    func getLifecycle() throws {
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/?lifecycle"))
        let headers = Self.signer.sign(method: "GET", url: url, headers: [:], payloadHash: SigV4Signer.emptyPayloadHash, date: Self.date)
        #expect(headers["authorization"]?.hasSuffix("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)
    }

    @Test("GET Bucket (list objects) with max-keys and prefix")
    func listObjects() throws {
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J"))
        let headers = Self.signer.sign(method: "GET", url: url, headers: [:], payloadHash: SigV4Signer.emptyPayloadHash, date: Self.date)
        #expect(headers["authorization"]?.hasSuffix("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    @Test("A presigned GET valid for 86,400 seconds")
    func presignedGet() throws {
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/test.txt"))
        let presigned = try Self.signer.presignedURL(method: "GET", url: url, expires: .seconds(86_400), date: Self.date)
        #expect(presigned.absoluteString.hasSuffix("X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"))
        #expect(presigned.absoluteString.contains("X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"))
    }

    @Test("Credentials never print their secret")
    func redaction() {
        let text = "\(Self.signer.credentials) \(String(reflecting: Self.signer.credentials))"
        #expect(!text.contains("wJalrXUtnFEMI"))
    }
}
