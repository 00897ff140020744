import BuckiaTestSupport
import Foundation
import Testing

@Suite("buckia catalog")
struct CatalogCommandTests {
    @Test("refresh fills a catalog from a remote, ls lists and searches it, rm and truncate remove records and their media only")
    func roundTrip() async throws {
        let harness = try CLIHarness()
        for name in ["videos/intro.mp4", "videos/deep/dive.mp4", "other/skip.mp4"] {
            let local = try harness.write(name, to: "source/\(name)")
            #expect(try await harness.runOffPool("cp", local.path, "default:\(name)").status == 0)
        }
        let db = harness.home.appendingPathComponent("catalog.sqlite").path
        let refresh = try await harness.runOffPool("catalog", "refresh", "default:videos", "--db", db)
        #expect(refresh.status == 0 && refresh.stdout == "Cached 2 records.\n", "\(refresh)")
        let listed = try await harness.runOffPool("catalog", "ls", "--db", db, "--json")
        let records = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(Set(records.compactMap { $0["fileId"] as? String }) == ["videos/intro.mp4", "videos/deep/dive.mp4"])
        #expect(records.allSatisfy { ($0["size"] as? Int).map { $0 > 0 } == true })
        let found = try await harness.runOffPool("catalog", "ls", "--db", db, "--search", "DIVE")
        #expect(found.status == 0 && found.stdout.contains("videos/deep/dive.mp4") && !found.stdout.contains("intro"), "\(found)")

        let media = harness.home.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let kept = media.appendingPathComponent("notes.txt")
        let video = media.appendingPathComponent("clip.mp4")
        for url in [kept, video] { try Data("x".utf8).write(to: url) }
        #expect(try await harness.runOffPool("catalog", "rm", "videos/intro.mp4", "--db", db, "--media", media.path).status == 0)
        let missing = try await harness.runOffPool("catalog", "rm", "videos/intro.mp4", "--db", db)
        #expect(missing.status == 3 && missing.stderr.contains("No record"), "\(missing)")
        #expect(try await harness.runOffPool("catalog", "truncate", "--db", db, "--media", media.path).status == 0)
        #expect(try await harness.runOffPool("catalog", "ls", "--db", db).stdout.isEmpty)
        #expect(FileManager.default.fileExists(atPath: kept.path) && !FileManager.default.fileExists(atPath: video.path))
    }

    @Test("Without --db, with a local path, or with an unknown subcommand: a usage error; a damaged catalog: corrupt, with the way back")
    func errors() async throws {
        let harness = try CLIHarness()
        #expect(try await harness.runOffPool("catalog", "ls").status == 2)
        #expect(try await harness.runOffPool("catalog", "refresh", "/tmp", "--db", harness.home.appendingPathComponent("c.sqlite").path).status == 2)
        #expect(try await harness.runOffPool("catalog", "frobnicate", "--db", harness.home.appendingPathComponent("c.sqlite").path).status == 2)
        let damaged = try harness.write(String(repeating: "not a database ", count: 500), to: "damaged.sqlite")
        let result = try await harness.runOffPool("catalog", "ls", "--db", damaged.path)
        #expect(result.status == 1 && result.stderr.contains("remove it and fill a new one"), "\(result)")
    }

