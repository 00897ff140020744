import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// Copy-on-write copies on a file system that makes them (an XFS volume the suite mounts: this
/// machine's ext4 cannot clone, and every other AtomicFile test runs the byte copy on it). What
/// shows a clone was made is the volume's free space: a byte copy of 48 MiB takes 48 MiB of it,
/// a clone next to nothing.
@Suite("Copy-on-write copies on XFS", .serialized, .enabled(if: SystemCalls.canClone, "this build has no clone call (the portable build)"),
    .enabled(if: ReflinkVolume.unavailable == nil, "needs an XFS volume: \(ReflinkVolume.unavailable ?? "")"))
struct CopyOnWriteTests {
    static let size = 48 << 20

    /// Writes `size` seeded bytes at `url` with `mode`.
    static func source(_ url: URL, seed: UInt64, size: Int = size, mode: mode_t = 0o640) throws -> Data {
        var bytes = SeededBytes(seed: seed)
        let data = bytes.data(count: size)
        try AtomicFile.write(data, to: url, permissions: mode)
        return data
    }

    static func mode(_ url: URL) throws -> Int? { try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int }

    @Test("AtomicFile.copy clones: the bytes, almost no space, the mode and date a byte copy gives, and the two files independent after")
    func copyClones() throws {
        let volume = try ReflinkVolume.mount()
        defer { volume.remove() }
        let source = volume.root.appendingPathComponent("source.bin"), copy = volume.root.appendingPathComponent("copy.bin")
        let data = try Self.source(source, seed: 1)
        let before = try volume.freeBytes()
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let hasher = try DigestHasher(.sha256)
        let copied = try AtomicFile.copy(from: source, to: copy, options: AtomicFile.Options(modificationDate: date)) { hasher.update($0) }
        let used = before - (try volume.freeBytes())
        #expect(copied == Int64(Self.size))
        #expect(used < 4 << 20, "the copy took \(used) bytes of space: the bytes were written, not cloned")
        #expect(try Data(contentsOf: copy) == data)
        // What observe saw is what the copy holds.
        #expect(hasher.finalize() == Hashing.sha256(data))
        #expect(try Self.mode(copy) == Int(0o640 & ~CopyOnWrite.creationMask))
        #expect(try FileManager.default.attributesOfItem(atPath: copy.path)[.modificationDate] as? Date == date)
        // Nothing of the clone's private folder is left.
        #expect(try FileManager.default.contentsOfDirectory(atPath: volume.root.path).sorted() == ["copy.bin", "source.bin"])
        // Written in place, the copy takes blocks of its own; the source keeps its bytes.
        let handle = try FileHandle(forWritingTo: copy)
        try handle.write(contentsOf: Data(repeating: 0xAB, count: 1 << 20))
        try handle.close()
        #expect(try Data(contentsOf: source) == data)
        #expect(try Data(contentsOf: copy).prefix(1 << 20) == Data(repeating: 0xAB, count: 1 << 20))
    }

    @Test("A clone replacing a file keeps the replaced file's mode, as a byte copy does")
    func replaceKeepsMode() throws {
        let volume = try ReflinkVolume.mount()
        defer { volume.remove() }
        let source = volume.root.appendingPathComponent("source.bin"), copy = volume.root.appendingPathComponent("copy.bin")
        let data = try Self.source(source, seed: 2, mode: 0o644)
        try AtomicFile.write(Data("old".utf8), to: copy, permissions: 0o600)
        let before = try volume.freeBytes()
        try AtomicFile.copy(from: source, to: copy)
        #expect(before - (try volume.freeBytes()) < 4 << 20)
        #expect(try Data(contentsOf: copy) == data)
        #expect(try Self.mode(copy) == 0o600)
    }

    @Test("Below the smallest size cloned, and across file systems, the bytes are copied")
    func fallbacks() throws {
        let volume = try ReflinkVolume.mount()
        defer { volume.remove() }
        let small = volume.root.appendingPathComponent("small.bin")
        let smallData = try Self.source(small, seed: 3, size: Int(CopyOnWrite.minimumSize) - 1)
        let input = try LocalFile.openForReading(small)
        defer { try? input.close() }
        #expect(try CopyOnWrite.clone(input, in: try DirectoryHandle(path: volume.root.path)) == nil)
        try AtomicFile.copy(from: small, to: volume.root.appendingPathComponent("small-copy.bin"))
        #expect(try Data(contentsOf: volume.root.appendingPathComponent("small-copy.bin")) == smallData)
        // From XFS to the machine's own file system: two file systems cannot share blocks.
        let large = volume.root.appendingPathComponent("large.bin")
        let largeData = try Self.source(large, seed: 4, size: 1 << 20)
        let elsewhere = try ScratchDirectory()
        defer { elsewhere.remove() }
        try AtomicFile.copy(from: large, to: elsewhere.file("large.bin"))
        #expect(try Data(contentsOf: elsewhere.file("large.bin")) == largeData)
        #expect(try elsewhere.contents() == ["large.bin"])
    }

    @Test("A clone is made on XFS and refused on the machine's own file system, with nothing left behind")
    func cloneOrNil() throws {
        let volume = try ReflinkVolume.mount()
        defer { volume.remove() }
        let large = volume.root.appendingPathComponent("large.bin")
        let data = try Self.source(large, seed: 5, size: 1 << 20)
        let input = try LocalFile.openForReading(large)
        defer { try? input.close() }
        let clone = try #require(try CopyOnWrite.clone(input, in: try DirectoryHandle(path: volume.root.path)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: clone.path)) == data)
        clone.discard()
        #expect(try FileManager.default.contentsOfDirectory(atPath: volume.root.path) == ["large.bin"])
    }
}
