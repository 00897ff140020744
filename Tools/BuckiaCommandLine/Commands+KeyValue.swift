import Buckia
import Foundation

extension CLI {
    /// The most `kv put` reads from standard input (64 MiB): values are meant to be small.
    static let keyValueInputLimit = 64 * 1_048_576

    static let kvCommand = Command(
        name: "kv", summary: "Read and write a key-value engine (sqlite, disk, chunk, memory).",
        usage: "kv [--engine TYPE] [--path DIR] put KEY [VALUE] | get KEY | rm KEY | ls | count | import FILE [--batch N] [--json]",
        positionals: 1...3,
        options: [
            .value("engine", "The engine type (default sqlite)."),
            .value("path", "The engine's folder (default $XDG_DATA_HOME/buckia/kv-TYPE)."),
            .value("batch", "import: values written together, in one transaction on the sqlite engine (default 1000)."),
            .flag("json", "import: print a JSON line as each batch is stored, and one at the end."),
        ],
        details: """
            put reads the value from standard input when VALUE is omitted. Keys are stored verbatim.
            get writes the value's bytes to standard output; a missing key exits 3.
            import reads JSON lines from FILE (- for standard input), each {"key": K, "value": TEXT} or {"key": K, "base64": BYTES},
            and writes them in batches; on the sqlite engine a batch is stored whole or not at all, so an import that is
            stopped keeps the batches it reported and none of the next. A malformed line stops the import there (exit 1),
            naming the line; the batches before it are kept.
            """
    ) { invocation in
        let type = EngineType(rawValue: invocation.arguments.value("engine") ?? "sqlite")
        let dataHome = RemoteConfiguration.dataHome(invocation.environment)
        let path = invocation.arguments.value("path") ?? "\(dataHome)/buckia/kv-\(type)"
        let engine = try await invocation.engines.makeEngine(for: EngineConfiguration(type: type, directory: path))
        let arguments = invocation.positionals
        func key() throws -> CacheKey {
            guard arguments.count >= 2 else { throw UsageError(description: "kv \(arguments[0]) needs a KEY.") }
            let key = CacheKey(verbatim: arguments[1])
            try key.validate()
            return key
        }
        switch arguments[0] {
        case "put":
            let value = arguments.count == 3 ? Data(arguments[2].utf8) : try StandardInput.readAll(limit: CLI.keyValueInputLimit)
            try await engine.write(value, key: try key())
        case "get":
            let key = try key()
            guard let value = try await engine.read(key: key) else {
                throw BuckiaError(.notFound, "No value is stored under \(key.value.debugDescription).", path: path)
            }
            try Console.writeOut(value)
        case "rm":
            let key = try key()
            guard try await engine.keyExists(key) else {
                throw BuckiaError(.notFound, "No value is stored under \(key.value.debugDescription).", path: path)
            }
            try await engine.remove(key: key)
        case "ls":
            for key in try await engine.allKeys() { Console.out(key.value.terminalSafe) }
        case "count":
            Console.out(String(try await engine.keyCount()))
        case "import":
            guard arguments.count == 2 else { throw UsageError(description: "kv import needs one FILE (- for standard input).") }
            try await CLI.keyValueImport(invocation, engine: engine, file: arguments[1])
        default:
            throw UsageError(description: "Unknown kv action \(arguments[0].debugDescription); use put, get, rm, ls, count or import.")
        }
        return .success
    }
}
