import Foundation
import Testing

/// Runs the built `buckia` executable in a private XDG environment.
struct CLIHarness: ~Copyable {
    let home: URL
    var environment: [String: String]

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        environment = [
            "HOME": home.path, "XDG_DATA_HOME": home.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "PATH": "/usr/bin:/bin",
        ]
    }

    deinit { try? FileManager.default.removeItem(at: home) }

    static var executable: URL {
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return products.appendingPathComponent("buckia")
    }

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    func run(_ arguments: String..., extraEnvironment: [String: String] = [:]) throws -> Result {
        try runArray(arguments, extraEnvironment: extraEnvironment)
    }

    func runArray(_ arguments: [String], extraEnvironment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = CLIHarness.executable
        process.arguments = arguments
        process.currentDirectoryURL = home
        process.environment = environment.merging(extraEnvironment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes concurrently-enough: outputs here are small, well under a pipe buffer.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    func write(_ text: String, to relative: String) throws -> URL {
        let url = home.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        return url
    }
}

@Suite("buckia command line")
struct CLITests {
    @Test("Every command answers --help with its usage", arguments: ["providers", "ls", "cp", "cat", "rm", "url", "kv", "conformance"])
    func help(_ command: String) throws {
        let result = try CLIHarness().run(command, "--help")
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("Usage: buckia \(command)"))
    }

    @Test("Mistakes exit 2 with one line on standard error", arguments: [["frob"], ["cp", "only-one"], ["ls", "default:", "--bogus"], []])
    func usageErrors(_ arguments: [String]) throws {
        let harness = try CLIHarness()
        let process = try harness.runArray(arguments)
        #expect(process.status == 2)
        #expect(process.stdout.isEmpty)
        #expect(!process.stderr.isEmpty)
    }

    @Test("cp, ls, cat and rm work against default: with no configuration")
    func roundTrip() throws {
        let harness = try CLIHarness()
        let source = try harness.write("hello, buckia\n", to: "in/hello.txt")
        _ = try harness.write("nested\n", to: "in/tree/deep/n.txt")
        #expect(try harness.run("cp", source.path, "default:docs/").status == 0)
        #expect(try harness.run("cp", "-r", harness.home.appendingPathComponent("in/tree").path, "default:tree").status == 0)
        let listing = try harness.run("ls", "-R", "default:")
        #expect(listing.stdout.contains("docs/hello.txt") && listing.stdout.contains("tree/deep/n.txt"))
        let oneLevel = try harness.run("ls", "default:")
        #expect(oneLevel.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } == ["docs/", "tree/"])
        #expect(try harness.run("cat", "default:docs/hello.txt").stdout == "hello, buckia\n")
        let json = try harness.run("ls", "--json", "default:docs")
        let decoded = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
        #expect(decoded?.first?["path"] as? String == "docs/hello.txt")
        #expect(try harness.run("cp", "default:docs/hello.txt", harness.home.appendingPathComponent("out.txt").path).status == 0)
        #expect(try String(contentsOf: harness.home.appendingPathComponent("out.txt"), encoding: .utf8) == "hello, buckia\n")
        #expect(try harness.run("rm", "-r", "default:tree").status == 0)
        #expect(try harness.run("rm", "default:docs/hello.txt").status == 0)
        #expect(try harness.run("ls", "-R", "default:").stdout.isEmpty)
    }

    @Test("Errors map to documented exit codes", arguments: [
        (["cat", "default:missing.txt"], Int32(3)),
        (["cat", "default:../escape"], Int32(2)),
        (["ls", "nosuchremote:"], Int32(3)),
        (["rm", "default:missing.txt"], Int32(3)),
    ])
    func exitCodes(_ arguments: [String], _ status: Int32) throws {
        let result = try CLIHarness().runArray(arguments)
        #expect(result.status == status)
        #expect(result.stderr.hasPrefix("buckia: "))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test("A malformed configuration file exits 5 and names the problem", arguments: [
        ("{not json", "not valid JSON"),
        (#"{"remotes": {"x": {"provider": "local", "bukcetName": "a"}}}"#, "bukcetName"),
        (#"{"remotes": {"x": {"bucketName": "a"}}}"#, "provider"),
        (#"{"remotes": {"x": {"provider": "local", "maxConcurrentOperations": 0, "options": {"root": "/tmp"}}}}"#, "maxConcurrentOperations"),
    ])
    func badConfiguration(_ json: String, _ mention: String) throws {
        let harness = try CLIHarness()
        let config = try harness.write(json, to: "config/buckia/config.json")
        let result = try harness.run("providers", "--config", config.path)
        #expect(result.status == 5)
        #expect(result.stderr.contains(mention))
    }

    @Test("Remotes come from the environment, and credentials never print")
    func environmentRemote() throws {
        let harness = try CLIHarness()
        let root = harness.home.appendingPathComponent("envroot").path
        let secret = "s3cr3t-value-never-printed"
        let environment = [
            "BUCKIA_REMOTE_MINE_PROVIDER": "local", "BUCKIA_REMOTE_MINE_ROOT": root,
            "BUCKIA_REMOTE_MINE_CREDENTIAL_API_KEY": secret,
        ]
        let providers = try harness.run("providers", extraEnvironment: environment)
        #expect(providers.stdout.contains("mine: local (environment)"))
        let source = try harness.write("env\n", to: "env.txt")
        #expect(try harness.run("cp", source.path, "mine:env.txt", extraEnvironment: environment).status == 0)
        #expect(FileManager.default.fileExists(atPath: root + "/env.txt"))
        let broken = try harness.run("ls", "mine:", extraEnvironment: ["BUCKIA_REMOTE_MINE_CREDENTIAL_TOKEN": secret])
        #expect(broken.status == 5)
        #expect(!(providers.stdout + providers.stderr + broken.stdout + broken.stderr).contains(secret))
    }

    @Test("conformance default: prints a table and passes")
    func conformance() throws {
        let result = try CLIHarness().run("conformance", "default:", "--filter", "round trip")
        #expect(result.status == 0)
        #expect(result.stdout.contains("SCENARIO"))
        #expect(result.stdout.contains("round trip: empty object"))
        #expect(result.stdout.contains("local: 4 passed, 0 failed, 0 skipped"))
    }
}

@Suite("buckia cp -r")
struct RecursiveCopyTests {
    // Regression: cp -r once reported "Copied 0 files" and exit 0 for a missing or file source,
    // and silently dropped symbolic links.
    @Test("A missing source folder exits 3; a file source with -r exits 2")
    func badSources() throws {
        let harness = try CLIHarness()
        let file = try harness.write("x", to: "single.txt")
        #expect(try harness.run("cp", "-r", harness.home.appendingPathComponent("absent").path, "default:x").status == 3)
        #expect(try harness.run("cp", "-r", file.path, "default:x").status == 2)
        #expect(try harness.run("cp", "-r", "default:nothing-here", harness.home.appendingPathComponent("out").path).status == 3)
    }

    @Test("Links in a copied tree are skipped and reported, never followed")
    func linksAreReported() throws {
        let harness = try CLIHarness()
        let real = try harness.write("real", to: "tree/sub/real.txt")
        try FileManager.default.createSymbolicLink(atPath: harness.home.appendingPathComponent("tree/link.txt").path, withDestinationPath: real.path)
        let result = try harness.run("cp", "-r", harness.home.appendingPathComponent("tree").path, "default:t")
        #expect(result.status == 0)
        #expect(result.stderr.contains("skipped link.txt"))
        #expect(try harness.run("ls", "-R", "default:t").stdout.contains("t/sub/real.txt"))
        #expect(!(try harness.run("ls", "-R", "default:t").stdout.contains("link.txt")))
    }
}

@Suite("buckia kv")
struct KeyValueCommandTests {
    @Test("put, get, ls, count and rm work on every persistent engine", arguments: ["sqlite", "disk"])
    func roundTrip(_ engine: String) throws {
        let harness = try CLIHarness()
        let path = harness.home.appendingPathComponent("kv-\(engine)").path
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "put", "greeting", "hello").status == 0)
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "put", "caf\u{E9}/../x", "odd key").status == 0)
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "get", "greeting").stdout == "hello")
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "ls").stdout == "caf\u{E9}/../x\ngreeting\n")
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "count").stdout == "2\n")
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "rm", "greeting").status == 0)
        let missing = try harness.run("kv", "--engine", engine, "--path", path, "get", "greeting")
        #expect(missing.status == 3)
        #expect(missing.stderr.hasPrefix("buckia: "))
    }

    @Test("An unknown engine exits 5 naming the registered ones; a 10,000-byte key exits 2")
    func errors() throws {
        let harness = try CLIHarness()
        let unknown = try harness.run("kv", "--engine", "nope", "ls")
        #expect(unknown.status == 5)
        #expect(unknown.stderr.contains("disk") && unknown.stderr.contains("sqlite"))
        #expect(try harness.run("kv", "put", String(repeating: "k", count: 10_000), "v").status == 2)
    }
}

