import BuckiaChunks
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaCore
import BuckiaLocal
@testable import BuckiaS3
import BuckiaSync
import BuckiaSyncConformance
import BuckiaTestSupport
import Foundation
import Testing

// The S3 provider against Ceph's RADOS Gateway (Tests/Emulators/ceph_rgw.sh): a real
// distributed object store that checks every signature, Content-MD5 and the payload hash, as
// AWS does. moto checks none of those by default, and two defects hid behind it: a header
// with an empty value that libcurl dropped from a signed request, and conditions written with
// quoted ETags, which Ceph 16 compares without the quotes. Each suite here runs the same
// scenarios as its moto twin, with signatures checked on every request.

/// Every provider scenario against Ceph RGW, through the registry as a configuration selects it.
@Suite("S3 provider conformance (Ceph RGW)")
struct RGWProviderConformanceTests {
    @Test("s3 provider on Ceph RGW", arguments: ProviderConformance.scenarios)
    func provider(_ scenario: ProviderScenario) async throws {
        let server = try await S3TestServer.shared(.cephRGW)
        let (configuration, _, _) = try await makeS3Configuration(on: server, options: ["vendor": "ceph"])
        try await scenario.check(.plugin(S3Provider.self, configuration: configuration, environment: ["HOME": TestHome.empty], resources: .tests))
    }
}

/// Every sync scenario between a local folder and Ceph RGW.
@Suite("S3 sync conformance (Ceph RGW)")
struct RGWSyncConformanceTests {
    @Test("local folder ↔ s3 on Ceph RGW", arguments: SyncConformance.scenarios)
    func sync(_ scenario: SyncScenario) async throws {
        let (provider, _, _) = try await makeS3Provider(on: S3TestServer.shared(.cephRGW), options: ["vendor": "ceph"])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-rgw-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await scenario.check(local: LocalProvider(root: folder), remote: provider)
    }
}

/// Every chunk-store scenario against Ceph RGW (chunk PUTs carry an empty metadata header,
/// the first of the two defects).
@Suite("S3 chunk conformance (Ceph RGW)")
struct RGWChunkConformanceTests {
    @Test("chunk store: s3 on Ceph RGW", arguments: ChunkStoreConformance.scenarios)
    func store(_ scenario: ChunkStoreScenario) async throws {
        let (provider, _, _) = try await makeS3Provider(on: S3TestServer.shared(.cephRGW), options: ["vendor": "ceph"])
        try await scenario.check("s3 (Ceph RGW)") { try ProviderChunkStorage(provider: provider, prefix: "chunks/") }
    }
}

/// The ETag form in conditions, on the server that needs the bare one.
@Suite("S3 vendor profiles on Ceph RGW")
struct RGWProfileTests {
    /// Writes `v1`, then replaces it under `If-Match` with the ETag the write returned; returns
    /// both versions.
    func conditionalReplace(_ provider: S3Provider) async throws -> (first: RemoteFile, replaced: RemoteFile) {
        let key = "profile/edited.txt"
        let first = try await provider.uploadData(Data("v1".utf8), remotePath: key)
        let etag = try #require(first.etag)
        let replaced = try await provider.uploadData(Data("v2".utf8), remotePath: key, options: UploadOptions(condition: .ifMatch(etag)))
        return (first, replaced)
    }

    @Test("Quoted ETags in If-Match never match on Ceph 16: a profile that quotes them fails every conditional replace (the defect sync hit)")
    func quotedFails() async throws {
        let server = try await S3TestServer.shared(.cephRGW)
        // The AWS profile writes quoted tags, as RFC 9110 does; Ceph 16 compares them bare.
        let (provider, _, _) = try await makeS3Provider(on: server, options: ["vendor": "aws", "addressingStyle": "path"])
        let error = await #expect(throws: BuckiaError.self) { _ = try await conditionalReplace(provider) }
        #expect(error?.code == .conditionNotMatch)
    }

