import Buckia
import Foundation

/// The `buckia` command line as a library, so a package that adds its own providers or
/// engines ships its own `buckia` with every built-in command.
///
/// The shipped executable is this with the built-in registries. A third party's is the same
/// with its plugins added (under a product name of its own: SwiftPM cannot build two
/// executable products called `buckia` in one build); its `main.swift` is:
///
/// ```swift
/// import BuckiaCommandLine
///
/// BuckiaCommandLine.main(adding: [ScratchProvider.self])
/// ```
///
/// Configured remotes then select the new type by name (`"provider": "scratch"`, or
/// `BUCKIA_REMOTE_X_PROVIDER=scratch`), `buckia providers` lists it, and
/// `buckia conformance x:` runs it through every conformance scenario.
public enum BuckiaCommandLine {
    /// Runs the command line with the built-in providers and engines plus `providers` and
    /// `engines`, then exits the process with the command's status.
    ///
    /// A plugin whose type name is already registered (a built-in's, or another in the list)
    /// is a programming error that still must not trap: the process prints which name
    /// collides and exits with status 5 (configuration).
    public static func main(
        adding providers: [any StorageProviderPlugin.Type] = [], engines: [any StorageEnginePlugin.Type] = []
    ) -> Never {
        var providerRegistry = ProviderRegistry.builtIn
        var engineRegistry = EngineRegistry.builtIn
        do {
            for provider in providers { try providerRegistry.register(provider) }
            for engine in engines { try engineRegistry.register(engine) }
        } catch {
            StandardStreams.reserve()
            Console.report(BuckiaError.wrapping(error))
            exit(ExitCode.configuration.rawValue)
        }
        main(providers: providerRegistry, engines: engineRegistry)
    }

