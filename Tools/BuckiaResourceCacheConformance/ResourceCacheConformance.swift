import BuckiaConformance
import BuckiaCore
import BuckiaResourceCache
import Foundation

/// A scenario for a resource cache's pluggable parts: see ``ResourceCacheConformance``.
public struct ResourceCacheScenario: ConformanceScenario {
    public typealias Feature = ResourceCacheCapability
    public let name: String
    public let contract: String
    public let requires: Set<Feature>
    public let excludedBy: Set<Feature>
    public let body: @Sendable (ResourceCacheScenarioContext) async throws -> Void

    public init(
        _ name: String, contract: String, requires: Set<Feature>, excludedBy: Set<Feature>,
        body: @escaping @Sendable (ResourceCacheScenarioContext) async throws -> Void
    ) {
        (self.name, self.contract, self.requires, self.excludedBy, self.body) = (name, contract, requires, excludedBy, body)
    }
}

/// What a resource-cache scenario works with: the configuration under test, a cache folder
/// to open it on, a folder beside it that nothing may touch, and a clock the scenario moves.
public struct ResourceCacheScenarioContext: Sendable {
    /// The configuration under test (its plugins, with whatever limits the subject chose).
    public let configuration: ResourceCacheConfiguration
    /// The cache folder. Removed afterwards, with everything beside it.
    public let folder: URL
    /// A folder beside the cache folder: nothing in it may ever change.
    public let outside: URL
    let clock: Locked<Date>

    /// The time the caches opened here are stamped with.
    public var now: Date { clock.withLock { $0 } }

    /// Moves the clock by `seconds` (backwards too).
    public func advance(_ seconds: TimeInterval) { clock.withLock { $0 += seconds } }

    /// Opens a cache on ``folder`` with the configuration under test, changed by `configure`
    /// (limits, usually; a scenario never swaps the plugin it checks). Opening again opens
    /// the same entries.
    public func open(_ configure: (inout ResourceCacheConfiguration) -> Void = { _ in }) throws -> ResourceCache {
        var configuration = configuration
        configure(&configuration)
        let clock = clock
        return try ResourceCache(folder: folder, configuration: configuration, clock: { clock.withLock { $0 } })
    }

    /// The bytes a read must give for `data` stored at `location`: processed when the
    /// configuration's processor takes the location, else `data`.
    public func expected(_ data: Data, for location: ResourceLocation) throws -> Data {
        guard let processor = configuration.processor, processor.shouldProcess(location) else { return data }
        return try processor.process(data, for: location)
    }

    /// The files (and links) under the cache folder, not its folders, as relative paths,
    /// leaving out Buckia's own (`.buckia-index.sqlite`, `.buckia-tmp/`, `.buckia-locks/`). A
    /// layout's folders may stay when their last entry goes: another process may be about to
    /// write into one.
    public func files() throws -> Set<String> {
        try ResourceCacheConformance.files(under: folder, folders: false).filter { !$0.hasPrefix(".buckia") }
    }
}

/// The resource cache's conformance suite: the scenarios every configuration of
/// ``ResourceCache`` passes, so a third party's identifier provider, path provider,
/// transform, metadata provider, eviction policy or processor is checked by the same list as
/// Buckia's own. Each scenario runs the cache with the configuration under test; a scenario
/// that needs a ``ResourceCacheCapability`` the configuration lacks is skipped, with the reason.
///
/// With BuckiaConformanceTesting:
///
/// ```swift
/// @Test(arguments: ResourceCacheConformance.scenarios)
/// func conformance(_ scenario: ResourceCacheScenario) async throws {
///     try await scenario.check("thumbnail paths") { _ in
///         var configuration = ResourceCacheConfiguration()
///         configuration.pathProvider = ThumbnailPaths()
///         return configuration
///     }
/// }
/// ```
public enum ResourceCacheConformance {
    /// Every resource-cache scenario, in a stable order.
    public static var scenarios: [ResourceCacheScenario] { ResourceCacheScenarios.all }

