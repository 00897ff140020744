import BuckiaChunks
import BuckiaCore
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A store whose settings were lost is refused until adopted with the options its chunks were
/// written with; chunks are never written through a symbolic link out of the store; what a
/// killed writer left in a chunk folder goes with the next write there.
@Suite("Chunk stores: lost settings, planted links, killed writers")
struct ChunkStoreHardeningTests {
    static let key = [UInt8](repeating: 7, count: 32)

    /// A store under `folder` written through compression and encryption, whose settings file
    /// is then removed.
    func storeWithLostSettings(_ folder: URL) async throws -> ComposableFileSystemChunkStorage {
        let base = ComposableFileSystemChunkStorage(baseURL: folder)
        let settings = ChunkStoreSettings(transforms: ["zlib", "aes-256-gcm"], keyCheck: EncryptedRetrieval.keyCheck(for: Self.key))
        try await settings.establish(in: base, adoptingThrough: nil)
        let decorated = try base.decorated { try CompressedRetrieval(wrapped: EncryptedRetrieval(wrapped: $0, key: Self.key)) }
        for value in ["one", "two", "three"] { _ = try await decorated.storeChunk(Data(String(repeating: value, count: 100).utf8)) }
        try FileManager.default.removeItem(at: folder.appendingPathComponent(ChunkStoreSettings.path))
        return base
    }

    @Test("A store with chunks and no settings is refused without adoption")
    func lostSettingsRefused() async throws {
        let scratch = try Scratch()
        let base = try await storeWithLostSettings(scratch.url)
        await #expect {
            try await ChunkStoreSettings(transforms: []).establish(in: base, adoptingThrough: nil)
        } throws: { ($0 as? BuckiaError)?.code == .invalidConfiguration && ($0 as? BuckiaError)?.message.contains("no record") == true }
        #expect(!FileManager.default.fileExists(atPath: scratch.path(ChunkStoreSettings.path).path), "nothing was recorded")
    }

    @Test("Adoption through other transforms or another key is refused")
    func wrongAdoptionRefused() async throws {
        let scratch = try Scratch()
        let base = try await storeWithLostSettings(scratch.url)
        let plain = base.decorated { VerifiedRetrieval(wrapped: $0, organization: base.organization) }
        await #expect(throws: BuckiaError.self) { try await ChunkStoreSettings(transforms: []).establish(in: base, adoptingThrough: plain) }
        let other = [UInt8](repeating: 8, count: 32)
        let wrongKey = try base.decorated {
            VerifiedRetrieval(wrapped: try CompressedRetrieval(wrapped: EncryptedRetrieval(wrapped: $0, key: other)), organization: base.organization)
        }
        await #expect(throws: BuckiaError.self) {
            try await ChunkStoreSettings(transforms: ["zlib", "aes-256-gcm"], keyCheck: EncryptedRetrieval.keyCheck(for: other))
                .establish(in: base, adoptingThrough: wrongKey)
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.path(ChunkStoreSettings.path).path))
    }

    @Test("Adoption through the transforms and key the chunks were written with records them")
    func rightAdoptionRecords() async throws {
        let scratch = try Scratch()
        let base = try await storeWithLostSettings(scratch.url)
        let right = try base.decorated {
            VerifiedRetrieval(wrapped: try CompressedRetrieval(wrapped: EncryptedRetrieval(wrapped: $0, key: Self.key)), organization: base.organization)
        }
        let settings = ChunkStoreSettings(transforms: ["zlib", "aes-256-gcm"], keyCheck: EncryptedRetrieval.keyCheck(for: Self.key))
        try await settings.establish(in: base, adoptingThrough: right)
        #expect(FileManager.default.fileExists(atPath: scratch.path(ChunkStoreSettings.path).path))
        // Recorded: the next put without adoption is checked against them as usual.
        try await settings.establish(in: base, adoptingThrough: nil)
        await #expect(throws: BuckiaError.self) { try await ChunkStoreSettings(transforms: []).establish(in: base, adoptingThrough: nil) }
    }

    @Test("An empty store without settings is simply set up")
    func emptyStore() async throws {
        let scratch = try Scratch()
        try await ChunkStoreSettings(transforms: []).establish(in: ComposableFileSystemChunkStorage(baseURL: scratch.url), adoptingThrough: nil)
        #expect(FileManager.default.fileExists(atPath: scratch.path(ChunkStoreSettings.path).path))
    }

    @Test("A chunk is never written through a fan-out folder that is a symbolic link")
    func linkedFanOut() async throws {
        let scratch = try Scratch()
        let outside = scratch.path("outside")
        let store = scratch.path("store")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        let data = Data("planted".utf8)
        let identifier = try ChunkIdentifier(id: Hashing.sha256Hex(data))
        let path = GitStyleOrganization().storagePath(for: identifier)
        let folder = String(path.split(separator: "/").first ?? "")
        #expect(symlink(outside.path, store.appendingPathComponent(folder).path) == 0)
        let retrieval = FileSystemRetrieval(baseURL: store, durability: .none)
        await #expect { try await retrieval.writeChunk(data, at: path, metadata: nil) } throws: { ($0 as? BuckiaError)?.code == .invalidPath }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }

    @Test("A write into a chunk folder removes the temporary a killed writer left there, and no live writer's")
    func killedWritersTemporarySwept() async throws {
        let scratch = try Scratch()
        let store = FileSystemRetrieval(baseURL: scratch.url, durability: .none)
        let folder = scratch.path("ab")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // What `chunk put` killed mid-chunk left: named, empty, unlocked, dated now.
        let left = folder.appendingPathComponent(Temporaries.makeName())
        try Data().write(to: left)
        // A live writer's: locked by this process, through a descriptor kept open.
        let live = folder.appendingPathComponent(Temporaries.makeName())
        let held = try LocalFile.createLockedTemporary(live)
        defer { try? held.close() }
        // And one in a folder nothing writes into: left for a listing's sweep.
        try FileManager.default.createDirectory(at: scratch.path("cd"), withIntermediateDirectories: true)
        let elsewhere = scratch.path("cd").appendingPathComponent(Temporaries.makeName())
        try Data().write(to: elsewhere)

        try await store.writeChunk(Data("chunk".utf8), at: "ab/cdef", metadata: nil)
        #expect(!FileManager.default.fileExists(atPath: left.path), "the killed writer's temporary is still there")
        #expect(FileManager.default.fileExists(atPath: live.path), "a live writer's temporary was taken")
        #expect(FileManager.default.fileExists(atPath: elsewhere.path))
        #expect(try await store.readChunk(at: "ab/cdef") == Data("chunk".utf8))
    }
}
