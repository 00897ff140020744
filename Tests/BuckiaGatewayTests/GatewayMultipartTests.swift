import BuckiaCore
import BuckiaGateway
import BuckiaMemory
import Foundation
import Testing

/// Multipart uploads over a folder, kept by the local provider in the folder itself
/// (`.buckia/uploads/ID/`, LocalProvider+PartUploads.swift): parts of one size written in place
/// in one file per upload as their bodies arrive, completed by linking that file into place (no
/// copy), and every part that breaks the pattern still stored exactly as listed.
@Suite("S3 gateway: multipart parts written in place, completed without a copy")
struct GatewayMultipartTests {
    static let partSize = 5 << 20

    /// `count` random bytes (OpenSSL's generator: fast even in a debug build); `seed` only
    /// names the part at the call site.
    static func bytes(_ count: Int, seed: UInt32) -> Data {
        do {
            return Data(try SecureRandom.bytes(count: count))
        } catch {
            Issue.record("no random bytes: \(error)")
            return Data(repeating: UInt8(truncatingIfNeeded: seed), count: count)
        }
    }

    static func value(_ xml: Data, _ element: String) -> String? {
        String(decoding: xml, as: UTF8.self).components(separatedBy: "<\(element)>").dropFirst().first?.components(separatedBy: "</\(element)>").first
    }

    static func start(_ harness: GatewayHarness, _ path: String) async throws -> String {
        let (status, body) = try await harness.send("POST", "\(path)?uploads")
        try #require(status == 200, "\(String(decoding: body, as: UTF8.self))")
        return try #require(value(body, "UploadId"))
    }

    /// Sends part `number` and returns its ETag (nil when refused).
    @discardableResult
    static func part(_ harness: GatewayHarness, _ path: String, _ id: String, _ number: Int, _ data: Data, headers: [String: String] = [:]) async throws -> String? {
        let (status, _) = try await harness.send("PUT", "\(path)?partNumber=\(number)&uploadId=\(id)", body: data, headers: headers)
        guard status == 200 else { return nil }
        return "\"\(try Hashing.digest(data, .md5).hex)\""
    }

    static func complete(
        _ harness: GatewayHarness, _ path: String, _ id: String, _ parts: [(Int, String)], headers: [String: String] = [:]
    ) async throws -> (Int, String) {
        let xml = "<CompleteMultipartUpload>" + parts.map { "<Part><PartNumber>\($0.0)</PartNumber><ETag>\($0.1)</ETag></Part>" }.joined() + "</CompleteMultipartUpload>"
        let (status, body) = try await harness.send("POST", "\(path)?uploadId=\(id)", body: Data(xml.utf8), headers: headers)
        return (status, String(decoding: body, as: UTF8.self))
    }

    /// The local provider's folder of the one upload under way in `harness`'s folder.
    static func uploadFolder(_ harness: GatewayHarness) throws -> URL {
        let uploads = try #require(harness.root).appendingPathComponent(".buckia/uploads")
        let names = try FileManager.default.contentsOfDirectory(atPath: uploads.path)
        try #require(names.count == 1, "\(names)")
        return uploads.appendingPathComponent(names[0], isDirectory: true)
    }

    static func stat(_ url: URL) throws -> stat {
        var info = Foundation.stat()
        try #require(lstat(url.path, &info) == 0, "no file at \(url.path)")
        return info
    }