    /// Runs the command line over exactly these registries, then exits the process with the
    /// command's status (Docs/CLI.md has the table).
    ///
    /// Call it once, from the executable's `main.swift`, before anything else runs: it blocks
    /// SIGINT and SIGTERM in every thread and takes them on a thread of its own, so an
    /// interrupted copy removes its temporary files and exits with 130 or 143.
    public static func main(providers: ProviderRegistry, engines: EngineRegistry) -> Never {
        // First of all, while this is the only thread: SIGINT and SIGTERM are blocked here,
        // and so in every thread started later (threads inherit the mask); one thread of our
        // own takes them with sigwait (ProcessEnd.watch). No other thread can receive them and
        // drop them. (With libdispatch's signal sources, and top-level `await` parking the main
        // thread in dispatch_main with every signal unblocked, deliveries were lost under load:
        // an interrupted copy ran on to its end.) A signal that comes before the watcher starts
        // stays pending for it.
        var interruptSignals = sigset_t()
        sigemptyset(&interruptSignals)
        sigaddset(&interruptSignals, SIGINT)
        sigaddset(&interruptSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &interruptSignals, nil)

        // Before anything opens a file: a closed standard stream must not be reused by one.
        StandardStreams.reserve()

        // Two malloc arenas instead of glibc's eight per core: with transfers spread over many
        // threads, each arena otherwise keeps its freed part buffers resident (about 9 MiB more
        // at peak for a 512 MiB multipart upload; see Docs/Benchmarks.md).
        SystemCalls.limitMallocArenas(2)

        // Arguments are decoded as UTF-8 with replacement characters, which would map two
        // different names onto one ("coll\xFF" and "coll\xFE" both become "coll\u{FFFD}"):
        // refuse them instead.
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw))
            if String(validating: bytes, as: UTF8.self) == nil {
                let name = UnaddressableKey(bytes: Array(bytes), reason: "").displayName.debugDescription
                Console.error("buckia: argument \(index) (\(name)) is not valid UTF-8; Buckia names objects and files in UTF-8 only.")
                exit(ExitCode.usage.rawValue)
            }
        }

        // The environment is decoded with replacement characters too: a variable Buckia reads
        // (a remote's root, a key) that is not UTF-8 would name another folder or key. Refuse it
        // as arguments are refused; any other such variable is left out of what commands see.
        let environment: [String: String]
        switch Self.environment(keyVariables: Self.keyVariables(in: CommandLine.arguments)) {
        case .success(let decoded): environment = decoded
        case .failure(let variable):
            Console.error("buckia: the environment variable \(variable.name) is not valid UTF-8; Buckia reads its settings in UTF-8 only. Set it again in UTF-8.")
            exit(ExitCode.configuration.rawValue)
        }

        // Interrupted (Ctrl-C, SIGTERM): remove the temporaries in progress, then exit as the
        // signal would (130, 143). Parts already on a server stay for a resumed upload.
        ProcessEnd.watch(interruptSignals)

        // The command runs on the concurrency pool while this thread waits for it: a top-level
        // `await` would hand the main thread to dispatch_main, which unblocks every signal on it.
        let arguments = Array(CommandLine.arguments.dropFirst())
        let registries = CLI.Registries(providers: providers, engines: engines)
        let status = Locked(ExitCode.failure)
        let finished = DispatchSemaphore(value: 0)
        Task.detached { [arguments, environment] in
            let result = await CLI.main(arguments, environment: environment, registries: registries)
            status.withLock { $0 = result }
            finished.signal()
        }
        finished.wait()
        ProcessEnd.exit(status.withLock { $0 }.rawValue)
    }

    /// A variable that is not valid UTF-8, named for a message (its name escaped as needed).
    struct InvalidVariable: Error {
        let name: String
    }

    /// Whether Buckia reads the variable `name`: its own settings, the AWS, B2 and Bunny
    /// credentials and settings, the XDG folders, `HOME`, `TMPDIR`, and any `--key-env` names.
    static func isRead(_ name: String, keyVariables: Set<String>) -> Bool {
        ["BUCKIA_", "AWS_", "B2_", "BUNNY_", "XDG_"].contains { name.hasPrefix($0) }
            || ["HOME", "TMPDIR"].contains(name) || keyVariables.contains(name)
    }

    /// The variables `--key-env NAME` (or `--key-env=NAME`) names in `arguments`.
    static func keyVariables(in arguments: [String]) -> Set<String> {
        var names: Set<String> = []
        for (index, argument) in arguments.enumerated() {
            if argument == "--key-env", index + 1 < arguments.count { names.insert(arguments[index + 1]) }
            if argument.hasPrefix("--key-env=") { names.insert(String(argument.dropFirst("--key-env=".count))) }
        }
        return names
    }

    /// The process environment read from `environ` byte by byte: the variables that are UTF-8,
    /// or the first variable Buckia reads that is not.
    static func environment(keyVariables: Set<String>) -> Result<[String: String], InvalidVariable> {
        var decoded: [String: String] = [:]
        #if canImport(Darwin)
        guard let environ = _NSGetEnviron().pointee else { return .success([:]) }
        #endif
        var index = 0
        while let entry = environ[index] {
            index += 1
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(entry).assumingMemoryBound(to: UInt8.self), count: strlen(entry))
            let equals = bytes.firstIndex(of: UInt8(ascii: "=")) ?? bytes.endIndex
            let nameBytes = Array(bytes[..<equals])
            let valueBytes = equals < bytes.endIndex ? Array(bytes[(equals + 1)...]) : []
            guard let name = String(validating: nameBytes, as: UTF8.self), let value = String(validating: valueBytes, as: UTF8.self) else {
                let shown = UnaddressableKey(bytes: nameBytes, reason: "").displayName.debugDescription
                if isRead(String(decoding: nameBytes, as: UTF8.self), keyVariables: keyVariables) { return .failure(InvalidVariable(name: shown)) }
                continue
            }
            if decoded[name] == nil { decoded[name] = value }
        }
        return .success(decoded)
    }
}
