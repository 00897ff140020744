import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaS3

/// Unfinished multipart uploads (issue 8, item 16): those this machine started and can never
/// resume are aborted by its next multipart upload; `buckia cleanup` handles the rest.
@Suite("S3 unfinished uploads: abandoned ones aborted, the rest by buckia cleanup")
struct UnfinishedUploadTests {
    /// A folder for local files, removed by the caller.
    func workFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-unfinished-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// What a killed `cp` of `file` to `key` leaves: the upload started on the server and its
    /// resume state saved, exactly as the provider saves it.
    @discardableResult
    func leaveUnfinished(_ provider: S3Provider, file: URL, key: String) async throws -> String {
        let status = try FileReader(file).status()
        let seconds = status.modificationDate.timeIntervalSince1970
        let id = try await provider.createMultipartUpload(ObjectKey(key), md5: Hashing.digest(Data(contentsOf: file), .md5), options: UploadOptions())
        let state = MultipartState(
            uploadId: id, bucket: provider.settings.bucket, key: key, size: status.size, modified: seconds,
            partSize: provider.settings.partSize(forFileOf: status.size), endpoint: provider.settings.endpoint.absoluteString,
            localPath: file.path, fileModified: seconds)
        try state.save(stateURL(provider, file: file, key: key))
        return id
    }

    func stateURL(_ provider: S3Provider, file: URL, key: String) -> URL {
        MultipartState.location(
            directory: provider.settings.stateDirectory, endpoint: provider.settings.endpoint, bucket: provider.settings.bucket, key: key,
            localPath: file.path)
    }

    func write(_ size: Int, to url: URL, seed: UInt8 = 1) throws {
        try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }).write(to: url)
    }

    @Test("The next multipart upload aborts the ones whose file changed or is gone, and keeps the resumable one")
    func abandonedAreAborted() async throws {
        let (provider, _, _) = try await makeS3Provider(auth: false, options: ["multipartThresholdMiB": "5", "partSizeMiB": "5"])
        let work = try workFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let changed = work.appendingPathComponent("changed.bin")
        let gone = work.appendingPathComponent("gone.bin")
        let kept = work.appendingPathComponent("kept.bin")
        for url in [changed, gone, kept] { try write(1_000, to: url) }
        let changedID = try await leaveUnfinished(provider, file: changed, key: "a/changed.bin")
        let goneID = try await leaveUnfinished(provider, file: gone, key: "a/gone.bin")
        let keptID = try await leaveUnfinished(provider, file: kept, key: "a/kept.bin")
        try write(2_000, to: changed, seed: 2)
        try FileManager.default.removeItem(at: gone)
        #expect(Set(try await provider.unfinishedUploads(prefix: "").map(\.status)) == [.abandoned, .resumable])

        let big = work.appendingPathComponent("big.bin")
        try write(6 << 20, to: big)
        _ = try await provider.uploadFile(localURL: big, remotePath: "b/big.bin", options: UploadOptions())

        let left = try await provider.unfinishedUploads(prefix: "")
        #expect(left.map(\.id) == [keptID], "aborted \(changedID) and \(goneID)? left: \(left)")
        #expect(left.first?.status == .resumable)
        let states = MultipartState.all(in: provider.settings.stateDirectory).map(\.state.uploadId)
        #expect(states == [keptID])
    }

    @Test("Uploading a changed file to the same key aborts the upload of its old bytes")
    func sameKeyChangedFile() async throws {
        let (provider, _, _) = try await makeS3Provider(auth: false, options: ["multipartThresholdMiB": "5", "partSizeMiB": "5"])
        let work = try workFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("video.bin")
        try write(6 << 20, to: file)
        try await leaveUnfinished(provider, file: file, key: "video.bin")
        try write(7 << 20, to: file, seed: 9)
        _ = try await provider.uploadFile(localURL: file, remotePath: "video.bin", options: UploadOptions())
        #expect(try await provider.unfinishedUploads(prefix: "").isEmpty)
        #expect(MultipartState.all(in: provider.settings.stateDirectory).isEmpty)
    }

    @Test("buckia cleanup: --dry-run aborts nothing; abandoned ones go at once, unknown ones after --max-age, resumable ones stay")
    func cleanupCommand() async throws {
        let (provider, server, bucket) = try await makeS3Provider(auth: false)
        let work = try workFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let resumable = work.appendingPathComponent("resumable.bin")
        let abandoned = work.appendingPathComponent("abandoned.bin")
        try write(100, to: resumable)
        try write(100, to: abandoned)
        let resumableID = try await leaveUnfinished(provider, file: resumable, key: "in/resumable.bin")
        try await leaveUnfinished(provider, file: abandoned, key: "in/abandoned.bin")
        try FileManager.default.removeItem(at: abandoned)
        // Another tool's upload: no state here.
        _ = try await provider.createMultipartUpload(ObjectKey("in/foreign.bin"), md5: Hashing.digest(Data(), .md5), options: UploadOptions())
        _ = try await provider.createMultipartUpload(ObjectKey("out/foreign.bin"), md5: Hashing.digest(Data(), .md5), options: UploadOptions())

        let environment = [
            "HOME": work.path, "PATH": "/usr/bin:/bin", "BUCKIA_REMOTE_M_PROVIDER": "s3", "BUCKIA_REMOTE_M_BUCKET": bucket,
            "BUCKIA_REMOTE_M_ENDPOINT": server.endpoint.absoluteString, "BUCKIA_REMOTE_M_CREDENTIAL_ACCESS_KEY_ID": "x",
            "BUCKIA_REMOTE_M_CREDENTIAL_SECRET_ACCESS_KEY": "y", "BUCKIA_REMOTE_M_STATE_DIRECTORY": provider.settings.stateDirectory.path,
        ]
        func cleanup(_ arguments: String...) throws -> (status: Int32, stdout: String) {
            let run = try ToolRun.run(
                path: URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia"),
                ["cleanup"] + arguments, exactEnvironment: environment, limit: .seconds(120))
            return (run.status, run.output)
        }
        func keys() async throws -> Set<String> { Set(try await provider.unfinishedUploads(prefix: "").map(\.key)) }
        let all: Set<String> = ["in/resumable.bin", "in/abandoned.bin", "in/foreign.bin", "out/foreign.bin"]

        // moto dates every upload 2010-11-10 (a fixed `Initiated` in its template), so the
        // default --max-age (24h) would take the foreign one: these runs pass a longer one.
        let dry = try cleanup("m:in/", "--dry-run", "--max-age", "20000d")
        #expect(dry.status == 0)
        #expect(dry.stdout.contains("Would abort in/abandoned.bin"))
        #expect(dry.stdout.contains("Kept in/foreign.bin") && dry.stdout.contains("Kept in/resumable.bin"))
        #expect(dry.stdout.contains("Would abort 1 unfinished upload; kept 2."), "\(dry.stdout)")
        #expect(try await keys() == all)

        let first = try cleanup("m:in/", "--max-age", "20000d")
        #expect(first.status == 0 && first.stdout.contains("Aborted 1 unfinished upload; kept 2."), "\(first.stdout)")
        #expect(try await keys() == all.subtracting(["in/abandoned.bin"]))

        let aged = try cleanup("m:in/", "--max-age", "0s")
        #expect(aged.status == 0 && aged.stdout.contains("Aborted 1 unfinished upload; kept 1."), "\(aged.stdout)")
        #expect(try await provider.unfinishedUploads(prefix: "").map(\.id).contains(resumableID))
        #expect(try await keys() == ["in/resumable.bin", "out/foreign.bin"])

        #expect(try cleanup("m:", "--max-age", "soon").status == 2)
    }
}
