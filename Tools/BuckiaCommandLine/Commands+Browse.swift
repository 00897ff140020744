import Buckia
import BuckiaConformance
import Foundation

extension CLI {
    static let providersCommand = Command(
        name: "providers", summary: "List the provider and engine types this build knows and the configured remotes.",
        usage: "providers", positionals: 0...0, options: [], details: ""
    ) { invocation in
        Console.out("Provider types:")
        for type in invocation.registry.registeredTypes { Console.out("  \(type)") }
        let remotes = try invocation.remotes()
        Console.out("Remotes:")
        for name in remotes.remotes.keys.sorted() {
            let remote = try remotes.configuration(named: name)
            Console.out("  \(name): \(remote.provider) (\(remotes.sources[name] ?? "unknown"))")
        }
        Console.out("Engine types:")
        for type in invocation.engines.registeredTypes { Console.out("  \(type)") }
        return .success
    }

    static let lsCommand = Command(
        name: "ls", summary: "List objects and folders under a remote path.",
        usage: "ls REMOTE:PATH [--recursive] [--json]", positionals: 1...1,
        options: [
            .flag("recursive", short: "R", "List everything below, not just one level."),
            .flag("json", "Print a JSON array of entries."),
        ],
        details: "Each line is SIZE MODIFIED PATH for an object, or PATH/ for a folder."
    ) { invocation in
        guard case .remote(let name, let path) = Location(invocation.positionals[0]) else {
            throw UsageError(description: "ls needs a remote path such as default:photos")
        }
        let (provider, _) = try invocation.provider(named: name)
        let json = invocation.arguments.flag("json")
        var printer = ListingPrinter(json: json)
        if !path.trimmedSlashes.isEmpty, let file = try await provider.stat(remotePath: path.trimmedSlashes) {
            try provider.capabilities.checkSize(of: file, operation: "ls")
            printer.print(.object(file))
        } else {
            let options = ListOptions(prefix: path.folderPrefix, recursive: invocation.arguments.flag("recursive"))
            for try await entry in provider.list(options) { printer.print(entry) }
        }
        printer.finish()
        return .success
    }

    static let catCommand = Command(
        name: "cat", summary: "Write an object's bytes to standard output.",
        usage: "cat REMOTE:PATH", positionals: 1...1, options: [], details: ""
    ) { invocation in
        guard case .remote(let name, let path) = Location(invocation.positionals[0]) else {
            throw UsageError(description: "cat needs a remote path such as default:notes.txt")
        }
        let (provider, _) = try invocation.provider(named: name)
        let key = try ObjectKey(path.trimmedSlashes)
        // One streaming read where the provider has one (S3: a single GET however large the
        // object), ranges of one version otherwise; memory bounded either way.
        let stream = try await provider.openRead(remotePath: key, options: ReadOptions())
        try provider.capabilities.checkSize(of: stream.file, operation: "cat")
        do {
            for try await chunk in stream.bytes {
                try Console.writeOut(chunk)
            }
        } catch let error as BuckiaError where error.code == .checksumMismatch {
            // What cp checks, cat checks too, though only after the bytes have gone out.
            throw BuckiaError(
                .checksumMismatch,
                "The bytes written do not match the object's checksum; the output is damaged. Run cat again, or cp the object, which checks before it keeps anything.",
                operation: "cat", path: key.rawValue, cause: error)
        } catch let error as BuckiaError where error.code == .conditionNotMatch {
            throw BuckiaError(
                .conditionNotMatch, "The object changed while it was being read, so the output may mix two versions; run cat again.",
                operation: "cat", path: key.rawValue, cause: error)
        }
        return .success
    }

    static let rcatCommand = Command(
        name: "rcat", summary: "Store standard input as an object, sending it as it is read (as rclone rcat does).",
        usage: "rcat REMOTE:PATH", positionals: 1...1, options: [],
        details: "S3, B2 and local remotes send the bytes as they arrive, a few parts in memory at most; others take up to 8 MiB in memory and spool the rest to a private temporary file. Nothing is stored unless standard input ends normally."
    ) { invocation in
        guard case .remote(let name, let path) = Location(invocation.positionals[0]) else {
            throw UsageError(description: "rcat needs a remote path such as default:notes.txt")
        }
        let (provider, _) = try invocation.provider(named: name)
        let key = try ObjectKey(path.trimmedSlashes)
        // Interrupted, the upload is cancelled rather than the process ended: a streamed
        // multipart upload cannot be resumed, and cancelled it aborts itself on the server.
        let upload = Task { try await provider.upload(from: Console.standardInput(), remotePath: key, options: UploadOptions()) }
        let stored: RemoteFile
        do {
            stored = try await ProcessEnd.stoppingCleanly("the upload", stop: { upload.cancel() }) {
                try await withTaskCancellationHandler { try await upload.value } onCancel: { upload.cancel() }
            }
        } catch {
            guard let signal = ProcessEnd.interruption else { throw error }
            Console.error("buckia: interrupted; nothing was stored at \(name):\(key.rawValue). \(BuckiaError.wrapping(error).message)".escapingControlCharacters)
            return .stopped(by: signal)
        }
        Console.error("stored \(stored.size) bytes at \(name):\(key.rawValue)")
        return .success
    }