@Suite("buckia url")
struct URLCommandTests {
    static let s3Remote = [
        "BUCKIA_REMOTE_LAKE_PROVIDER": "s3", "BUCKIA_REMOTE_LAKE_BUCKET": "lake",
        "BUCKIA_REMOTE_LAKE_ENDPOINT": "http://127.0.0.1:9", "BUCKIA_REMOTE_LAKE_CREDENTIAL_ACCESS_KEY_ID": "AKIDCLI",
        "BUCKIA_REMOTE_LAKE_CREDENTIAL_SECRET_ACCESS_KEY": "cli-secret-never-printed",
    ]

    @Test("A presigned URL is printed for S3 remotes, offline, without the secret", arguments: [
        ("1h", "X-Amz-Expires=3600"), ("90s", "X-Amz-Expires=90"), ("7d", "X-Amz-Expires=604800"), ("15m", "X-Amz-Expires=900"),
    ])
    func presign(_ expires: String, _ expected: String) throws {
        let result = try CLIHarness().run("url", "lake:dir/a b.txt", "--expires", expires, extraEnvironment: Self.s3Remote)
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("http://127.0.0.1:9/lake/dir/a%20b.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"))
        #expect(result.stdout.contains(expected) && result.stdout.contains("X-Amz-Signature="))
        #expect(!(result.stdout + result.stderr).contains("cli-secret-never-printed"))
    }

    @Test("Bad durations exit 2; over seven days exits 5; a provider without presigning exits 1", arguments: [
        (["url", "lake:x", "--expires", "soon"], Int32(2)), (["url", "lake:x", "--expires", "8d"], Int32(5)),
        (["url", "default:x"], Int32(1)),
    ])
    func errors(_ arguments: [String], _ status: Int32) throws {
        let result = try CLIHarness().runArray(arguments, extraEnvironment: Self.s3Remote)
        #expect(result.status == status)
        #expect(result.stderr.hasPrefix("buckia"))
    }
}
