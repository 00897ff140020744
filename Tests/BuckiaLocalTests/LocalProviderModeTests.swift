import BuckiaCore
import BuckiaLocal
import Foundation
import Testing

/// The mode of a local remote's objects: an uploaded file's permission bits (as `cp` gives a
/// new file), so a private file does not become world-readable by being copied.
@Suite("Local provider: object modes")
struct LocalProviderModeTests {
    /// This process's umask, read without changing it (`umask(2)` would race parallel tests).
    static func umask() throws -> mode_t {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") })
        return try #require(mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8))
    }

    static func mode(of url: URL) throws -> mode_t {
        var info = stat()
        try #require(lstat(url.path, &info) == 0)
        return info.st_mode & 0o7777
    }

    @Test(
        "An uploaded file's object has the file's permission bits less the umask, never setuid, setgid or sticky",
        arguments: [0o600, 0o640, 0o644, 0o700, 0o755, 0o4755, 0o2750, 0o1644, 0o6711] as [mode_t])
    func uploadKeepsMode(_ mode: mode_t) async throws {
        let fixture = try LocalFixture()
        let source = fixture.outside.appendingPathComponent("source")
        try Data("private\n".utf8).write(to: source)
        try #require(chmod(source.path, mode) == 0)
        try await fixture.provider.uploadFile(localURL: source, remotePath: "dir/object", options: UploadOptions())
        let expected = mode & 0o777 & ~(try Self.umask())
        let actual = try Self.mode(of: fixture.root.appendingPathComponent("dir/object"))
        #expect(actual == expected, "object mode \(String(actual, radix: 8)), expected \(String(expected, radix: 8))")
    }

    @Test("Replacing an object gives it the new file's mode")
    func replacementTakesNewMode() async throws {
        let fixture = try LocalFixture()
        let source = fixture.outside.appendingPathComponent("source")
        try Data("open\n".utf8).write(to: source)
        try #require(chmod(source.path, 0o644) == 0)
        try await fixture.provider.uploadFile(localURL: source, remotePath: "object", options: UploadOptions())
        try #require(chmod(source.path, 0o600) == 0)
        try await fixture.provider.uploadFile(localURL: source, remotePath: "object", options: UploadOptions())
        #expect(try Self.mode(of: fixture.root.appendingPathComponent("object")) == 0o600 & ~(try Self.umask()))
    }

    @Test("An object written from memory is 0644 less the umask")
    func dataUploadMode() async throws {
        let fixture = try LocalFixture()
        try await fixture.provider.uploadData(Data("x".utf8), remotePath: "object", options: UploadOptions())
        #expect(try Self.mode(of: fixture.root.appendingPathComponent("object")) == 0o644 & ~(try Self.umask()))
    }
}
