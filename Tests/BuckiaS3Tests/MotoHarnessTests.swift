import BuckiaCore
import BuckiaHTTP
import BuckiaTestSupport
import Foundation
import Testing

/// Proves the moto harness checks what the S3 tests rely on it to check, with nothing but
/// BuckiaSigV4 and BuckiaHTTP.
@Suite("moto harness")
struct MotoHarnessTests {
    @Test("A request signed with the right key creates a bucket, stores an object and reads it back")
    func rightKeyWorks() async throws {
        let server = try await S3TestServer.shared()
        #expect(server.checksSignatures)
        let client = harnessClient()
        let bucket = uniqueBucketName()
        let created = try await client.send(server.signedRequest(.put, bucket: bucket))
        #expect(created.status == 200)

        let bytes = Data("hello, signed moto \(UUID().uuidString)\n".utf8)
        let put = try await client.send(server.signedRequest(.put, bucket: bucket, key: "dir/hello.txt", body: bytes))
        #expect(try put.etag == Hashing.digest(bytes, .md5).hex)

        let got = try await client.send(server.signedRequest(.get, bucket: bucket, key: "dir/hello.txt"))
        #expect(got.data == bytes)
    }

    @Test("A request signed with a wrong secret gets 403 SignatureDoesNotMatch, and no error shows a secret")
    func wrongSecretIsRefused() async throws {
        let server = try await S3TestServer.shared()
        let wrongSecret = "wrong" + String(server.secretAccessKey.exposedValue.dropFirst(5))
        let request = server.signedRequest(.put, bucket: uniqueBucketName(), secret: Secret(wrongSecret))
        let authorization = try #require(request.headers["authorization"])
        let signature = try #require(authorization.components(separatedBy: "Signature=").last)

        let error = try await #require(throws: BuckiaError.self) { try await harnessClient().send(request) }
        let failure = try #require(error.cause as? HTTPFailure)
        #expect(failure.status == 403)
        #expect(failure.bodyText.contains("<Code>SignatureDoesNotMatch</Code>"))
        #expect(error.code == .permissionDenied)
        for text in [String(describing: error), String(reflecting: error), String(describing: failure), failure.bodyText] {
            #expect(!text.contains(wrongSecret))
            #expect(!text.contains(server.secretAccessKey.exposedValue))
            #expect(!text.contains(signature))
        }
    }

    @Test("An unsigned request is refused and changes nothing")
    func unsignedRequestIsRefused() async throws {
        let server = try await S3TestServer.shared()
        let client = harnessClient()
        let bucket = uniqueBucketName()
        // moto answers 500 (not 403) to a request without an Authorization header in auth mode.
        let unsigned = try await client.send(HTTPRequest(.put, server.url(bucket: bucket), timeout: .seconds(30), accepts: .all))
        #expect(!unsigned.isSuccess)

        let head = try await client.send(server.signedRequest(.head, bucket: bucket, accepts: .successfulAnd([404])))
        #expect(head.status == 404)
    }

    @Test("A server started with auth off accepts unsigned requests")
    func noAuthServerChecksNothing() async throws {
        let server = try await S3TestServer.shared(auth: false)
        #expect(!server.checksSignatures)
        let bucket = uniqueBucketName()
        let created = try await harnessClient().send(HTTPRequest(.put, server.url(bucket: bucket), timeout: .seconds(30)))
        #expect(created.status == 200)
    }

    @Test("A server of its own stops: its port refuses connections afterwards")
    func ownServerStops() async throws {
        let server = try await S3TestServer.start(auth: false)
        let bucket = uniqueBucketName()
        let before = try await harnessClient().send(HTTPRequest(.put, server.url(bucket: bucket), timeout: .seconds(30)))
        #expect(before.status == 200)
        server.stop()
        server.stop()
        await #expect(throws: BuckiaError.self) {
            try await harnessClient().send(HTTPRequest(.get, server.url(bucket: bucket), timeout: .seconds(5)))
        }
    }
}
