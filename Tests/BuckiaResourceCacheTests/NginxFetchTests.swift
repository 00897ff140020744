import BuckiaCore
import BuckiaHTTP
import BuckiaResourceCache
import BuckiaTestSupport
import Foundation
import Testing

/// The downloader against nginx, a real origin: its own ETag and Last-Modified, its own 304s,
/// and no Cache-Control, so freshness comes from RFC 9111's heuristic.
@Suite("Resource downloader against nginx")
struct NginxFetchTests {
    @Test("nginx's validators: a download, a heuristic hit, a 304 once stale, and a changed file downloaded again")
    func validators() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-nginx-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer {
            do { try FileManager.default.removeItem(at: work) } catch { Issue.record("\(work.path) was left behind: \(error)") }
        }
        let nginx = try NginxServer.start(in: work, logRequests: true)
        defer { nginx.stop() }
        let file = work.appendingPathComponent("data/a.bin")
        let first = Data(try SecureRandom.bytes(count: 50_000))
        try first.write(to: file)
        // Modified ten hours ago: the heuristic gives a tenth of that, an hour, of freshness.
        let tenHoursAgo = Date().addingTimeInterval(-10 * 3600)
        try FileManager.default.setAttributes([.modificationDate: tenHoursAgo], ofItemAtPath: file.path)

        let fixture = try CacheFixture()
        // nginx dates its answers by the wall clock; the test's clock starts there and moves
        // only when the test moves it.
        fixture.clock.withLock { $0 = Date() }
        let fetcher = DownloaderTests.downloader(fixture)
        let location = ResourceLocation.url(try #require(URL(string: "http://127.0.0.1:\(nginx.port)/a.bin")))

        let requested = fixture.clock.withLock { $0 }
        let downloaded = try await fetcher.fetch(location)
        let answered = Date()
        #expect(downloaded.outcome == .downloaded && downloaded.data == first)
        let modified = Date(timeIntervalSince1970: tenHoursAgo.timeIntervalSince1970.rounded(.down))
        #expect(downloaded.response.etag != nil && downloaded.response.lastModified == HTTPDate.format(modified))
        // A tenth of the age nginx's Date gives the file: nginx dated its answer between the
        // request (less the second its dates drop) and the moment the answer was in hand, however
        // long a busy machine took in between.
        let lifetime = try #require(downloaded.response.freshUntil).timeIntervalSince(requested)
        let shortest = (requested.timeIntervalSince(modified) - 1) / 10
        let longest = (answered.timeIntervalSince(modified) + 1) / 10
        #expect(lifetime >= shortest && lifetime <= longest, "heuristic lifetime \(lifetime) s, not within \(shortest)…\(longest)")
        #expect(try await fetcher.fetch(location).outcome == .hit)

        fixture.advance(2 * 3600)
        let revalidated = try await fetcher.fetch(location)
        #expect(revalidated.outcome == .revalidated && revalidated.data == first)

        let second = Data(try SecureRandom.bytes(count: 60_000))
        try second.write(to: file)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: file.path)
        fixture.advance(2 * 3600)
        let changed = try await fetcher.fetch(location)
        #expect(changed.outcome == .downloaded && changed.data == second && changed.response.etag != downloaded.response.etag)
        #expect(try Data(contentsOf: try #require(changed.file)) == second)

        let statuses = nginx.requests().compactMap { $0.split(separator: " ").last.map(String.init) }
        #expect(statuses == ["200", "304", "200"], "nginx answered \(statuses)")
    }
}
