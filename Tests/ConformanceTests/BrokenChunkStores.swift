import Buckia
import BuckiaConformance
import Foundation
import Testing

// The chunk-store half of the mutation harness: an in-memory chunk store with one breakage
// applied; the chunk-store scenarios named for each must pass on the honest store and fail on
// the broken one. Tests/ConformanceTests/README.md tabulates them.

/// One way to break the chunk-store contract.
enum ChunkStoreBreakage: String, CaseIterable, Sendable {
    case losesWrites, existenceAlwaysTrue, existenceAlwaysFalse, batchOmitsAbsent, acceptsMisplacedPaths, readsStaleBytes
    case tornFirstWrite, listsEachWrite, ignoresDeletes, acceptsTraversal, importsBeforeChecking
}

/// Chunk bytes in memory, shared by every store opened over it.
final class MemoryChunkObjects: Sendable {
    struct State {
        var objects: [String: Data] = [:]
        var firstWrites: [String: Data] = [:]
        var writeLog: [String] = []
    }
    let state = Locked(State())
}

struct BrokenRetrieval: ChunkStorageRetrieval {
    let objects: MemoryChunkObjects
    let breakage: ChunkStoreBreakage?

    private func check(_ path: String) throws {
        if breakage != .acceptsTraversal { try ChunkPath.validate(path, operation: "chunk") }
    }

    func readChunk(at path: String) async throws -> Data? {
        try check(path)
        return objects.state.withLock { state in
            breakage == .readsStaleBytes ? state.firstWrites[path] ?? state.objects[path] : state.objects[path]
        }
    }

    func writeChunk(_ data: Data, at path: String, metadata: ChunkMetadata?) async throws {
        try check(path)
        objects.state.withLock { state in
            if breakage == .losesWrites { return }
            if breakage == .tornFirstWrite {
                if state.objects[path] == nil { state.objects[path] = data.prefix(data.count / 2) }
                return
            }
            if state.firstWrites[path] == nil { state.firstWrites[path] = data }
            state.objects[path] = data
            state.writeLog.append(path)
        }
    }

    func chunkExists(at path: String) async throws -> Bool {
        try check(path)
        return objects.state.withLock { $0.objects[path] != nil }
    }

    func deleteChunk(at path: String) async throws {
        try check(path)
        if breakage == .ignoresDeletes { return }
        objects.state.withLock { state in
            state.objects[path] = nil
            state.firstWrites[path] = nil
            state.writeLog.removeAll { $0 == path }
        }
    }
}

struct BrokenExistence: ChunkStorageExistence {
    let retrieval: BrokenRetrieval
    let organization: any ChunkStorageOrganization
    let breakage: ChunkStoreBreakage

    func chunkExists(identifier: ChunkIdentifier) async throws -> Bool {
        switch breakage {
        case .existenceAlwaysTrue: true
        case .existenceAlwaysFalse: false
        default: try await retrieval.chunkExists(at: organization.storagePath(for: identifier))
        }
    }

    func chunkExists(identifiers: [ChunkIdentifier]) async throws -> [ChunkIdentifier: Bool] {
        var answers: [ChunkIdentifier: Bool] = [:]
        for identifier in identifiers {
            let exists = try await chunkExists(identifier: identifier)
            if breakage == .batchOmitsAbsent && !exists { continue }
            answers[identifier] = exists
        }
        return answers
    }
}

struct BrokenEnumeration: ChunkStorageEnumeration {
    let objects: MemoryChunkObjects
    let organization: any ChunkStorageOrganization
    let breakage: ChunkStoreBreakage?

    func allChunks() async throws -> [ChunkIdentifier] {
        let paths = objects.state.withLock { breakage == .listsEachWrite ? $0.writeLog : Array($0.objects.keys) }
        return paths.compactMap { organization.identifier(from: $0) }
    }
}

/// Git-style at depth 1, except that the broken one takes any identifier under any folder.
struct LooseOrganization: ChunkStorageOrganization {
    let strict = GitStyleOrganization(directoryDepth: 1)
    var name: String { "loose" }
    var description: String { "accepts misplaced paths" }
    func storagePath(for identifier: ChunkIdentifier) -> String { strict.storagePath(for: identifier) }
    func identifier(from path: String) -> ChunkIdentifier? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        return try? ChunkIdentifier(id: String(parts[1]))
    }
}

/// Imports chunk by chunk as it reads, checking nothing: a truncated pack stores what came first.
struct HastyImport: ChunkStorageImport {
    let store: BrokenChunkStore

    func importChunks(from url: URL) async throws -> ChunkPackSummary {
        let bytes = [UInt8](try Data(contentsOf: url))
        var offset = 12
        var count = 0
        while offset + 38 <= bytes.count, bytes[offset] == 1 {
            let length = (0..<4).reduce(0) { $0 | Int(bytes[offset + 34 + $1]) << (8 * $1) }
            let start = offset + 38
            guard start + length <= bytes.count else { break }
            let data = Data(bytes[start..<(start + length)])
            _ = try await store.storeChunk(data)
            count += 1
            offset = start + length
        }
        throw BuckiaError(.corrupt, "the pack ended early after \(count) chunks")
    }
}

struct BrokenChunkStore: ChunkStorageComposable {
    let objects: MemoryChunkObjects
    let breakage: ChunkStoreBreakage?

