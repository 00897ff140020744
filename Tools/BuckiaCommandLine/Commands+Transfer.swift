import Buckia
import Foundation

extension CLI {
    static let cpCommand = Command(
        name: "cp", summary: "Copy a file or, with -r, a folder between local paths and remotes.",
        usage: "cp SOURCE DESTINATION [--recursive] [--ignore-existing | --ignore-times]", positionals: 2...2,
        options: [
            .flag("recursive", short: "r", "Copy the contents of the SOURCE folder into DESTINATION."),
            .flag("ignore-existing", "Skip every file the destination already has, whatever it holds."),
            .flag("ignore-times", "Copy every file, even those the destination already holds unchanged."),
        ],
        details: """
            A DESTINATION ending in '/' (or an existing local folder) receives the file under its own name.
            A file whose destination has the same size and modification time is skipped, so a rerun
            redoes only what changed or failed. A folder copy goes on past a failed file and names
            every failure at the end. Transfers stream through a fixed buffer.
            """
    ) { invocation in
        let arguments = invocation.arguments
        if arguments.flag("ignore-existing") && arguments.flag("ignore-times") {
            throw UsageError(description: "--ignore-existing and --ignore-times contradict each other; give one.")
        }
        let policy: CopyPolicy = arguments.flag("ignore-existing") ? .skipExisting : arguments.flag("ignore-times") ? .copyAll : .skipUnchanged
        let source = Location(invocation.positionals[0])
        let destination = Location(invocation.positionals[1])
        var copier = try Copier(invocation: invocation, source: source, destination: destination, policy: policy)
        copier.display = ProgressDisplay(verb: "Copied")
        let outcome = arguments.flag("recursive") ? try await copier.copyTree() : try await copier.copyOne()
        var summary = "Copied \(outcome.copied) file\(outcome.copied == 1 ? "" : "s") (\(outcome.bytes) bytes)"
        if outcome.unchanged > 0 { summary += "; \(outcome.unchanged) already there" }
        Console.error(summary + ".")
        for (path, error) in outcome.failures.sorted(by: { $0.path.utf8Precedes($1.path) }) {
            Console.error("buckia: failed: \(path.terminalSafe): \(error.message.escapingControlCharacters)")
        }
        if let first = outcome.failures.first {
            let total = outcome.copied + outcome.unchanged + outcome.failures.count
            Console.error("buckia: \(outcome.failures.count) of \(total) files failed; run the same command again to retry them.")
            return ExitCode.from(first.error)
        }
        return CLI.report(outcome.unaddressable, verb: "copied")
    }

    static let rmCommand = Command(
        name: "rm", summary: "Remove an object or, with -r, everything under a remote folder.",
        usage: "rm REMOTE:PATH [--recursive]", positionals: 1...1,
        options: [.flag("recursive", short: "r", "Remove every object under PATH/.")], details: ""
    ) { invocation in
        guard case .remote(let name, let path) = Location(invocation.positionals[0]) else {
            throw UsageError(description: "rm needs a remote path such as default:old.txt")
        }
        let (provider, configuration) = try invocation.provider(named: name)
        guard invocation.arguments.flag("recursive") else {
            guard try await provider.stat(remotePath: path.trimmedSlashes) != nil else {
                throw BuckiaError(.notFound, "No object exists at \(name):\(path.trimmedSlashes); use -r for a folder.", path: path)
            }
            try await provider.deleteFile(remotePath: path.trimmedSlashes)
            return .success
        }
        var keys: [ObjectKey] = []
        var skipped: [UnaddressableKey] = []
        for try await entry in provider.list(ListOptions(prefix: path.folderPrefix)) {
            if let file = entry.file { keys.append(file.path) }
            if let key = entry.unaddressable { skipped.append(key) }
        }
        if keys.isEmpty && skipped.isEmpty {
            throw BuckiaError(.notFound, "Nothing exists under \(name):\(path.folderPrefix).", path: path.folderPrefix)
        }
        try await forEachConcurrently(keys, width: configuration.maxConcurrentOperations) { key in
            try await provider.deleteFile(remotePath: key)
        }
        Console.error("Removed \(keys.count) object\(keys.count == 1 ? "" : "s").")
        return CLI.report(skipped, verb: "removed")
    }
}

extension CLI {
    /// Names each key a tree operation left out, and picks the exit status that says so.
    static func report(_ skipped: [UnaddressableKey], verb: String) -> ExitCode {
        guard !skipped.isEmpty else { return .success }
        for key in skipped {
            Console.error("buckia: not \(verb): \(key.displayName.debugDescription): \(key.reason)")
        }
        Console.error("buckia: \(skipped.count) key\(skipped.count == 1 ? "" : "s") the backend holds could not be addressed and \(skipped.count == 1 ? "was" : "were") left alone.")
        return .partial
    }
}
