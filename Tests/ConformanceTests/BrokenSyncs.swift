import Buckia
import BuckiaConformance
import BuckiaSync
import BuckiaSyncConformance
import Foundation
import Testing

// The mutation harness of the sync scenarios. A sync scenario's subject is a pair: the
// provider under test and the sync engine driving it. So each scenario is shown to fail
// against one of two kinds of breakage: a remote provider broken in a way only a sync notices
// (it keeps old bytes on overwrite, lists stale sizes, hides deletes), or an engine broken by
// leaving out one of its guards (it deletes before copying, ignores the dry run, the filter,
// create-only, the state store, the comparison asked for, the conflict policy). Tests/ConformanceTests/README.md
// tabulates which breakage each scenario is proven against.

/// One way to break a sync: in the remote provider, or in the engine.
enum SyncBreakage: String, Sendable {
    // The remote provider.
    case ignoresOverwrites, listsStaleMetadata, hidesDeletedObjects, folderReplacesFile
    case foldsCase, foldsToNFC, wrongChecksums
    // The engine.
    case deletesFirst, ignoresDryRun, ignoresFilter, ignoresCreateOnly, forgetsState
    case comparesBySizeAndTime, remoteWinsConflicts

    /// The remote side: the memory provider, broken when the breakage is the provider's.
    func remote() throws -> any StorageProvider {
        let memory = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        switch self {
        case .ignoresOverwrites: return OverwriteIgnoringProvider(base: memory)
        case .listsStaleMetadata: return StaleListingProvider(base: memory)
        case .hidesDeletedObjects: return TombstoneProvider(base: memory)
        case .folderReplacesFile: return FolderClobberingProvider(base: memory)
        case .foldsCase: return BrokenProvider(base: memory, breakage: .foldsCase)
        case .foldsToNFC: return BrokenProvider(base: memory, breakage: .foldsToNFC)
        case .wrongChecksums: return WrongChecksumProvider(base: memory)
        default: return memory
        }
    }

    /// How runs are made: by the sync engine, broken when the breakage is the engine's.
    var runner: SyncRunner {
        let breakage = self
        return { local, remote, options, store in
            var options = options
            switch breakage {
            case .ignoresDryRun: options.dryRun = false
            case .ignoresFilter: options.filter = try PathFilter()
            case .ignoresCreateOnly: options.createOnly = []
            case .comparesBySizeAndTime: options.detection = .sizeAndTime(window: .seconds(1))
            case .remoteWinsConflicts: options.conflicts = .destinationWins
            case .deletesFirst:
                // Deletes made before anything is copied, so no failure or limit can stop them.
                var plan = options
                plan.dryRun = true
                for action in try await SyncEngine(local: local, remote: remote, options: plan, stateStore: store).run().plan {
                    switch action {
                    case .deleteLocal(let path), .moveLocal(let path, _): try await local.provider.deleteFile(remotePath: ObjectKey(local.prefix + path.rawValue))
                    case .deleteRemote(let path), .moveRemote(let path, _): try await remote.provider.deleteFile(remotePath: ObjectKey(remote.prefix + path.rawValue))
                    default: break
                    }
                }
            default: break
            }
            let kept: SyncStateStore? = breakage == .forgetsState ? nil : store
            return try await SyncEngine(local: local, remote: remote, options: options, stateStore: kept).run()
        }
    }
}

/// A sync breakage and the scenarios that must catch it.
struct SyncMutantCase: Sendable, CustomTestStringConvertible {
    let what: String
    let breakage: SyncBreakage
    let scenarios: [String]
    var testDescription: String { what }

    init(_ breakage: SyncBreakage, _ what: String, _ scenarios: [String]) {
        self.breakage = breakage
        self.what = what
        self.scenarios = scenarios
    }

