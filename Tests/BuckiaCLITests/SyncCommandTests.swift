import Foundation
import Testing

@Suite("buckia sync and check")
struct SyncCommandTests {
    @Test("push, a no-op resync, a dry run that changes nothing, then deletes only with --delete")
    func push() throws {
        let harness = try CLIHarness()
        _ = try harness.write("one", to: "src/a.txt")
        _ = try harness.write("two", to: "src/d/b.txt")
        let src = harness.home.appendingPathComponent("src").path
        let first = try harness.run("sync", src, "default:mirror")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("Synced: 2 copied"), "\(first.stderr)")
        let again = try harness.run("sync", src, "default:mirror")
        #expect(again.status == 0 && again.stderr.contains("0 copied") && again.stderr.contains("2 unchanged"), "\(again.stderr)")
        try FileManager.default.removeItem(atPath: src + "/a.txt")
        let dry = try harness.run("sync", src, "default:mirror", "--delete", "--dry-run")
        #expect(dry.status == 0 && dry.stdout == "delete a.txt\n", "\(dry.stdout)")
        #expect(try harness.run("ls", "-R", "default:mirror").stdout.contains("mirror/a.txt"), "a dry run deleted")
        #expect(try harness.run("sync", src, "default:mirror").status == 0)
        #expect(try harness.run("ls", "-R", "default:mirror").stdout.contains("mirror/a.txt"), "deleted without --delete")
        #expect(try harness.run("sync", src, "default:mirror", "--delete").status == 0)
        #expect(!(try harness.run("ls", "-R", "default:mirror").stdout.contains("mirror/a.txt")))
        let state = harness.home.appendingPathComponent(".local/state/buckia/sync")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state.path).filter { $0.hasSuffix(".sqlite") }.count == 1)
    }

    @Test("A folder renamed with mv is moved on the destination with --delete (dry run, text and JSON), and copied without it")
    func renamedFolder() throws {
        let harness = try CLIHarness()
        for n in 1...3 { _ = try harness.write("photo \(n)", to: "src/album/\(n).jpg") }
        let src = harness.home.appendingPathComponent("src").path
        #expect(try harness.run("sync", src, "default:mirror", "--delete").status == 0)
        try FileManager.default.moveItem(atPath: src + "/album", toPath: src + "/photos")
        let dry = try harness.run("sync", src, "default:mirror", "--delete", "--dry-run")
        #expect(dry.status == 0 && dry.stdout == "move album/1.jpg photos/1.jpg\nmove album/2.jpg photos/2.jpg\nmove album/3.jpg photos/3.jpg\n", "\(dry.stdout)")
        #expect(dry.stderr.contains("Would sync: 0 copied (0 B), 3 moved, 0 deleted"), "\(dry.stderr)")
        // Without --delete the old names stay, so nothing moves: the new names are copies.
        let copied = try harness.run("sync", src, "default:copy")
        #expect(copied.status == 0)
        try FileManager.default.moveItem(atPath: src + "/photos", toPath: src + "/renamed")
        let kept = try harness.run("sync", src, "default:copy")
        #expect(kept.status == 0 && kept.stderr.contains("3 copied") && !kept.stderr.contains("moved"), "\(kept.stderr)")
        try FileManager.default.moveItem(atPath: src + "/renamed", toPath: src + "/photos")
        let moved = try harness.run("sync", src, "default:mirror", "--delete", "--json")
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdout.contains("\"movedDestination\":3") && moved.stdout.contains("\"copiedToDestination\":0"), "\(moved.stdout)")
        #expect(moved.stdout.contains("\"action\":\"moveInDestination\"") && moved.stdout.contains("\"from\":\"album/1.jpg\""), "\(moved.stdout)")
        let listing = try harness.run("ls", "-R", "default:mirror").stdout
        #expect(listing.contains("mirror/photos/2.jpg") && !listing.contains("album"), "\(listing)")
    }

    @Test("A dry run into a folder that does not exist plans against it as empty and creates nothing; a real run creates it")
    func dryRunCreatesNothing() throws {
        let harness = try CLIHarness()
        _ = try harness.write("one", to: "src/a.txt")
        let src = harness.home.appendingPathComponent("src").path
        let fresh = harness.home.appendingPathComponent("fresh").path
        let dry = try harness.run("sync", src, fresh, "--dry-run")
        #expect(dry.status == 0 && dry.stdout == "copy a.txt\n", "\(dry.stdout) \(dry.stderr)")
        #expect(!FileManager.default.fileExists(atPath: fresh), "a dry run created the destination")
        #expect(try harness.run("sync", src, fresh).status == 0)
        #expect(try String(contentsOfFile: fresh + "/a.txt", encoding: .utf8) == "one")
        // A mistyped (empty) remote folder synced down with --delete deletes nothing without a limit.
        let refused = try harness.run("sync", "default:mistyped", fresh, "--delete")
        #expect(refused.status == 1 && refused.stderr.contains("lists no file"), "\(refused.stderr)")
        #expect(FileManager.default.fileExists(atPath: fresh + "/a.txt"))
        #expect(try harness.run("sync", "default:mistyped", fresh, "--delete", "--max-delete", "100%").status == 0)
        #expect(!FileManager.default.fileExists(atPath: fresh + "/a.txt"))
    }

    /// Regression (review): a folder replaced by a symbolic link (moved to another disk) was
    /// listed as one unaddressable key, so every file under it looked deleted and two-way
    /// deleted them on the other side.
    @Test("A folder replaced by a symbolic link hides its files; nothing under it is deleted on the other side")
    func linkedFolderDeletesNothing() throws {
        let harness = try CLIHarness()
        _ = try harness.write("a", to: "notes/photos/a.jpg")
        _ = try harness.write("b", to: "notes/photos/b.jpg")
        _ = try harness.write("c", to: "notes/c.txt")
        let notes = harness.home.appendingPathComponent("notes").path
        #expect(try harness.run("sync", notes, "default:notes", "--mode", "two-way").status == 0)
        try FileManager.default.moveItem(atPath: notes + "/photos", toPath: harness.home.appendingPathComponent("elsewhere").path)
        try FileManager.default.createSymbolicLink(atPath: notes + "/photos", withDestinationPath: harness.home.appendingPathComponent("elsewhere").path)
        let result = try harness.run("sync", notes, "default:notes", "--mode", "two-way", "--max-delete", "100%")
        #expect(result.status == 7, "the link is reported: \(result.stderr)")
        let listing = try harness.run("ls", "-R", "default:notes").stdout
        #expect(listing.contains("notes/photos/a.jpg") && listing.contains("notes/photos/b.jpg"), "\(listing)")
    }

    @Test("two-way carries an edit each way and keeps both versions of a conflict")
    func twoWay() throws {
        let harness = try CLIHarness()
        let a = try harness.write("v1", to: "notes/a.txt")
        let notes = harness.home.appendingPathComponent("notes").path
        #expect(try harness.run("sync", notes, "default:notes", "--mode", "two-way").status == 0)
        // An edit on the remote side (through buckia), one on the local side, then both.
        _ = try harness.write("remote edit", to: "incoming.txt")
        #expect(try harness.run("cp", harness.home.appendingPathComponent("incoming.txt").path, "default:notes/a.txt").status == 0)
        #expect(try harness.run("sync", notes, "default:notes", "--mode", "two-way").status == 0)
        #expect(try String(contentsOf: a, encoding: .utf8) == "remote edit")
        try Data("local edit, longer".utf8).write(to: a)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(30)], ofItemAtPath: a.path)
        _ = try harness.write("another remote edit", to: "incoming.txt")
        #expect(try harness.run("cp", harness.home.appendingPathComponent("incoming.txt").path, "default:notes/a.txt").status == 0)
        let conflict = try harness.run("sync", notes, "default:notes", "--mode", "two-way", "--json")
        #expect(conflict.status == 0, "\(conflict.stderr)")
        let events = conflict.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(events.count == conflict.stdout.split(separator: "\n").count, "every line is a JSON object")
        #expect(events.contains { $0["event"] as? String == "conflict" && $0["resolution"] as? String == "keep-both" })
        // Nothing of Buckia's is left in the folder: its temporaries went with the run.
        let names = try FileManager.default.contentsOfDirectory(atPath: notes).sorted()
        #expect(names.count == 2 && names.contains("a.txt") && names.contains { $0.hasPrefix("a.conflict-local-") })
        let listing = try harness.run("ls", "-R", "default:notes").stdout
        #expect(listing.contains("notes/a.txt") && listing.contains("notes/a.conflict-local-"))
    }

    /// Regression (issue 23): `sync REMOTE: ./dir --mode pull` copied from `./dir` into the
    /// remote, a copy into a local folder was counted "up", and `.buckia/` stayed behind.
    @Test("sync SRC DST copies SRC → DST whichever side is local, counts in that direction, and leaves nothing of Buckia's in the folder")
    func direction() throws {
        let harness = try CLIHarness()
        _ = try harness.write("one", to: "seed/a.txt")
        _ = try harness.write("two", to: "seed/d/b.txt")
        #expect(try harness.run("sync", harness.home.appendingPathComponent("seed").path, "default:albums").status == 0)
        // Down: the remote is SOURCE, a folder that does not exist yet the DESTINATION.
        let down = harness.home.appendingPathComponent("down").path
        let pulled = try harness.run("sync", "default:albums", down)
        #expect(pulled.status == 0, "\(pulled.stderr)")
        #expect(pulled.stderr.contains("Synced: 2 copied (6 B), 0 deleted, 0 unchanged"), "\(pulled.stderr)")
        #expect(try String(contentsOfFile: down + "/a.txt", encoding: .utf8) == "one")
        #expect(try String(contentsOfFile: down + "/d/b.txt", encoding: .utf8) == "two")
        #expect(try FileManager.default.contentsOfDirectory(atPath: down).sorted() == ["a.txt", "d"], "nothing of Buckia's stays")
        // A file only in the destination is never sent back to the source.
        _ = try harness.write("local only", to: "down/extra.txt")
        let again = try harness.run("sync", "default:albums", down, "--json")
        #expect(again.status == 0)
        let result = try #require(again.stdout.split(separator: "\n").last.flatMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        })
        #expect(result["copiedToDestination"] as? Int == 0 && result["copiedToSource"] as? Int == 0, "\(result)")
        #expect(!(try harness.run("ls", "-R", "default:albums").stdout.contains("extra.txt")), "the destination's file reached the source")
        // The dry run, the summary and the JSON say the same direction.
        try Data("one, edited".utf8).write(to: URL(fileURLWithPath: down + "/a.txt"))
        let plan = try harness.run("sync", down, "default:albums", "--dry-run")
        #expect(plan.stdout == "copy a.txt\ncopy extra.txt\n", "\(plan.stdout)")
        #expect(plan.stderr.contains("Would sync: 2 copied"), "\(plan.stderr)")
        // `--mode pull` is refused with the command to run instead, and changes nothing.
        let refused = try harness.run("sync", "default:albums", down, "--mode", "pull")
        #expect(refused.status == 2 && refused.stderr.contains("always copies SOURCE → DESTINATION"), "\(refused.stderr)")
        #expect(try String(contentsOfFile: down + "/a.txt", encoding: .utf8) == "one, edited")
    }

    @Test("two-way names each direction's count and the conflict policy in the type's words, in the dry run and the JSON alike")
    func twoWayVocabulary() throws {
        let harness = try CLIHarness()
        let local = try harness.write("v1", to: "notes/a.txt")
        let notes = harness.home.appendingPathComponent("notes").path
        #expect(try harness.run("sync", notes, "default:notes", "--mode", "two-way").status == 0)
        try Data("local edit".utf8).write(to: local)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(30)], ofItemAtPath: local.path)
        _ = try harness.write("remote edit", to: "incoming.txt")
        #expect(try harness.run("cp", harness.home.appendingPathComponent("incoming.txt").path, "default:notes/a.txt").status == 0)
        _ = try harness.write("new remote", to: "incoming2.txt")
        #expect(try harness.run("cp", harness.home.appendingPathComponent("incoming2.txt").path, "default:notes/b.txt").status == 0)
        let plan = try harness.run("sync", notes, "default:notes", "--mode", "two-way", "--conflict", "source-wins", "--dry-run")
        #expect(plan.stdout == "conflict a.txt source-wins\ncopy-to-source b.txt\n", "\(plan.stdout)")
        #expect(plan.stderr.contains("1 copied to DST") && plan.stderr.contains("1 copied to SRC"), "\(plan.stderr)")
        let run = try harness.run("sync", notes, "default:notes", "--mode", "two-way", "--conflict", "source-wins", "--json")
        #expect(run.status == 0, "\(run.stderr)")
        let events = run.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(events.contains { $0["event"] as? String == "conflict" && $0["resolution"] as? String == "source-wins" }, "\(run.stdout)")
        #expect(events.contains { $0["action"] as? String == "copyToSource" && $0["path"] as? String == "b.txt" }, "\(run.stdout)")
        #expect(try harness.run("cat", "default:notes/a.txt").stdout == "local edit")
        #expect(try String(contentsOf: local, encoding: .utf8) == "local edit")
    }

    @Test("check exits 0 when the sides agree and 8 when they differ, naming each difference")
    func check() throws {
        let harness = try CLIHarness()
        _ = try harness.write("same", to: "src/same.txt")
        _ = try harness.write("old", to: "src/changed.txt")
        let src = harness.home.appendingPathComponent("src").path
        #expect(try harness.run("sync", src, "default:c").status == 0)
        #expect(try harness.run("check", src, "default:c").status == 0)
        _ = try harness.write("new!", to: "src/changed.txt")
        _ = try harness.write("fresh", to: "src/new.txt")
        _ = try harness.write("stray", to: "stray.txt")
        #expect(try harness.run("cp", harness.home.appendingPathComponent("stray.txt").path, "default:c/stray.txt").status == 0)
        let result = try harness.run("check", src, "default:c")
        #expect(result.status == 8)
        #expect(result.stdout == "differs changed.txt\nmissing-destination new.txt\nmissing-source stray.txt\n", "\(result.stdout)")
    }

    struct BadCall: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var status: Int32
        var testDescription: String { arguments.joined(separator: " ") }
        init(_ arguments: [String], _ status: Int32) {
            self.arguments = arguments
            self.status = status
        }
    }

    static let badCalls: [BadCall] = [
        BadCall(["sync", "src", "default:x", "--mode", "sideways"], 2),
        BadCall(["sync", "src", "default:x", "--mode", "pull"], 2),
        BadCall(["sync", "src", "default:x", "--conflict", "local-wins"], 2),
        BadCall(["sync", "src", "default:x", "--max-delete", "ten"], 2),
        BadCall(["sync", "src", "default:x", "--max-delete", "150%"], 2),
        BadCall(["sync", "src", "default:x", "--checksum", "--size-only"], 2),
        BadCall(["sync", "src", "default:x", "--conflict", "coin-toss"], 2),
        BadCall(["sync", "src", "default:x", "--concurrency", "0"], 2),
        BadCall(["sync", "src", "default:x", "--include", "[unclosed"], 2),
        BadCall(["sync", "src", "default:/abs"], 2),
        BadCall(["sync", "absent-folder", "default:x"], 3),
        BadCall(["sync", "src/file.txt", "default:x"], 2),
    ]

    @Test("Bad arguments exit 2 and a missing source folder exits 3, changing nothing", arguments: badCalls)
    func badArguments(_ call: BadCall) throws {
        let harness = try CLIHarness()
        _ = try harness.write("x", to: "src/file.txt")
        let result = try harness.runArray(call.arguments)
        #expect(result.status == call.status, "\(result.stderr)")
        #expect(!result.stderr.isEmpty)
        #expect(try harness.run("ls", "-R", "default:").stdout.isEmpty, "a refused sync wrote something")
    }
}

