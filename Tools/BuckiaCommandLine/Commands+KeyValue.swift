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
        let arguments = invocation.positionals
        // How the command was called is checked before the engine opens (which may create its
        // folder): a mistyped action or engine leaves nothing behind.
        let arity: [String: ClosedRange<Int>] = ["put": 2...3, "get": 2...2, "rm": 2...2, "ls": 1...1, "count": 1...1, "import": 2...2]
        guard let allowed = arity[arguments[0]] else {
            throw UsageError(description: "Unknown kv action \(arguments[0].debugDescription); use put, get, rm, ls, count or import.")
        }
        guard allowed.contains(arguments.count) else {
            let wanted = ["put": "a KEY, then a VALUE or the value on standard input", "get": "one KEY", "rm": "one KEY", "ls": "no argument", "count": "no argument", "import": "one FILE (- for standard input)"]
            let verb = arguments.count < allowed.lowerBound ? "needs" : "takes"
            throw UsageError(description: "kv \(arguments[0]) \(verb) \(wanted[arguments[0]] ?? "other arguments").")
        }
        let type = EngineType(rawValue: invocation.arguments.value("engine") ?? "sqlite")
        guard invocation.engines.contains(type) else {
            let known = invocation.engines.registeredTypes.map(\.rawValue).sorted().joined(separator: ", ")
            throw UsageError(description: "--engine \(type.rawValue.debugDescription) is not an engine type; the types are \(known).")
        }
        let dataHome = RemoteConfiguration.dataHome(invocation.environment)
        let path = invocation.arguments.value("path") ?? "\(dataHome)/buckia/kv-\(type)"
        guard !path.isEmpty else { throw UsageError(description: "--path names the engine's folder; it is empty.") }
        if let mode = try LocalFile.existingMode(path), (mode & S_IFMT) != S_IFDIR {
            throw UsageError(
                description: "The engine's folder \(path.debugDescription) is \(LocalFile.kind(of: mode)), not a folder; give --path a folder (it is created when missing).")
        }
        var batchSize = 0
        if arguments[0] == "import" {
            batchSize = try CLI.importBatchSize(invocation)
            if arguments[1] != "-" { _ = try CLI.checkImportFile(arguments[1], for: "kv import") }
        }
        // put, get and rm: the KEY is checked before the engine opens, too.
        var checkedKey: CacheKey?
        if ["put", "get", "rm"].contains(arguments[0]) {
            let key = CacheKey(verbatim: arguments[1])
            try key.validate()
            checkedKey = key
        }
        let engine = try await invocation.engines.makeEngine(for: EngineConfiguration(type: type, directory: path))
        func key() throws -> CacheKey {
            guard let checkedKey else { throw UsageError(description: "kv \(arguments[0]) takes no KEY.") }
            return checkedKey
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
            try await CLI.keyValueImport(invocation, engine: engine, file: arguments[1], batchSize: batchSize)
        default:
            throw UsageError(description: "Unknown kv action \(arguments[0].debugDescription); use put, get, rm, ls, count or import.")
        }
        return .success
    }
}
