import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// One case of the bad-input corpus (Tests/Fixtures/BadInputs/bad-inputs.json): shell lines run in a fresh home
/// folder holding `f.txt` ("hello"), `dir/a.txt` and `dir/sub/b.txt`, with `$B` the built
/// `buckia`.
struct CorpusCase: Decodable, Sendable, CustomTestStringConvertible {
    /// What the case shows.
    let name: String
    /// The kind of bad input: crash, loss, escape, path, usage, exit, output, config, stdin.
    let `class`: String
    /// Shell lines that prepare the home folder; they must succeed.
    let setup: String?
    /// The shell line under test; its exit status is the case's.
    let run: String
    /// The exit status expected.
    let exit: Int32
    /// Text standard error must contain.
    let stderr: String?
    /// Text standard output must contain.
    let stdout: String?
    /// Text neither stream may contain (a wrong word for the failure: "environment" for a
    /// file's mistake, "does not exist" for a link loop).
    let absent: [String]?
    /// Shell lines that exit 0 when the file system is as it should be afterwards.
    let check: String?
    /// The issue item the case comes from, if any.
    let item: Int?

    var testDescription: String { "[\(`class`)] \(name)" }

    /// Every case of every file in Tests/Fixtures/BadInputs/ (`bad-inputs.json` from the first hardening round,
    /// `bad-inputs-2.json` from the second, `bad-inputs-3.json` from the third, `hostile-servers.json` against
    /// Tests/Emulators/hostile_server.py). A file that cannot be read or decoded yields no cases,
    /// which ``BadInputCorpusTests/corpusFiles()`` reports as a failure naming it.
    static var all: [CorpusCase] {
        corpusFiles.flatMap { url in
            (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode([CorpusCase].self, from: $0) } ?? []
        }
    }

    /// The corpus files, in name order.
    static var corpusFiles: [URL] {
        // Read where they are kept, with the project's other fixtures (Tests/Fixtures).
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/BadInputs")
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        return names.filter { $0.hasSuffix(".json") }.sorted().map { folder.appendingPathComponent($0) }
    }
}

@Suite("Bad-input corpus against the built buckia")
struct BadInputCorpusTests {
    @Test("Every corpus file decodes, and the four are there")
    func corpusFiles() throws {
        let names = CorpusCase.corpusFiles.map(\.lastPathComponent)
        #expect(Set(["bad-inputs.json", "bad-inputs-2.json", "bad-inputs-3.json", "hostile-servers.json"]).isSubset(of: names), "corpus files: \(names)")
        for url in CorpusCase.corpusFiles {
            let data = try Data(contentsOf: url)
            #expect(throws: Never.self, "\(url.lastPathComponent) decodes") { try JSONDecoder().decode([CorpusCase].self, from: data) }
        }
    }

    @Test("The corpus loads and holds at least 150 cases")
    func corpusSize() throws {
        let cases = CorpusCase.all
        let classes = Dictionary(grouping: cases, by: \.class).mapValues(\.count).sorted { $0.key < $1.key }
        print("corpus: \(cases.count) cases — " + classes.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        #expect(cases.count >= 150, "the corpus holds \(cases.count) cases")
        #expect(Set(cases.map(\.name)).count == cases.count, "case names are unique")
    }

    @Test(arguments: CorpusCase.all)
    func corpusCase(_ entry: CorpusCase) throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-corpus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home.appendingPathComponent("dir/sub"), withIntermediateDirectories: true)
        defer {
            _ = try? shell("chmod -R u+rwx . 2>/dev/null", in: home)
            try? FileManager.default.removeItem(at: home)
        }
        try Data("hello\n".utf8).write(to: home.appendingPathComponent("f.txt"))
        try Data("a\n".utf8).write(to: home.appendingPathComponent("dir/a.txt"))
        try Data("b\n".utf8).write(to: home.appendingPathComponent("dir/sub/b.txt"))
        if let setup = entry.setup {
            let prepared = try shell(setup, in: home)
            try #require(prepared.status == 0, "setup failed: \(prepared.stderr)")
        }
        let result = try shell(entry.run, in: home)
        #expect(!result.timedOut, "the case ran past \(Self.timeLimit) s and was killed")
        #expect(!result.trapped, "buckia trapped: \(result.stderr)")
        for fragment in Self.forbidden {
            #expect(!result.stdout.contains(fragment), "stdout holds \(fragment.debugDescription): \(result.stdout)")
            #expect(!result.stderr.contains(fragment), "stderr holds \(fragment.debugDescription): \(result.stderr)")
        }
        #expect(result.status == entry.exit, "exit \(result.status), expected \(entry.exit); stderr: \(result.stderr)")
        if let fragment = entry.stderr { #expect(result.stderr.contains(fragment), "stderr lacks \(fragment.debugDescription): \(result.stderr)") }
        if let fragment = entry.stdout { #expect(result.stdout.contains(fragment), "stdout lacks \(fragment.debugDescription): \(result.stdout)") }
        for fragment in entry.absent ?? [] {
            #expect(!result.stderr.contains(fragment) && !result.stdout.contains(fragment), "the output holds \(fragment.debugDescription): \(result.stderr)")
        }
        if let check = entry.check {
            let state = try shell(check, in: home)
            #expect(state.status == 0, "the file system is not as expected afterwards: \(check)")
        }
    }

    /// Text no case may print on either stream: a runtime trap's report, or a raw Foundation
    /// or URLSession error standing in for a sentence about the user's input.
    static let forbidden = [
        "Fatal error", "NSCocoaErrorDomain", "URLError", "Foundation file error", "error 256",
        // Parser internals and Swift type names standing in for a sentence.
        "NSXMLParserErrorDomain", "Dictionary<", "Array<", "Optional(",
    ]

    /// Tests/Emulators/hostile_server.py: `eval "$(python3 $H SCENARIO)"` starts it.
    static let hostileServer = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Emulators/hostile_server.py")

    /// Seconds a case may run before it is killed (with everything it started) and fails.
    static let timeLimit = 60

    @Test("A case that hangs is stopped at its time limit, with the buckia it started, and fails")
    func hangingCaseIsStopped() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-corpus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        // kv put waits for bytes on a FIFO the script holds open and never writes.
        let result = try shell("mkfifo p; $B kv put k < p & echo $! > pid; exec 3>p; wait", in: home, limit: 2)
        #expect(result.timedOut)
        let pid = try #require(Int32(String(decoding: try Data(contentsOf: home.appendingPathComponent("pid")), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        // It may take a moment to act on the signal: poll, a bounded number of times.
        var polls = 0
        while Self.isRunning(pid) && polls < 1_000 {
            polls += 1
            usleep(10_000)
        }
        #expect(!Self.isRunning(pid), "the buckia the case started (pid \(pid)) still runs")
    }