    @Test("Parts of one size, sent out of order with the short last one early, are written in place; the object is the upload's own file, linked")
    func inPlace() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("multi")
        let id = try await Self.start(harness, "/multi/big.bin")
        let parts = [1, 2, 3].map { Self.bytes(Self.partSize, seed: UInt32($0)) } + [Self.bytes(1 << 20, seed: 4)]
        var etags: [Int: String] = [:]
        for number in [2, 4, 1, 3] {
            let etag: String = try #require(try await Self.part(harness, "/multi/big.bin", id, number, parts[number - 1]))
            etags[number] = etag
        }
        // A part refused by its Content-MD5 after its bytes were written at its place, past
        // the object's end: completing must cut the file there.
        let wrong = try Hashing.digest(Data("other".utf8), .md5).base64
        #expect(try await Self.part(harness, "/multi/big.bin", id, 5, parts[0], headers: ["Content-MD5": wrong]) == nil)
        let assembly = try Self.uploadFolder(harness).appendingPathComponent("object")
        let placed = try Self.stat(assembly)
        let (status, body) = try await Self.complete(harness, "/multi/big.bin", id, (1...4).map { ($0, etags[$0]!) })
        #expect(status == 200, "\(body)")
        let root = try #require(harness.root)
        let object = root.appendingPathComponent("multi/big.bin")
        let stored = try Self.stat(object)
        #expect(stored.st_ino == placed.st_ino && stored.st_dev == placed.st_dev, "the object is a copy, not the upload's file")
        #expect(stored.st_nlink == 1, "the upload's own name for the file is still there")
        #expect(try Data(contentsOf: object) == parts.reduce(Data(), +))
        #expect(!FileManager.default.fileExists(atPath: assembly.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: harness.gateway.staging.path).isEmpty, "no part waited in the gateway")
    }

    /// Uploads that break the pattern, and the object each must give.
    enum Irregular: String, CaseIterable, CustomTestStringConvertible {
        case shortPartFirst, partSentTwice, subsetListed, gapListed, failedPartSentAgain, differentSizes

        var testDescription: String { rawValue }

        /// Whether some part had to go to a file of its own.
        var needsPartFiles: Bool { [.shortPartFirst, .partSentTwice, .differentSizes].contains(self) }
    }

    @Test("Parts that break the pattern go to files of their own, and the object is exactly the parts listed", arguments: Irregular.allCases)
    func irregular(_ kind: Irregular) async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("multi")
        let path = "/multi/odd.bin"
        let id = try await Self.start(harness, path)
        let full = [1, 2, 3].map { Self.bytes(Self.partSize, seed: UInt32($0)) }
        let short = Self.bytes(123_457, seed: 9)
        var listed: [(Int, String)] = []
        var expected = Data()
        func send(_ number: Int, _ data: Data) async throws -> String {
            try #require(try await Self.part(harness, path, id, number, data), "part \(number) was refused")
        }
        switch kind {
        case .shortPartFirst:
            // The stride becomes the short part's size; the full parts then do not fit.
            let last = try await send(3, short)
            listed = [(1, try await send(1, full[0])), (2, try await send(2, full[1])), (3, last)]
            expected = full[0] + full[1] + short
        case .partSentTwice:
            let first = try await send(1, full[0])
            let stale = try await send(2, full[1])
            let fresh = try await send(2, full[2])
            let refused = try await Self.complete(harness, path, id, [(1, first), (2, stale)])
            #expect(refused.0 == 400 && refused.1.contains("InvalidPart"), "\(refused)")
            listed = [(1, first), (2, fresh)]
            expected = full[0] + full[2]
        case .subsetListed:
            let tags = [try await send(1, full[0]), try await send(2, full[1]), try await send(3, full[2])]
            listed = [(1, tags[0]), (2, tags[1])]
            expected = full[0] + full[1]
        case .gapListed:
            let tags = [try await send(1, full[0]), try await send(2, full[1]), try await send(3, short)]
            listed = [(1, tags[0]), (3, tags[2])]
            expected = full[0] + short
        case .failedPartSentAgain:
            let wrong = try Hashing.digest(Data("other".utf8), .md5).base64
            #expect(try await Self.part(harness, path, id, 1, full[0], headers: ["Content-MD5": wrong]) == nil)
            listed = [(1, try await send(1, full[0])), (2, try await send(2, short))]
            expected = full[0] + short
        case .differentSizes:
            let larger = Self.bytes(Self.partSize + 4096, seed: 7)
            listed = [(1, try await send(1, full[0])), (2, try await send(2, larger)), (3, try await send(3, short))]
            expected = full[0] + larger + short
        }
        // Each case takes the path it is meant to test: a part file only where a part broke the pattern.
        let files = try Self.uploadFolder(harness).appendingPathComponent("files")
        let entries = FileManager.default.fileExists(atPath: files.path) ? try FileManager.default.contentsOfDirectory(atPath: files.path) : []
        #expect(!entries.isEmpty == kind.needsPartFiles, "\(entries)")
        let (status, body) = try await Self.complete(harness, path, id, listed)
        #expect(status == 200, "\(body)")
        let stored = try await harness.provider.readData(remotePath: ObjectKey("multi/odd.bin"), options: ReadOptions())
        #expect(stored.count == expected.count)
        #expect(stored == expected)
    }

    @Test("A completion its condition refuses leaves every part whole: completing again stores them")
    func refusedCompletion() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("multi")
        #expect(try await harness.send("PUT", "/multi/taken.bin", body: Data("first".utf8)).0 == 200)
        let id = try await Self.start(harness, "/multi/taken.bin")
        let parts = [Self.bytes(Self.partSize, seed: 11), Self.bytes(2000, seed: 12)]
        var listed: [(Int, String)] = []
        for (index, data) in parts.enumerated() {
            listed.append((index + 1, try #require(try await Self.part(harness, "/multi/taken.bin", id, index + 1, data))))
        }
        let refused = try await Self.complete(harness, "/multi/taken.bin", id, listed, headers: ["If-None-Match": "*"])
        #expect(refused.0 == 412, "\(refused)")
        #expect(try await harness.provider.readData(remotePath: ObjectKey("multi/taken.bin"), options: ReadOptions()) == Data("first".utf8))
        let (status, body) = try await Self.complete(harness, "/multi/taken.bin", id, listed)
        #expect(status == 200, "\(body)")
        #expect(try await harness.provider.readData(remotePath: ObjectKey("multi/taken.bin"), options: ReadOptions()) == parts[0] + parts[1])
    }

    /// Found by the fault matrix: a completion whose answer was lost was retried by the client
    /// and refused with NoSuchUpload, so an upload the gateway had stored was reported failed.
    /// S3 answers the same request again with the same result.
    @Test("A completion sent again gets its first answer; other parts, or another key, get NoSuchUpload")
    func completionRetried() async throws {
        let harness = try GatewayHarness()
        defer { harness.stop() }
        try await harness.createBucket("multi")
        let id = try await Self.start(harness, "/multi/again.bin")
        let parts = [Self.bytes(Self.partSize, seed: 21), Self.bytes(3000, seed: 22)]
        var listed: [(Int, String)] = []
        for (index, data) in parts.enumerated() {
            listed.append((index + 1, try #require(try await Self.part(harness, "/multi/again.bin", id, index + 1, data))))
        }
        let first = try await Self.complete(harness, "/multi/again.bin", id, listed)
        #expect(first.0 == 200, "\(first)")
        let again = try await Self.complete(harness, "/multi/again.bin", id, listed)
        #expect(again.0 == 200, "\(again)")
        #expect(Self.value(Data(again.1.utf8), "ETag") == Self.value(Data(first.1.utf8), "ETag"))
        #expect(try await harness.provider.readData(remotePath: ObjectKey("multi/again.bin"), options: ReadOptions()) == parts[0] + parts[1])
        let fewer = try await Self.complete(harness, "/multi/again.bin", id, Array(listed.prefix(1)))
        #expect(fewer.0 == 404 && fewer.1.contains("NoSuchUpload"), "\(fewer)")
        let elsewhere = try await Self.complete(harness, "/multi/other.bin", id, listed)
        #expect(elsewhere.0 == 404 && elsewhere.1.contains("NoSuchUpload"), "\(elsewhere)")
    }

    @Test("Over a folder, an upload started longer ago than its lifetime is aborted when another starts, its parts gone from the folder; a younger one is kept")
    func abandonedUploads() async throws {
        let now = Locked(Date())
        let harness = try GatewayHarness { options in
            options.clock = { now.withLock { $0 } }
            options.abandonedUploadLifetime = .seconds(3600)
        }
        defer { harness.stop() }
        try await harness.createBucket("multi")
        let uploads = try #require(harness.root).appendingPathComponent(".buckia/uploads")
        let old = try await Self.start(harness, "/multi/old.bin")
        try #require(try await Self.part(harness, "/multi/old.bin", old, 1, Self.bytes(1000, seed: 31)) != nil)
        let oldFolder = try #require(try FileManager.default.contentsOfDirectory(atPath: uploads.path).first)
        now.withLock { $0 += 3000 }
        let young = try await Self.start(harness, "/multi/young.bin")
        let kept: String = try #require(try await Self.part(harness, "/multi/young.bin", young, 1, Self.bytes(1000, seed: 32)))
        #expect(try await Self.part(harness, "/multi/old.bin", old, 2, Self.bytes(1000, seed: 33)) != nil, "parts do not keep an upload young, as in S3")
        now.withLock { $0 += 1000 }  // old: started 4,000 s ago; young: 1,000 s
        let third = try await Self.start(harness, "/multi/third.bin")
        let left = try FileManager.default.contentsOfDirectory(atPath: uploads.path)
        #expect(!left.contains(oldFolder) && left.count == 2, "\(left)")
        let gone = try await harness.send("GET", "/multi/old.bin?uploadId=\(old)")
        #expect(gone.0 == 404 && String(decoding: gone.1, as: UTF8.self).contains("NoSuchUpload"))
        let (status, body) = try await Self.complete(harness, "/multi/young.bin", young, [(1, kept)])
        #expect(status == 200, "\(body)")
        _ = try await harness.send("DELETE", "/multi/third.bin?uploadId=\(third)")
    }

    /// A backend with neither local files nor multipart uploads of its own (as Bunny is to the
    /// gateway): the memory provider, its part uploads hidden.
    struct WithoutPartUploads: ForwardingStorageProvider {
        let base: any StorageProvider
        var capabilities: ProviderCapabilities {
            var capabilities = base.capabilities
            capabilities.features.remove(.partUploads)
            return capabilities
        }
    }

    @Test("Over a backend with neither local files nor parts of its own, each part is an object in the backend under the reserved folder, the object their concatenation, and the completion's marker goes with the gateway's answer an hour later")
    func otherBackend() async throws {
        let backend = WithoutPartUploads(base: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
        let clock = Locked(Date())
        let harness = try GatewayHarness(provider: backend, configure: { options in options.clock = { clock.withLock { $0 } } })
        defer { harness.stop() }
        try await harness.createBucket("multi")
        let id = try await Self.start(harness, "/multi/m.bin")
        let parts = [Self.bytes(Self.partSize, seed: 21), Self.bytes(Self.partSize, seed: 22), Self.bytes(77, seed: 23)]
        var listed: [(Int, String)] = []
        for (index, data) in parts.enumerated() {
            listed.append((index + 1, try #require(try await Self.part(harness, "/multi/m.bin", id, index + 1, data))))
        }
        var staged: [Int64] = []
        for try await entry in backend.list(ListOptions(prefix: ".buckia-s3/staged/", recursive: true)) {
            if let file = entry.file, file.path.rawValue.contains("/parts/") { staged.append(file.size) }
        }
        #expect(staged.sorted() == parts.map { Int64($0.count) }.sorted(), "the parts wait in the backend")
        let (status, body) = try await Self.complete(harness, "/multi/m.bin", id, listed)
        #expect(status == 200, "\(body)")
        #expect(try await harness.provider.readData(remotePath: ObjectKey("multi/m.bin"), options: ReadOptions()) == parts.reduce(Data(), +))
        #expect(try FileManager.default.contentsOfDirectory(atPath: harness.gateway.staging.path).isEmpty)
        func stagedKeys() async throws -> [String] {
            var left: [String] = []
            for try await entry in backend.list(ListOptions(prefix: ".buckia-s3/staged/", recursive: true)) { left += entry.file.map { [$0.path.rawValue] } ?? [] }
            return left
        }
        let left = try await stagedKeys()
        #expect(left.count == 1 && left.allSatisfy { $0.hasSuffix("/completed") }, "the completion removed the parts, keeping its marker: \(left)")
        clock.withLock { $0 += 2 * 3600 }
        let next = try await Self.start(harness, "/multi/next.bin")  // sweeps: the answer is two hours old
        let after = try await stagedKeys()
        #expect(after.allSatisfy { !$0.hasSuffix("/completed") }, "the marker went with the answer: \(after)")
        _ = try await harness.send("DELETE", "/multi/next.bin?uploadId=\(next)")
    }
}
