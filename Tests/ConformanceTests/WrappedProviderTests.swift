import Buckia
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaSyncConformance
import BuckiaTestSupport
import Foundation
import Testing

// Side capabilities (local files, authorized URLs, unfinished uploads) are requirements of
// StorageProvider, declared by capability, so a ForwardingStorageProvider keeps every one.
// Before, they were protocols found by downcast, and a wrapped local provider lost
// `synchronize()`: sync recorded files as synced before they were durable.

/// Counts the side calls that reach the provider under it.
struct SideCallCounter: ForwardingStorageProvider {
    let base: any StorageProvider
    let counts = Locked<[String: Int]>([:])

    func synchronize() throws {
        counts.withLock { $0["synchronize", default: 0] += 1 }
        try base.synchronize()
    }
    func fileForReading(_ key: ObjectKey) throws -> (url: URL, file: RemoteFile) {
        counts.withLock { $0["fileForReading", default: 0] += 1 }
        return try base.fileForReading(key)
    }
    func receiveFile(at key: ObjectKey, condition: WriteCondition?, _ fill: (URL) async throws -> Void) async throws -> RemoteFile {
        counts.withLock { $0["receiveFile", default: 0] += 1 }
        return try await base.receiveFile(at: key, condition: condition, fill)
    }
    func removeWorkingFiles() throws {
        counts.withLock { $0["removeWorkingFiles", default: 0] += 1 }
        try base.removeWorkingFiles()
    }
}

@Suite("Wrapped providers keep every side capability")
struct WrappedProviderTests {
    /// Every built-in provider, built from a configuration that makes no request.
    static let configurations: [BuckiaConfiguration] = [
        BuckiaConfiguration(provider: .local, options: ["root": TestHome.empty + "/wrapped"]),
        BuckiaConfiguration(provider: .memory),
        BuckiaConfiguration(
            provider: .s3, bucketName: "wrapped", authConfig: .awsSignature(accessKeyId: "AKID", secretAccessKey: "secret"),
            options: ["endpoint": "http://127.0.0.1:9"]),
        BuckiaConfiguration(
            provider: .b2, bucketName: "wrapped", authConfig: .providerSpecific(type: .b2, credentials: ["applicationKeyId": "id", "applicationKey": "key"]),
            options: ["endpoint": "http://127.0.0.1:9"]),
        BuckiaConfiguration(
            provider: .bunny, bucketName: "wrapped", authConfig: .providerSpecific(type: .bunny, credentials: ["accessKey": "key"]),
            options: ["endpoint": "http://127.0.0.1:9"]),
    ]

    @Test("A wrapper declares what its provider declares, side capabilities included", arguments: configurations)
    func capabilities(_ configuration: BuckiaConfiguration) throws {
        let base = try ProviderRegistry.builtIn.makeProvider(for: configuration, environment: ["HOME": TestHome.empty])
        let wrapped = PassThroughProvider(base: PassThroughProvider(base: base))
        #expect(wrapped.capabilities == base.capabilities)
        #expect(wrapped.providerType == base.providerType)
        let side: Set<Capability> = [.localFiles, .authorizedURL, .unfinishedUploads]
        let expected: [ProviderType: Set<Capability>] = [.local: [.localFiles], .memory: [], .s3: [.unfinishedUploads], .b2: [.authorizedURL, .unfinishedUploads], .bunny: []]
        #expect(base.capabilities.features.intersection(side) == expected[base.providerType], "\(base.providerType)")
    }

    @Test("A provider without a side capability refuses its calls as unsupported, wrapped or not")
    func unsupportedStaysUnsupported() async throws {
        let wrapped = PassThroughProvider(base: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
        let error = #expect(throws: BuckiaError.self) { try wrapped.fileForReading(try ObjectKey("a")) }
        #expect(error?.code == .unsupported)
        let listing = await #expect(throws: BuckiaError.self) { try await wrapped.unfinishedUploads(prefix: "") }
        #expect(listing?.code == .unsupported)
    }

    @Test("A wrapped local provider passes every provider scenario", arguments: ProviderConformance.scenarios)
    func localScenarios(_ scenario: ProviderScenario) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-wrapped-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try await scenario.check(.opening("local (wrapped)") { PassThroughProvider(base: try LocalProvider(root: root)) })
    }

