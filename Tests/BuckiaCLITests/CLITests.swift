import Buckia
import Foundation
import Testing

@Suite("buckia command line")
struct CLITests {
    @Test("Every command answers --help with its usage", arguments: ["providers", "ls", "cp", "cat", "rcat", "rm", "url", "token", "kv", "conformance"])
    func help(_ command: String) throws {
        let result = try CLIHarness().run(command, "--help")
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("Usage: buckia \(command)"))
    }

    @Test("--version prints the version the library declares, and nothing else")
    func version() throws {
        let result = try CLIHarness().run("--version")
        #expect(result.status == 0)
        #expect(result.stdout == "buckia \(BuckiaVersion.current)\n")
        #expect(result.stderr.isEmpty)
    }

    @Test("Mistakes exit 2 with one line on standard error", arguments: [["frob"], ["cp", "only-one"], ["ls", "default:", "--bogus"], []])
    func usageErrors(_ arguments: [String]) throws {
        let harness = try CLIHarness()
        let process = try harness.runArray(arguments)
        #expect(process.status == 2)
        #expect(process.stdout.isEmpty)
        #expect(!process.stderr.isEmpty)
    }

    @Test("rcat stores standard input (none, a line, 20 MiB) byte for byte; a bad key stores nothing; cp and rcat into a local remote leave no .buckia behind")
    func rcat() throws {
        let harness = try CLIHarness()
        let root = harness.home.appendingPathComponent("lake")
        let lake = ["BUCKIA_REMOTE_LAKE_PROVIDER": "local", "BUCKIA_REMOTE_LAKE_ROOT": root.path]
        let large = Data((0..<(20 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 1) })
        for (name, data) in [("empty", Data()), ("line.txt", Data("a line\n".utf8)), ("large.bin", large)] {
            let input = harness.home.appendingPathComponent("input-\(name)")
            try data.write(to: input)
            let stored = try harness.runProgram(
                "/bin/sh", ["-c", "exec \"$0\" rcat \"$1\" < \"$2\"", CLIHarness.executable.path, "lake:in/\(name)", input.path], extraEnvironment: lake)
            #expect(stored.status == 0, "\(stored.stderr)")
            #expect(stored.stderr.contains("stored \(data.count) bytes at lake:in/\(name)"), "\(stored.stderr)")
            #expect(try Data(contentsOf: root.appendingPathComponent("in/\(name)")) == data, "\(name)")
        }
        let refused = try harness.runProgram(
            "/bin/sh", ["-c", "echo x | exec \"$0\" rcat lake:../escape", CLIHarness.executable.path], extraEnvironment: lake)
        #expect(refused.status == 2, "\(refused.stderr)")
        let source = try harness.write("copied", to: "copied.txt")
        #expect(try harness.run("cp", source.path, "lake:docs/", extraEnvironment: lake).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() == ["docs", "in"], "nothing of Buckia's stays")
        #expect(!FileManager.default.fileExists(atPath: harness.home.appendingPathComponent("escape").path))
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
        #expect(result.stdout.contains("default (local): 4 passed, 0 failed, 0 skipped"))
    }

    @Test("conformance --list names the scenarios a run would run, and runs none")
    func conformanceList() throws {
        let harness = try CLIHarness()
        let listed = try harness.run("conformance", "--list", "--filter", "round trip")
        #expect(listed.status == 0)
        #expect(listed.stdout.split(separator: "\n") == ["round trip: empty object", "round trip: one byte", "round trip: every byte value", "round trip: multi-MiB file"])
        let run = try harness.run("conformance", "default:", "--filter", "round trip")
        let rows = run.stdout.split(separator: "\n").filter { $0.hasPrefix("round trip: ") }
        #expect(rows.count == 4, "the run has one row per listed scenario: \(run.stdout)")
        #expect(try harness.run("conformance", "--list", "default:").status == 2)
        #expect(try harness.run("conformance").status == 2)
    }

    @Test("conformance default: --chunks runs every chunk-store scenario on the remote and leaves nothing behind")
    func chunkConformance() throws {
        let harness = try CLIHarness()
        let listed = try harness.run("conformance", "--list", "--chunks")
        #expect(listed.status == 0)
        let names = listed.stdout.split(separator: "\n")
        #expect(names.count == 10 && names.allSatisfy { $0.hasPrefix("chunks: ") }, "\(listed.stdout)")
        let run = try harness.run("conformance", "default:", "--chunks")
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("default (local) chunk store: 10 passed, 0 failed, 0 skipped"), "\(run.stdout)")
        let root = harness.home.appendingPathComponent("data/buckia/default")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: root.path))?.filter { $0.hasPrefix("buckia-conformance-") } ?? []
        let files = left.flatMap { (try? FileManager.default.subpathsOfDirectory(atPath: root.appendingPathComponent($0).path)) ?? [] }
            .filter { !$0.hasSuffix("/") }
        let regular = files.filter { path in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: root.appendingPathComponent(left[0]).appendingPathComponent(path).path, isDirectory: &isFolder) && !isFolder.boolValue
        }
        #expect(regular.isEmpty, "files left under the conformance prefix: \(regular)")
    }
}
