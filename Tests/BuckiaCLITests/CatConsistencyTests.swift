import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `cat` of an object overwritten while it is read never prints a mix of versions.
///
/// Deterministic: `cat`'s standard output is a pipe the test reads, so `cat` can get no further
/// than the pipe lets it. The test reads the first 2 MiB of a 32 MiB object (version A), has
/// `buckia cp` replace the object with version B of the same size, then reads the rest.
@Suite("buckia cat of an object overwritten meanwhile")
struct CatConsistencyTests {
    static let size = 32 << 20

    /// Version A: a pattern that does not repeat within 251 bytes. Version B differs from A in
    /// every byte, so any byte of B in the output breaks the prefix of A.
    static func version(_ flip: UInt8) -> Data {
        let block = (0..<251).map { UInt8($0) ^ flip }
        var data = Data(capacity: size)
        while data.count + block.count <= size { data.append(contentsOf: block) }
        data.append(contentsOf: block.prefix(size - data.count))
        return data
    }

    @Test("The output is A, or a prefix of A with a non-zero exit saying the object changed: never a byte of B")
    func overwrittenWhileRead() throws {
        let world = try BackgroundHome()
        let a = Self.version(0), b = Self.version(0xFF)
        try a.write(to: world.home.appendingPathComponent("a"))
        try b.write(to: world.home.appendingPathComponent("b"))
        let upload = try world.run("cp", world.home.appendingPathComponent("a").path, "k:object")
        try #require(upload.status == 0, "upload of A: \(upload.stderr)")

        let pipe = Pipe()
        let cat = try world.start("cat", "k:object", stdout: pipe.fileHandleForWriting)
        try pipe.fileHandleForWriting.close()
        let reader = pipe.fileHandleForReading.fileDescriptor
        var output = try Self.read(reader, upTo: 2 << 20)
        try #require(output.count == 2 << 20, "cat ended after \(output.count) bytes: \(cat.errorText)")

        // cat is blocked writing to the pipe: replace the object under it.
        let replace = try world.run("cp", "--ignore-times", world.home.appendingPathComponent("b").path, "k:object")
        try #require(replace.status == 0, "replacing with B: \(replace.stderr)")

        output.append(try Self.read(reader, upTo: Self.size * 2))
        let status = try cat.wait()
        let isPrefixOfA = output.count <= a.count && output == a.prefix(output.count)
        #expect(isPrefixOfA, "cat printed \(output.count) bytes that are not a prefix of version A (a mix of versions)")
        if output.count < a.count {
            #expect(status != 0, "cat printed \(output.count) of \(a.count) bytes and exited 0")
            #expect(cat.errorText.contains("changed"), "cat's message does not say the object changed: \(cat.errorText)")
        } else {
            #expect(status == 0 || cat.errorText.contains("changed"), "exit \(status): \(cat.errorText)")
        }
    }

    /// Reads from `descriptor` until `limit` bytes or the end, each wait for bytes bounded
    /// (10 s): a writer that stops without closing fails the test instead of hanging it.
    static func read(_ descriptor: Int32, upTo limit: Int) throws -> Data {
        var data = Data()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        while data.count < limit {
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiting, 1, 10_000)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw ReadFailure(description: "no bytes for 10 s after \(data.count)") }
            let count = Glibc.read(descriptor, buffer.baseAddress, min(buffer.count, limit - data.count))
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw ReadFailure(description: "read failed: errno \(errno)") }
            if count == 0 { break }
            data.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]).bindMemory(to: UInt8.self))
        }
        return data
    }

    struct ReadFailure: Error, CustomStringConvertible {
        let description: String
    }
}
