import BuckiaCore
import BuckiaHTTP
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaS3

/// How the S3 provider retries: each attempt signed afresh, S3's own error codes deciding.
@Suite("S3 retries")
struct S3RetryTests {
    /// A provider whose requests go to a scripted transport, with a clock that advances a
    /// second per reading and retries that do not wait.
    func provider(_ transport: ScriptedTransport, options: [String: String] = [:]) throws -> S3Provider {
        let configuration = BuckiaConfiguration(
            provider: .s3, bucketName: "bucket", authConfig: .awsSignature(accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret"),
            options: ["endpoint": "http://127.0.0.1:9", "region": "us-east-1"].merging(options) { $1 })
        let tick = Locked(1_700_000_000.0)
        let clock: @Sendable () -> Date = { Date(timeIntervalSince1970: tick.withLock { $0 += 1; return $0 }) }
        let policy = RetryPolicy(maxAttempts: 4, sleep: { _ in }, random: { 0 })
        return S3Provider(
            settings: try S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), now: clock, transport: transport,
            retryPolicy: policy)
    }

    static func errorXML(_ code: String) -> String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>\(code)</Code><Message>test</Message></Error>"
    }

    @Test("A retried request is signed afresh: a new date and a new signature")
    func signsEachAttempt() async throws {
        let transport = ScriptedTransport([.status(503, body: Self.errorXML("ServiceUnavailable")), .status(200)])
        _ = try await provider(transport).stat(remotePath: "a.txt")
        let sent = transport.sent.withLock { $0 }
        #expect(sent.count == 2)
        let dates = sent.map { $0.headers["x-amz-date"] }
        let signatures = sent.map { $0.headers["authorization"] }
        #expect(dates[0] != nil && dates[0] != dates[1], "\(dates)")
        #expect(signatures[0] != nil && signatures[0] != signatures[1])
    }

    @Test("S3's RequestTimeout, a 400, is retried; a 400 InvalidArgument is not", arguments: [
        ("RequestTimeout", 2), ("InvalidArgument", 1),
    ])
    func retriesByS3Code(_ code: String, _ attempts: Int) async throws {
        let transport = ScriptedTransport([.status(400, body: Self.errorXML(code)), .status(200)])
        _ = try? await provider(transport).readData(remotePath: "a.txt")
        #expect(transport.sent.withLock { $0.count } == attempts)
    }

    @Test("A HEAD refused without a body is explained by the GET's error code", arguments: [
        ("InvalidToken", 400, BuckiaError.Code.unauthorized), ("ExpiredToken", 400, .unauthorized), ("AccessDenied", 403, .permissionDenied),
        ("AuthorizationHeaderMalformed", 400, .invalidConfiguration),
    ])
    func bodilessHead(_ code: String, _ status: Int, _ expected: BuckiaError.Code) async throws {
        let transport = ScriptedTransport([.status(status), .status(status, body: Self.errorXML(code))])
        await #expect {
            _ = try await provider(transport).stat(remotePath: "a.txt")
        } throws: { error in
            (error as? BuckiaError)?.code == expected && (error as? BuckiaError)?.message.contains(code) == true
        }
        let sent = transport.sent.withLock { $0 }
        #expect(sent.map(\.method.rawValue) == ["HEAD", "GET"])
        #expect(sent.last?.headers["range"] == "bytes=0-0")
    }

    @Test("A copy answered with an InternalError inside a 200 is retried")
    func retriesErrorInsideSuccess() async throws {
        let transport = ScriptedTransport([
            .status(200, body: Self.errorXML("InternalError")),
            .status(200, body: "<CopyObjectResult><ETag>\"abc\"</ETag></CopyObjectResult>"),
            .status(200),  // the HEAD that describes the copy
        ])
        try await provider(transport).copyFile(from: ObjectKey("a"), to: ObjectKey("b"))
        #expect(transport.sent.withLock { $0.map(\.method.rawValue) } == ["PUT", "PUT", "HEAD"])
    }

    @Test("A saved multipart upload is kept, not abandoned, when ListParts fails transiently")
    func resumeSurvivesTransientListParts() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-keep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("big.bin")
        try Data(count: 6 * 1_048_576).write(to: source)
        let options = ["multipartThresholdMiB": "5", "partSizeMiB": "5", "stateDirectory": folder.appendingPathComponent("state").path]
        // 1. The upload starts, then every part fails transiently: the upload is kept for a rerun.
        let first = ScriptedTransport([.status(200, body: "<InitiateMultipartUploadResult><UploadId>up-1</UploadId></InitiateMultipartUploadResult>")])
        let kept = await #expect(throws: BuckiaError.self) { try await provider(first, options: options).uploadFile(localURL: source, remotePath: "big.bin") }
        #expect(kept?.code == .transient)
        let state = folder.appendingPathComponent("state")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state.path).count == 1)
        // 2. The rerun cannot list the parts (every answer a 500): it must neither start a new
        //    upload nor forget the saved one.
        let second = ScriptedTransport([])
        let error = await #expect(throws: BuckiaError.self) { try await provider(second, options: options).uploadFile(localURL: source, remotePath: "big.bin") }
        #expect(error?.code == .transient)
        #expect(error?.message.contains("kept") == true, "\(String(describing: error))")
        let sent = second.sent.withLock { $0 }
        #expect(!sent.isEmpty && sent.allSatisfy { $0.method == .get && $0.url.query?.contains("uploadId=up-1") == true }, "\(sent.map(\.description))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state.path).count == 1)
    }

    @Test("A download whose bytes do not match the MD5 is fetched again; when every attempt is bad the old file stays as it was")
    func downloadRetriesMismatch() async throws {
        let md5 = Data(try Hashing.digest(Data("good".utf8), .md5).bytes).base64EncodedString()
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-retry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: target) }
        let flaky = ScriptedTransport([
            .status(200, body: "bad!", headers: ["x-amz-meta-md5chksum": md5]), .status(200, body: "good", headers: ["x-amz-meta-md5chksum": md5]),
        ])
        try await provider(flaky).downloadFile(remotePath: "a", localURL: target)
        #expect(try Data(contentsOf: target) == Data("good".utf8))
        // Every attempt damaged: checksumMismatch, and the file already there is untouched
        // (the damaged bytes never replaced it, not even for a moment).
        try Data("previous".utf8).write(to: target)
        let broken = ScriptedTransport(Array(repeating: .status(200, body: "bad!", headers: ["x-amz-meta-md5chksum": md5]), count: 4))
        let error = await #expect(throws: BuckiaError.self) { try await provider(broken).downloadFile(remotePath: "a", localURL: target) }
        #expect(error?.code == .checksumMismatch)
        #expect(error?.message.contains("discarded") == true, "\(error?.message ?? "")")
        #expect(broken.sent.withLock { $0.count } == 4)
        #expect(try Data(contentsOf: target) == Data("previous".utf8))
        // readData is checked the same way.
        let read = ScriptedTransport([
            .status(200, body: "bad!", headers: ["x-amz-meta-md5chksum": md5]), .status(200, body: "good", headers: ["x-amz-meta-md5chksum": md5]),
        ])
        #expect(try await provider(read).readData(remotePath: "a") == Data("good".utf8))
        #expect(read.sent.withLock { $0.count } == 2)
    }

    @Test("A BadDigest for an MD5 computed here is sent again; for the caller's MD5 it is final")
    func uploadRetriesBadDigest() async throws {
        let badDigest = ScriptedTransport.Step.status(400, body: Self.errorXML("BadDigest"))
        let flaky = ScriptedTransport([badDigest, .status(200)])
        try await provider(flaky).uploadData(Data("x".utf8), remotePath: "a")
        #expect(flaky.sent.withLock { $0.count } == 2)
        let given = ScriptedTransport([badDigest, .status(200)])
        let md5 = try Hashing.digest(Data("x".utf8), .md5).hex
        let error = await #expect(throws: BuckiaError.self) {
            try await provider(given).uploadData(Data("x".utf8), remotePath: "a", options: UploadOptions(knownChecksums: [.md5: md5]))
        }
        #expect(error?.code == .checksumMismatch)
        #expect(given.sent.withLock { $0.count } == 1)
    }

    @Test("A part refused with BadDigest (its MD5 is computed here) is sent again, and the upload completes")
    func partRetriesBadDigest() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-part-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("big.bin")
        try Data(count: 5 * 1_048_576).write(to: source)
        let options = ["multipartThresholdMiB": "5", "partSizeMiB": "5", "stateDirectory": folder.appendingPathComponent("state").path]
        let transport = ScriptedTransport([
            .status(200, body: "<InitiateMultipartUploadResult><UploadId>up-1</UploadId></InitiateMultipartUploadResult>"),
            .status(400, body: Self.errorXML("BadDigest")),
            .status(200, headers: ["ETag": "\"p1\""]),
            .status(200, body: "<CompleteMultipartUploadResult><ETag>\"e-1\"</ETag></CompleteMultipartUploadResult>"),
        ])
        _ = try await provider(transport, options: options).uploadFile(localURL: source, remotePath: "big.bin")
        let sent = transport.sent.withLock { $0 }
        let parts = sent.filter { $0.url.query?.contains("partNumber=1") == true }
        #expect(parts.count == 2, "\(sent.map(\.description))")
        #expect(sent.contains { $0.method == .post && $0.url.query == "uploadId=up-1" })
    }

    @Test("A completion whose answer was lost, then NoSuchUpload, is a success when the object's ETag is the parts' own")
    func completionAnswerLost() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-complete-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("big.bin")
        let data = Data(count: 5 * 1_048_576)
        try data.write(to: source)
        let options = ["multipartThresholdMiB": "5", "partSizeMiB": "5", "stateDirectory": folder.appendingPathComponent("state").path]
        let partETag = try Hashing.digest(data, .md5).hex
        let objectETag = try S3Provider.multipartETag([partETag])
        func script(objectETag: String) -> ScriptedTransport {
            ScriptedTransport([
                .status(200, body: "<InitiateMultipartUploadResult><UploadId>up-1</UploadId></InitiateMultipartUploadResult>"),
                .status(200, headers: ["ETag": "\"\(partETag)\""]),
                .failure(.networkConnectionLost),  // S3 completed it, the answer never came
                .status(404, body: Self.errorXML("NoSuchUpload")),
                .status(200, headers: ["ETag": "\"\(objectETag)\"", "Content-Length": "\(data.count)"]),
            ])
        }
        let stored = try await provider(script(objectETag: objectETag), options: options).uploadFile(localURL: source, remotePath: "big.bin")
        #expect(stored.etag == "\"\(objectETag)\"")
        // Another object at the key (someone else's upload): the NoSuchUpload stands.
        let error = await #expect(throws: BuckiaError.self) {
            try await provider(script(objectETag: "0123456789abcdef0123456789abcdef-1"), options: options).uploadFile(localURL: source, remotePath: "big.bin")
        }
        #expect(error?.code == .notFound)
    }

    @Test("rclone's mtime format: whole seconds and up to nine fractional digits, no trailing zeros", arguments: [
        (1_609_459_200.0, "1609459200"), (1_609_459_200.5, "1609459200.5"), (981_173_106.25, "981173106.25"), (0.0, "0"),
    ])
    func mtimeFormat(_ seconds: Double, _ text: String) throws {
        #expect(RcloneMetadata.formatMtime(Date(timeIntervalSince1970: seconds)) == text)
        let parsed = try #require(RcloneMetadata.parseMtime(text))
        #expect(abs(parsed.timeIntervalSince1970 - seconds) < 1e-6)
    }

    @Test("mtime values rclone writes parse; malformed ones do not", arguments: [
        ("1354040105.123456789", 1_354_040_105.123_456_789 as Double?), ("1354040105", 1_354_040_105), ("-1.5", -1.5),
        ("", nil), ("abc", nil), ("1.2e3", nil), ("12.", nil),
    ])
    func mtimeParsing(_ text: String, _ expected: Double?) {
        let parsed = RcloneMetadata.parseMtime(text)?.timeIntervalSince1970
        if let expected {
            #expect(parsed.map { abs($0 - expected) < 1e-6 } == true, "\(text) → \(String(describing: parsed))")
        } else {
            #expect(parsed == nil, "\(text) → \(String(describing: parsed))")
        }
    }
}
