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

    @Test("An unknown engine exits 2 naming the registered ones, and creates nothing; a 10,000-byte key exits 2")
    func errors() throws {
        let harness = try CLIHarness()
        let unknown = try harness.run("kv", "--engine", "nope", "ls")
        #expect(unknown.status == 2)
        #expect(!FileManager.default.fileExists(atPath: harness.home.appendingPathComponent("data/buckia").path))
        #expect(unknown.stderr.contains("disk") && unknown.stderr.contains("sqlite"))
        #expect(try harness.run("kv", "put", String(repeating: "k", count: 10_000), "v").status == 2)
    }

    @Test("kv import stores every line, batch by batch, acknowledging each with --json", arguments: ["sqlite", "disk", "chunk"])
    func importLines(_ engine: String) throws {
        let harness = try CLIHarness()
        let path = harness.home.appendingPathComponent("kv-\(engine)").path
        var lines: [String] = []
        for index in 0..<2_500 { lines.append(#"{"key": "k\#(index)", "value": "value \#(index)"}"#) }
        // Bytes that are not text, a key that needs escaping, a CR LF ending and a blank line.
        lines.append(#"{"base64": "aGkA", "key": "bytes"}"#)
        lines.append(#"{"key": "caf\u00e9 \"quoted\"", "value": "x"}\#r"#)
        lines.append("")
        let input = harness.home.appendingPathComponent("in.jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: input)
        let result = try harness.run("kv", "--engine", engine, "--path", path, "import", input.path, "--batch", "1000", "--json")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.split(separator: "\n") == [
                #"{"event":"batch","values":1000,"imported":1000}"#, #"{"event":"batch","values":1000,"imported":2000}"#,
                #"{"event":"batch","values":502,"imported":2502}"#, #"{"event":"done","imported":2502,"batches":3}"#,
            ])
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "count").stdout == "2502\n")
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "get", "k1234").stdout == "value 1234")
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "get", "caf\u{E9} \"quoted\"").stdout == "x")
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "get", "bytes").stdout == "hi\u{0}")
        // Again: the same values, replaced, nothing added; said in words without --json.
        let again = try harness.run("kv", "--engine", engine, "--path", path, "import", input.path)
        #expect(again.stdout == "Imported 2502 values in 3 batches.\n")
        #expect(try harness.run("kv", "--engine", engine, "--path", path, "count").stdout == "2502\n")
    }
}
