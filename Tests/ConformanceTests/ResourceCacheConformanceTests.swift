import Buckia
import BuckiaConformance
import BuckiaConformanceTesting
import BuckiaResourceCache
import BuckiaResourceCacheConformance
import Foundation
import Testing

/// One configuration of the resource cache the conformance scenarios run with: each of
/// Buckia's plugins in turn over the seed's defaults, and all of the non-default ones at once.
struct CacheSubject: Sendable, CustomTestStringConvertible {
    let name: String
    let make: @Sendable (URL) throws -> ResourceCacheConfiguration
    var testDescription: String { name }

    static func with(_ name: String, _ change: @escaping @Sendable (inout ResourceCacheConfiguration, URL) throws -> Void) -> CacheSubject {
        CacheSubject(name: name) { scratch in
            var configuration = ResourceCacheConfiguration()
            try change(&configuration, scratch)
            return configuration
        }
    }

    /// Lower-cases text resources and tags them: bytes a scenario can tell from the original.
    struct Tagging: ResourceProcessor {
        let id: String
        func shouldProcess(_ location: ResourceLocation) -> Bool { !location.text.hasSuffix(".raw") }
        func process(_ data: Data, for location: ResourceLocation) throws -> Data { Data(data.reversed()) + Data(id.utf8) }
    }

    /// Extended attributes, where the file system under the scratch folder keeps them; a
    /// skip (with the reason) where it does not.
    static func extendedAttributes(_ scratch: URL) throws -> any ResourceMetadataProvider {
        let provider = ExtendedAttributeMetadataProvider()
        let probe = scratch.appendingPathComponent("xattr-probe")
        try Data().write(to: probe)
        do {
            try provider.save(["probe": "1"], key: "probe", file: probe)
        } catch let error as BuckiaError where error.code == .unsupported {
            throw ConformanceSkip("the temporary folder's file system keeps no user extended attributes: \(error.message)")
        }
        try FileManager.default.removeItem(at: probe)
        return provider
    }

    static let all: [CacheSubject] = [
        with("defaults") { _, _ in },
        with("sha256 identifiers") { configuration, _ in configuration.identifierProvider = SHA256IdentifierProvider() },
        with("normalized identifiers") { configuration, _ in configuration.identifierProvider = NormalizingIdentifierProvider() },
        with("domain paths") { configuration, _ in configuration.pathProvider = DomainStoragePathProvider() },
        with("date paths") { configuration, _ in configuration.pathProvider = DateStoragePathProvider() },
        with("category paths") { configuration, _ in
            configuration.pathProvider = CategoryStoragePathProvider { location in location.lastComponent.hasSuffix(".png") ? "images" : "other" }
        },
        with("size paths") { configuration, _ in configuration.pathProvider = SizeStoragePathProvider() },
        with("zlib") { configuration, _ in configuration.transform = ZlibTransform() },
        with("adaptive") { configuration, _ in configuration.transform = AdaptiveTransform(threshold: 4_096) },
        with("JSON sidecar metadata") { configuration, _ in configuration.metadataProvider = JSONSidecarMetadataProvider() },
        with("extended-attribute metadata") { configuration, scratch in configuration.metadataProvider = try extendedAttributes(scratch) },
        with("SQLite metadata") { configuration, scratch in
            configuration.metadataProvider = try SQLiteMetadataProvider(path: scratch.appendingPathComponent("metadata.sqlite").path)
        },
        with("LFU") { configuration, _ in configuration.evictionPolicy = LFUEvictionPolicy() },
        with("largest first") { configuration, _ in configuration.evictionPolicy = LargestFirstEvictionPolicy() },
        with("oldest first") { configuration, _ in configuration.evictionPolicy = OldestFirstEvictionPolicy() },
        with("priority") { configuration, _ in configuration.evictionPolicy = PriorityEvictionPolicy() },
        with("custom smallest first") { configuration, _ in configuration.evictionPolicy = CustomEvictionPolicy(name: "smallest-first") { entry, _ in Double(entry.size) } },
        with("processor") { configuration, _ in configuration.processor = Tagging(id: "tag-v1") },
        with("everything at once") { configuration, scratch in
            configuration.identifierProvider = NormalizingIdentifierProvider(hash: SHA256IdentifierProvider())
            configuration.pathProvider = SizeStoragePathProvider(mediumFrom: 2_000, largeFrom: 100_000)
            configuration.transform = AdaptiveTransform(threshold: 1_024)
            configuration.metadataProvider = try SQLiteMetadataProvider(path: scratch.appendingPathComponent("metadata.sqlite").path)
            configuration.evictionPolicy = LFUEvictionPolicy()
            configuration.processor = Tagging(id: "tag-v1")
            configuration.durableWrites = false
        },
    ]
}

/// The resource-cache conformance scenarios (BuckiaConformance), run with every plugin Buckia
/// ships: the list a third party's plugin runs too.
@Suite("Resource cache conformance, with every built-in plugin")
struct ResourceCacheConformanceTests {
    // The limit is a hang guard: in a full run on a loaded machine (another build beside it)
    // one case ran past 5 minutes.
    @Test(.timeLimit(.minutes(15)), arguments: CacheSubject.all, ResourceCacheConformance.scenarios)
    func conformance(_ subject: CacheSubject, _ scenario: ResourceCacheScenario) async throws {
        try await scenario.check(subject.name, configure: subject.make)
    }

    @Test("Each capability a scenario needs is declared by at least one built-in subject, so no scenario is skipped everywhere")
    func everyScenarioRunsSomewhere() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-cache-capabilities-\(UUID().uuidString)")
        defer { ScratchFolder.remove(root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let declared = try CacheSubject.all.reduce(into: Set<ResourceCacheCapability>()) { found, subject in
            if subject.name != "extended-attribute metadata" { found.formUnion(try subject.make(root).capabilities) }
        }
        for scenario in ResourceCacheConformance.scenarios {
            #expect(scenario.requires.isSubset(of: declared), "no subject runs “\(scenario.name)”: it needs \(scenario.requires.subtracting(declared))")
        }
    }
}

/// Removes a test's folder; a failure is recorded, not hidden.
enum ScratchFolder {
    static func remove(_ folder: URL) {
        do {
            try FileManager.default.removeItem(at: folder)
        } catch {
            Issue.record("\(folder.path) was left behind: \(error)")
        }
    }
}