    @Test("Parts staged in the provider itself (PartStagingProvider) pass every provider scenario, over memory and over a local folder", arguments: ["memory", "local"], ProviderConformance.scenarios)
    func stagedParts(_ base: String, _ scenario: ProviderScenario) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-staged-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let memory = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        try await scenario.check(.opening("\(base) (parts staged)") {
            let provider: any StorageProvider = base == "memory" ? memory : try LocalProvider(root: root)
            return try PartStagingProvider(base: provider, prefix: "staged-parts/")
        })
    }

    @Test("A wrapped local provider passes every sync scenario, on either side", arguments: SyncConformance.scenarios)
    func syncScenarios(_ scenario: SyncScenario) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-wrapped-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let remote = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        try await scenario.check(local: PassThroughProvider(base: try LocalProvider(root: folder)), remote: remote)
    }

    @Test("Sync through a wrapper reaches the local provider's direct transfers, durability and tidying")
    func syncReachesSideCalls() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-wrapped-side-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("one".utf8).write(to: folder.appendingPathComponent("a.txt"))
        let remote = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        _ = try await remote.uploadData(Data("two".utf8), remotePath: "b.txt")
        let counter = SideCallCounter(base: try LocalProvider(root: folder))
        let state = folder.appendingPathExtension("state")
        defer { try? FileManager.default.removeItem(at: state) }
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let engine = SyncEngine(
            local: try SyncEndpoint(provider: PassThroughProvider(base: counter), backend: "local:\(folder.path)"),
            remote: try SyncEndpoint(provider: remote, backend: "memory:wrapped"),
            options: SyncOptions(mode: .twoWay), stateStore: try SyncStateStore(url: state.appendingPathComponent("s.sqlite")))
        let result = try await engine.run()
        #expect(result.isComplete && result.uploaded == 1 && result.downloaded == 1)
        let counts = counter.counts.withLock { $0 }
        #expect(counts["fileForReading"] == 1 && counts["receiveFile"] == 1, "\(counts)")
        #expect((counts["synchronize"] ?? 0) >= 1, "synced files were recorded before a synchronize: \(counts)")
        #expect(counts["removeWorkingFiles"] == 1, "\(counts)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["a.txt", "b.txt"])
    }
}

@Suite("Sync over a side that lists out of key order")
struct UnsortedSideSyncTests {
    @Test(
        "A side that lists out of key order, or twice, is listed again whole and sorted: the run copies each file once, and the next is a no-op",
        arguments: [Breakage.reversesPages, .duplicatesEntries])
    func unsortedSide(_ breakage: Breakage) async throws {
        let source = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        let names = (0..<30).map { "d\($0 % 3)/f\($0).txt" } + ["a", "a b", "a-b", "é"]
        for name in names { _ = try await source.uploadData(Data(name.utf8), remotePath: name) }
        let destination = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-unsorted-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: state) }
        func run() async throws -> SyncResult {
            let store = try SyncStateStore(url: state)
            defer { store.close() }
            return try await SyncEngine(
                local: try SyncEndpoint(provider: BrokenProvider(base: source, breakage: breakage), backend: "memory:unsorted"),
                remote: try SyncEndpoint(provider: destination, backend: "memory:destination"),
                options: SyncOptions(mode: .push, deleteExtraneous: true), stateStore: store
            ).run()
        }
        let first = try await run()
        #expect(first.isComplete && first.uploaded == names.count && first.newFiles.count == names.count, "\(first.summary)")
        var copied: [String] = []
        for try await entry in destination.list(ListOptions()) { if let file = entry.file { copied.append(file.path.rawValue) } }
        #expect(copied == names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        let second = try await run()
        #expect(second.isComplete && second.plan.isEmpty && second.summary.unchanged == names.count, "\(second.summary)")
    }
}

/// Lists `markers` among the base's keys, in byte order, as keys no path can name: an S3
/// console's folder markers (`photos/`), as S3 and B2 list them.
struct MarkerListingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    let markers: [String]

    func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        let markers = markers.map { UnaddressableKey(bytes: Array($0.utf8), reason: "it is a folder marker") }
        return MappedLister(try await base.makeLister(request)) { page in
            func bytes(_ entry: ListEntry) -> [UInt8] {
                switch entry {
                case .object(let file): Array(file.path.rawValue.utf8)
                case .unaddressable(let key): key.bytes
                case .directory(let folder): Array(folder.utf8)
                }
            }
            let entries = (page.entries + markers.map { ListEntry.unaddressable($0) }).sorted { bytes($0).lexicographicallyPrecedes(bytes($1)) }
            return ListPage(entries: entries, resumeToken: page.resumeToken)
        }
    }
}

@Suite("Sync beside folder markers")
struct FolderMarkerSyncTests {
    @Test("A folder marker hides the paths under it on its side, though files that sort between come first; the file of its name is not hidden")
    func markerHidesItsFolder() async throws {
        let source = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        for name in ["photos", "photos/a.txt", "photos.txt"] { _ = try await source.uploadData(Data(name.utf8), remotePath: name) }
        let destination = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        _ = try await destination.uploadData(Data("photos-2".utf8), remotePath: "photos-2/x")
        let result = try await SyncEngine(
            local: try SyncEndpoint(provider: source, backend: "memory:source"),
            remote: try SyncEndpoint(provider: MarkerListingProvider(base: destination, markers: ["photos/"]), backend: "memory:markers"),
            options: SyncOptions(mode: .push, deleteExtraneous: true), stateStore: nil
        ).run()
        // `photos/a.txt` may be held behind the marker, unseen: neither sent nor counted as
        // missing. `photos` and `photos.txt` sort before the marker and are sent; `photos-2/x`
        // is not the source's, and is deleted.
        #expect(result.plan.map { "\($0)" }.sorted() == ["delete-remote photos-2/x", "upload photos", "upload photos.txt"], "\(result.plan)")
        var stored: [String] = []
        for try await entry in destination.list(ListOptions()) { if let file = entry.file { stored.append(file.path.rawValue) } }
        #expect(stored == ["photos", "photos.txt"])
        #expect(result.unaddressable.map(\.bytes) == [Array("photos/".utf8)])
    }
}
