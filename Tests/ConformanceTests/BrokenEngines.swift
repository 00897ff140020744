import Buckia
import BuckiaConformance
import Foundation
import Testing

// The engine half of the mutation harness: each breakage is applied over the memory engine,
// and the engine scenarios named for it must pass on the honest engine and fail on the broken
// one. Tests/ConformanceTests/README.md tabulates them.

/// One way to break the engine contract.
enum EngineBreakage: String, CaseIterable, Sendable {
    case keyExistsIsFalse, readsMissingAsEmpty, overwriteResetsCreatedAt, ignoresRemove, forgetsOnReopen
    case readsKeysInKeyOrder, foldsToNFC, losesEmptyValues, trimsKeys, countsOneMore, ignoresTheClock
    case unknownCapability, acceptsInvalidKeys, pagesIgnoreTheLimit, losesAConcurrentWrite
}

/// The memory engine with one breakage (or none, the honest side) applied.
actor BrokenEngine: PaginatedStorageEngine {
    let base: MemoryStorageEngine
    let breakage: EngineBreakage?
    nonisolated let capabilities: Set<EngineCapability>
    /// The first write of a concurrent pair, waiting for the second (``EngineBreakage/losesAConcurrentWrite``).
    private var waiting: CheckedContinuation<Void, Never>?
    private var raced = false

    init(base: MemoryStorageEngine, breakage: EngineBreakage?, persistent: Bool = false) {
        self.base = base
        self.breakage = breakage
        var capabilities = base.capabilities
        if persistent { capabilities.insert(.persistent) }
        if breakage == .unknownCapability { capabilities.insert("paginaton") }
        self.capabilities = capabilities
    }

    private func mapped(_ key: CacheKey) -> CacheKey {
        switch breakage {
        case .foldsToNFC: CacheKey(verbatim: key.value.precomposedStringWithCanonicalMapping)
        case .trimsKeys: CacheKey(verbatim: key.value.trimmingCharacters(in: .whitespacesAndNewlines))
        default: key
        }
    }

    func write(_ data: Data, key: CacheKey) async throws {
        switch breakage {
        case .losesEmptyValues where data.isEmpty:
            return
        case .acceptsInvalidKeys where (try? key.validate()) == nil:
            return
        case .losesAConcurrentWrite where !raced:
            // Deterministic lost update: the first write waits for a second to arrive, which
            // then vanishes. Only a scenario that writes concurrently ever gets a second.
            if let first = waiting {
                raced = true
                waiting = nil
                first.resume()
                return
            }
            await withCheckedContinuation { waiting = $0 }
        case .overwriteResetsCreatedAt:
            await base.remove(key: mapped(key))
        default:
            break
        }
        try await base.write(data, key: mapped(key))
    }

    func write(_ dataAndKeys: [(key: CacheKey, data: Data)]) async throws {
        if breakage == .acceptsInvalidKeys || breakage == .losesEmptyValues || breakage == .overwriteResetsCreatedAt {
            for (key, data) in dataAndKeys { try await write(data, key: key) }
            return
        }
        try await base.write(dataAndKeys.map { (mapped($0.key), $0.data) })
    }

    func read(key: CacheKey) async throws -> Data? {
        let value = await base.read(key: mapped(key))
        if value == nil && breakage == .readsMissingAsEmpty { return Data() }
        return value
    }

    func readDataAndKeys(keys: [CacheKey]) async throws -> [(key: CacheKey, data: Data)] {
        let found = await base.readDataAndKeys(keys: keys.map(mapped))
        return breakage == .readsKeysInKeyOrder ? found.sorted { $0.key < $1.key } : found
    }

    func readAllDataAndKeys() async throws -> [(key: CacheKey, data: Data)] { await base.readAllDataAndKeys() }

    func readDataAndKeys(after cursor: CacheKey?, limit: Int) async throws -> [(key: CacheKey, data: Data)] {
        await base.readDataAndKeys(after: cursor, limit: breakage == .pagesIgnoreTheLimit ? limit * 2 : limit)
    }

    func remove(key: CacheKey) async throws {
        if breakage == .ignoresRemove { return }
        await base.remove(key: mapped(key))
    }

    func removeAllData() async throws {
        if breakage == .ignoresRemove { return }
        await base.removeAllData()
    }

    func keyExists(_ key: CacheKey) async throws -> Bool {
        breakage == .keyExistsIsFalse ? false : await base.keyExists(mapped(key))
    }

    func keyCount() async throws -> Int { await base.keyCount() + (breakage == .countsOneMore ? 1 : 0) }
    func allKeys() async throws -> [CacheKey] { await base.allKeys() }
    func createdAt(key: CacheKey) async throws -> Date? { await base.createdAt(key: mapped(key)) }
    func updatedAt(key: CacheKey) async throws -> Date? { await base.updatedAt(key: mapped(key)) }
}

/// An engine breakage and the scenarios that must catch it.
struct EngineMutantCase: Sendable, CustomTestStringConvertible {
    let what: String
    let breakage: EngineBreakage
    let scenarios: [String]

