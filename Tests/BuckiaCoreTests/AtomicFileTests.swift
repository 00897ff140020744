import BuckiaCore
import Foundation
import Testing

/// What a test body throws on purpose.
private struct Interrupted: Error {}

private func fileModificationDate(of url: URL) throws -> Date {
    let file = try LocalFile.openForReading(url)
    defer { try? file.close() }
    return try file.status().modificationDate
}

struct AtomicFileTests {
    @Test("A write can be read back, with the requested mode", arguments: [0, 1, 4096, 3 * 1024 * 1024 + 5])
    func writeThenRead(size: Int) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        var generator = SeededBytes(seed: UInt64(size))
        let data = generator.data(count: size)
        let url = directory.file("out.bin")
        try AtomicFile.write(data, to: url, permissions: 0o600)
        #expect(try Data(contentsOf: url) == data)
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try directory.contents() == ["out.bin"])
    }

    @Test("A write replaces an existing file whole")
    func overwrite() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let url = directory.file("f")
        try AtomicFile.write(Data(repeating: 1, count: 10_000), to: url)
        try AtomicFile.write(Data("short".utf8), to: url)
        #expect(try Data(contentsOf: url) == Data("short".utf8))
    }

    @Test("A throwing body leaves the destination untouched and no temporary file", arguments: [true, false])
    func throwingBody(destinationExists: Bool) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let url = directory.file("keep.txt")
        if destinationExists { try Data("original".utf8).write(to: url) }
        #expect(throws: Interrupted.self) {
            try AtomicFile.write(to: url, options: AtomicFile.Options()) { file in
                try file.write(Data("half of the new".utf8))
                throw Interrupted()
            }
        }
        if destinationExists {
            #expect(try Data(contentsOf: url) == Data("original".utf8))
            #expect(try directory.contents() == ["keep.txt"])
        } else {
            #expect(try directory.contents().isEmpty)
        }
    }

    @Test("The temporary file goes where the options say, and is gone afterwards")
    func temporaryDirectory() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let staging = directory.url.appendingPathComponent("staging", isDirectory: true)
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: false)
        let url = directory.file("final")
        var seen: [String] = []
        try AtomicFile.write(to: url, options: AtomicFile.Options(temporaryDirectory: staging, durable: false)) { file in
            seen = try FileManager.default.contentsOfDirectory(atPath: staging.path)
            try file.write(Data("x".utf8))
        }
        #expect(seen.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: staging.path).isEmpty)
        #expect(try Data(contentsOf: url) == Data("x".utf8))
    }

    @Test("Copy streams every byte, reports the count and shows each chunk to the observer",
          arguments: [0, 1, 1 << 20, 3 * (1 << 20) + 123])
    func copy(size: Int) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        var generator = SeededBytes(seed: 77)
        let data = generator.data(count: size)
        let source = directory.file("source")
        let destination = directory.file("destination")
        try data.write(to: source)

        let hasher = try DigestHasher(.sha256)
        var observed = 0
        let copied = try AtomicFile.copy(from: source, to: destination) { chunk in
            hasher.update(chunk)
            observed += chunk.count
        }
        #expect(copied == Int64(size))
        #expect(observed == size)
        #expect(try hasher.finalize() == Hashing.digest(data, .sha256))
        #expect(try Data(contentsOf: destination) == data)
        #expect(try directory.contents() == ["destination", "source"])
    }

    @Test("Copying a missing source fails with notFound and creates nothing")
    func copyMissingSource() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let error = #expect(throws: BuckiaError.self) {
            try AtomicFile.copy(from: directory.file("absent"), to: directory.file("destination"))
        }
        #expect(error?.code == .notFound)
        #expect(error?.path == directory.file("absent").path)
        #expect(try directory.contents().isEmpty)
    }

    @Test(
        "The modification date is applied",
        arguments: [0, 1_000_000_000.25, 1_700_000_000.5, -86_400.75] as [TimeInterval])
    func modificationDate(seconds: TimeInterval) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let date = Date(timeIntervalSince1970: seconds)
        let written = directory.file("written")
        try AtomicFile.write(to: written, options: AtomicFile.Options(modificationDate: date)) { try $0.write(Data("x".utf8)) }
        #expect(abs(try fileModificationDate(of: written).timeIntervalSince(date)) < 0.000_01)

        let copied = directory.file("copied")
        try AtomicFile.copy(from: written, to: copied, options: AtomicFile.Options(modificationDate: date))
        #expect(abs(try fileModificationDate(of: copied).timeIntervalSince(date)) < 0.000_01)
    }
}