    static let all: [SyncMutantCase] = [
        SyncMutantCase(.ignoresOverwrites, "remote keeps the old bytes on overwrite", [
            "two-way: edit here", "two-way: edit there", "two-way: both edited", "two-way: rename here, edit there", "pull: mirror",
            "same-size edits",
        ]),
        SyncMutantCase(.listsStaleMetadata, "remote lists the size and time first seen", [
            "two-way: edit there", "two-way: both edited", "two-way: rename here, edit there", "pull: mirror",
        ]),
        SyncMutantCase(.hidesDeletedObjects, "remote hides deleted objects but still lists them", [
            "two-way: delete here", "two-way: delete there", "two-way: both deleted", "two-way: rename", "two-way: case-only rename",
            "push: mirror", "no deletes after a failure", "delete limit", "emptied side", "filter change",
            "push: a renamed file changed in place is sent, not moved",
        ]),
        SyncMutantCase(.folderReplacesFile, "remote drops a file when a folder of its name is written", ["two-way: file and folder clash"]),
        SyncMutantCase(.foldsCase, "remote folds case without declaring it", ["two-way: both edited", "two-way: case-only rename"]),
        SyncMutantCase(.foldsToNFC, "remote folds keys to NFC", ["two-way: normalization"]),
        SyncMutantCase(.wrongChecksums, "remote lists and reports wrong checksums", ["two-way: created alike", "lost state store", "damaged state store"]),
        SyncMutantCase(.deletesFirst, "engine deletes before it copies", [
            "two-way: delete here", "two-way: delete there", "two-way: rename", "two-way: case-only rename", "push: mirror", "pull: mirror",
            "no deletes after a failure", "delete limit", "emptied side", "filter change", "push: a renamed folder moves",
            "push: renames over the delete limit are copies",
        ]),
        SyncMutantCase(.forgetsState, "engine forgets the state store", [
            "two-way: edit here", "two-way: edit there", "two-way: delete here", "two-way: delete there", "two-way: both deleted", "two-way: rename",
            "two-way: case-only rename", "no-op resync", "damaged state store", "no deletes after a failure", "delete limit", "emptied side",
            "filter change", "push: a renamed folder moves", "two-way: renames move",
        ]),
        SyncMutantCase(.comparesBySizeAndTime, "engine compares by size and time whatever is asked", ["two-way: created alike", "touched files"]),
        SyncMutantCase(.remoteWinsConflicts, "engine lets the remote version win a conflict", ["two-way: both edited"]),
        SyncMutantCase(.ignoresDryRun, "engine ignores the dry run", ["dry run"]),
        SyncMutantCase(.ignoresFilter, "engine ignores the filter", ["filters"]),
        SyncMutantCase(.ignoresCreateOnly, "engine ignores create-only", ["create-only"]),
    ]

    /// The Tests/ConformanceTests/README.md table: each sync scenario and the breakages proven to fail it.
    static var table: String {
        mutationTable("sync scenario", scenarios: SyncConformance.scenarios.map(\.name), breakages: all.map { ($0.what, $0.scenarios) })
    }
}

@Suite("Every sync scenario fails against a provider or an engine broken in its way")
struct BrokenSyncTests {
    @Test(arguments: SyncMutantCase.all)
    func mutantIsCaught(_ mutant: SyncMutantCase) async throws {
        for name in mutant.scenarios {
            let scenario = try #require(SyncConformance.scenarios.first { $0.name == name }, "no sync scenario named \(name)")
            try await withFolders(2) { folders in
                // The scenario passes with the honest engine and provider, so the failure is the breakage's doing.
                let honest = await SyncConformance.run(
                    scenario, local: try LocalProvider(root: folders[0]), remote: try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)))
                #expect(honest == .passed, "“\(name)” with the honest provider and engine: \(honest)")
                let broken = await SyncConformance.run(
                    scenario, local: try LocalProvider(root: folders[1]), remote: try mutant.breakage.remote(), runner: mutant.breakage.runner)
                guard case .failed = broken else {
                    Issue.record("\(mutant.what): expected “\(name)” to fail, got \(broken)")
                    return
                }
            }
        }
    }

    @Test("Every sync scenario is failed by at least one breakage")
    func everyScenarioHasAMutant() {
        let covered = Set(SyncMutantCase.all.flatMap(\.scenarios))
        let uncovered = SyncConformance.scenarios.map(\.name).filter { !covered.contains($0) }
        #expect(uncovered.isEmpty, "sync scenarios no breakage is shown to fail: \(uncovered)")
    }

    @Test("Tests/ConformanceTests/README.md shows the sync scenario → breakage table as the harness has it")
    func tableIsDocumented() throws {
        #expect(try testingDocument().contains(SyncMutantCase.table), "Tests/ConformanceTests/README.md must hold this table:\n\(SyncMutantCase.table)")
    }
}

// MARK: - Remote providers broken in ways a sync notices

/// Keeps what a key already holds when it is written again, and says the write succeeded.
struct OverwriteIgnoringProvider: ForwardingStorageProvider {
    let base: any StorageProvider

    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        if let existing = try await base.stat(remotePath: remotePath) { return existing }
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        if let existing = try await base.stat(remotePath: remotePath) { return existing }
        return try await base.uploadFile(localURL: localURL, remotePath: remotePath, options: options)
    }
}

