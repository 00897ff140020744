import Foundation
import Testing

/// The exit-status table in Docs/CLI.md, row by row: every documented status has a command
/// that produces it, run against the built `buckia`, and every status the corpus expects is
/// documented.
@Suite("Exit statuses: Docs/CLI.md's table, every row produced")
struct ExitCodeTableTests {
    /// A command per documented status (or per cause, where a status has several), run like a
    /// corpus case: `$B` is the built `buckia`, in a home holding `f.txt`; `$U` runs it as a user
    /// whom permission bits bind (``Unprivileged``).
    static let examples: [Example] = ([
        (0, "$B cp f.txt default:f.txt"),
        (1, "$B providers > /dev/full"),
        (2, "$B frobnicate"),
        (3, "$B cat default:missing.txt"),
        (4, "BUCKIA_REMOTE_X_PROVIDER=s3 BUCKIA_REMOTE_X_BUCKET=bucket BUCKIA_REMOTE_X_ENDPOINT=http://127.0.0.1:9 $B ls x:"),
        // A source file the user may not read.
        (4, "chmod 000 f.txt && ! $U cat f.txt 2>/dev/null && $U $B cp f.txt default:f.txt"),
        (5, "BUCKIA_REMOTE_X_PROVIDER=local BUCKIA_REMOTE_X_ROOT=$HOME/f.txt $B ls x:"),
        // A local root on a file system that refuses every write: scenarios fail, the run completes.
        (6, "BUCKIA_REMOTE_X_PROVIDER=local BUCKIA_REMOTE_X_ROOT=/sys/kernel $B conformance x: > /dev/null"),
        (7, "mkdir t; echo ok > t/ok; echo bad > \"t/$(printf 'x\\377')\"; $B cp -r t default:t"),
        (8, "mkdir c; echo one > c/a; $B check c default:elsewhere"),
        (9, "echo 'not a database' > 2AXfrFwpmbyRkQQRfHNHnkKvbm5.sqlite; $B db inspect 2AXfrFwpmbyRkQQRfHNHnkKvbm5.sqlite"),
        (130, interrupted(by: "INT")),
        (143, interrupted(by: "TERM")),
    ] as [(Int32, String)]).map { Example(status: $0.0, script: $0.1) }

    struct Example: Sendable, CustomTestStringConvertible {
        let status: Int32
        let script: String
        var testDescription: String { "\(status): \(script.prefix { $0 != "\n" })" }
    }

    /// `kv put` blocked reading a FIFO, signalled once a thread of it is inside `read(0, …)`
    /// (seen in /proc, so the signal cannot arrive before the handlers are installed).
    static func interrupted(by signal: String) -> String {
        """
        mkfifo p; $B kv put k < p & pid=$!; exec 3>p
        until grep -qs '^0 0x0 ' /proc/$pid/task/*/syscall; do kill -0 $pid 2>/dev/null || break; done
        kill -\(signal) $pid; wait $pid
        """
    }

    /// The statuses in the table under "Errors and exit codes" (`| 130, 143 | …` gives two).
    static func documentedStatuses() throws -> Set<Int32> {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/CLI.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        guard let section = text.range(of: "## Errors and exit codes") else { return [] }
        var statuses: Set<Int32> = []
        for line in text[section.upperBound...].split(separator: "\n") where line.hasPrefix("| ") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            for number in cell.split(separator: ",") {
                if let status = Int32(number.trimmingCharacters(in: .whitespaces)) { statuses.insert(status) }
            }
        }
        return statuses
    }

    @Test("The table and the examples list the same statuses, and the corpus expects only documented ones")
    func tableIsComplete() throws {
        let documented = try Self.documentedStatuses()
        #expect(documented.count >= 10, "parsed \(documented.sorted()) from Docs/CLI.md")
        #expect(documented == Set(Self.examples.map(\.status)))
        let expected = Set(CorpusCase.all.map(\.exit))
        #expect(expected.isSubset(of: documented), "the corpus expects undocumented statuses \(expected.subtracting(documented).sorted())")
    }

    @Test("Each documented status is what its examples exit with", arguments: examples)
    func row(_ example: Example) throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-exit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        try Data("hello\n".utf8).write(to: home.appendingPathComponent("f.txt"))
        var environment: [String: String] = [:]
        if example.script.contains("$U") {
            environment["U"] = try Unprivileged.prefix()
            try Unprivileged.handOver(home)
        }
        let result = try BadInputCorpusTests().shell(example.script, in: home, extraEnvironment: environment)
        #expect(result.status == example.status, "\(example.script)\nexited \(result.status); stderr: \(result.stderr)")
    }
}
