import BuckiaCatalog
import BuckiaCatalogConformance
import BuckiaConformance
import BuckiaConformanceTesting
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

/// The catalog conformance scenarios (BuckiaConformance), run on `live` and `inMemory`: the
/// list a third party's catalog runs too.
@Suite("File catalog conformance, on live and in memory")
struct FileCatalogScenarioTests {
    @Test("live", .timeLimit(.minutes(10)), arguments: CatalogConformance.scenarios)
    func live(_ scenario: CatalogScenario) async throws {
        try await scenario.check("live", capabilities: try FileCatalogClient.liveCapabilities()) { configuration, folder in
            try .live(path: folder.appendingPathComponent("catalog.sqlite").path, configuration: configuration)
        }
    }

    @Test("inMemory", .timeLimit(.minutes(10)), arguments: CatalogConformance.scenarios)
    func inMemory(_ scenario: CatalogScenario) async throws {
        try await scenario.check("inMemory", capabilities: FileCatalogClient.inMemoryCapabilities) { configuration, _ in
            .inMemory(configuration: configuration)
        }
    }

    @Test("The live catalog declares search where this SQLite has FTS5, persistence and shared storage")
    func liveCapabilities() throws {
        #expect(try FileCatalogClient.liveCapabilities() == [.persistent, .sharedStorage, .fullTextSearch])
    }

    /// Catalogs broken one way each, and a scenario each must fail.
    static let broken: [(String, String, @Sendable (FileCatalogConfiguration) -> FileCatalogClient)] = [
        ("keeps nothing", "records: round trip", { configuration in
            var client = FileCatalogClient.inMemory(configuration: configuration)
            client.cacheFile = { _ in }
            return client
        }),
        ("leaves media behind", "media: delete", { _ in .inMemory() }),
        ("never publishes", "records: live query", { configuration in
            var client = FileCatalogClient.inMemory(configuration: configuration)
            client.observeFiles = { AsyncThrowingStream { $0.finish() } }
            return client
        }),
        ("observes every record whatever the query", "queries: live query of a page", { configuration in
            var client = FileCatalogClient.inMemory(configuration: configuration)
            let all = client.observeFiles
            client.observeQuery = { _ in all() }
            return client
        }),
        ("searches nothing", "queries: search", { configuration in
            var client = FileCatalogClient.inMemory(configuration: configuration)
            let fetch = client.fetchFiles
            client.fetchFiles = { query in query.search == nil ? try await fetch(query) : [] }
            return client
        }),
    ]

    @Test("A broken catalog fails the scenario that covers what it breaks", arguments: broken.indices)
    func brokenCatalogsFail(_ index: Int) async throws {
        let (what, name, make) = Self.broken[index]
        let scenario = try #require(CatalogConformance.scenarios.first { $0.name == name })
        let outcome = await CatalogConformance.run(scenario, capabilities: [.fullTextSearch]) { configuration, _ in make(configuration) }
        guard case .failed = outcome else {
            Issue.record("a catalog that \(what) got \(outcome) in \(name)")
            return
        }
    }

    /// A third party's catalog made before `observeQuery` existed passes no closure for it, and
    /// gets one made of its `observeFiles` and `fetchFiles`.
    @Test("A catalog that gives no live query of its own gets one from observeFiles and fetchFiles, and it passes the scenario", .timeLimit(.minutes(10)))
    func derivedLiveQuery() async throws {
        let scenario = try #require(CatalogConformance.scenarios.first { $0.name == "queries: live query of a page" })
        try await scenario.check("derived", capabilities: FileCatalogClient.inMemoryCapabilities) { configuration, _ in
            let inner = FileCatalogClient.inMemory(configuration: configuration)
            return FileCatalogClient(
                getFiles: inner.getFiles, getFile: inner.getFile, cacheFiles: inner.cacheFiles, cacheFile: inner.cacheFile,
                updateFileUrl: inner.updateFileUrl, deleteFile: inner.deleteFile, truncateFiles: inner.truncateFiles,
                saveContext: inner.saveContext, observeFiles: inner.observeFiles, fetchFiles: inner.fetchFiles)
        }
    }

    @Test("A scenario needing a capability the catalog does not declare is skipped with the reason, never passed")
    func undeclaredCapabilities() async throws {
        let search = try #require(CatalogConformance.scenarios.first { $0.name == "queries: search" })
        let persistence = try #require(CatalogConformance.scenarios.first { $0.name == "records: persistence" })
        let inMemory: @Sendable (FileCatalogConfiguration, URL) async throws -> FileCatalogClient = { configuration, _ in .inMemory(configuration: configuration) }
        #expect(await CatalogConformance.run(search, capabilities: [], open: inMemory) == .skipped(reason: "needs fullTextSearch"))
        #expect(await CatalogConformance.run(persistence, capabilities: FileCatalogClient.inMemoryCapabilities, open: inMemory) == .skipped(reason: "needs persistent"))
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
            ("fetchFiles", { _ = try await client.fetchFiles(FileQuery()) }),
            ("observeFiles", { for try await _ in client.observeFiles() {} }),
            ("observeQuery", { for try await _ in client.observeQuery(FileQuery()) {} }),
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