    /// Whether `pid` is a live process (a zombie waiting to be reaped is not).
    static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")")
        else { return false }
        return !stat[stat.index(after: end)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    struct ShellResult {
        let status: Int32
        let trapped: Bool
        /// Whether the case ran past ``BadInputCorpusTests/timeLimit`` and was killed.
        let timedOut: Bool
        let stdout: String
        let stderr: String
    }

    /// Runs `script` with `sh -c` in `home`, with a private environment; stdin is /dev/null.
    /// The script runs under `timeout`, in its own process group: past ``timeLimit`` seconds
    /// the group gets SIGTERM, then SIGKILL 5 s later, so a hung `buckia` fails its case
    /// instead of hanging the suite.
    func shell(_ script: String, in home: URL, extraEnvironment: [String: String] = [:], limit: Int = timeLimit) throws -> ShellResult {
        let environment = [
            "HOME": home.path, "XDG_DATA_HOME": home.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "XDG_CACHE_HOME": home.appendingPathComponent("cache").path,
            "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "B": CLIHarness.executable.path, "H": Self.hostileServer.path,
            "TMPDIR": home.appendingPathComponent(".tmp").path,
        ].merging(extraEnvironment) { $1 }
        try FileManager.default.createDirectory(at: home.appendingPathComponent(".tmp"), withIntermediateDirectories: true)
        let out = home.appendingPathComponent(".out-\(UUID().uuidString)")
        let err = home.appendingPathComponent(".err-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }
        let process = try Spawned(
            URL(fileURLWithPath: "/usr/bin/timeout"), ["-k", "5", String(limit), "/bin/sh", "-c", script], environment: environment,
            directory: home, output: .file(out), errors: .file(err))
        // `timeout` ends it within limit + 5 s; a minute more is for a loaded machine.
        guard process.wait(.seconds(limit + 65)) else {
            process.stop()
            throw BuckiaError(.io, "timeout itself did not end \(limit + 65) s after starting: \(script)")
        }
        let status = process.status
        // timeout exits 124 when it stopped the script with SIGTERM, 137 when SIGKILL was needed.
        let timedOut = process.termination == .exited(124) || process.termination == .exited(137)
        // sh reports a child killed by a signal as 128 + the signal: SIGILL, SIGTRAP, SIGABRT, SIGSEGV;
        // timeout passes on a signal that killed sh itself.
        var trapped = [132, 133, 134, 139].contains(status)
        if case .signalled = process.termination { trapped = true }
        return ShellResult(
            status: status, trapped: trapped, timedOut: timedOut, stdout: Self.text(of: out), stderr: Self.text(of: err))
    }

    /// A captured stream as text; bytes that are not UTF-8 become U+FFFD, so the rest is still
    /// searched (an unreadable file reads as empty).
    static func text(of url: URL) -> String {
        String(decoding: (try? Data(contentsOf: url)) ?? Data(), as: UTF8.self)
    }
}