    @Test("import caches JSON lines a batch at a time, reporting each commit; ls --json output imports back to the same records")
    func importLines() async throws {
        let harness = try CLIHarness()
        let db = harness.home.appendingPathComponent("catalog.sqlite").path
        var lines = ""
        for n in 1...5 {
            lines += #"{"fileId":"f\#(n)","key":"k/\#(n).mp4","title":"Talk \#(n)","publishDate":"2026-01-0\#(n)T10:00:00.250Z","size":\#(n)}"# + "\n"
        }
        let input = try harness.write(lines + "\n", to: "records.jsonl")
        let imported = try await harness.runOffPool("catalog", "import", input.path, "--db", db, "--batch", "2")
        #expect(imported.status == 0, "\(imported)")
        #expect(
            imported.stdout == "Cached 2 records through line 2.\nCached 2 records through line 4.\nCached 1 record through line 5.\nImported 5 records in 3 batches.\n",
            "\(imported)")
        let listed = try await harness.runOffPool("catalog", "ls", "--db", db, "--json")
        #expect(listed.stdout.contains(#""publishDate":"2026-01-05T10:00:00.250Z""#), "milliseconds survive: \(listed.stdout.prefix(300))")
        // The array ls --json prints is an import of its own, into another catalog.
        let array = try harness.write(listed.stdout, to: "records.json")
        let other = harness.home.appendingPathComponent("other.sqlite").path
        let again = try await harness.runOffPool("catalog", "import", array.path, "--db", other)
        #expect(again.status == 0 && again.stdout.hasSuffix("Imported 5 records in 1 batch.\n"), "\(again)")
        #expect(try await harness.runOffPool("catalog", "ls", "--db", other, "--json").stdout == listed.stdout)
    }

    /// Inputs import refuses, the line its error names, and how many records stay cached.
    static let badImports: [(name: String, input: String, line: String, cached: Int)] = [
        ("not JSON", "{\"fileId\":\"a\",\"key\":\"a\"}\nnot json\n", "Line 2", 0),
        ("a field missing", "{\"fileId\":\"a\",\"key\":\"a\"}\n{\"fileId\":\"b\",\"key\":\"b\"}\n{\"fileId\":\"c\"}\n", "Line 3", 2),
        ("a bad date", "{\"fileId\":\"a\",\"key\":\"a\",\"publishDate\":\"yesterday\"}\n", "Line 1", 0),
        ("an empty key", "{\"fileId\":\"a\",\"key\":\"a\"}\n{\"fileId\":\"b\",\"key\":\"b\"}\n{\"fileId\":\"c\",\"key\":\"\"}\n", "line 3", 2),
        ("a broken array", "[{\"fileId\":\"a\",\"key\":\"a\"},", "not an array", 0),
    ]

    @Test("A bad record stops import with an error naming its line; the batches committed before it stay, the rest are not cached", arguments: badImports.indices)
    func importRefusals(_ index: Int) async throws {
        let bad = Self.badImports[index]
        let harness = try CLIHarness()
        let db = harness.home.appendingPathComponent("catalog.sqlite").path
        let input = try harness.write(bad.input, to: "bad.jsonl")
        let result = try await harness.runOffPool("catalog", "import", input.path, "--db", db, "--batch", "2")
        #expect(result.status != 0 && result.stderr.contains(bad.line), "\(bad.name): \(result)")
        let listed = try await harness.runOffPool("catalog", "ls", "--db", db, "--json")
        let records = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(records.count == bad.cached, "\(bad.name)")
        #expect(try await harness.runOffPool("catalog", "import", input.path, "--db", db, "--batch", "0").status == 2)
    }

    @Test("rm takes several records and removes each with its media; one unknown fileId removes nothing")
    func removeSeveral() async throws {
        let harness = try CLIHarness()
        let db = harness.home.appendingPathComponent("catalog.sqlite").path
        let media = harness.home.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        var lines = ""
        for n in 1...3 {
            lines += #"{"fileId":"f\#(n)","key":"k\#(n)","url":"https://cdn.example/\#(n).mp4"}"# + "\n"
            try Data("x".utf8).write(to: media.appendingPathComponent("\(n).mp4"))
        }
        let input = try harness.write(lines, to: "records.jsonl")
        #expect(try await harness.runOffPool("catalog", "import", input.path, "--db", db).status == 0)
        let refused = try await harness.runOffPool("catalog", "rm", "f1", "nope", "--db", db, "--media", media.path)
        #expect(refused.status == 3 && refused.stderr.contains("nothing was removed"), "\(refused)")
        #expect(FileManager.default.fileExists(atPath: media.appendingPathComponent("1.mp4").path))
        let removed = try await harness.runOffPool("catalog", "rm", "f1", "f3", "--db", db, "--media", media.path)
        #expect(removed.status == 0 && removed.stdout == "Removed f1.\nRemoved f3.\n", "\(removed)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: media.path) == ["2.mp4"])
        #expect(try await harness.runOffPool("catalog", "ls", "--db", db).stdout.contains("k2"))
    }

    @Test("Ten processes opening one new catalog at once all succeed: one creates it, the others find it made")
    func concurrentCreation() async throws {
        let harness = try CLIHarness()
        let db = harness.home.appendingPathComponent("new.sqlite").path
        // import creates a missing catalog (ls reads one, and creates nothing); an empty input
        // leaves only the opening to race.
        let empty = try harness.write("", to: "empty.jsonl").path
        let (environment, home) = (harness.environment, harness.home)
        let runs = try await withThrowingTaskGroup(of: CLIHarness.Result.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await offPool { try CLIHarness.execute(CLIHarness.executable.path, ["catalog", "import", empty, "--db", db], environment: environment, directory: home) }
                }
            }
            var runs: [CLIHarness.Result] = []
            for try await run in group { runs.append(run) }
            return runs
        }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        #expect(try await harness.runOffPool("catalog", "ls", "--db", db).status == 0)
    }
}
