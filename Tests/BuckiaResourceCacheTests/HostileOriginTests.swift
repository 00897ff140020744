import BuckiaCore
import BuckiaHTTP
import BuckiaResourceCache
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An origin from Tests/Emulators/hostile_server.py (`http-*` scenarios), on 127.0.0.1 until it
/// is released (its hour's lifetime is only a hang guard: a starved test reaches its requests
/// late, never after the origin is gone; a loaded run starved these tests for over 600 s, the
/// lifetime they had, and met a closed port).
final class HostileOrigin: Sendable {
    let port: Int
    let pid: Int32

    init(_ scenario: String) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Emulators/hostile_server.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, scenario, "--lifetime", "3600"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // The parent prints `PORT=<n>; PID=<pid>` and exits at once; its child serves.
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let fields = Dictionary(
            text.split(whereSeparator: { $0 == ";" || $0.isWhitespace }).compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            }, uniquingKeysWith: { $1 })
        guard let port = fields["PORT"].flatMap(Int.init), let pid = fields["PID"].flatMap(Int32.init) else {
            throw BuckiaError(.io, "hostile_server.py \(scenario) did not start: \(text.debugDescription)")
        }
        (self.port, self.pid) = (port, pid)
    }

    deinit { kill(pid, SIGKILL) }

    /// Starts one on a thread of its own: starting waits for the script's first line, which
    /// would hold one of the cooperative pool's few threads.
    static func start(_ scenario: String) async throws -> HostileOrigin {
        try await offPool { try HostileOrigin(scenario) }
    }

    var location: ResourceLocation { .url(URL(string: "http://127.0.0.1:\(port)/r")!) }
}

/// Origins that answer wrongly, or never: typed errors, bounded waits and downloads, and
/// nothing cached (issue 47, items 4 to 6).
@Suite("Resource downloader against a hostile origin")
struct HostileOriginTests {
    static func downloader(_ fixture: CacheFixture, stall: Duration = .seconds(60)) -> ResourceDownloader {
        var configuration = HTTPClient.Configuration()
        configuration.retryPolicy.maxAttempts = 1
        configuration.timeout = stall
        return ResourceDownloader(cache: fixture.cache, client: HTTPClient(configuration: configuration))
    }

    /// Nothing cached and nothing left in the cache's temporaries.
    static func expectNothingKept(_ fixture: CacheFixture) throws {
        #expect(try fixture.cache.statistics().entries == 0)
        let temporaries = fixture.folder.appendingPathComponent(".buckia-tmp")
        let left = try FileManager.default.subpathsOfDirectory(atPath: temporaries.path).filter { !$0.hasSuffix(".lock") }
        let files = left.filter { path in
            var info = stat()
            return stat(temporaries.appendingPathComponent(path).path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_size > 0
        }
        #expect(files.isEmpty, "left in the temporaries: \(files)")
    }

    @Test("A chunked body with no length is stopped as it crosses the resource limit, and nothing is kept")
    func endlessChunked() async throws {
        let origin = try await HostileOrigin.start("http-endless-chunked")
        let fixture = try CacheFixture { $0.maxResourceBytes = 1_000_000 }
        let error = await #expect(throws: BuckiaError.self) { try await Self.downloader(fixture).fetch(origin.location) }
        #expect(error?.code == .invalidConfiguration)
        #expect((error?.cause as? HTTPBodyTooLarge)?.limit == 1_000_000)
        #expect(error?.message.contains("127.0.0.1:\(origin.port)") == true, "\(String(describing: error))")
        try Self.expectNothingKept(fixture)
    }

    @Test("A body that declares more than the cache's limit is refused at its headers")
    func declaredTooLarge() async throws {
        let origin = try await HostileOrigin.start("http-endless-length")
        let fixture = try CacheFixture { $0.maxBytes = 4_000_000 }
        let error = await #expect(throws: BuckiaError.self) { try await Self.downloader(fixture).fetch(origin.location) }
        #expect((error?.cause as? HTTPBodyTooLarge) == HTTPBodyTooLarge(limit: 4_000_000, declared: 1 << 40))
        try Self.expectNothingKept(fixture)
    }

    @Test(
        "A partial answer to a whole request, a length that is no number, and a 304 with nothing cached are refused and cache nothing",
        arguments: [("http-partial", "206 Partial Content"), ("http-bad-length", "not a byte count"), ("http-304", "304 Not Modified")])
    func wrongAnswers(_ scenario: String, _ said: String) async throws {
        let origin = try await HostileOrigin.start(scenario)
        let fixture = try CacheFixture()
        let downloader = Self.downloader(fixture)
        for _ in 0..<2 {  // the second time too: no hit from the first
            let error = await #expect(throws: BuckiaError.self) { try await downloader.fetch(origin.location) }
            #expect(error?.code == .corrupt)
            #expect(error?.message.contains(said) == true, "\(String(describing: error))")
        }
        try Self.expectNothingKept(fixture)
    }

    @Test("An origin that accepts and never answers is given up on at the stall timeout, with an error naming it")
    func silent() async throws {
        let origin = try await HostileOrigin.start("http-silent")
        let fixture = try CacheFixture()
        let error = await #expect(throws: BuckiaError.self) { try await Self.downloader(fixture, stall: .milliseconds(500)).fetch(origin.location) }
        #expect(error?.code == .transient)
        #expect(error?.message.contains("http://127.0.0.1:\(origin.port)/r timed out") == true, "\(String(describing: error))")
        try Self.expectNothingKept(fixture)
    }
}
