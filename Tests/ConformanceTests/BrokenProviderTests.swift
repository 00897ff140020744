import Buckia
import BuckiaConformance
import Foundation
import Testing

/// A broken provider, the honest one it breaks, and the scenarios that must catch it.
struct MutantCase: Sendable, CustomTestStringConvertible {
    /// The breakage, as the Tests/ConformanceTests/README.md table names it.
    let what: String
    /// Scenario names that must pass on `honest` and fail on `broken`.
    let scenarios: [String]
    /// Builds the honest subject over a scratch folder.
    let honest: @Sendable (URL) throws -> ProviderFactory
    /// Builds the broken subject over a scratch folder.
    let broken: @Sendable (URL) throws -> ProviderFactory

    var testDescription: String { what }

    static func memory() throws -> MemoryProvider { try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory)) }

    /// A breakage applied by ``BrokenProvider`` over the memory provider.
    static func over(memory breakage: Breakage, _ what: String, _ scenarios: [String], honest: (@Sendable (MemoryProvider) -> any StorageProvider)? = nil) -> MutantCase {
        MutantCase(what: what, scenarios: scenarios, honest: { _ in
            let base = try memory()
            return .instance(honest?(base) ?? base)
        }) { _ in
            .instance(BrokenProvider(base: try memory(), breakage: breakage))
        }
    }

    /// A folder breakage over a local folder, beside the honest local provider (hiding the
    /// capability, honestly, where the breakage is making folders without it).
    static func folders(_ fault: CarelessFolderProvider.Fault, _ what: String, _ scenarios: [String]) -> MutantCase {
        MutantCase(what: what, scenarios: scenarios) { folder in
            let local = try LocalProvider(root: folder, durable: false)
            return .instance(fault == .undeclared ? HidingProvider(base: local, hidden: [.folders]) : local)
        } broken: { folder in
            .instance(CarelessFolderProvider(base: try LocalProvider(root: folder, durable: false), root: folder, fault: fault))
        }
    }

    /// A part-upload breakage over the memory provider, beside the memory provider (hiding
    /// what the breakage uses undeclared, honestly).
    static func parts(_ fault: CarelessPartProvider.Fault, _ what: String, _ scenarios: [String]) -> MutantCase {
        MutantCase(what: what, scenarios: scenarios) { _ in
            let base = try memory()
            switch fault {
            case .undeclared: return .instance(HidingProvider(base: base, hidden: [.partUploads]))
            case .dropsUndeclaredCondition: return .instance(HidingProvider(base: base, hidden: [.conditionalCompletion]))
            case .finishesUndeclaredSelection: return .instance(HidingProvider(base: base, hidden: [.partSelections]))
            default: return .instance(base)
            }
        } broken: { _ in
            .instance(CarelessPartProvider(base: try memory(), fault: fault))
        }
    }

    /// A plugin mutant beside the honest shared-memory plugin, both built from a configuration.
    static func plugin<Broken: StorageProviderPlugin>(_ broken: Broken.Type, _ what: String, _ scenarios: [String]) -> MutantCase {
        MutantCase(what: what, scenarios: scenarios) { folder in
            try .plugin(SharedMemoryProvider.self, configuration: BuckiaConfiguration(provider: SharedMemoryProvider.providerType, options: ["space": folder.path]))
        } broken: { folder in
            try .plugin(Broken.self, configuration: BuckiaConfiguration(provider: Broken.providerType, options: ["space": folder.path]))
        }
    }

    static let all: [MutantCase] = [
        over(memory: .storesAllButLastByte, "stores all but the last byte", [
            "round trip: one byte", "round trip: every byte value", "round trip: multi-MiB file", "overwrite replaces content",
            "stat of a present object", "transfers: 32 concurrent uploads", "transfers: ranged read", "server-side copy", "times: set without rewriting",
            "stream: reads whole objects and ranges", "stream: uploads what a stream hands out",
        ]),
        over(memory: .commitsFailedStreams, "stores what a failed stream handed out", ["stream: uploads what a stream hands out"]),
        over(memory: .commitsCancelledStreams, "stores what a cancelled upload's stream handed out", [
            "stream: a cancelled upload stores nothing, even when its stream ends",
        ]),
        MutantCase(what: "holds the whole stream before its upload starts", scenarios: ["stream: an upload is under way before the stream ends"]) { _ in
            .instance(StagedUploadProvider(base: try memory(), holdsWholeStream: false))
        } broken: { _ in
            .instance(StagedUploadProvider(base: try memory(), holdsWholeStream: true))
        },
        over(memory: .losesEmptyObjects, "loses empty objects", ["round trip: empty object"]),
        over(memory: .readsMissingAsEmpty, "reads a missing object as empty", [
            "read of a missing object", "list: a folder is not an object", "stream: reads whole objects and ranges",
        ]),
        over(memory: .statThrowsForMissing, "stat of a missing key throws", ["stat of a missing object", "delete removes an object"]),
        over(memory: .ignoresDeletes, "ignores deletes", ["delete removes an object", "batch delete"]),
        over(memory: .failsDeletingMissing, "deleting a missing key fails", ["delete of a missing object", "batch delete"]),
        over(memory: .copyLosesTime, "a copy loses the modification time", ["server-side copy"]),
        over(memory: .copiesWithoutCapability, "copies without declaring it", ["no server-side copy without the capability"]) {
            HidingProvider(base: $0, hidden: [.serverSideCopy, .move])
        },
        over(memory: .reportsDisconnected, "reports itself disconnected", ["connection test"]),
        over(memory: .prefixIsFolder, "treats a prefix as a folder", ["list: prefix is a string prefix"]),
        over(memory: .reversesPages, "lists out of order", ["list: recursive order", "list: one level", "list: more than one page", "list: small pages"]),
        over(memory: .duplicatesEntries, "lists an entry twice", ["list: recursive order", "list: small pages", "list: one level across pages"]),
        over(memory: .ignoresOneLevel, "ignores one-level listing", ["list: one level", "list: one level across pages"]),
        over(memory: .statsFolderAsObject, "stats a folder as an object", ["list: a folder is not an object"]),
        over(memory: .ignoresStartAfter, "ignores start-after", ["list: start-after"]),
        over(memory: .onePageOnly, "returns one page whatever the size asked", ["list: more than one page", "list: small pages", "list: one level across pages"]),
        over(memory: .decodesPercentInKeys, "percent-decodes keys", ["keys: unusual characters"]),
        over(memory: .acceptsInvalidPrefix, "accepts invalid prefixes when called directly", ["keys: a lister refuses an invalid prefix"]),
        over(memory: .foldsCase, "folds case without declaring it", ["keys: case is significant"]),
        over(memory: .claimsCaseFolding, "declares case folding but keeps case", ["keys: case folds as declared"]) { CaseFoldingProvider(base: $0) },
        over(memory: .foldsToNFC, "folds keys to NFC", ["keys: NFC and NFD are two objects", "keys: unusual characters"]),
        MutantCase(what: "keyed by Swift String", scenarios: ["keys: NFC and NFD are two objects"], honest: { _ in .instance(try memory()) }) { _ in
            .instance(StringKeyedProvider(base: try memory()))
        },
        over(memory: .dropsModificationTime, "drops modification times", ["transfers: modification time kept", "times: kept within the declared precision"]),
        over(memory: .keepsWholeSeconds, "keeps whole seconds, declares microseconds", ["times: kept within the declared precision"]),
        over(memory: .ignoresRange, "ignores read ranges", [
            "transfers: ranged read", "read: if-match reads only the version given", "stream: reads whole objects and ranges",
        ]),
        over(memory: .wrongChecksums, "reports wrong checksums", ["transfers: checksums match content"]),
        over(memory: .publicURLWithoutCapability, "hands out public URLs without declaring them", ["access: no public URL without the capability"]),
        over(memory: .tokenLivesTooLong, "issues tokens that outlive their expiry", ["access: token expiry and redaction"]),
        over(memory: .tokensWithoutCapability, "issues tokens without declaring them", ["access: no tokens without the capability"]) {
            HidingProvider(base: $0, hidden: [.accessToken])
        },
        over(memory: .staleListedEtags, "lists entity tags stat disagrees with", ["list: entries agree with stat"]),
        over(memory: .restartsOnResume, "ignores resume tokens", ["list: a resume token continues the listing"]),
        over(memory: .dropsWriteConditions, "drops write conditions", ["write: if-none-match creates once", "write: if-match replaces only the version read"]),
        over(memory: .dropsReadConditions, "drops read conditions", ["read: if-match reads only the version given", "stream: if-match reads only the version given"]),
        over(memory: .splicesVersions, "streams a replaced object's two versions spliced", ["stream: never mixes two versions"]),
        over(memory: .dropsKnownChecksums, "drops known checksums", ["write: known checksums are verified"]),
        over(memory: .dropsMetadata, "drops user metadata", ["metadata: user metadata round-trips"]),
        over(memory: .ignoresSetModificationTime, "ignores setModificationTime", ["times: set without rewriting"]),
        over(memory: .moveCopies, "a move that copies", ["move: renames in one step"]),
        over(memory: .fallbackMoveKeepsSource, "a copy-and-delete move that keeps the source", ["move: falls back to copy and delete"]) {
            HidingProvider(base: $0, hidden: [.move])
        },
        over(memory: .unknownCapability, "declares a misspelt capability", ["capabilities: declared names are known"]),
        MutantCase(what: "a public URL to another object", scenarios: ["access: public URL fetches the object"]) { folder in
            .instance(try LocalProvider(root: folder, durable: false))
        } broken: { folder in
            .instance(MisdirectedURLProvider(base: try LocalProvider(root: folder, durable: false)))
        },
        MutantCase(what: "buffers whole files while claiming to stream", scenarios: ["transfers: large file with bounded memory"]) { folder in
            .instance(try LocalProvider(root: folder, durable: false))
        } broken: { folder in
            .instance(BufferingProvider(base: try LocalProvider(root: folder, durable: false)))
        },
        folders(.deletesContents, "deletes a folder's objects with it", ["folders: made, dated, kept while they hold objects, removed when empty"]),
        folders(.replacesObjects, "replaces an object with a folder", ["folders: an object's name is not a folder"]),
        folders(.undeclared, "makes folders without declaring them", ["folders: none without the capability"]),
        parts(.keepsFirstPart, "keeps the first of a part sent twice", ["part uploads: sent, listed, replaced and completed into the object"]),
        parts(.dropsLastPart, "leaves the last part out of the object", ["part uploads: sent, listed, replaced and completed into the object"]),
        parts(.ignoresMD5, "takes a part whatever its MD5", ["part uploads: a part whose MD5 is not its bytes' is refused"]),
        parts(.forgetsCompletion, "forgets an upload once completed", ["part uploads: a completion sent again finds the object it made"]),
        parts(.abortKeepsUpload, "keeps an aborted upload", ["part uploads: an aborted upload is gone"]),
        parts(.dropsCondition, "drops the completion's condition", ["part uploads: the completion's condition holds"]),
        parts(.dropsUndeclaredCondition, "drops a completion's condition it cannot hold", ["part uploads: a condition the completion cannot hold is refused"]),
        parts(.undeclared, "drives part uploads without declaring them", ["part uploads: none without the capability"]),
        parts(.completesEveryPart, "completes every part held, not the selection", ["part uploads: any selection of the parts completes, one part included"]),
        parts(.finishesUndeclaredSelection, "finishes a selection it declares it cannot", ["part uploads: a selection the backend cannot finish is refused"]),
        plugin(ForgetfulProvider.self, "declares persistent, loses data on reopen", ["persistence: data survives a new instance"]),
        plugin(LaxOptionsProvider.self, "ignores unknown options", ["configuration: unknown options are refused"]),
        plugin(MisnamedProvider.self, "reports another type name than its registration", ["registry: built by its type name"]),
    ]

    /// The Tests/ConformanceTests/README.md table: each scenario and the breakages proven to fail it.
    static var table: String {
        mutationTable("scenario", scenarios: ProviderConformance.scenarios.map(\.name), breakages: all.map { ($0.what, $0.scenarios) })
    }
}

