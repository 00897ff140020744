import Foundation
import Testing

/// A folder `buckia` may not read is named and fails the command (exit 4); it is never skipped
/// with a success, and a tree copy never claims files it did not copy.
///
/// Each case runs in a home holding a local remote `r:` (root `r/`) and a local folder `src/`,
/// each with `ok`, `open/y` and `locked/x`, where `locked` has mode 000. The command runs as
/// an unprivileged user (``Unprivileged``), since root reads through mode 000.
@Suite("Unreadable folders: named, never skipped")
struct UnreadableFolderTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let testDescription: String
        /// The command, after `$U $B`.
        let command: String
        /// What standard error must name: the unreadable folder.
        let names: String
        /// Where a tree copy puts files, so a "Copied N files" can be counted against it.
        let destination: String?
        /// Shell lines that exit 0 when the file system is as it should be afterwards.
        let check: String?

        init(_ description: String, _ command: String, names: String, destination: String? = nil, check: String? = nil) {
            self.testDescription = description
            self.command = command
            self.names = names
            self.destination = destination
            self.check = check
        }
    }

    static let cases = [
        Case("ls -R of a local remote", "ls -R r:", names: "d/locked"),
        Case("rm -r of a local remote", "rm -r r:d", names: "d/locked", check: "test -f r/d/locked/x"),
        Case("cp -r from a local remote to a local folder", "cp -r r:d out", names: "d/locked", destination: "out"),
        Case("cp -r from a local remote to a remote", "cp -r r:d default:e", names: "d/locked", destination: "data/buckia/default/e"),
        Case("cp -r from a local folder to a remote", "cp -r src default:s", names: "src/locked", destination: "data/buckia/default/s"),
    ]

    @Test("Exits 4 naming the unreadable folder, and reports only what it copied", arguments: cases)
    func unreadableFolder(_ entry: Case) throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-unreadable-\(UUID().uuidString)")
        defer {
            _ = try? BadInputCorpusTests().shell("chmod -R u+rwx . 2>/dev/null", in: home)
            try? FileManager.default.removeItem(at: home)
        }
        for tree in ["r/d", "src"] {
            for (path, text) in [("ok", "1\n"), ("open/y", "2\n"), ("locked/x", "3\n")] {
                let url = home.appendingPathComponent("\(tree)/\(path)")
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(text.utf8).write(to: url)
            }
        }
        let user = try Unprivileged.prefix()
        try Unprivileged.handOver(home)
        let environment = ["U": user, "BUCKIA_REMOTE_R_PROVIDER": "local", "BUCKIA_REMOTE_R_ROOT": home.appendingPathComponent("r").path]
        let shell = BadInputCorpusTests()
        // The setting must hold: the user the command runs as cannot list the locked folders.
        let locked = try shell.shell("chmod 000 r/d/locked src/locked && ! $U ls r/d/locked 2>/dev/null && ! $U ls src/locked 2>/dev/null", in: home, extraEnvironment: environment)
        try #require(locked.status == 0, "the locked folders are readable by the command's user; nothing would be tested")

        let result = try shell.shell("$U $B \(entry.command)", in: home, extraEnvironment: environment)
        #expect(result.status == 4, "exit \(result.status); stderr: \(result.stderr)")
        #expect(result.stderr.contains(entry.names), "stderr does not name \(entry.names): \(result.stderr)")
        if let destination = entry.destination {
            let present = try shell.shell("test ! -e \(destination) || find \(destination) -type f ! -path '*/.buckia/*' | wc -l", in: home)
            let files = Int(present.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            #expect(Self.claimedCopies(result.stderr).map { $0 == files } ?? true, "claims more than the \(files) files copied: \(result.stderr)")
        }
        if let check = entry.check {
            #expect(try shell.shell(check, in: home).status == 0, "the file system is not as expected afterwards: \(check)")
        }
    }

    /// The N of a "Copied N files" summary, if there is one.
    static func claimedCopies(_ stderr: String) -> Int? {
        guard let range = stderr.range(of: "Copied ") else { return nil }
        return Int(stderr[range.upperBound...].prefix { $0.isNumber })
    }
}
