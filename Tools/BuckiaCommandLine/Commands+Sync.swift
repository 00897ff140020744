import Buckia
import Foundation

extension CLI {
    static let syncOptions: [OptionSpec] = [
        .value("mode", "one-way (SOURCE → DESTINATION, the default) or two-way (changes on either side reach the other)."),
        .flag("dry-run", short: "n", "Print the plan, one step per line, and change nothing."),
        .flag("delete", "One-way: delete files in DESTINATION that SOURCE lacks (two-way always carries deletes)."),
        .value("max-delete", "Delete nothing if the run would delete more than N files (or N% of a side)."),
        .value("include", "Sync only paths matching this glob (repeatable)."),
        .value("exclude", "Leave paths matching this glob alone (repeatable; wins over --include)."),
        .value("create-only", "Upload paths matching this glob when the destination lacks them; never overwrite, download or delete them (repeatable)."),
        .flag("checksum", short: "c", "Compare files by checksum (where both sides have one)."),
        .flag("size-only", "Compare files by size alone."),
        .value("conflict", "Two-way: what a file changed on both sides becomes: \(ConflictPolicy.allCases.map(\.rawValue).joined(separator: ", ")) (the first is the default)."),
        .value("concurrency", "Transfers in flight at once (default: the remotes' maxConcurrentOperations)."),
        .flag("json", "Print one JSON event per line on standard output instead of a progress line."),
        .flag("watch", "Keep running: sync again after each burst of changes in a local side (inotify), and every --poll; stop with Ctrl-C."),
        .value("debounce", "With --watch: how long a local side must be quiet before a pass (default 1s; 250ms, 2s…)."),
        .value("poll", "With --watch: the longest time between passes, how soon remote changes arrive (default 60s)."),
    ]

    static let syncCommand = Command(
        name: "sync", summary: "Make DESTINATION match SOURCE (or merge both ways), moving only what changed.",
        usage: "sync SOURCE DESTINATION [--mode one-way|two-way] [--dry-run] [--delete] [--max-delete N|N%] [--include GLOB] [--exclude GLOB] [--create-only GLOB] [--checksum | --size-only] [--conflict POLICY] [--concurrency N] [--json] [--watch [--debounce DURATION] [--poll DURATION]]",
        positionals: 2...2, options: syncOptions,
        details: """
            SOURCE and DESTINATION are local folders or REMOTE:PATH folders; files always go from
            SOURCE to DESTINATION (two-way also carries DESTINATION's changes back). A state store per pair
            (under $XDG_STATE_HOME/buckia/sync) remembers what was synced, so a resync hashes and
            asks about nothing that did not change. Deletes run last, and not at all when any
            file failed or the --max-delete limit would be passed. Exit status 0 when both sides
            agree, as for cp otherwise. With --watch it keeps running, a pass after each burst of
            local changes and at least every --poll, holding back files still being written, until
            Ctrl-C or SIGTERM (exit status 0).
            """
    ) { invocation in
        let session = try SyncSession(invocation: invocation, check: false)
        return try await session.run()
    }

    static let checkCommand = Command(
        name: "check", summary: "List the files that differ between SOURCE and DESTINATION, changing nothing.",
        usage: "check SOURCE DESTINATION [--checksum | --size-only] [--include GLOB] [--exclude GLOB] [--concurrency N] [--json]",
        positionals: 2...2,
        options: syncOptions.filter { ["include", "exclude", "checksum", "size-only", "concurrency", "json"].contains($0.name) },
        details: """
            Prints one line per difference: 'differs PATH', 'missing-destination PATH' (only in
            SOURCE) or 'missing-source PATH' (only in DESTINATION). Compares afresh, without the
            state store. Exit status 0 when the two agree, 8 when they differ.
            """
    ) { invocation in
        let session = try SyncSession(invocation: invocation, check: true)
        return try await session.run()
    }
}

/// One `buckia sync` or `buckia check`: its endpoints, options and output.
struct SyncSession: Sendable {
    let source: SyncEndpoint
    let destination: SyncEndpoint
    let options: SyncOptions
    let check: Bool
    let json: Bool
    let environment: [String: String]
    /// With `--watch`: the watch's timing and the local folder it watches (nil: none is local).
    let watch: (options: SyncWatchOptions, folder: URL?)?

