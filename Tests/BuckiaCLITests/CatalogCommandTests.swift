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
        #expect(result.status != 0 && result.stderr.contains("Rebuild"), "\(result)")
    }
}
