import Buckia
import Foundation

/// One entry in the command table: its name, arguments, help, and what it does.
struct Command: Sendable {
    let name: String
    let summary: String
    let usage: String
    let positionals: ClosedRange<Int>
    let options: [OptionSpec]
    let details: String
    let run: @Sendable (Invocation) async throws -> ExitCode

    /// The text `buckia NAME --help` prints.
    var help: String {
        var lines = ["Usage: buckia \(usage)", "", summary]
        if !details.isEmpty { lines += ["", details] }
        let all = options + CLI.globalOptions
        lines += ["", "Options:"]
        for option in all {
            let short = option.short.map { "-\($0), " } ?? "    "
            let long = "--\(option.name)\(option.takesValue ? " VALUE" : "")"
            lines.append("  \(short)\(long.padding(toLength: 20, withPad: " ", startingAt: 0)) \(option.help)")
        }
        lines += ["", "Exit status: 0 success, 1 failure, 2 usage, 3 not found, 4 denied, 5 configuration, 6 conformance failed."]
        return lines.joined(separator: "\n")
    }
}

/// What a command runs with.
struct Invocation: Sendable {
    let arguments: ParsedArguments
    let environment: [String: String]
    let registry: ProviderRegistry

    var positionals: [String] { arguments.positionals }

    func remotes() throws -> RemoteConfiguration {
        try RemoteConfiguration.load(explicitPath: arguments.value("config"), environment: environment)
    }

    /// The provider behind a configured remote.
    func provider(named name: String) throws -> (any StorageProvider, BuckiaConfiguration) {
        let configuration = try remotes().configuration(named: name)
        return (try registry.makeProvider(for: configuration, environment: environment), configuration)
    }
}

/// Writes to standard output and standard error.
enum Console {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// One clear sentence for a failure; credentials never reach here (errors redact them).
    static func report(_ error: BuckiaError) {
        var text = error.message
        if let path = error.path, !text.contains(path) { text += " (\(path))" }
        Console.error("buckia: \(text)")
    }
}