    /// Runs one scenario. `configure` makes the configuration under test, given a folder of
    /// the scenario's own for anything its plugins keep beside the cache (a metadata
    /// database); it throws ``ConformanceSkip`` when the run lacks what the configuration
    /// needs (a file system without extended attributes). `capabilities` defaults to what the configuration can be seen to do
    /// (``ResourceCacheConfiguration/capabilities``).
    public static func run(
        _ scenario: ResourceCacheScenario, capabilities: Set<ResourceCacheCapability>? = nil,
        configure: @escaping @Sendable (_ scratch: URL) throws -> ResourceCacheConfiguration
    ) async -> ScenarioOutcome {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-cache-scenario-\(UUID().uuidString)", isDirectory: true)
        let outcome = await run(scenario, capabilities: capabilities, root: root, configure: configure)
        do {
            try FileManager.default.removeItem(at: root)
        } catch {
            FileHandle.standardError.write(Data("resource cache conformance: \(root.path) was left behind: \(error)\n".utf8))
        }
        return outcome
    }

    static func run(
        _ scenario: ResourceCacheScenario, capabilities: Set<ResourceCacheCapability>?, root: URL,
        configure: @Sendable (URL) throws -> ResourceCacheConfiguration
    ) async -> ScenarioOutcome {
        let scratch = root.appendingPathComponent("scratch", isDirectory: true)
        let outside = root.appendingPathComponent("outside", isDirectory: true)
        let configuration: ResourceCacheConfiguration
        let before: Set<String>
        do {
            for folder in [scratch, outside] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            try Data("untouched".utf8).write(to: outside.appendingPathComponent("sentinel"))
            configuration = try configure(scratch)
            before = try files(under: root)
        } catch let skip as ConformanceSkip {
            return .skipped(reason: skip.reason)
        } catch {
            return .failed(message: "Could not set up the scenario: \(error)")
        }
        if let reason = scenario.skipReason(for: capabilities ?? configuration.capabilities) { return .skipped(reason: reason) }
        let context = ResourceCacheScenarioContext(
            configuration: configuration, folder: root.appendingPathComponent("cache", isDirectory: true), outside: outside,
            clock: Locked(Date(timeIntervalSince1970: 1_800_000_000)))
        let outcome = await scenario.outcome(in: context)
        guard outcome == .passed else { return outcome }
        // Whatever the scenario did, nothing may have been written beside the cache folder.
        do {
            let escaped = try files(under: root).subtracting(before).filter { !$0.hasPrefix("cache/") && !$0.hasPrefix("scratch/") && $0 != "cache" }
            if !escaped.isEmpty { return .failed(message: "Files were written outside the cache folder: \(escaped.sorted().prefix(5))") }
            if try Data(contentsOf: outside.appendingPathComponent("sentinel")) != Data("untouched".utf8) {
                return .failed(message: "A file beside the cache folder was changed.")
            }
        } catch {
            return .failed(message: "Could not list the scenario's folder: \(error)")
        }
        return outcome
    }

    /// Runs every scenario in order and reports each.
    public static func runAll(
        subject: String, capabilities: Set<ResourceCacheCapability>? = nil, scenarios: [ResourceCacheScenario] = scenarios,
        configure: @escaping @Sendable (_ scratch: URL) throws -> ResourceCacheConfiguration,
        progress: (@Sendable (ResourceCacheScenario, ScenarioOutcome, Duration) -> Void)? = nil
    ) async -> ConformanceReport {
        await ConformanceReport.collect(subject: subject, scenarios: scenarios, progress: progress) {
            await run($0, capabilities: capabilities, configure: configure)
        }
    }

    /// Every file, link and (with `folders`) folder under `folder`, as paths relative to it
    /// (links not followed).
    static func files(under folder: URL, folders: Bool = true) throws -> Set<String> {
        var found: Set<String> = []
        func walk(_ url: URL, _ prefix: String) throws {
            for name in try FileManager.default.contentsOfDirectory(atPath: url.path) {
                let path = prefix + name
                var info = stat()
                guard lstat(url.appendingPathComponent(name).path, &info) == 0 else { continue }
                let isFolder = info.st_mode & S_IFMT == S_IFDIR
                if folders || !isFolder { found.insert(path) }
                if isFolder { try walk(url.appendingPathComponent(name), path + "/") }
            }
        }
        try walk(folder, "")
        return found
    }
}
