import BuckiaCatalog
import BuckiaConformance
import BuckiaCore
import Foundation

/// A scenario for a file catalog: see ``CatalogConformance``.
public struct CatalogScenario: ConformanceScenario {
    public typealias Feature = CatalogCapability
    public let name: String
    public let contract: String
    public let requires: Set<Feature>
    public let excludedBy: Set<Feature>
    public let body: @Sendable (CatalogScenarioContext) async throws -> Void

    public init(
        _ name: String, contract: String, requires: Set<Feature>, excludedBy: Set<Feature>,
        body: @escaping @Sendable (CatalogScenarioContext) async throws -> Void
    ) {
        (self.name, self.contract, self.requires, self.excludedBy, self.body) = (name, contract, requires, excludedBy, body)
    }
}

/// What a catalog scenario works with: a way to open the catalog under test, its media
/// folder, and a folder beside it that no operation may touch.
public struct CatalogScenarioContext: Sendable {
    let opener: @Sendable (FileCatalogConfiguration, URL) async throws -> FileCatalogClient
    /// The scenario's own folder; the catalog's storage goes here. Removed afterwards.
    public let folder: URL
    /// The media folder the catalog is opened with.
    public let media: URL
    /// A folder beside the media folder: nothing in it may ever change.
    public let outside: URL

    /// Opens the catalog under test with the media folder (and whatever `configure` changes).
    /// Opening again opens the same storage.
    public func open(_ configure: (inout FileCatalogConfiguration) -> Void = { _ in }) async throws -> FileCatalogClient {
        var configuration = FileCatalogConfiguration(mediaRoot: media)
        configure(&configuration)
        return try await opener(configuration, folder)
    }

    /// Writes a few bytes to `name` (a relative path) under `base`.
    @discardableResult
    public func place(_ name: String, in base: URL) throws -> URL {
        let url = base.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(name.utf8).write(to: url)
        return url
    }

    /// Whether something (a file, a folder, a link, even a dangling one) is at `url`.
    public func exists(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0
    }
}

/// The file catalog's conformance suite: the scenarios every ``FileCatalogClient`` passes,
/// Buckia's `live` and `inMemory` as much as a third party's (one over Core Data, one over a
/// server). A scenario that needs a ``CatalogCapability`` the catalog does not declare is
/// skipped, with the reason.
///
/// With BuckiaConformanceTesting:
///
/// ```swift
/// @Test(arguments: CatalogConformance.scenarios)
/// func conformance(_ scenario: CatalogScenario) async throws {
///     try await scenario.check("my catalog", capabilities: [.persistent]) { configuration, folder in
///         try MyCatalog.client(folder: folder, configuration: configuration)
///     }
/// }
/// ```
public enum CatalogConformance {
    /// Every catalog scenario, in a stable order.
    public static var scenarios: [CatalogScenario] { CatalogScenarios.all }

    /// Runs one scenario. `open` opens the catalog for `configuration` with its storage in
    /// the folder it is given: empty the first time, the same storage after that.
    public static func run(
        _ scenario: CatalogScenario, capabilities: Set<CatalogCapability>,
        open: @escaping @Sendable (_ configuration: FileCatalogConfiguration, _ folder: URL) async throws -> FileCatalogClient
    ) async -> ScenarioOutcome {
        if let reason = scenario.skipReason(for: capabilities) { return .skipped(reason: reason) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-catalog-scenario-\(UUID().uuidString)", isDirectory: true)
        let context = CatalogScenarioContext(
            opener: open, folder: folder, media: folder.appendingPathComponent("media", isDirectory: true),
            outside: folder.appendingPathComponent("outside", isDirectory: true))
        do {
            try FileManager.default.createDirectory(at: context.media, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: context.outside, withIntermediateDirectories: true)
        } catch {
            return .failed(message: "Could not create the scenario's folders: \(error)")
        }
        let outcome = await scenario.outcome(in: context)
        do {
            try FileManager.default.removeItem(at: folder)
        } catch {
            FileHandle.standardError.write(Data("catalog conformance: \(folder.path) was left behind: \(error)\n".utf8))
        }
        return outcome
    }

    /// Runs every scenario in order and reports each.
    public static func runAll(
        subject: String, capabilities: Set<CatalogCapability>, scenarios: [CatalogScenario] = scenarios,
        open: @escaping @Sendable (_ configuration: FileCatalogConfiguration, _ folder: URL) async throws -> FileCatalogClient,
        progress: (@Sendable (CatalogScenario, ScenarioOutcome, Duration) -> Void)? = nil
    ) async -> ConformanceReport {
        await ConformanceReport.collect(subject: subject, scenarios: scenarios, progress: progress) { await run($0, capabilities: capabilities, open: open) }
    }
}
