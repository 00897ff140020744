import BuckiaCore
import BuckiaLocal
import BuckiaTestSupport
import Foundation
import Testing

/// The local provider on a file system that clones (an XFS volume the suite mounts): an upload
/// from a file, a download to one and a copy within the root are copy-on-write clones — the
/// volume's free space shows it — and a clone keeps every guarantee of a written copy: the
/// known checksums checked, the write condition held, nothing left in `.buckia/tmp`.
@Suite("Local provider clones on XFS", .serialized, .enabled(if: SystemCalls.canClone, "this build has no clone call (the portable build)"),
    .enabled(if: ReflinkVolume.unavailable == nil, "needs an XFS volume: \(ReflinkVolume.unavailable ?? "")"))
struct LocalProviderCloneTests {
    static let size = 32 << 20

    static func bytes(_ seed: UInt64, _ count: Int = size) -> Data {
        var random = RandomBytes(seed: seed)
        var buffer = [UInt8](repeating: 0, count: count)
        random.fill(&buffer)
        return Data(buffer)
    }

    /// What `.buckia/tmp` holds: every clone's private folder is gone once its call returns.
    static func leftovers(_ root: URL) throws -> [String] {
        let temporary = root.appendingPathComponent(".buckia/tmp")
        guard FileManager.default.fileExists(atPath: temporary.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: temporary.path)
    }

    @Test("Upload, download and copy of 32 MiB each take almost no space, and keep the bytes and the time")
    func transfersClone() async throws {
        let volume = try ReflinkVolume.mount()
        defer { volume.remove() }
        let root = volume.root.appendingPathComponent("root")
        let provider = try LocalProvider(root: root)
        let data = Self.bytes(1)
        let local = volume.root.appendingPathComponent("local.bin")
        try data.write(to: local)
        let date = Date(timeIntervalSince1970: 1_750_000_000)
        try FileManager.default.setAttributes([.modificationDate: date, .posixPermissions: 0o640], ofItemAtPath: local.path)

        var free = try volume.freeBytes()
        func spent() throws -> Int64 {
            let now = try volume.freeBytes()
            defer { free = now }
            return free - now
        }
        let uploaded = try await provider.uploadFile(localURL: local, remotePath: "a/up.bin")
        #expect(try spent() < 4 << 20, "the upload wrote the bytes")
        #expect(uploaded.size == Int64(Self.size))
        #expect(uploaded.modificationDate == date)
        #expect(try FileManager.default.attributesOfItem(atPath: root.appendingPathComponent("a/up.bin").path)[.posixPermissions] as? Int
            == Int(0o640 & ~CopyOnWrite.creationMask))

        let downloaded = volume.root.appendingPathComponent("down.bin")
        _ = try await provider.downloadFile(remotePath: "a/up.bin", localURL: downloaded)
        #expect(try spent() < 4 << 20, "the download wrote the bytes")
        #expect(try Data(contentsOf: downloaded) == data)
        #expect(try FileManager.default.attributesOfItem(atPath: downloaded.path)[.modificationDate] as? Date == date)

        let copied = try await provider.copyFile(from: try ObjectKey("a/up.bin"), to: try ObjectKey("b/copy.bin"))
        #expect(try spent() < 4 << 20, "the copy wrote the bytes")
        #expect(copied.modificationDate == date)
        #expect(try await provider.readData(remotePath: "b/copy.bin") == data)
        #expect(try Self.leftovers(root).isEmpty)

        // A ranged download is of part of the bytes: written, not cloned.
        let part = volume.root.appendingPathComponent("part.bin")
        _ = try await provider.downloadFile(remotePath: "a/up.bin", localURL: part, options: ReadOptions(range: 0..<(1 << 20)))
        #expect(try Data(contentsOf: part) == data.prefix(1 << 20))
    }

    @Test("A clone with a wrong known checksum, or under a condition that fails, stores nothing and leaves nothing")
    func cloneKeepsGuarantees() async throws {
        let volume = try ReflinkVolume.mount()
        defer { volume.remove() }
        let root = volume.root.appendingPathComponent("root")
        let provider = try LocalProvider(root: root)
        let data = Self.bytes(2)
        let local = volume.root.appendingPathComponent("local.bin")
        try data.write(to: local)

        let wrong = UploadOptions(knownChecksums: [.md5: String(repeating: "0", count: 32)])
        await #expect(throws: BuckiaError.self) { try await provider.uploadFile(localURL: local, remotePath: "x.bin", options: wrong) }
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("x.bin").path))
        let right = UploadOptions(knownChecksums: [.md5: try Hashing.digest(data, .md5).hex])
        try await provider.uploadFile(localURL: local, remotePath: "x.bin", options: right)
        #expect(try await provider.readData(remotePath: "x.bin") == data)

        let other = Self.bytes(3)
        try other.write(to: local)
        do {
            try await provider.uploadFile(localURL: local, remotePath: "x.bin", options: UploadOptions(condition: .ifNoneMatch))
            Issue.record("an upload under If-None-Match replaced an object")
        } catch let error as BuckiaError {
            #expect(error.code == .conditionNotMatch)
        }
        #expect(try await provider.readData(remotePath: "x.bin") == data)
        #expect(try Self.leftovers(root).isEmpty)
    }
}
