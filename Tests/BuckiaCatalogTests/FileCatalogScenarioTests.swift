import BuckiaCatalog
import BuckiaCore
import BuckiaMemory
import Foundation
import Testing

/// A catalog under test: the client, its media folder, and a folder beside it that no
/// operation may touch.
struct CatalogFixture: @unchecked Sendable {
    let client: FileCatalogClient
    let media: URL
    let outside: URL
    let folder: URL

    /// The two kinds every scenario runs on.
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case live, inMemory
        var testDescription: String { rawValue }
    }

    static func make(_ kind: Kind, configure: (inout FileCatalogConfiguration) -> Void = { _ in }) throws -> CatalogFixture {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-catalog-\(UUID().uuidString)")
        let media = folder.appendingPathComponent("media", isDirectory: true)
        let outside = folder.appendingPathComponent("outside", isDirectory: true)
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        var configuration = FileCatalogConfiguration(mediaRoot: media)
        configure(&configuration)
        let client: FileCatalogClient
        switch kind {
        case .live: client = try .live(path: folder.appendingPathComponent("catalog.sqlite").path, configuration: configuration)
        case .inMemory: client = .inMemory(configuration: configuration)
        }
        return CatalogFixture(client: client, media: media, outside: outside, folder: folder)
    }

    func remove() {
        Self.removeTree(folder)
    }

    /// Removes a test's folder; a failure is recorded, not hidden.
    static func removeTree(_ folder: URL) {
        do {
            try FileManager.default.removeItem(at: folder)
        } catch {
            Issue.record("\(folder.path) was left behind: \(error)")
        }
    }

    /// Writes `name` (a relative path) under `base` with a few bytes.
    @discardableResult
    func place(_ name: String, in base: URL) throws -> URL {
        let url = base.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(name.utf8).write(to: url)
        return url
    }
}

func record(_ n: Int, day: Int? = nil, key: String? = nil, url: String? = nil) -> FileRecord {
    FileRecord(
        fileId: "id-\(n)", key: key ?? "files/\(n).mp4", title: "Title \(n)", authorName: "Author \(n % 7)",
        publishDate: day.map { Date(timeIntervalSince1970: Double($0) * 86_400) }, size: Int64(n * 1000),
        url: URL(string: url ?? "https://cdn.example/v/\(n).mp4"))
}

/// The scenarios every catalog passes, run on `live` and `inMemory` alike: the catalog's
/// conformance list.
@Suite("File catalog scenarios, on live and in memory")
struct FileCatalogScenarioTests {
    @Test("A record cached is read back whole, by id and in the list; an unknown id is nil", arguments: CatalogFixture.Kind.allCases)
    func roundTrip(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        let file = FileRecord(
            fileId: "a", key: "k/a.mp3", title: "Ünïcode ✓", authorName: nil, publishDate: Date(timeIntervalSince1970: 1_700_000_000.25), size: 0,
            url: URL(string: "https://x.example/a.mp3?sig=1"))
        try await fixture.client.cacheFile(file)
        #expect(try await fixture.client.getFile("a") == file)
        #expect(try await fixture.client.getFiles() == [file])
        #expect(try await fixture.client.getFile("b") == nil)
    }

    @Test("Caching a record again replaces it; a batch naming a file twice keeps what it says last", arguments: CatalogFixture.Kind.allCases)
    func upsert(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        try await fixture.client.cacheFile(record(1, day: 1))
        var changed = record(1, day: 2)
        changed.title = "changed"
        changed.size = nil
        try await fixture.client.cacheFile(changed)
        #expect(try await fixture.client.getFiles() == [changed])
        var last = record(2)
        last.title = "last"
        try await fixture.client.cacheFiles([record(2), record(3), last])
        #expect(try await fixture.client.getFile("id-2") == last)
        #expect(try await fixture.client.getFiles().count == 3)
    }

