import BuckiaB2
import BuckiaCore
import BuckiaHTTP
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// B2-specific behaviour against an emulator of the test's own (so its request counts are the
/// test's alone): authorization shared and renewed once, upload URLs never shared, large files
/// in parts and resumed, deletes of every version, names refused before any request, tokens.
@Suite("B2 provider against the emulator")
struct B2ProviderTests {
    /// A provider on a fresh emulator's private bucket, with 1 MiB parts from 2 MiB.
    static func fresh(
        options: [String: String] = [:], retryPolicy: RetryPolicy = .standard, emulatorBuckets: [String] = ["buckia-private", "buckia-public:allPublic"],
        restrictedKeys: [String] = []
    ) async throws -> (B2Provider, B2Emulator) {
        let emulator = try await B2Emulator.start(buckets: emulatorBuckets, restrictedKeys: restrictedKeys, minimumPartSize: 65_536)
        let configuration = emulator.configuration(bucket: "buckia-private", options: SharedB2.smallParts.merging(options) { $1 })
        return (B2Provider(settings: try B2Settings.resolve(configuration, environment: [:]), retryPolicy: retryPolicy), emulator)
    }

    static func pattern(_ count: Int, seed: Int = 7) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) })
    }

    @Test("Concurrent first requests share one authorization")
    func oneAuthorization() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask { _ = try await provider.stat(remotePath: "missing-\(index)") }
            }
            try await group.waitForAll()
        }
        #expect(try await emulator.stats().authorizations == 1)
        #expect(await provider.statistics().authorizations == 1)
    }

    @Test("An expired authorization is renewed once for all the requests that saw it expire")
    func renewedOnce() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        try await provider.uploadData(Data("x".utf8), remotePath: "warm")
        try await emulator.expireTokens()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<12 {
                group.addTask { try await provider.uploadData(Data("v\(index)".utf8), remotePath: "after-expiry/\(index)") }
            }
            try await group.waitForAll()
        }
        let stats = try await emulator.stats()
        #expect(stats.authorizations == 2, "one authorization, then exactly one renewal: \(stats.authorizations)")
        #expect(try await provider.listFiles(path: "after-expiry/").count == 12)
    }

    @Test("stat, whose HEAD carries no error document, renews an expired authorization too")
    func statRenews() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        try await provider.uploadData(Data("x".utf8), remotePath: "present")
        try await emulator.expireTokens()
        #expect(try await provider.stat(remotePath: "present")?.size == 1)
        #expect(try await emulator.stats().authorizations == 2)
    }

    @Test("A key restricted to a name prefix connects: the connection test lists under the prefix")
    func restrictedKeyConnects() async throws {
        let emulator = try await B2Emulator.start(buckets: ["buckia-private"], restrictedKeys: ["teamkey:teamsecret:buckia-private:team/"])
        defer { emulator.stop() }
        var configuration = emulator.configuration(bucket: "buckia-private")
        configuration.authConfig = .providerSpecific(type: .b2, credentials: ["applicationKeyId": "teamkey", "applicationKey": "teamsecret"])
        let provider = B2Provider(settings: try B2Settings.resolve(configuration, environment: [:]))
        let status = try await provider.testConnection()
        #expect(status.isConnected, "\(status.message)")
    }

    @Test("Concurrent uploads never share an upload URL, and URLs that served are reused")
    func uploadURLsNotShared() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        for round in 0..<2 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<16 {
                    group.addTask { try await provider.uploadData(Self.pattern(4096, seed: index), remotePath: "u/\(round)/\(index)") }
                }
                try await group.waitForAll()
            }
        }
        let stats = try await emulator.stats()
        #expect(stats.shared_upload_urls == 0)
        #expect(stats.count("b2_upload_file") == 32)
        #expect(stats.count("b2_get_upload_url") <= 16, "the second round reuses the first round's URLs: \(stats.count("b2_get_upload_url"))")
    }

    @Test("A large file goes up in parts with its SHA-1 recorded, and comes back whole and verified")
    func largeFile() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        let data = Self.pattern(5 * 1_048_576 + 12_345)
        let source = TemporaryFile.makeURL()
        defer { try? FileManager.default.removeItem(at: source) }
        try data.write(to: source)
        let written = try await provider.uploadFile(localURL: source, remotePath: "large/file.bin")
        let stats = try await emulator.stats()
        #expect(stats.count("b2_start_large_file") == 1 && stats.count("b2_upload_part") == 6 && stats.count("b2_finish_large_file") == 1)
        #expect(stats.count("b2_upload_file") == 0)
        let sha1 = try Hashing.digest(data, .sha1).hex
        #expect(written.checksums[.sha1] == sha1)
        let listed = try #require(try await provider.listFiles(path: "large/").first)
        #expect(listed.checksums[.sha1] == sha1, "the listing carries large_file_sha1")
        #expect(listed.size == Int64(data.count))
        #expect(try await provider.readData(remotePath: "large/file.bin") == data)
        #expect(try await provider.unfinishedUploads(prefix: "").isEmpty)
    }

    @Test("A large upload that failed part-way resumes: the next upload of the same file sends only the missing parts")
    func resumesMissingParts() async throws {
        // No retries, so the injected 500s fail the first upload with some parts sent.
        let (provider, emulator) = try await Self.fresh(retryPolicy: .none)
        defer { emulator.stop() }
        let data = Self.pattern(8 * 1_048_576)
        let source = TemporaryFile.makeURL()
        defer { try? FileManager.default.removeItem(at: source) }
        try data.write(to: source)
        try await emulator.setFaults(rate: 0.5, kinds: ["500"], seed: 3, calls: ["b2_upload_part"])
        let failure = await #expect(throws: BuckiaError.self) { try await provider.uploadFile(localURL: source, remotePath: "resume/file.bin") }
        #expect(failure?.code == .transient)
        #expect(failure?.message.contains("resume") == true, "\(String(describing: failure))")
        let first = try await emulator.stats()
        let sent = first.count("b2_upload_part") - (first.faults["500"] ?? 0)
        #expect(sent > 0 && sent < 8, "the first run stored some parts, not all: \(sent)")
        #expect(try await provider.unfinishedUploads(prefix: "resume/").count == 1)

        try await emulator.setFaults(rate: 0, kinds: [])
        try await emulator.resetStats()
        try await provider.uploadFile(localURL: source, remotePath: "resume/file.bin")
        let second = try await emulator.stats()
        #expect(second.count("b2_start_large_file") == 0, "the unfinished large file was resumed, not started again")
        #expect(second.count("b2_list_parts") >= 1)
        #expect(second.count("b2_upload_part") == 8 - sent, "only the missing parts were sent")
        #expect(try await provider.readData(remotePath: "resume/file.bin") == data)
        #expect(try await provider.unfinishedUploads(prefix: "resume/").isEmpty)
    }

    @Test("An unfinished large file of the same bytes but other metadata or content type is not resumed")
    func resumesOnlyTheSameUpload() async throws {
        let (provider, emulator) = try await Self.fresh(retryPolicy: .none)
        defer { emulator.stop() }
        let data = Self.pattern(3 * 1_048_576)
        let source = TemporaryFile.makeURL()
        defer { try? FileManager.default.removeItem(at: source) }
        try data.write(to: source)
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        try await emulator.setFaults(rate: 1, kinds: ["500"], calls: ["b2_finish_large_file"])
        await #expect(throws: BuckiaError.self) {
            try await provider.uploadFile(localURL: source, remotePath: "same-bytes.bin", options: UploadOptions(modificationDate: date, metadata: ["owner": "a"]))
        }
        try await emulator.setFaults(rate: 0, kinds: [])
        try await emulator.resetStats()
        try await provider.uploadFile(localURL: source, remotePath: "same-bytes.bin", options: UploadOptions(modificationDate: date, metadata: ["owner": "b"]))
        let stats = try await emulator.stats()
        #expect(stats.count("b2_start_large_file") == 1, "other metadata: a new large file")
        #expect(stats.count("b2_upload_part") == 3)
        #expect(try await provider.stat(remotePath: "same-bytes.bin")?.metadata["owner"] == "b")
    }

    @Test("Deleting a name deletes every version of it")
    func deleteEveryVersion() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        for version in 0..<3 { try await provider.uploadData(Data("v\(version)".utf8), remotePath: "versions/k") }
        try await provider.uploadData(Data("other".utf8), remotePath: "versions/k2")
        #expect(try await emulator.stats().versions == 4)
        try await provider.deleteFile(remotePath: "versions/k")
        #expect(try await emulator.stats().versions == 1, "all three versions of versions/k are gone, not hidden")
        #expect(try await provider.stat(remotePath: "versions/k") == nil)
        #expect(try await provider.stat(remotePath: "versions/k2") != nil)
        try await provider.deleteFile(remotePath: "versions/never-there")
    }

    @Test("Names B2 would refuse are refused before any request", arguments: ["tab\there", "bell\u{7}", "del\u{7F}", "line\nbreak", "esc\u{1B}[0m"])
    func namesRefusedLocally(_ name: String) async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        let key = try ObjectKey(name)
        let error = await #expect(throws: BuckiaError.self) { try await provider.uploadData(Data("x".utf8), remotePath: key, options: UploadOptions()) }
        #expect(error?.code == .invalidPath)
        #expect(try await emulator.stats().total == 0, "no request was made")
    }

    @Test("A 1024-byte name of multi-byte characters is accepted")
    func longestName() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        let name = String(repeating: "é", count: 512)
        try await provider.uploadData(Data("x".utf8), remotePath: name)
        #expect(try await provider.readData(remotePath: name) == Data("x".utf8))
    }

    @Test("A download token reads only under its prefix and only until it expires")
    func downloadToken() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        try await provider.uploadData(Data("shared".utf8), remotePath: "shared/a.txt")
        try await provider.uploadData(Data("private".utf8), remotePath: "private/b.txt")
        let token = try await provider.generateAccessToken(options: AccessTokenOptions(permissions: .readOnly, expiry: .seconds(600), pathPrefix: "shared/"))
        let client = HTTPClient(configuration: .init(retryPolicy: .none))
        func fetch(_ path: String) async throws -> Int {
            var request = HTTPRequest(.get, emulator.endpoint.appendingPathComponent("file/buckia-private/\(path)"), accepts: .all)
            request.headers.set("Authorization", secret: token.value)
            return try await client.send(request).status
        }
        #expect(try await fetch("shared/a.txt") == 200)
        #expect(try await fetch("private/b.txt") == 401)
        try await emulator.advanceClock(seconds: 601)
        #expect(try await fetch("shared/a.txt") == 401, "the token expired")
        let wider = await #expect(throws: BuckiaError.self) {
            try await provider.generateAccessToken(options: AccessTokenOptions(permissions: .all, expiry: .seconds(60)))
        }
        #expect(wider?.code == .unsupported)
    }

    @Test("An authorized URL downloads one private file without other credentials")
    func authorizedURL() async throws {
        let (provider, emulator) = try await Self.fresh()
        defer { emulator.stop() }
        try await provider.uploadData(Data("secret bytes".utf8), remotePath: "docs/a b+c.txt")
        let url = try await provider.authorizedURL(for: ObjectKey("docs/a b+c.txt"), expires: .seconds(300))
        let response = try await HTTPClient(configuration: .init(retryPolicy: .none)).send(HTTPRequest(.get, url))
        #expect(response.data == Data("secret bytes".utf8))
        let plain = url.absoluteString.components(separatedBy: "?").first.flatMap(URL.init(string:))
        let refused = try await HTTPClient(configuration: .init(retryPolicy: .none)).send(HTTPRequest(.get, try #require(plain), accepts: .all))
        #expect(refused.status == 401, "without the token the private file is refused")
    }

    @Test("A key restricted to a bucket and prefix works inside them and is refused outside")
    func restrictedKey() async throws {
        let emulator = try await B2Emulator.start(
            buckets: ["buckia-private", "buckia-other"], restrictedKeys: ["limitedkey:limitedsecret:buckia-private:team/"], minimumPartSize: 65_536)
        defer { emulator.stop() }
        func provider(bucket: String) throws -> B2Provider {
            var configuration = emulator.configuration(bucket: bucket)
            configuration.authConfig = .providerSpecific(type: .b2, credentials: ["applicationKeyId": "limitedkey", "applicationKey": "limitedsecret"])
            return B2Provider(settings: try B2Settings.resolve(configuration, environment: [:]))
        }
        let limited = try provider(bucket: "buckia-private")
        try await limited.uploadData(Data("in".utf8), remotePath: "team/a.txt")
        #expect(try await limited.listFiles(path: "team/").map(\.path.rawValue) == ["team/a.txt"])
        let outside = await #expect(throws: BuckiaError.self) { try await limited.uploadData(Data("out".utf8), remotePath: "elsewhere/b.txt") }
        #expect(outside?.code == .permissionDenied)
        let otherBucket = await #expect(throws: BuckiaError.self) { try await provider(bucket: "buckia-other").uploadData(Data("x".utf8), remotePath: "team/c.txt") }
        #expect(otherBucket?.code == .permissionDenied)
        #expect(otherBucket?.message.contains("restricted to the bucket buckia-private") == true, "\(String(describing: otherBucket))")
    }

    @Test("A wrong key is refused as unauthorized, and no message holds it")
    func wrongKey() async throws {
        let emulator = try await B2Emulator.start()
        defer { emulator.stop() }
        var configuration = emulator.configuration()
        let wrong = "K000wrong\(UUID().uuidString)"
        configuration.authConfig = .providerSpecific(type: .b2, credentials: ["applicationKeyId": emulator.keyId, "applicationKey": wrong])
        let provider = B2Provider(settings: try B2Settings.resolve(configuration, environment: [:]))
        let error = await #expect(throws: BuckiaError.self) { try await provider.uploadData(Data("x".utf8), remotePath: "k") }
        #expect(error?.code == .unauthorized)
        let text = "\(String(describing: error)) \(String(reflecting: error))"
        #expect(!text.contains(wrong) && !text.contains(emulator.key))
    }
}