/// A Tests/ConformanceTests/README.md table: one row per scenario, naming the breakages shown to fail it.
func mutationTable(_ heading: String, scenarios: [String], breakages: [(what: String, scenarios: [String])]) -> String {
    var lines = ["| \(heading) | fails against |", "|---|---|"]
    for scenario in scenarios {
        let failing = breakages.filter { $0.scenarios.contains(scenario) }.map(\.what)
        lines.append("| \(scenario) | \(failing.joined(separator: "; ")) |")
    }
    return lines.joined(separator: "\n")
}

/// The text of Tests/ConformanceTests/README.md, where the mutation tables are documented.
func testingDocument() throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return try String(contentsOf: root.appendingPathComponent("Tests/ConformanceTests/README.md"), encoding: .utf8)
}

@Suite("Every provider scenario fails against a provider broken in its way")
struct BrokenProviderTests {
    @Test(arguments: MutantCase.all)
    func mutantIsCaught(_ mutant: MutantCase) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-mutant-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in mutant.scenarios {
            let scenario = try #require(ProviderConformance.scenarios.first { $0.name == name }, "no scenario named \(name)")
            // The scenario passes on the honest provider, so the failure is the breakage's doing.
            let honest = await ProviderConformance.run(scenario, factory: try mutant.honest(folder))
            #expect(honest == .passed, "“\(name)” on the honest provider: \(honest)")
            let broken = await ProviderConformance.run(scenario, factory: try mutant.broken(folder))
            guard case .failed = broken else {
                Issue.record("\(mutant.what): expected “\(name)” to fail, got \(broken)")
                continue
            }
        }
    }

    @Test("Every provider scenario is failed by at least one broken provider")
    func everyScenarioHasAMutant() {
        let covered = Set(MutantCase.all.flatMap(\.scenarios))
        let uncovered = ProviderConformance.scenarios.map(\.name).filter { !covered.contains($0) }
        #expect(uncovered.isEmpty, "scenarios no broken provider is shown to fail: \(uncovered)")
    }

    @Test("Tests/ConformanceTests/README.md shows the scenario → broken provider table as the harness has it")
    func tableIsDocumented() throws {
        #expect(try testingDocument().contains(MutantCase.table), "Tests/ConformanceTests/README.md must hold this table:\n\(MutantCase.table)")
    }
}
