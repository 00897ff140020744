import BuckiaCore
@testable import BuckiaLocal
import Foundation
import Testing

/// The local provider's multipart uploads (`partUploads`), beyond what the conformance scenarios
/// ask of every provider: kept in the folder, so two providers over it (two processes, two
/// gateways) serve one upload; records that are damaged or hostile refused, never trusted; a
/// part whose body is not its declared length keeps nothing.
@Suite("Local provider: multipart uploads kept in the folder")
struct LocalPartUploadTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-local-parts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func bytes(_ count: Int) throws -> Data { Data(try SecureRandom.bytes(count: count)) }

    /// Writes `data` to a new file in `folder` and returns it with its MD5.
    static func file(_ data: Data, in folder: URL) throws -> (URL, Digest) {
        let url = folder.appendingPathComponent("part-\(UUID().uuidString)")
        try data.write(to: url)
        return (url, try Hashing.digest(data, .md5))
    }

    static func uploadFolder(_ root: URL, _ id: String) -> URL { root.appendingPathComponent(".buckia/uploads/\(id)", isDirectory: true) }

    @Test("Started by one provider, given parts by two over the same folder, listed and completed by the other: the object is the upload's file, linked")
    func twoProviders() async throws {
        let work = try Self.folder()
        defer { try? FileManager.default.removeItem(at: work) }
        let root = work.appendingPathComponent("root")
        let (first, second) = (try LocalProvider(root: root), try LocalProvider(root: root))
        let key = try ObjectKey("shared/big.bin")
        let id = try await first.startPartUpload(to: key, options: UploadOptions(contentType: "application/x-test"))
        let parts = [try Self.bytes(1 << 20), try Self.bytes(1 << 20), try Self.bytes(1000)]
        var sent: [UploadedPart] = []
        for (index, data) in parts.enumerated() {
            let (url, md5) = try Self.file(data, in: work)
            sent.append(try await (index % 2 == 0 ? first : second).uploadPart(index + 1, of: id, to: key, file: url, md5: md5))
        }
        let listed = try await second.uploadedParts(of: id, to: key)
        #expect(listed.map(\.etag) == sent.map(\.etag) && listed.map(\.size) == parts.map { Int64($0.count) })
        var assembly = stat()
        try #require(lstat(Self.uploadFolder(root, id).appendingPathComponent("object").path, &assembly) == 0)
        let stored = try await second.completePartUpload(id, to: key, parts: listed, condition: nil)
        var object = stat()
        try #require(lstat(root.appendingPathComponent("shared/big.bin").path, &object) == 0)
        #expect(object.st_ino == assembly.st_ino && object.st_nlink == 1, "the object is the upload's file, and only the object names it")
        #expect(try await first.readData(remotePath: key, options: ReadOptions()) == parts.reduce(Data(), +))
        #expect(try await first.stat(remotePath: key)?.etag == stored.etag)
        #expect(try await first.stat(remotePath: key)?.contentType == "application/x-test")
        // The completion, sent again through the first (its answer lost), finds the object.
        #expect(try await first.completePartUpload(id, to: key, parts: listed, condition: nil).etag == stored.etag)
        try await first.abortPartUpload(id, to: key)
        #expect(!FileManager.default.fileExists(atPath: Self.uploadFolder(root, id).path))
    }

    /// Records an upload's folder may hold that the provider did not write.
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case garbageRecord, deepRecord, hugeRecord, wrongShape, garbagePart, partAsFolder, escapingPartFile, negativePlace, hugeStride
        var testDescription: String { rawValue }
    }

    @Test("A damaged or hostile record is refused as corrupt (or as no upload), never trusted or a crash; aborting still removes the upload", arguments: Damage.allCases)
    func damagedRecords(_ damage: Damage) async throws {
        let work = try Self.folder()
        defer { try? FileManager.default.removeItem(at: work) }
        let root = work.appendingPathComponent("root")
        let provider = try LocalProvider(root: root)
        let key = try ObjectKey("d/object.bin")
        let id = try await provider.startPartUpload(to: key, options: UploadOptions())
        let (url, md5) = try Self.file(try Self.bytes(100), in: work)
        _ = try await provider.uploadPart(1, of: id, to: key, file: url, md5: md5)
        let folder = Self.uploadFolder(root, id)
        let record = folder.appendingPathComponent("upload")
        let part = folder.appendingPathComponent("parts/00001")
        switch damage {
        case .garbageRecord: try Data("{\"key\": ".utf8).write(to: record)
        case .deepRecord: try Data((String(repeating: "[", count: 30_000) + String(repeating: "]", count: 30_000)).utf8).write(to: record)
        case .hugeRecord: try Data(repeating: 0x20, count: 1 << 20).write(to: record)
        case .wrongShape: try Data("{\"key\": 7}".utf8).write(to: record)
        case .garbagePart: try Data("not json".utf8).write(to: part)
        case .escapingPartFile:
            try Data(#"{"size": 100, "md5": "00", "received": 0, "file": "../../../../../victim"}"#.utf8).write(to: part)
        case .negativePlace:
            try Data(#"{"size": 100, "md5": "00", "received": 0, "offset": -4096}"#.utf8).write(to: part)
        case .hugeStride:
            try Data(#"{"stride": 9000000000000000000}"#.utf8).write(to: folder.appendingPathComponent("stride"))
        case .partAsFolder:
            try FileManager.default.removeItem(at: part)
            try FileManager.default.createDirectory(at: part, withIntermediateDirectories: false)
        }
        do {
            let parts = try await provider.uploadedParts(of: id, to: key)
            // A part record that is a folder is no record: the part is not held. The part size
            // is not read to list the parts.
            #expect((damage == .partAsFolder && parts.isEmpty) || (damage == .hugeStride && parts.count == 1), "\(damage): \(parts)")
        } catch let error as BuckiaError {
            #expect(error.code == .corrupt, "\(damage): \(error)")
        }
        // Sending the part again reads the record it replaces, and never acts on a damaged one:
        // the file outside the upload that an escaping record names is still there.
        let victim = work.appendingPathComponent("victim")
        try Data("keep".utf8).write(to: victim)
        let resent: BuckiaError.Code?
        do {
            _ = try await provider.uploadPart(1, of: id, to: key, file: url, md5: md5)
            resent = nil
        } catch let error as BuckiaError {
            resent = error.code
        }
        switch damage {
        case .partAsFolder: break  // a folder in a record's place is no record, and may be refused as in the way
        case .hugeStride:
            // Its place taken, the part goes to a file of its own; completing reads the size,
            // and refuses it rather than compute a place past any object.
            #expect(resent == nil, "\(damage): \(String(describing: resent))")
            let parts = try await provider.uploadedParts(of: id, to: key)
            do {
                _ = try await provider.completePartUpload(id, to: key, parts: parts, condition: nil)
                Issue.record("\(damage): completed over a damaged part size")
            } catch let error as BuckiaError {
                #expect(error.code == .corrupt, "\(damage): \(error)")
            }
        default:
            #expect(resent == .corrupt, "\(damage): the part sent again over a damaged record: \(String(describing: resent))")
        }
        #expect(FileManager.default.fileExists(atPath: victim.path), "\(damage): a file outside the upload was removed")
        try await provider.abortPartUpload(id, to: key)
        #expect(!FileManager.default.fileExists(atPath: folder.path), "\(damage): the upload was not removed")
    }

    @Test("A completion in progress elsewhere (its lock held) refuses parts, a second completion and an abort; one whose completer died (its lock free) is cleared by the next request")
    func completingMark() async throws {
        let work = try Self.folder()
        defer { try? FileManager.default.removeItem(at: work) }
        let root = work.appendingPathComponent("root")
        let provider = try LocalProvider(root: root)
        let key = try ObjectKey("c/object.bin")
        let id = try await provider.startPartUpload(to: key, options: UploadOptions())
        let data = try Self.bytes(1000)
        let (url, md5) = try Self.file(data, in: work)
        let part = try await provider.uploadPart(1, of: id, to: key, file: url, md5: md5)
        // Another completer at work: the mark exists and its lock is held.
        let mark = Self.uploadFolder(root, id).appendingPathComponent("completing")
        let descriptor = open(mark.path, O_RDWR | O_CREAT, 0o600)
        try #require(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
        func code(_ body: () async throws -> Void) async -> BuckiaError.Code? {
            do {
                try await body()
                return nil
            } catch let error as BuckiaError {
                return error.code
            } catch {
                return .io
            }
        }
        #expect(await code { _ = try await provider.uploadPart(2, of: id, to: key, file: url, md5: md5) } == .notFound, "a part while the upload is completed")
        #expect(await code { _ = try await provider.completePartUpload(id, to: key, parts: [part], condition: nil) } == .transient, "a second completion")
        #expect(await code { try await provider.abortPartUpload(id, to: key) } == .transient, "an abort during a completion")
        // The completer dies: its lock goes with it, the mark stays.
        close(descriptor)
        #expect(FileManager.default.fileExists(atPath: mark.path))
        let again = try await provider.uploadPart(2, of: id, to: key, file: url, md5: md5)
        #expect(!FileManager.default.fileExists(atPath: mark.path), "the dead completer's mark was not cleared")
        _ = try await provider.completePartUpload(id, to: key, parts: [part, again], condition: nil)
        #expect(try await provider.readData(remotePath: key, options: ReadOptions()) == data + data)
        // An abort finding a dead completer's mark ends the upload.
        let other = try await provider.startPartUpload(to: key, options: UploadOptions())
        #expect(FileManager.default.createFile(atPath: Self.uploadFolder(root, other).appendingPathComponent("completing").path, contents: nil))
        try await provider.abortPartUpload(other, to: key)
        #expect(!FileManager.default.fileExists(atPath: Self.uploadFolder(root, other).path), "an abort refused by a dead completer's mark")
    }

    @Test("A part whose body is not its declared length keeps nothing and frees its place; a key under .buckia, or a made-up upload id, is refused")
    func refusedParts() async throws {
        let work = try Self.folder()
        defer { try? FileManager.default.removeItem(at: work) }
        let root = work.appendingPathComponent("root")
        let provider = try LocalProvider(root: root)
        await #expect(throws: BuckiaError.self) { _ = try await provider.startPartUpload(to: try ObjectKey(".buckia/uploads/x"), options: UploadOptions()) }
        let key = try ObjectKey("p/object.bin")
        let data = try Self.bytes(4096)
        do {
            _ = try await provider.uploadedParts(of: String(repeating: "ab", count: 16), to: key)
            Issue.record("a made-up upload id was found")
        } catch let error as BuckiaError {
            #expect(error.code == .notFound)
        }
        let id = try await provider.startPartUpload(to: key, options: UploadOptions())
        for count in [4095, 4097] {
            #expect(throws: BuckiaError.self, "a body of \(count) bytes sent as 4096") {
                _ = try provider.receivePart(1, of: id, to: key, length: 4096) { write in
                    try write(Data(repeating: 1, count: count))
                    return try Hashing.digest(data, .md5)
                }
            }
        }
        let places = Self.uploadFolder(root, id).appendingPathComponent("places")
        #expect(try FileManager.default.contentsOfDirectory(atPath: places.path).isEmpty, "a refused part kept its place")
        let part = try provider.receivePart(1, of: id, to: key, length: 4096) { write in
            try write(data)
            return try Hashing.digest(data, .md5)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: places.path) == ["00001"], "the part sent again did not take its place")
        let files = Self.uploadFolder(root, id).appendingPathComponent("files")
        let leftFiles = FileManager.default.fileExists(atPath: files.path) ? try FileManager.default.contentsOfDirectory(atPath: files.path) : []
        #expect(leftFiles.isEmpty, "\(leftFiles)")
        _ = try await provider.completePartUpload(id, to: key, parts: [part], condition: nil)
        #expect(try await provider.readData(remotePath: key, options: ReadOptions()) == data)
    }
}