    var testDescription: String { what }

    /// Opens the honest or the broken engine; every open after the first returns the same
    /// engine (in-process "persistence"), except for the breakage that forgets on reopen.
    func opener(broken: Bool) -> @Sendable (@escaping @Sendable () -> Date) async throws -> any StorageEngine {
        let opened = Locked<BrokenEngine?>(nil)
        let breakage = broken ? self.breakage : nil
        let persistent = self.breakage == .forgetsOnReopen
        return { now in
            opened.withLock { opened in
                if let engine = opened, breakage != .forgetsOnReopen { return engine }
                let wallClock: @Sendable () -> Date = { Date() }
                let clock = breakage == .ignoresTheClock ? wallClock : now
                let engine = BrokenEngine(base: MemoryStorageEngine(now: clock), breakage: breakage, persistent: persistent)
                opened = engine
                return engine
            }
        }
    }

    static let all: [EngineMutantCase] = [
        EngineMutantCase(what: "says a written key does not exist", breakage: .keyExistsIsFalse, scenarios: ["engine: round trip", "engine: keys, existence and counts"]),
        EngineMutantCase(what: "reads a missing key as empty", breakage: .readsMissingAsEmpty, scenarios: ["engine: missing key"]),
        EngineMutantCase(what: "an overwrite resets createdAt", breakage: .overwriteResetsCreatedAt, scenarios: ["engine: overwrite keeps createdAt"]),
        EngineMutantCase(what: "ignores removes", breakage: .ignoresRemove, scenarios: ["engine: remove and removeAll", "engine: keys, existence and counts"]),
        EngineMutantCase(what: "declares persistent, forgets on reopen", breakage: .forgetsOnReopen, scenarios: ["engine: data survives reopening"]),
        EngineMutantCase(what: "reads a batch in key order, not the order asked", breakage: .readsKeysInKeyOrder, scenarios: ["engine: batch round trip"]),
        EngineMutantCase(what: "folds keys to NFC", breakage: .foldsToNFC, scenarios: ["engine: NFC and NFD keys are two values", "engine: unusual keys"]),
        EngineMutantCase(what: "loses empty values", breakage: .losesEmptyValues, scenarios: ["engine: empty and 1 MiB values"]),
        EngineMutantCase(what: "trims whitespace from keys", breakage: .trimsKeys, scenarios: ["engine: unusual keys"]),
        EngineMutantCase(what: "counts one key too many", breakage: .countsOneMore, scenarios: ["engine: keys, existence and counts", "engine: round trip"]),
        EngineMutantCase(what: "keeps time by the wall clock, not the one given", breakage: .ignoresTheClock, scenarios: ["engine: timestamps", "engine: overwrite keeps createdAt"]),
        EngineMutantCase(what: "declares a misspelt capability", breakage: .unknownCapability, scenarios: ["engine: declared capabilities are known"]),
        EngineMutantCase(what: "accepts invalid keys", breakage: .acceptsInvalidKeys, scenarios: ["engine: invalid keys are refused"]),
        EngineMutantCase(what: "pages past the limit", breakage: .pagesIgnoreTheLimit, scenarios: ["engine: pagination"]),
        EngineMutantCase(what: "loses one of two concurrent writes", breakage: .losesAConcurrentWrite, scenarios: ["engine: 8 concurrent writers"]),
    ]

    /// The Tests/ConformanceTests/README.md table for engine scenarios.
    static var table: String {
        mutationTable("engine scenario", scenarios: EngineConformance.scenarios.map(\.name), breakages: all.map { ($0.what, $0.scenarios) })
    }
}

@Suite("Every engine scenario fails against an engine broken in its way")
struct BrokenEngineTests {
    @Test(arguments: EngineMutantCase.all)
    func mutantIsCaught(_ mutant: EngineMutantCase) async throws {
        for name in mutant.scenarios {
            let scenario = try #require(EngineConformance.scenarios.first { $0.name == name }, "no engine scenario named \(name)")
            let honest = await EngineConformance.run(scenario, open: mutant.opener(broken: false))
            #expect(honest == .passed, "“\(name)” on the honest engine: \(honest)")
            let broken = await EngineConformance.run(scenario, open: mutant.opener(broken: true))
            guard case .failed = broken else {
                Issue.record("\(mutant.what): expected “\(name)” to fail, got \(broken)")
                continue
            }
        }
    }

    @Test("Every engine scenario is failed by at least one broken engine")
    func everyScenarioHasAMutant() {
        let covered = Set(EngineMutantCase.all.flatMap(\.scenarios))
        let uncovered = EngineConformance.scenarios.map(\.name).filter { !covered.contains($0) }
        #expect(uncovered.isEmpty, "engine scenarios no broken engine is shown to fail: \(uncovered)")
    }

    @Test("Tests/ConformanceTests/README.md shows the engine scenario → broken engine table as the harness has it")
    func tableIsDocumented() throws {
        #expect(try testingDocument().contains(EngineMutantCase.table), "Tests/ConformanceTests/README.md must hold this table:\n\(EngineMutantCase.table)")
    }
}