    @Test("The ceph profile writes bare ETags: a conditional replace, read and time change succeed, and a stale ETag is still refused")
    func cephProfile() async throws {
        let (provider, _, _) = try await makeS3Provider(on: S3TestServer.shared(.cephRGW), options: ["vendor": "ceph"])
        let (first, replaced) = try await conditionalReplace(provider)
        let etag = try #require(replaced.etag)
        #expect(try await provider.readData(remotePath: try ObjectKey("profile/edited.txt"), options: ReadOptions(ifMatch: etag)) == Data("v2".utf8))
        // The time change copies the object onto itself under x-amz-copy-source-if-match.
        _ = try await provider.setModificationTime(remotePath: try ObjectKey("profile/edited.txt"), to: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(try await provider.stat(remotePath: "profile/edited.txt")?.modificationDate == Date(timeIntervalSince1970: 1_700_000_000))
        let stale = await #expect(throws: BuckiaError.self) {
            try await provider.uploadData(Data("v3".utf8), remotePath: "profile/edited.txt", options: UploadOptions(condition: .ifMatch(first.etag ?? "")))
        }
        #expect(stale?.code == .conditionNotMatch)
        #expect(try await provider.readData(remotePath: "profile/edited.txt") == Data("v2".utf8))
    }

    @Test("Ceph 16 drops conditions on multipart completions: a conditional upload above the threshold goes as one PutObject and holds, a conditional long stream is refused, and told otherwise the server replaces the object")
    func conditionalCompletions() async throws {
        let server = try await S3TestServer.shared(.cephRGW)
        var (configuration, _, _) = try await makeS3Configuration(on: server, options: ["vendor": "ceph", "multipartThresholdMiB": "5", "partSizeMiB": "5"])
        let provider = try S3Provider(settings: S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), resources: .tests)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-rgw-large-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = "profile/large-conditional.bin"
        try await provider.uploadData(Data("first".utf8), remotePath: key)
        let large = folder.appendingPathComponent("large.bin")
        try Data(repeating: 7, count: 11 << 20).write(to: large)
        let file = await #expect(throws: BuckiaError.self) {
            try await provider.uploadFile(localURL: large, remotePath: key, options: UploadOptions(condition: .ifNoneMatch))
        }
        #expect(file?.code == .conditionNotMatch)
        let stream = await #expect(throws: BuckiaError.self) {
            try await provider.upload(from: ByteStream.of(Data(repeating: 8, count: 11 << 20)), remotePath: try ObjectKey(key), options: UploadOptions(condition: .ifNoneMatch))
        }
        #expect(stream?.code == .unsupported)
        #expect(try await provider.readData(remotePath: key) == Data("first".utf8))
        // The server's side of it: with completions believed conditional, the file goes in
        // parts and RGW stores it over the object the condition should have kept.
        configuration.options["conditionalCompletions"] = "true"
        let believer = try S3Provider(settings: S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), resources: .tests)
        _ = try await believer.uploadFile(localURL: large, remotePath: key, options: UploadOptions(condition: .ifNoneMatch))
        #expect(try await provider.stat(remotePath: key)?.size == 11 << 20)
    }

    @Test("Ceph 16 completes a multipart upload only from every part uploaded: through the profile parts 1 and 3 of three are refused before the request, and told otherwise RGW answers InvalidPart")
    func partSelections() async throws {
        let server = try await S3TestServer.shared(.cephRGW)
        var (configuration, _, _) = try await makeS3Configuration(on: server, options: ["vendor": "ceph"])
        let provider = try S3Provider(settings: S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), resources: .tests)
        #expect(!provider.capabilities.supports(.partSelections))
        configuration.options["partSelections"] = "true"
        let believer = try S3Provider(settings: S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), resources: .tests)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-rgw-selection-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let contents = [Data(repeating: 1, count: 5 << 20), Data(repeating: 2, count: 5 << 20), Data(repeating: 3, count: 1_000)]
        let key = try ObjectKey("profile/selection.bin")
        let upload = try await provider.startPartUpload(to: key, options: UploadOptions())
        var parts: [UploadedPart] = []
        for (index, bytes) in contents.enumerated() {
            let file = folder.appendingPathComponent("part-\(index)")
            try bytes.write(to: file)
            parts.append(try await provider.uploadPart(index + 1, of: upload, to: key, file: file, md5: try Hashing.digest(bytes, .md5)))
        }
        let refused = await #expect(throws: BuckiaError.self) {
            try await provider.completePartUpload(upload, to: key, parts: [parts[0], parts[2]], condition: nil)
        }
        #expect(refused?.code == .unsupported)
        // The server's side of it: the same selection sent, RGW refuses it.
        let sent = await #expect(throws: BuckiaError.self) {
            try await believer.completePartUpload(upload, to: key, parts: [parts[0], parts[2]], condition: nil)
        }
        #expect(sent?.message.contains("InvalidPart") == true, "\(String(describing: sent))")
        try await provider.completePartUpload(upload, to: key, parts: parts, condition: nil)
        #expect(try await provider.readData(remotePath: key.rawValue) == contents.reduce(Data(), +))
    }

    @Test("An unnamed server (vendor auto on 127.0.0.1) learns the bare form from its first refused condition, and a real change still fails")
    func learned() async throws {
        let (provider, _, _) = try await makeS3Provider(on: S3TestServer.shared(.cephRGW))
        #expect(provider.settings.profile.vendor == .generic && provider.settings.profile.conditionETags == .learned)
        let key = "profile/learned.txt"
        let first = try await provider.uploadData(Data("v1".utf8), remotePath: key)
        // A stale tag first: the object changed, so the 412 stands and nothing is learned.
        _ = try await provider.uploadData(Data("v2".utf8), remotePath: key)
        let stale = await #expect(throws: BuckiaError.self) {
            try await provider.uploadData(Data("v3".utf8), remotePath: key, options: UploadOptions(condition: .ifMatch(first.etag ?? "")))
        }
        #expect(stale?.code == .conditionNotMatch)
        #expect(provider.conditionETag("\"abc\"") == "\"abc\"", "a real change teaches nothing")
        let current = try #require(try await provider.stat(remotePath: key)?.etag)
        let replaced = try await provider.uploadData(Data("v3".utf8), remotePath: key, options: UploadOptions(condition: .ifMatch(current)))
        #expect(replaced.etag != nil)
        #expect(provider.conditionETag("\"abc\"") == "abc", "the refused match of the current ETag taught the bare form")
        #expect(try await provider.readData(remotePath: key) == Data("v3".utf8))
    }

    @Test("buckia sync of an edited file reaches Ceph RGW on every rerun (push and two-way)", arguments: [SyncMode.push, .twoWay])
    func editedFileSyncs(_ mode: SyncMode) async throws {
        let (provider, _, _) = try await makeS3Provider(on: S3TestServer.shared(.cephRGW), options: ["vendor": "ceph"])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-rgw-edit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let stateFolder = folder.appendingPathExtension("state")
        try FileManager.default.createDirectory(at: stateFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: stateFolder) }
        let state = stateFolder.appendingPathComponent("sync.sqlite")
        let file = folder.appendingPathComponent("notes.txt")
        let local = try LocalProvider(root: folder)
        for (round, text) in ["first", "second, longer", "third"].enumerated() {
            try Data(text.utf8).write(to: file)
            // A later time each round, so the edit is seen whatever the clock's resolution.
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_700_000_000 + Double(round) * 60)], ofItemAtPath: file.path)
            let engine = SyncEngine(
                local: try SyncEndpoint(provider: local, backend: "local:\(folder.path)"),
                remote: try SyncEndpoint(provider: provider, path: "notes", backend: "s3:rgw"),
                options: SyncOptions(mode: mode), stateStore: try SyncStateStore(url: state))
            let report = try await engine.run()
            #expect(report.failures.isEmpty, "round \(round): \(report.failures)")
            #expect(try await provider.readData(remotePath: "notes/notes.txt") == Data(text.utf8))
        }
    }
}