    init(invocation: Invocation, check: Bool) throws {
        let arguments = invocation.arguments
        self.check = check
        json = arguments.flag("json")
        environment = invocation.environment
        var options = SyncOptions()
        // SOURCE is the engine's first side and DESTINATION its second, so one-way is the
        // engine's push: files always go SOURCE → DESTINATION.
        switch arguments.value("mode") {
        case nil, "one-way", "push": options.mode = .push
        case "two-way": options.mode = .twoWay
        case "pull":
            throw UsageError(
                description: "--mode pull is gone: sync always copies SOURCE → DESTINATION. To copy from A into B, run 'buckia sync A B'.")
        case let mode?:
            throw UsageError(description: "--mode must be one-way or two-way, not \(mode.debugDescription).")
        }
        if let policy = arguments.value("conflict") {
            guard let parsed = ConflictPolicy(rawValue: policy) else {
                let names = ConflictPolicy.allCases.map(\.rawValue).joined(separator: ", ")
                throw UsageError(description: "--conflict must be one of \(names), not \(policy.debugDescription).")
            }
            options.conflicts = parsed
        }
        if arguments.flag("checksum") && arguments.flag("size-only") {
            throw UsageError(description: "--checksum and --size-only contradict each other; give one.")
        }
        options.deleteExtraneous = arguments.flag("delete")
        if let limit = arguments.value("max-delete") {
            do {
                options.maxDelete = try DeleteLimit(parsing: limit)
            } catch {
                throw UsageError(description: "--max-delete takes a count (10) or a percentage (10%), not \(limit.debugDescription).")
            }
        }
        do {
            options.filter = try PathFilter(include: arguments.all("include"), exclude: arguments.all("exclude"))
            options.createOnly = try arguments.all("create-only").map(GlobPattern.init)
        } catch let error as BuckiaError {
            throw UsageError(description: error.message)
        }
        options.dryRun = arguments.flag("dry-run") || check
        // A run prints counts; only a dry run (and check) prints its plan, path by path.
        options.recordsPlan = options.dryRun
        if arguments.flag("watch") {
            guard !options.dryRun else { throw UsageError(description: "--watch and --dry-run contradict each other: a watch changes what changes.") }
            let debounce = try Self.watchDuration(arguments.value("debounce") ?? "1s", option: "debounce")
            let poll = try Self.watchDuration(arguments.value("poll") ?? "60s", option: "poll")
            // The side whose changes start passes: SOURCE where it is local, else DESTINATION.
            var folder: URL?
            for text in invocation.positionals.reversed() { if case .local(let url) = Location(text) { folder = url } }
            watch = (SyncWatchOptions(debounce: debounce, pollInterval: poll), folder)
        } else {
            guard arguments.value("debounce") == nil && arguments.value("poll") == nil else {
                throw UsageError(description: "--debounce and --poll go with --watch.")
            }
            watch = nil
        }
        // A local folder that is read from must exist (a mistyped source must not look like
        // an empty one); one written to is created. Two-way creates either: the engine refuses
        // to carry deletes from a side that lists nothing where the last run left files.
        let (source, sourceWidth) = try Self.endpoint(
            Location(invocation.positionals[0]), invocation: invocation, role: "SOURCE", mustExist: options.mode == .push || check,
            dryRun: options.dryRun)
        let (destination, destinationWidth) = try Self.endpoint(
            Location(invocation.positionals[1]), invocation: invocation, role: "DESTINATION", mustExist: check,
            dryRun: options.dryRun)
        if let text = arguments.value("concurrency") {
            guard let width = Int(text), (1...256).contains(width) else {
                throw UsageError(description: "--concurrency takes a number from 1 to 256, not \(text.debugDescription).")
            }
            options.maxConcurrentOperations = width
        } else {
            options.maxConcurrentOperations = min(sourceWidth, destinationWidth)
        }
        if check {
            options.mode = .push
            options.deleteExtraneous = true
        }
        do {
            try source.requireApart(from: destination)
        } catch let error as BuckiaError {
            throw UsageError(description: error.message)  // how the pair was called: exit 2
        }
        let common = Set(source.provider.capabilities.checksums.keys).intersection(destination.provider.capabilities.checksums.keys).sorted()
        if arguments.flag("checksum") {
            guard let algorithm = common.first else {
                throw UsageError(description: "--checksum needs a checksum both sides offer; these two share none. Drop it to compare by size and time.")
            }
            options.detection = .checksum(algorithm)
        } else if arguments.flag("size-only") {
            options.detection = .sizeOnly
        } else if check, let algorithm = common.first {
            // A check compares afresh, so it compares what the files hold.
            options.detection = .checksum(algorithm)
        }
        self.source = source
        self.destination = destination
        self.options = options
    }

