import Buckia
import BuckiaHTTP
import Foundation

/// The command table and dispatch.
enum CLI {
    static let globalOptions: [OptionSpec] = [
        .value("config", "Read remotes from this JSON file instead of the default one."),
        .flag("help", short: "h", "Show this help."),
        .flag("verbose", "Print each HTTP attempt, retry and final status to standard error (credentials redacted)."),
    ]

    static var commands: [Command] {
        [providersCommand, lsCommand, cpCommand, syncCommand, checkCommand, catCommand, rcatCommand, rmCommand, urlCommand, tokenCommand, serveCommand, userCommand, catalogCommand, fetchCommand, cacheCommand, secretsCommand, loginCommand, logoutCommand, cleanupCommand, kvCommand, chunkCommand, dbCommand, conformanceCommand]
    }

    static var overview: String {
        var lines = [
            "buckia — one command line over every Buckia storage provider.", "",
            "Usage: buckia COMMAND [ARGUMENTS] [--config FILE]", "", "Commands:",
        ]
        for command in commands {
            lines.append("  \(command.name.padding(toLength: 12, withPad: " ", startingAt: 0)) \(command.summary)")
        }
        lines += [
            "", "Paths are REMOTE:PATH for a configured remote (default: always exists) or a local path.",
            "Run 'buckia COMMAND --help' for a command's options, 'buckia --version' for the version.",
            "Docs/CLI.md has the details.",
        ]
        return lines.joined(separator: "\n")
    }

    /// The providers and engines a run can select by type name.
    struct Registries: Sendable {
        var providers: ProviderRegistry
        var engines: EngineRegistry
    }

    static func main(_ arguments: [String], environment: [String: String], registries: Registries) async -> ExitCode {
        // One HTTP transport (one thread, one connection pool) for every remote the command
        // opens, shut down when it is done so transfers in flight finish first.
        let resources = SharedResources()
        let status: ExitCode
        do {
            try chooseTransport(environment, resources)
            status = await dispatch(arguments, environment: environment, registries: registries, resources: resources)
        } catch {
            Console.error("buckia: \(BuckiaError.wrapping(error).description.escapingControlCharacters)")
            status = .configuration
        }
        await resources.shutdown()
        // Output that could not be written fails the command, whatever it did.
        if let failure = Console.failure, status == .success || status == .partial {
            Console.report(failure)
            return .failure
        }
        return status
    }

    /// `BUCKIA_HTTP_TRANSPORT=urlsession` runs the command over URLSession instead of libcurl,
    /// for comparison; the library itself reads no environment for it.
    static func chooseTransport(_ environment: [String: String], _ resources: SharedResources) throws {
        switch environment["BUCKIA_HTTP_TRANSPORT"]?.lowercased() {
        case nil, "", "libcurl", "automatic": break
        case "urlsession":
            try resources.provide(SharedHTTPTransport.self, URLSessionTransport(maximumConnectionsPerHost: SharedHTTPTransport.maximumConnectionsPerHost))
        case let other?:
            throw BuckiaError(
                .invalidConfiguration, "BUCKIA_HTTP_TRANSPORT is \(other.debugDescription); set it to libcurl or urlsession, or unset it.",
                path: "BUCKIA_HTTP_TRANSPORT")
        }
    }

    private static func dispatch(
        _ arguments: [String], environment: [String: String], registries: Registries, resources: SharedResources
    ) async -> ExitCode {
        if arguments == ["--version"] {
            Console.out("buckia \(BuckiaVersion.current)")
            return .success
        }
        guard let name = arguments.first, name != "--help", name != "-h", name != "help" else {
            if arguments.isEmpty {
                Console.error(overview)
                return .usage
            }
            Console.out(overview)
            return .success
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            Console.error("buckia: unknown command \(name.debugDescription.escapingControlCharacters); run 'buckia --help' for the list.")
            return .usage
        }
        do {
            let parsed = try ArgumentParser.parse(Array(arguments.dropFirst()), options: command.options + globalOptions)
            if parsed.flag("help") {
                Console.out(command.help)
                return .success
            }
            guard command.positionals.contains(parsed.positionals.count) else {
                throw UsageError(description: "Usage: buckia \(command.usage)")
            }
            if let config = parsed.value("config"), config.isEmpty {
                throw UsageError(description: "--config needs the path of a configuration file.")
            }
            let invocation = Invocation(
                arguments: parsed, environment: environment, registry: registries.providers, engines: registries.engines,
                resources: resources)
            // What the command did decides the exit status; a working folder that cannot be
            // removed (another user's, a read-only mount) is said, not made a failure.
            defer {
                if let leftover = invocation.removeWorkingFiles() {
                    Console.error("buckia: warning: \(leftover.message.escapingControlCharacters)")
                }
            }
            return try await command.run(invocation)
        } catch let error as UsageError {
            Console.error("buckia \(name.escapingControlCharacters): \(error.description.escapingControlCharacters)")
            return .usage
        } catch {
            let wrapped = BuckiaError.wrapping(error)
            Console.report(wrapped)
            return ExitCode.from(wrapped)
        }
    }
}
