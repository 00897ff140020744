import Buckia
import BuckiaConformance
import BuckiaResourceCache
import BuckiaResourceCacheConformance
import Foundation
import Testing

// The resource-cache half of the mutation harness: plugins each broken in one way; the
// resource-cache scenarios named for each must pass with the honest plugin and fail with the
// broken one. Tests/ConformanceTests/README.md tabulates them.

/// A new identifier at every call.
struct UnstableIdentifiers: ResourceIdentifierProvider {
    var ruleName: String { "unstable" }
    func identifier(for location: ResourceLocation) throws -> String { UUID().uuidString }
}

/// The MD5 of the origin only: every resource of a host is one entry.
struct HostIdentifiers: ResourceIdentifierProvider {
    var ruleName: String { "host" }
    func identifier(for location: ResourceLocation) throws -> String { try MD5IdentifierProvider().identifier(for: .remote(name: location.origin, path: "")) }
}

/// One file name for every entry.
struct ConstantPaths: StoragePathProvider {
    func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String { "entry.bin" }
}

/// Every entry one folder above the cache's.
struct EscapingPaths: StoragePathProvider {
    func path(for location: ResourceLocation, identifier: String, fileExtension: String, storedAt: Date, size: Int64) -> String { "../escaped/\(identifier)" }
}

/// zlib whose decoder drops the last byte.
struct LossyTransform: ResourceTransform {
    var name: String { "lossy" }
    var fileExtension: String { "z" }
    func encode(_ data: Data) throws -> Data { try ZlibTransform().encode(data) }
    func decode(_ data: Data) throws -> Data { try ZlibTransform().decode(data).dropLast() }
}

/// JSON sidecars, broken one way.
struct BrokenSidecars: ResourceMetadataProvider {
    enum Breakage { case forgets, merges, ignoresClear }
    let breakage: Breakage
    let honest = JSONSidecarMetadataProvider()

    func save(_ metadata: [String: String], key: String, file: URL) throws {
        let merged = breakage == .merges ? (try honest.load(key: key, file: file) ?? [:]).merging(metadata) { $1 } : metadata
        try honest.save(merged, key: key, file: file)
    }

    func load(key: String, file: URL) throws -> [String: String]? { breakage == .forgets ? nil : try honest.load(key: key, file: file) }

    func clear(key: String, file: URL) throws {
        if breakage != .ignoresClear { try honest.clear(key: key, file: file) }
    }
}

/// A score drawn at random at every call.
struct RandomScores: CacheEvictionPolicy {
    var name: String { "random" }
    func score(_ entry: CacheEntryInfo, now: Date) -> Double { Double.random(in: 0..<1) }
}

/// A processor whose output differs at every call.
struct NondeterministicProcessor: ResourceProcessor {
    var id: String { "noisy" }
    func shouldProcess(_ location: ResourceLocation) -> Bool { true }
    func process(_ data: Data, for location: ResourceLocation) throws -> Data { data + Data([UInt8.random(in: 0...255)]) }
}

/// A cache-plugin breakage and the scenarios that must catch it.
struct CacheMutantCase: Sendable, CustomTestStringConvertible {
    let what: String
    let scenarios: [String]
    let capabilities: Set<ResourceCacheCapability>?
    let honest: @Sendable (inout ResourceCacheConfiguration) -> Void
    let broken: @Sendable (inout ResourceCacheConfiguration) -> Void

    var testDescription: String { what }

    init(
        _ what: String, _ scenarios: [String], capabilities: Set<ResourceCacheCapability>? = nil,
        honest: @escaping @Sendable (inout ResourceCacheConfiguration) -> Void, broken: @escaping @Sendable (inout ResourceCacheConfiguration) -> Void
    ) {
        (self.what, self.scenarios, self.capabilities, self.honest, self.broken) = (what, scenarios, capabilities, honest, broken)
    }

    func configure(broken: Bool) -> @Sendable (URL) throws -> ResourceCacheConfiguration {
        let change = broken ? self.broken : honest
        return { _ in
            var configuration = ResourceCacheConfiguration()
            change(&configuration)
            return configuration
        }
    }

    static let roundTrip = "cache: round trip"
    static let sidecars: @Sendable (inout ResourceCacheConfiguration) -> Void = { $0.metadataProvider = JSONSidecarMetadataProvider() }