    static let conformanceCommand = Command(
        name: "conformance", summary: "Run the provider conformance suite (or with --chunks the chunk-store suite) against a remote.",
        usage: "conformance REMOTE: [--chunks] | conformance --list [--chunks]", positionals: 0...1,
        options: [
            .value("filter", "Run only scenarios whose name contains this text."),
            .flag("list", "Print the names of the scenarios a run would run, one per line, and run none."),
            .flag("chunks", "Run the chunk-store scenarios, on a chunk store in the remote, instead of the provider scenarios."),
        ],
        details: "Writes under a fresh buckia-conformance-<random>/ prefix and removes it afterwards."
    ) { invocation in
        if invocation.arguments.flag("chunks") { return try await chunkConformance(invocation) }
        guard let (scenarios, name) = try conformanceSelection(invocation, ProviderConformance.scenarios) else { return .success }
        // Opened once first: a remote the registry cannot build is a configuration error
        // (exit 5), not a failure of every scenario.
        let (_, configuration) = try invocation.provider(named: name)
        // Built through the registry each time a scenario asks, so reopening, configuration
        // and registry scenarios run against the remote too.
        let factory = ProviderFactory.registered(
            configuration: configuration, registry: invocation.registry, environment: invocation.environment,
            log: invocation.log, name: "\(name) (\(configuration.provider))", resources: invocation.resources)
        let report = await ProviderConformance.runAll(factory: factory, scenarios: scenarios) { scenario, outcome, _ in
            Console.error("\(outcome.label) \(scenario.name)")
        }
        Console.out(report.table())
        return report.succeeded ? .success : .conformanceFailed
    }
}

extension CLI {
    /// The scenarios `--filter` keeps and the remote to run them on; with `--list`, prints
    /// their names and returns nil.
    static func conformanceSelection<Scenario: ConformanceScenario>(
        _ invocation: Invocation, _ all: [Scenario]
    ) throws -> (scenarios: [Scenario], remote: String)? {
        var scenarios = all
        if let filter = invocation.arguments.value("filter") {
            scenarios = scenarios.filter { $0.name.localizedCaseInsensitiveContains(filter) }
            // A filter that matches nothing would run nothing and report success.
            guard !scenarios.isEmpty else {
                throw UsageError(description: "--filter \(filter.debugDescription) matches no scenario; conformance --list names them.")
            }
        }
        if invocation.arguments.flag("list") {
            guard invocation.positionals.isEmpty else { throw UsageError(description: "conformance --list takes no remote.") }
            Console.out(scenarios.map(\.name).joined(separator: "\n"))
            return nil
        }
        guard let argument = invocation.positionals.first else { throw UsageError(description: "conformance needs a remote (REMOTE:), or --list.") }
        if case .remote(let remote, _) = Location(argument) { return (scenarios, remote) }
        return (scenarios, argument.lowercased())
    }

    /// `conformance --chunks`: the chunk-store scenarios on a chunk store under a fresh prefix
    /// of the remote, removed afterwards.
    static func chunkConformance(_ invocation: Invocation) async throws -> ExitCode {
        guard let (scenarios, name) = try conformanceSelection(invocation, ChunkStoreConformance.scenarios) else { return .success }
        let (provider, configuration) = try invocation.provider(named: name)
        let root = "buckia-conformance-\(UUID().uuidString.prefix(8).lowercased())/"
        let report = await ChunkStoreConformance.runAll(
            subject: "\(name) (\(configuration.provider)) chunk store", scenarios: scenarios,
            open: { try ProviderChunkStorage(provider: provider, prefix: root + "chunks/") }
        ) { scenario, outcome, _ in
            Console.error("\(outcome.label) \(scenario.name)")
        }
        var leftovers: [ObjectKey] = []
        for try await entry in provider.list(ListOptions(prefix: root)) {
            if let file = entry.file { leftovers.append(file.path) }
        }
        try await provider.deleteFiles(leftovers)
        Console.out(report.table())
        return report.succeeded ? .success : .conformanceFailed
    }
}

/// Prints listing entries as text lines or as one streamed JSON array.
struct ListingPrinter {
    let json: Bool
    private var first = true

    init(json: Bool) { self.json = json }

    mutating func print(_ entry: ListEntry) {
        if json {
            var object: [String: Any] = ["path": entry.path]
            switch entry {
            case .object(let file):
                object["type"] = "object"
                object["size"] = file.size
                if let date = file.modificationDate { object["modificationDate"] = date.formatted(.iso8601) }
                if let date = file.serverModified { object["serverModified"] = date.formatted(.iso8601) }
                if let etag = file.etag { object["etag"] = etag }
            case .directory:
                object["type"] = "directory"
            case .unaddressable(let key):
                object["type"] = "unaddressable"
                object["reason"] = key.reason
            }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
            Console.out((first ? "[" : ",") + String(decoding: data, as: UTF8.self))
        } else if let file = entry.file {
            let date = file.effectiveModificationDate.map { $0.formatted(.iso8601) } ?? "-"
            Console.out("\(String(file.size).leftPadded(12)) \(date) \(file.path.rawValue.terminalSafe)")
        } else if let key = entry.unaddressable {
            Console.error("buckia: \(key.displayName.debugDescription) cannot be addressed: \(key.reason)")
        } else {
            Console.out("\(String(repeating: " ", count: 12)) \(String(repeating: " ", count: 20)) \(entry.path.terminalSafe)")
        }
        first = false
    }

    func finish() {
        if json { Console.out(first ? "[]" : "]") }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }

    /// The string with control characters escaped (`\n`, `\t`, `\e`, `\x7F`) and a
    /// backslash doubled, as coreutils' `ls -b` does, so a name cannot fake a line or send
    /// escape sequences to the terminal.
    var terminalSafe: String {
        // Backslashes first, so the escapes added for control characters stay single.
        (contains("\\") ? replacingOccurrences(of: "\\", with: "\\\\") : self).escapingControlCharacters
    }
}