/// Lists each key with the size, time and tag it had when first listed (a stale index).
struct StaleListingProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    private let firstSeen = Locked<[ObjectKey: RemoteFile]>([:])

    init(base: any StorageProvider) { self.base = base }

    func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        let firstSeen = firstSeen
        return MappedLister(try await base.makeLister(request)) { page in
            ListPage(entries: page.entries.map { entry in
                guard let file = entry.file else { return entry }
                return .object(firstSeen.withLock { seen in
                    if let old = seen[file.path] { return old }
                    seen[file.path] = file
                    return file
                })
            }, resumeToken: page.resumeToken)
        }
    }
}

/// Reports every checksum reversed, whether listed or asked for.
struct WrongChecksumProvider: ForwardingStorageProvider {
    let base: any StorageProvider

    private static func wrong(_ file: RemoteFile) -> RemoteFile {
        var file = file
        file.checksums = file.checksums.mapValues { String($0.reversed()) }
        return file
    }
    func checksum(remotePath: ObjectKey, algorithm: ChecksumAlgorithm) async throws -> String? {
        try await base.checksum(remotePath: remotePath, algorithm: algorithm).map { String($0.reversed()) }
    }
    func stat(remotePath: ObjectKey) async throws -> RemoteFile? { try await base.stat(remotePath: remotePath).map(Self.wrong) }
    func makeLister(_ request: ListRequest) async throws -> any ObjectLister {
        MappedLister(try await base.makeLister(request)) { page in
            ListPage(entries: page.entries.map { entry in entry.file.map { .object(Self.wrong($0)) } ?? entry }, resumeToken: page.resumeToken)
        }
    }
}

/// Deletes by hiding: a deleted key cannot be read or stat'ed, but listings still show it.
struct TombstoneProvider: ForwardingStorageProvider {
    let base: any StorageProvider
    private let hidden = Locked<Set<ObjectKey>>([])

    init(base: any StorageProvider) { self.base = base }

    private func check(_ key: ObjectKey, _ operation: String) throws {
        if hidden.withLock({ $0.contains(key) }) { throw BuckiaError.notFound(key, operation: operation) }
    }
    func deleteFile(remotePath: ObjectKey) async throws { hidden.withLock { _ = $0.insert(remotePath) } }
    func deleteFiles(_ keys: [ObjectKey]) async throws { hidden.withLock { $0.formUnion(keys) } }
    func stat(remotePath: ObjectKey) async throws -> RemoteFile? {
        if hidden.withLock({ $0.contains(remotePath) }) { return nil }
        return try await base.stat(remotePath: remotePath)
    }
    func readData(remotePath: ObjectKey, options: ReadOptions) async throws -> Data {
        try check(remotePath, "read")
        return try await base.readData(remotePath: remotePath, options: options)
    }
    func downloadFile(remotePath: ObjectKey, localURL: URL, options: ReadOptions) async throws -> DownloadResult {
        try check(remotePath, "download")
        return try await base.downloadFile(remotePath: remotePath, localURL: localURL, options: options)
    }
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        hidden.withLock { _ = $0.remove(remotePath) }
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        hidden.withLock { _ = $0.remove(remotePath) }
        return try await base.uploadFile(localURL: localURL, remotePath: remotePath, options: options)
    }
}

/// Behaves like a careless file system: writing `x` removes everything under `x/`, and writing
/// `x/y` removes a file `x`, without a word.
struct FolderClobberingProvider: ForwardingStorageProvider {
    let base: any StorageProvider

    private func clear(around key: ObjectKey) async throws {
        var victims: [ObjectKey] = []
        for try await entry in base.list(ListOptions(prefix: key.rawValue + "/")) {
            if let file = entry.file { victims.append(file.path) }
        }
        let parts = key.rawValue.split(separator: "/", omittingEmptySubsequences: false)
        for end in parts.indices.dropLast() {
            victims.append(try ObjectKey(parts[...end].joined(separator: "/")))
        }
        try await base.deleteFiles(victims)
    }
    func uploadData(_ data: Data, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await clear(around: remotePath)
        return try await base.uploadData(data, remotePath: remotePath, options: options)
    }
    func uploadFile(localURL: URL, remotePath: ObjectKey, options: UploadOptions) async throws -> RemoteFile {
        try await clear(around: remotePath)
        return try await base.uploadFile(localURL: localURL, remotePath: remotePath, options: options)
    }
}
