import BuckiaCore
import Foundation
import Testing

@Suite("Byte streams")
struct ByteStreamTests {
    func collect(_ stream: ByteStream) async throws -> Data {
        var data = Data()
        for try await chunk in stream { data.append(chunk) }
        return data
    }

    @Test("A file streams in pieces, whole or by range, and a temporary it owns is removed at the end")
    func file() async throws {
        let data = Data((0..<(3 << 20) + 5).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-stream-\(UUID().uuidString)")
        try data.write(to: url)
        #expect(try await collect(.file(url, chunkSize: 1 << 20)) == data)
        #expect(try await collect(.file(url, range: 1_000..<2_100_000)) == data.subdata(in: 1_000..<2_100_000))
        #expect(try await collect(.file(url, removingWhenDone: true)) == data)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    /// Ranges no file has: an error, never a trap (`start + chunk` once overflowed near Int64.max).
    @Test("Ranges outside the file end in an error, never a trap", arguments: [
        Int64.max - 10..<Int64.max, 5..<Int64.max, -1..<4,
    ])
    func hostileRanges(_ range: Range<Int64>) async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-stream-\(UUID().uuidString)")
        try Data("twelve bytes".utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        await #expect(throws: BuckiaError.self) { _ = try await collect(try .file(url, range: range)) }
    }

    @Test("An object stream refuses a body short of, or longer than, the object's size")
    func counted() async throws {
        let key = try ObjectKey("counted.bin")
        let file = RemoteFile(path: key, size: 10)
        let short = try ObjectReadStream(file: file, bytes: .of(Data(count: 9)), verifyChecksums: false, key: key)
        let shortError = await #expect(throws: BuckiaError.self) { _ = try await collect(short.bytes) }
        #expect(shortError?.code == .corrupt)
        let long = try ObjectReadStream(file: file, bytes: .of(Data(count: 11)), verifyChecksums: false, key: key)
        let longError = await #expect(throws: BuckiaError.self) { _ = try await collect(long.bytes) }
        #expect(longError?.code == .corrupt)
        var described = RemoteFile(path: key, size: 3)
        described.checksums[.sha256] = try Hashing.digest(Data("abc".utf8), .sha256).hex
        let damaged = try ObjectReadStream(file: described, bytes: .of(Data("abd".utf8)), key: key)
        let damage = await #expect(throws: BuckiaError.self) { _ = try await collect(damaged.bytes) }
        #expect(damage?.code == .checksumMismatch)
        let whole = try ObjectReadStream(file: described, bytes: .of(Data("abc".utf8)), key: key)
        #expect(try await collect(whole.bytes) == Data("abc".utf8))
    }
}
