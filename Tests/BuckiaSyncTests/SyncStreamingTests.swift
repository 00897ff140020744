import BuckiaCore
import BuckiaMemory
import BuckiaSync
import Foundation
import Testing

/// A run that cannot delete copies as it lists, a batch at a time; one that can delete plans
/// every path before it copies one (a delete and a copy far apart may be one rename).
@Suite("Sync copying as it lists")
struct SyncStreamingTests {
    /// What a run reported, in order.
    enum Seen: Equatable {
        case listed, planned(Int), finished
    }

    /// Two memory providers, the first holding `count` small files in four folders.
    static func pair(_ count: Int) async throws -> (SyncEndpoint, SyncEndpoint, MemoryProvider) {
        let source = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        let destination = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
        for n in 0..<count { _ = try await source.uploadData(Data("file \(n)".utf8), remotePath: "d/\(n % 4)/\(n).txt") }
        return (
            try SyncEndpoint(provider: source, path: "d", backend: "memory:source"),
            try SyncEndpoint(provider: destination, path: "d", backend: "memory:destination"), destination
        )
    }

    /// Runs `engine`, recording its events in order.
    static func run(_ engine: SyncEngine) async throws -> (SyncResult, [Seen]) {
        let seen = Locked<[Seen]>([])
        let result = try await engine.run { event in
            switch event {
            case .listed: seen.withLock { $0.append(.listed) }
            case .planned(let summary): seen.withLock { $0.append(.planned(summary.uploads)) }
            case .finished(.upload, _): seen.withLock { $0.append(.finished) }
            default: break
            }
        }
        return (result, seen.withLock { $0 })
    }

    @Test("A first push of more than a batch copies as it lists: a plan per batch, copies before the listing ends, every file sent once")
    func firstPushStreams() async throws {
        let count = SyncEngine.batchSize * 2 + 100
        let (source, destination, stored) = try await Self.pair(count)
        let (result, seen) = try await Self.run(SyncEngine(local: source, remote: destination, stateStore: nil))
        #expect(result.uploaded == count && result.failures.isEmpty)
        #expect(result.summary.uploads == count && result.plan.count == count && result.newFiles.count == count)
        let plans = seen.compactMap { if case .planned(let uploads) = $0 { uploads } else { nil } }
        #expect(plans == [SyncEngine.batchSize, SyncEngine.batchSize * 2, count], "the plan so far after each batch, the whole plan last")
        let listedAt = try #require(seen.firstIndex(of: .listed))
        #expect(seen[..<listedAt].filter { $0 == .finished }.count == SyncEngine.batchSize * 2, "the first two batches were copied before the listing ended")
        #expect(try await stored.listFiles(path: "d").count == count)
        // The second run finds nothing to do.
        let (again, _) = try await Self.run(SyncEngine(local: source, remote: destination, stateStore: nil))
        #expect(again.uploaded == 0 && again.summary.unchanged == count)
    }

    @Test("Without recordsPlan a run lists no action and no new file, and still counts and copies them", arguments: [false, true])
    func unrecordedPlan(_ canDelete: Bool) async throws {
        let count = SyncEngine.batchSize + 10
        let (source, destination, stored) = try await Self.pair(count)
        var options = SyncOptions(deleteExtraneous: canDelete)
        options.recordsPlan = false
        let (result, _) = try await Self.run(SyncEngine(local: source, remote: destination, options: options, stateStore: nil))
        #expect(result.plan.isEmpty && result.newFiles.isEmpty)
        #expect(result.summary.uploads == count && result.uploaded == count)
        #expect(try await stored.listFiles(path: "d").count == count)
        // A dry run's plan is its result: listed whatever the option says.
        options.dryRun = true
        let (dry, _) = try await Self.run(SyncEngine(local: source, remote: destination, options: options, stateStore: nil))
        #expect(dry.plan.count == count && dry.summary.transfers == 0, "every path recorded, nothing to copy: \(dry.summary)")
        try await stored.deleteFile(remotePath: "d/0/0.txt")
        let (missing, _) = try await Self.run(SyncEngine(local: source, remote: destination, options: options, stateStore: nil))
        let uploads = missing.plan.filter { if case .upload = $0 { true } else { false } }
        #expect(uploads.map(\.path.rawValue) == ["0/0.txt"] && missing.newFiles.map(\.rawValue) == ["0/0.txt"])
    }

    @Test("A push that can delete plans every path before copying one")
    func deletingPushPlansFirst() async throws {
        let count = SyncEngine.batchSize + 10
        let (source, destination, _) = try await Self.pair(count)
        let (result, seen) = try await Self.run(SyncEngine(local: source, remote: destination, options: SyncOptions(deleteExtraneous: true), stateStore: nil))
        #expect(result.uploaded == count)
        #expect(Array(seen.prefix(2)) == [.listed, .planned(count)], "\(seen.prefix(4))")
    }

    @Test("A dry run of more than a batch copies nothing and reports one whole plan")
    func dryRunPlansOnly() async throws {
        let count = SyncEngine.batchSize + 10
        let (source, destination, stored) = try await Self.pair(count)
        let (result, seen) = try await Self.run(SyncEngine(local: source, remote: destination, options: SyncOptions(dryRun: true), stateStore: nil))
        #expect(result.plan.count == count && result.uploaded == 0)
        #expect(seen == [.listed, .planned(count)])
        #expect(try await stored.listFiles(path: "d").isEmpty)
    }
}
