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

        let downloaded = try await fetcher.fetch(location)
        #expect(downloaded.outcome == .downloaded && downloaded.data == first)
        #expect(downloaded.response.etag != nil && downloaded.response.lastModified == HTTPDate.format(Date(timeIntervalSince1970: tenHoursAgo.timeIntervalSince1970.rounded(.down))))
        let lifetime = try #require(downloaded.response.freshUntil).timeIntervalSince(fixture.clock.withLock { $0 })
        #expect(abs(lifetime - 3600) < 120, "heuristic lifetime \(lifetime) s")
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