    static let all: [CacheMutantCase] = [
        CacheMutantCase("identifiers that change at every call", ["identifiers: stable plain names", roundTrip], honest: { _ in }) {
            $0.identifierProvider = UnstableIdentifiers()
        },
        CacheMutantCase("identifiers of the host alone", ["identifiers: distinct resources are distinct entries", "downloader: remote resources through the configuration"], honest: { _ in }) {
            $0.identifierProvider = HostIdentifiers()
        },
        CacheMutantCase(
            "one path for every entry",
            [
                "identifiers: distinct resources are distinct entries", "cache: the index agrees with the files", "cache: an entry larger than the limit is refused",
            ], honest: { _ in }
        ) {
            $0.pathProvider = ConstantPaths()
        },
        CacheMutantCase("paths that climb out of the folder", [roundTrip, "identifiers: hostile locations stay inside the folder"], honest: { _ in }) {
            $0.pathProvider = EscapingPaths()
        },
        CacheMutantCase("a decoder that drops the last byte", ["transform: decode undoes encode", roundTrip, "cache: a damaged file is a miss", "eviction: a random workload stays within the limits"], honest: { $0.transform = ZlibTransform() }) {
            $0.transform = LossyTransform()
        },
        CacheMutantCase("metadata that is never loaded", ["metadata: kept with its entry", "metadata: the provider on its own"], honest: sidecars) {
            $0.metadataProvider = BrokenSidecars(breakage: .forgets)
        },
        CacheMutantCase("metadata merged into what was saved before", ["metadata: kept with its entry", "metadata: the provider on its own"], honest: sidecars) {
            $0.metadataProvider = BrokenSidecars(breakage: .merges)
        },
        CacheMutantCase(
            "metadata that clearing leaves", ["metadata: kept with its entry", "metadata: the provider on its own", "cache: remove and clear leave nothing behind"], honest: sidecars
        ) {
            $0.metadataProvider = BrokenSidecars(breakage: .ignoresClear)
        },
        CacheMutantCase("an eviction score drawn at random", ["eviction: victims follow the policy"], honest: { _ in }) {
            $0.evictionPolicy = RandomScores()
        },
        CacheMutantCase(
            "a processor without an identity of its own", ["processor: its identity is in the key"], honest: { $0.processor = CacheSubject.Tagging(id: "tag-v1") }
        ) {
            $0.processor = CacheSubject.Tagging(id: "original")
        },
        CacheMutantCase("a processor whose output differs each time", ["processor: its identity is in the key", "eviction: a random workload stays within the limits"], honest: { $0.processor = CacheSubject.Tagging(id: "tag-v1") }) {
            $0.processor = NondeterministicProcessor()
        },
        CacheMutantCase(
            "declares stable signed URLs but hashes the URL as written", ["identifiers: rotating signatures are one entry"], capabilities: [.stableSignedURLs],
            honest: { $0.identifierProvider = NormalizingIdentifierProvider() }
        ) {
            $0.identifierProvider = MD5IdentifierProvider()
        },
    ]

    /// The Tests/ConformanceTests/README.md table for resource-cache scenarios.
    static var table: String {
        mutationTable("resource-cache scenario", scenarios: ResourceCacheConformance.scenarios.map(\.name), breakages: all.map { ($0.what, $0.scenarios) })
    }
}

@Suite("Every resource-cache scenario fails with a plugin broken in its way")
struct BrokenCachePluginTests {
    @Test(.timeLimit(.minutes(15)), arguments: CacheMutantCase.all)
    func mutantIsCaught(_ mutant: CacheMutantCase) async throws {
        for name in mutant.scenarios {
            let scenario = try #require(ResourceCacheConformance.scenarios.first { $0.name == name }, "no resource-cache scenario named \(name)")
            let honest = await ResourceCacheConformance.run(scenario, capabilities: mutant.capabilities, configure: mutant.configure(broken: false))
            #expect(honest == .passed, "“\(name)” with the honest plugin: \(honest)")
            let broken = await ResourceCacheConformance.run(scenario, capabilities: mutant.capabilities, configure: mutant.configure(broken: true))
            guard case .failed = broken else {
                Issue.record("\(mutant.what): expected “\(name)” to fail, got \(broken)")
                continue
            }
        }
    }

    @Test("Every resource-cache scenario is failed by at least one broken plugin")
    func everyScenarioHasAMutant() {
        let covered = Set(CacheMutantCase.all.flatMap(\.scenarios))
        for scenario in ResourceCacheConformance.scenarios {
            #expect(covered.contains(scenario.name), "no broken plugin fails “\(scenario.name)”")
        }
    }

    @Test("Tests/ConformanceTests/README.md shows the resource-cache scenario → broken plugin table as the harness has it")
    func tableIsDocumented() throws {
        #expect(try testingDocument().contains(CacheMutantCase.table), "Tests/ConformanceTests/README.md must hold this table:\n\(CacheMutantCase.table)")
    }
}