    /// The endpoint a command-line location names, with the concurrency its remote allows.
    ///
    /// A local folder (``SyncEndpoint/localFolder(_:)``) must exist when `mustExist` (it is
    /// read from), else it is created.
    /// A dry run creates nothing: a folder that does not exist yet is planned against as empty.
    static func endpoint(_ location: Location, invocation: Invocation, role: String, mustExist: Bool, dryRun: Bool) throws -> (SyncEndpoint, Int) {
        switch location {
        case .local(let url):
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder)
            if exists && !isFolder.boolValue {
                throw UsageError(description: "\(url.path) is a file; sync works on folders.")
            }
            if !exists && mustExist {
                throw BuckiaError(.notFound, "The local folder \(url.path) does not exist.", path: url.path)
            }
            if !exists && dryRun {
                let empty = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory))
                return (try SyncEndpoint(provider: empty, backend: "local:\(url.standardizedFileURL.path)"), 8)
            }
            return (try SyncEndpoint.localFolder(url, create: false), 8)
        case .remote(let name, let path):
            // A local remote's writes are made durable in batches (one `syncfs` before each
            // batch the sync records), as a local folder's are, not by an `fsync` per file.
            let (provider, configuration) = try invocation.provider(named: name) { configuration in
                if configuration.provider == .local { configuration.options["fsync"] = "false" }
            }
            do {
                return (try SyncEndpoint.bucket(provider, configuration: configuration, path: path, environment: invocation.environment), configuration.maxConcurrentOperations)
            } catch let error as BuckiaError {
                throw UsageError(description: "\(role) \(name):\(path) is not a valid folder: \(error.message)")
            }
        }
    }

    func run() async throws -> ExitCode {
        // Two runs that write the same place, or the same pair in either order, exclude each
        // other (a dry run and a check write nothing and take no lock).
        let locks = options.dryRun ? nil : try SyncLocks.acquire(source: source, destination: destination, mode: options.mode, environment: environment)
        defer { locks?.release() }
        if let watch { return try await watching(watch.options, folder: watch.folder) }
        let result = try await pass(options)
        if check { return report(differences: result) }
        if options.dryRun && !json {
            for action in result.plan where action.isStep { Console.out(action.commandLineDescription.terminalSafe) }
        }
        return report(result)
    }

    /// One run of the engine, with its progress line or JSON events.
    private func pass(_ options: SyncOptions) async throws -> SyncResult {
        let store: SyncStateStore?
        let location = SyncStateStore.location(source: source.identity, destination: destination.identity, environment: environment)
        if check {
            store = nil
        } else if options.dryRun {
            // Read as it is, never written: a dry run changes nothing.
            store = try SyncStateStore(url: location, readOnly: true)
        } else {
            store = try SyncStateStore(url: location)
        }
        defer { store?.close() }
        let engine = SyncEngine(local: source, remote: destination, options: options, stateStore: store)
        let display = json || options.dryRun ? nil : ProgressDisplay(verb: "Synced")
        let printer = json ? JSONEventPrinter() : nil
        let result: SyncResult
        do {
            result = try await engine.run { event in
                display?.handle(event)
                printer?.print(event)
            }
        } catch {
            display?.finish()
            throw error
        }
        display?.finish()
        // Damage is found where SQLite meets it, on opening or during the run.
        if !options.dryRun, let reset = result.stateStoreReset {
            Console.error("buckia: the sync state store was damaged and has been set aside (\(reset)); what it no longer held was compared afresh.")
        }
        printer?.print(result)
        return result
    }

    /// `--watch`: passes until Ctrl-C or SIGTERM, each reported as a run is. A pass that fails
    /// (a remote out of reach) is reported and the watch goes on: the next pass retries.
    private func watching(_ watch: SyncWatchOptions, folder: URL?) async throws -> ExitCode {
        let task = Task { [self] in
            try await SyncWatch.run(folder: folder, options: watch) { heldBack in
                var options = self.options
                options.heldBack = heldBack
                do {
                    _ = self.report(try await self.pass(options))
                } catch let error as BuckiaError where error.code != .cancelled {
                    Console.error("buckia: this pass failed: \(error.message.escapingControlCharacters) The watch goes on.")
                }
            }
        }
        do {
            try await ProcessEnd.stoppingCleanly("the watch", stop: { task.cancel() }) { try await task.value }
        } catch where ProcessEnd.interruption != nil || Task.isCancelled || task.isCancelled {
            Console.error("buckia: stopped watching.")
            return .success
        }
        return .success
    }

    /// `--debounce` and `--poll`: `250ms`, or what ``CLI/parseDuration(_:option:allowsZero:maximum:)`` takes.
    static func watchDuration(_ text: String, option: String) throws -> Duration {
        if text.hasSuffix("ms") {
            guard let milliseconds = Int64(text.dropLast(2)), (1...86_400_000).contains(milliseconds) else {
                throw UsageError(description: "--\(option) takes a duration such as 250ms, 2s or 1m; \(text.debugDescription) is not one.")
            }
            return .milliseconds(milliseconds)
        }
        return try CLI.parseDuration(text, option: option, maximum: 86_400)
    }

    private func report(_ result: SyncResult) -> ExitCode {
        if !json {
            let verb = options.dryRun ? "Would sync" : "Synced"
            // The engine's first side is SOURCE: its uploads are copies to DESTINATION.
            let (forward, back) = options.dryRun
                ? ((result.summary.uploads, result.summary.uploadBytes), (result.summary.downloads, result.summary.downloadBytes))
                : ((result.uploaded, result.bytesUploaded), (result.downloaded, result.bytesDownloaded))
            let deleted = options.dryRun ? result.summary.localDeletes + result.summary.remoteDeletes : result.deletedLocal + result.deletedRemote
            var parts: [String] = []
            if options.mode == .twoWay {
                parts.append("\(forward.0) copied to DST (\(ByteCount.format(forward.1)))")
                parts.append("\(back.0) copied to SRC (\(ByteCount.format(back.1)))")
            } else {
                parts.append("\(forward.0) copied (\(ByteCount.format(forward.1)))")
            }
            let moved = options.dryRun ? result.summary.localMoves + result.summary.remoteMoves : result.movedLocal + result.movedRemote
            if moved > 0 { parts.append("\(moved) moved") }
            parts.append("\(deleted) deleted")
            if result.summary.conflicts > 0 { parts.append("\(result.summary.conflicts) conflict\(result.summary.conflicts == 1 ? "" : "s")") }
            parts.append("\(result.summary.unchanged) unchanged")
            Console.error("\(verb): \(parts.joined(separator: ", ")) in \(ByteCount.duration(result.duration.seconds)).")
        }
        for failure in result.failures {
            Console.error("buckia: failed: \(failure.path.rawValue.terminalSafe): \(failure.error.message.escapingControlCharacters)")
        }
        if let first = result.failures.first {
            Console.error("buckia: \(result.failures.count) file\(result.failures.count == 1 ? "" : "s") failed; run the same command again to retry.")
            if let reason = result.deletesSkipped { Console.error("buckia: \(reason)") }
            return ExitCode.fromFileFailure(first.error)
        }
        if let reason = result.deletesSkipped {
            Console.error("buckia: \(reason)")
            return .failure
        }
        return CLI.report(result.unaddressable, verb: "synced")
    }

    private func report(differences result: SyncResult) -> ExitCode {
        var count = 0
        for action in result.plan {
            let line: String
            switch action {
            case .upload(let path): line = result.newFiles.contains(path) ? "missing-destination \(path)" : "differs \(path)"
            case .deleteRemote(let path): line = "missing-source \(path)"
            default: continue
            }
            count += 1
            if !json { Console.out(line.terminalSafe) }
        }
        if !json { Console.error(count == 0 ? "No differences." : "\(count) difference\(count == 1 ? "" : "s").") }
        if !result.unaddressable.isEmpty { _ = CLI.report(result.unaddressable, verb: "checked") }
        return count == 0 ? (result.unaddressable.isEmpty ? .success : .partial) : .differences
    }
}

extension SyncAction {
    /// The step as `buckia sync --dry-run` prints it, in SOURCE → DESTINATION terms (the
    /// engine's first side is SOURCE): `copy PATH`, `copy-to-source PATH`, `delete PATH`,
    /// `delete-from-source PATH`, `move OLD NEW` (a rename in SOURCE carried out in
    /// DESTINATION), `move-in-source OLD NEW`, `conflict PATH POLICY`.
    var commandLineDescription: String {
        switch self {
        case .upload(let path): "copy \(path)"
        case .download(let path): "copy-to-source \(path)"
        case .deleteRemote(let path): "delete \(path)"
        case .deleteLocal(let path): "delete-from-source \(path)"
        case .moveRemote(let from, let to): "move \(from) \(to)"
        case .moveLocal(let from, let to): "move-in-source \(from) \(to)"
        case .record, .forget, .conflict: description
        }
    }

    /// Whether the step changes a side (records and forgets only touch the state store).
    var isStep: Bool {
        switch self {
        case .record, .forget: false
        default: true
        }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