struct LocalFileTests {
    @Test("Positional reads stop at the end of the file", arguments: [(0, 4, "0123"), (8, 4, "89"), (10, 4, ""), (3, 0, "")])
    func positionalRead(offset: Int64, count: Int, expected: String) throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let url = directory.file("digits")
        try Data("0123456789".utf8).write(to: url)
        let file = try LocalFile.openForReading(url)
        #expect(try file.read(count: count, at: offset) == Data(expected.utf8))
        #expect(try file.status().size == 10)
        try file.close()
        try file.close()
    }

    @Test("Exclusive creation refuses an existing file; opening a missing one is notFound")
    func openErrors() throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let url = directory.file("exists")
        try Data().write(to: url)
        let exists = #expect(throws: BuckiaError.self) { try LocalFile.createExclusive(url) }
        #expect(exists?.code == .alreadyExists)
        #expect(exists?.path == url.path)
        let missing = #expect(throws: BuckiaError.self) { try LocalFile.openForReading(directory.file("missing")) }
        #expect(missing?.code == .notFound)
    }
}

// Regression: copies and replacements once came out 0644 whatever the source or the file
// they replaced, so a 0600 key became world-readable.
@Suite("AtomicFile permissions")
struct AtomicFilePermissionTests {
    private func mode(_ url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int) ?? -1
    }

    @Test("A copy keeps the source's permission bits, never setuid, setgid or sticky (as cp without -p)", arguments: [
        (0o600, 0o600), (0o755, 0o755), (0o640, 0o640), (0o4755, 0o755), (0o2750, 0o750), (0o1755, 0o755),
    ])
    func copyKeepsMode(_ permissions: Int, _ expected: Int) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-mode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("source")
        try Data("secret".utf8).write(to: source)
        try FileManager.default.setAttributes([.posixPermissions: permissions], ofItemAtPath: source.path)
        let copy = folder.appendingPathComponent("copy")
        try AtomicFile.copy(from: source, to: copy)
        #expect(try mode(copy) == expected)
    }

    @Test("A copy over an existing file keeps that file's mode")
    func copyOverKeepsDestinationMode() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-mode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("source")
        try Data("new".utf8).write(to: source)
        try FileManager.default.setAttributes([.posixPermissions: 0o4755], ofItemAtPath: source.path)
        let destination = folder.appendingPathComponent("destination")
        try AtomicFile.write(Data("old".utf8), to: destination, permissions: 0o600)
        try AtomicFile.copy(from: source, to: destination)
        #expect(try mode(destination) == 0o600)
        #expect(try Data(contentsOf: destination) == Data("new".utf8))
    }

    @Test("Replacing a file keeps its mode")
    func replaceKeepsMode() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-mode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("key.pem")
        try AtomicFile.write(Data("v1".utf8), to: file, permissions: 0o600)
        try AtomicFile.write(Data("v2".utf8), to: file)
        #expect(try mode(file) == 0o600)
        #expect(try Data(contentsOf: file) == Data("v2".utf8))
    }

    @Test("Temporary files live in a folder only this user can open")
    func temporaryFolderIsPrivate() async throws {
        let folderMode = try await TemporaryFile.with { url in try mode(url.deletingLastPathComponent()) }
        #expect(folderMode == 0o700)
    }
}