    @Test("The list is newest first, undated records last, ties by key", arguments: CatalogFixture.Kind.allCases)
    func newestFirst(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        let files = [record(1, day: 5), record(2), record(3, day: 9), record(4, day: 5, key: "a-first"), record(5, day: 1)]
        try await fixture.client.cacheFiles(files)
        #expect(try await fixture.client.getFiles().map(\.fileId) == ["id-3", "id-4", "id-1", "id-5", "id-2"])
    }

    @Test("10,000 records in one batch: inserted, then updated, all of them", arguments: CatalogFixture.Kind.allCases)
    func largeBatch(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        let files = (0..<10_000).map { record($0, day: $0 % 400) }
        try await fixture.client.cacheFiles(files)
        #expect(try await fixture.client.getFiles().count == 10_000)
        let updated = files.map { file -> FileRecord in
            var file = file
            file.title = "v2 " + (file.title ?? "")
            return file
        }
        try await fixture.client.cacheFiles(updated)
        let stored = try await fixture.client.getFiles()
        #expect(stored.count == 10_000)
        #expect(Set(stored) == Set(updated))
    }

    @Test("A record with a key another record holds replaces that record, and the replaced one's media goes", arguments: CatalogFixture.Kind.allCases)
    func keyReplacement(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        let old = record(1, key: "shared", url: "https://x/old.mp4")
        let media = try fixture.place("old.mp4", in: fixture.media)
        try await fixture.client.cacheFiles([old, record(2)])
        try await fixture.client.cacheFile(record(3, key: "shared", url: "https://x/new.mp4"))
        #expect(try await fixture.client.getFile("id-1") == nil)
        #expect(try await fixture.client.getFile("id-3")?.key == "shared")
        #expect(try await fixture.client.getFiles().count == 2)
        #expect(!FileManager.default.fileExists(atPath: media.path))
    }

    @Test("updateFileUrl changes the URL; for an unknown id it is notFound", arguments: CatalogFixture.Kind.allCases)
    func updateURL(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        try await fixture.client.cacheFile(record(1))
        let url = try #require(URL(string: "https://other.example/1.mp4"))
        try await fixture.client.updateFileUrl("id-1", url)
        #expect(try await fixture.client.getFile("id-1")?.url == url)
        await #expect(throws: BuckiaError.self) { try await fixture.client.updateFileUrl("missing", url) }
        do {
            try await fixture.client.updateFileUrl("missing", url)
        } catch let error as BuckiaError {
            #expect(error.code == .notFound)
        }
    }

    @Test("deleteFile removes the record, then its downloaded copy, and nothing else", arguments: CatalogFixture.Kind.allCases)
    func delete(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        let mine = try fixture.place("1.mp4", in: fixture.media)
        let other = try fixture.place("2.mp4", in: fixture.media)
        try await fixture.client.cacheFiles([record(1), record(2)])
        try await fixture.client.deleteFile(record(1))
        #expect(try await fixture.client.getFiles().map(\.fileId) == ["id-2"])
        #expect(!FileManager.default.fileExists(atPath: mine.path))
        #expect(FileManager.default.fileExists(atPath: other.path))
    }