    var organization: any ChunkStorageOrganization {
        breakage == .acceptsMisplacedPaths ? LooseOrganization() : GitStyleOrganization(directoryDepth: 1)
    }
    var retrieval: any ChunkStorageRetrieval { BrokenRetrieval(objects: objects, breakage: breakage) }
    var existence: (any ChunkStorageExistence)? {
        guard let breakage, [.existenceAlwaysTrue, .existenceAlwaysFalse, .batchOmitsAbsent].contains(breakage) else { return nil }
        return BrokenExistence(retrieval: BrokenRetrieval(objects: objects, breakage: nil), organization: organization, breakage: breakage)
    }
    var enumeration: (any ChunkStorageEnumeration)? { BrokenEnumeration(objects: objects, organization: organization, breakage: breakage) }
    var `import`: (any ChunkStorageImport)? {
        breakage == .importsBeforeChecking ? HastyImport(store: self) : ChunkPackTransfer(storage: self)
    }
}

/// A chunk-store breakage and the scenarios that must catch it.
struct ChunkStoreMutantCase: Sendable, CustomTestStringConvertible {
    let what: String
    let breakage: ChunkStoreBreakage
    let scenarios: [String]

    var testDescription: String { what }

    func opener(broken: Bool) -> @Sendable () async throws -> any ChunkStorageComposable {
        let objects = MemoryChunkObjects()
        let breakage = broken ? self.breakage : nil
        return { BrokenChunkStore(objects: objects, breakage: breakage) }
    }

    static let all: [ChunkStoreMutantCase] = [
        ChunkStoreMutantCase(what: "loses writes", breakage: .losesWrites, scenarios: ["chunks: round trip", "chunks: a wrong key is refused", "chunks: files as chunks write only what changed"]),
        ChunkStoreMutantCase(what: "says every chunk exists", breakage: .existenceAlwaysTrue, scenarios: ["chunks: round trip", "chunks: batched existence"]),
        ChunkStoreMutantCase(what: "says no chunk exists", breakage: .existenceAlwaysFalse, scenarios: ["chunks: batched existence", "chunks: files as chunks write only what changed"]),
        ChunkStoreMutantCase(what: "leaves absent chunks out of a batch's answers", breakage: .batchOmitsAbsent, scenarios: ["chunks: batched existence"]),
        ChunkStoreMutantCase(what: "its organization accepts a chunk under another's folder", breakage: .acceptsMisplacedPaths, scenarios: ["chunks: path and identifier round trip for every organization"]),
        ChunkStoreMutantCase(what: "reads the first bytes ever written at a path", breakage: .readsStaleBytes, scenarios: ["chunks: every decorator order is transparent", "chunks: corruption is detected"]),
        ChunkStoreMutantCase(what: "keeps half of the first write and ignores later ones", breakage: .tornFirstWrite, scenarios: ["chunks: round trip", "chunks: concurrent writers of the same chunk are safe"]),
        ChunkStoreMutantCase(what: "lists a chunk once per write", breakage: .listsEachWrite, scenarios: ["chunks: concurrent writers of the same chunk are safe"]),
        ChunkStoreMutantCase(what: "ignores deletes", breakage: .ignoresDeletes, scenarios: ["chunks: round trip", "chunks: pack export and import"]),
        ChunkStoreMutantCase(what: "accepts paths that leave the store", breakage: .acceptsTraversal, scenarios: ["chunks: paths that leave the store are refused"]),
        ChunkStoreMutantCase(what: "imports a pack before checking it whole", breakage: .importsBeforeChecking, scenarios: ["chunks: pack export and import"]),
    ]

    /// The Tests/ConformanceTests/README.md table for chunk-store scenarios.
    static var table: String {
        mutationTable("chunk-store scenario", scenarios: ChunkStoreConformance.scenarios.map(\.name), breakages: all.map { ($0.what, $0.scenarios) })
    }
}

@Suite("Every chunk-store scenario fails against a store broken in its way")
struct BrokenChunkStoreTests {
    @Test(arguments: ChunkStoreMutantCase.all)
    func mutantIsCaught(_ mutant: ChunkStoreMutantCase) async throws {
        for name in mutant.scenarios {
            let scenario = try #require(ChunkStoreConformance.scenarios.first { $0.name == name }, "no chunk-store scenario named \(name)")
            let honest = await ChunkStoreConformance.run(scenario, open: mutant.opener(broken: false))
            #expect(honest == .passed, "“\(name)” on the honest store: \(honest)")
            let broken = await ChunkStoreConformance.run(scenario, open: mutant.opener(broken: true))
            guard case .failed = broken else {
                Issue.record("\(mutant.what): expected “\(name)” to fail, got \(broken)")
                continue
            }
        }
    }

    @Test("Every chunk-store scenario is failed by at least one broken store")
    func everyScenarioHasAMutant() {
        let covered = Set(ChunkStoreMutantCase.all.flatMap(\.scenarios))
        let uncovered = ChunkStoreConformance.scenarios.map(\.name).filter { !covered.contains($0) }
        #expect(uncovered.isEmpty, "chunk-store scenarios no broken store is shown to fail: \(uncovered)")
    }

    @Test("Tests/ConformanceTests/README.md shows the chunk-store scenario → broken store table as the harness has it")
    func tableIsDocumented() throws {
        #expect(try testingDocument().contains(ChunkStoreMutantCase.table), "Tests/ConformanceTests/README.md must hold this table:\n\(ChunkStoreMutantCase.table)")
    }
}