@Suite("Live progress")
struct ProgressDisplayTests {
    /// Runs `arguments` with standard error on a pseudo-terminal (util-linux `script`).
    func onTerminal(_ harness: borrowing CLIHarness, _ arguments: [String]) throws -> CLIHarness.Result {
        let command = ([CLIHarness.executable.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return try harness.runProgram("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"])
    }

    @Test("cp and sync draw a progress line on a terminal and nothing off one")
    func terminalOnly() throws {
        let harness = try CLIHarness()
        let big = harness.home.appendingPathComponent("big.bin")
        try Data(repeating: 7, count: 24 << 20).write(to: big)
        let shown = try onTerminal(harness, ["cp", big.path, "default:big.bin"])
        #expect(shown.status == 0, "\(shown.stdout)")
        #expect(shown.stdout.contains("\r\u{1B}[KCopied ") && shown.stdout.contains("MiB") && shown.stdout.contains(" files "), "\(shown.stdout.debugDescription)")
        _ = try harness.write("x", to: "tree/a.txt")
        let synced = try onTerminal(harness, ["sync", harness.home.appendingPathComponent("tree").path, "default:tree"])
        #expect(synced.stdout.contains("\r\u{1B}[KSynced ") && synced.stdout.contains("files"), "\(synced.stdout.debugDescription)")
        let quiet = try harness.run("cp", big.path, "default:big2.bin")
        #expect(quiet.status == 0 && !quiet.stderr.contains("\u{1B}[") && !quiet.stdout.contains("\u{1B}["))
    }
}