    @Test("truncateFiles removes every record and the media files of the configured extensions only", arguments: CatalogFixture.Kind.allCases)
    func truncate(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        let gone = try ["a.mp4", "b.MP3", "c.webm"].map { try fixture.place($0, in: fixture.media) }
        let kept = try ["notes.txt", "mp4", "sub/d.mp4"].map { try fixture.place($0, in: fixture.media) }
        let beside = try fixture.place("e.mp4", in: fixture.outside)
        try await fixture.client.cacheFiles((1...5).map { record($0) })
        try await fixture.client.truncateFiles()
        #expect(try await fixture.client.getFiles().isEmpty)
        for url in gone { #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.lastPathComponent)") }
        for url in kept + [beside] { #expect(FileManager.default.fileExists(atPath: url.path), "\(url.lastPathComponent)") }
    }

    @Test(
        "observeFiles gives the list now, then the newest list after changes, coalesced for a slow reader", .timeLimit(.minutes(10)),
        arguments: CatalogFixture.Kind.allCases)
    func observe(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        try await fixture.client.cacheFile(record(1, day: 1))
        let updates = Updates(fixture.client.observeFiles())
        #expect(try await updates.next()?.map(\.fileId) == ["id-1"])
        // Five changes while the reader reads nothing: it then gets the last list, not five.
        for n in 2...6 { try await fixture.client.cacheFile(record(n, day: n)) }
        #expect(try await updates.next()?.map(\.fileId) == ["id-6", "id-5", "id-4", "id-3", "id-2", "id-1"])
        try await fixture.client.deleteFile(record(6))
        #expect(try await updates.next()?.first?.fileId == "id-5")
        try await fixture.client.truncateFiles()
        #expect(try await updates.next() == [])
    }

    /// A live query read one list at a time. Each change under test is published before the
    /// operation returns, so the list is waiting when `next()` is called; a catalog that never
    /// publishes makes the test wait until its time limit, which fails it (no wall-clock
    /// window of its own, which a starved test process could overrun).
    final class Updates: @unchecked Sendable {
        private var iterator: AsyncThrowingStream<[FileRecord], any Error>.AsyncIterator

        init(_ stream: AsyncThrowingStream<[FileRecord], any Error>) {
            iterator = stream.makeAsyncIterator()
        }

        func next() async throws -> [FileRecord]? {
            try await iterator.next()
        }
    }

    static let searchable = [
        FileRecord(fileId: "1", key: "talks/deep.mp4", title: "Deep dive", authorName: "Ada", publishDate: Date(timeIntervalSince1970: 300), size: 30),
        FileRecord(fileId: "2", key: "talks/intro.mp4", title: "Intro", authorName: "Zoë Café", publishDate: Date(timeIntervalSince1970: 100), size: 10),
        FileRecord(fileId: "3", key: "music/café.mp3", title: nil, authorName: "Bob", publishDate: nil, size: nil),
        FileRecord(fileId: "4", key: "music/deeper.mp3", title: "Another deep one", authorName: nil, publishDate: Date(timeIntervalSince1970: 200), size: 20),
    ]

    /// Queries, and the ids each must return in order.
    static let queries: [(FileQuery, [String])] = [
        (FileQuery(), ["1", "4", "2", "3"]),
        (FileQuery(order: .oldestFirst), ["2", "4", "1", "3"]),
        (FileQuery(order: .title), ["4", "1", "2", "3"]),
        (FileQuery(order: .key), ["3", "4", "1", "2"]),
        (FileQuery(order: .largestFirst), ["1", "4", "2", "3"]),
        (FileQuery(limit: 2), ["1", "4"]),
        (FileQuery(limit: 2, offset: 2), ["2", "3"]),
        (FileQuery(offset: 3), ["3"]),
        (FileQuery(limit: 0), []),
        (FileQuery(search: "deep"), ["1", "4"]),
        (FileQuery(search: "DEEP dive"), ["1"]),
        (FileQuery(search: "cafe"), ["2", "3"]),
        (FileQuery(search: "talks"), ["1", "2"]),
        (FileQuery(search: "mp3", order: .key), ["3", "4"]),
        (FileQuery(search: "ada OR bob"), []),
        (FileQuery(search: "\"deep\"* NOT"), []),
        (FileQuery(search: "de*"), ["1", "4"]),
        (FileQuery(search: "  ---  "), ["1", "4", "2", "3"]),
        (FileQuery(search: "nothing"), []),
    ]

    @Test("fetchFiles orders, pages and searches alike on every catalog", arguments: CatalogFixture.Kind.allCases)
    func fetch(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        try await fixture.client.cacheFiles(Self.searchable)
        for (query, expected) in Self.queries {
            #expect(try await fixture.client.fetchFiles(query).map(\.fileId) == expected, "\(query)")
        }
        await #expect(throws: BuckiaError.self) { _ = try await fixture.client.fetchFiles(FileQuery(limit: -1)) }
        // The index follows changes: a renamed title is found by its new words only.
        var renamed = Self.searchable[1]
        renamed.title = "Renamed"
        try await fixture.client.cacheFile(renamed)
        #expect(try await fixture.client.fetchFiles(FileQuery(search: "renamed")).map(\.fileId) == ["2"])
        #expect(try await fixture.client.fetchFiles(FileQuery(search: "intro")).map(\.fileId) == ["2"], "the key still says intro")
        try await fixture.client.deleteFile(Self.searchable[0])
        #expect(try await fixture.client.fetchFiles(FileQuery(search: "deep")).map(\.fileId) == ["4"])
    }

    /// Records whose media name points out of the folder, and what each must leave.
    static let hostileNames = ["../outside/e.mp4", "/tmp/e.mp4", "a/../../outside/e.mp4", "./e.mp4", "link/e.mp4", "", "x\u{0}y"]

    @Test("A media name that leaves the folder, or crosses a link, removes nothing outside it", arguments: CatalogFixture.Kind.allCases, hostileNames)
    func hostileMediaNames(_ kind: CatalogFixture.Kind, _ name: String) async throws {
        let fixture = try CatalogFixture.make(kind) { configuration in
            configuration.mediaName = { _ in name }
        }
        defer { fixture.remove() }
        let target = try fixture.place("e.mp4", in: fixture.outside)
        try FileManager.default.createSymbolicLink(at: fixture.media.appendingPathComponent("link"), withDestinationURL: fixture.outside)
        try await fixture.client.cacheFile(record(1))
        // The record goes; a name that could leave the folder is never acted on.
        try await fixture.client.deleteFile(record(1))
        #expect(try await fixture.client.getFile("id-1") == nil)
        #expect(FileManager.default.fileExists(atPath: target.path))
    }

    @Test("An invalid record fails the whole batch, naming the problem, and stores nothing", arguments: CatalogFixture.Kind.allCases)
    func invalidRecords(_ kind: CatalogFixture.Kind) async throws {
        let fixture = try CatalogFixture.make(kind)
        defer { fixture.remove() }
        for bad in [FileRecord(fileId: "", key: "k"), FileRecord(fileId: "x", key: ""), FileRecord(fileId: "x", key: "k", size: -1), FileRecord(fileId: "x\u{0}", key: "k")] {
            do {
                try await fixture.client.cacheFiles([record(1), bad])
                Issue.record("\(bad) was accepted")
            } catch let error as BuckiaError {
                #expect(error.code == .invalidConfiguration && error.message.contains("cannot be cached"))
            }
        }
        #expect(try await fixture.client.getFiles().isEmpty)
    }
}

@Suite("FileCatalogClient.failing")
struct FileCatalogFailingTests {
    @Test("Every operation of the failing client throws, naming itself and how to expect it")
    func everyOperationFails() async throws {
        let client = FileCatalogClient.failing
        let calls: [(String, @Sendable () async throws -> Void)] = [
            ("getFiles", { _ = try await client.getFiles() }), ("getFile", { _ = try await client.getFile("a") }),
            ("cacheFiles", { try await client.cacheFiles([]) }), ("cacheFile", { try await client.cacheFile(record(1)) }),
            ("updateFileUrl", { try await client.updateFileUrl("a", URL(fileURLWithPath: "/x")) }), ("deleteFile", { try await client.deleteFile(record(1)) }),
            ("truncateFiles", { try await client.truncateFiles() }), ("saveContext", { try await client.saveContext() }),
        ]
        for (name, call) in calls {
            do {
                try await call()
                Issue.record("\(name) did not fail")
            } catch let error as BuckiaError {
                #expect(error.code == .unsupported && error.message.contains("\(name) was called"), "\(error)")
            }
        }
    }

    @Test("A test that overrides one operation passes while it makes only that call, and fails on any other")
    func overriding() async throws {
        var client = FileCatalogClient.failing
        client.getFiles = { [record(1)] }
        #expect(try await client.getFiles() == [record(1)])
        await #expect(throws: BuckiaError.self) { try await client.cacheFile(record(2)) }
    }
}
