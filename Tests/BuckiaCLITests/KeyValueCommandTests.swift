import Foundation
import Testing

@Suite("buckia kv")
struct KeyValueCommandTests {
    @Test("put, get, ls, count and rm work on every persistent engine", arguments: ["sqlite", "disk", "chunk"])
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
