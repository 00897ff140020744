import Buckia
import BuckiaSync
import Foundation
import Testing

/// Second-round hardening items met at the command line that the corpus cannot show: a sync
/// running at the same moment, and files only an unprivileged user is kept from.
@Suite("Hardening: concurrent syncs, permissions")
struct HardeningCommandTests {
    @Test("While a sync of A into B runs, sync B A --mode two-way is refused and changes nothing; afterwards it runs")
    func pairLockedEitherWay() throws {
        let harness = try CLIHarness()
        _ = try harness.write("a", to: "a/only-in-a.txt")
        _ = try harness.write("b", to: "b/only-in-b.txt")
        let a = harness.home.appendingPathComponent("a")
        let b = harness.home.appendingPathComponent("b")
        // The running `sync a b` is stood in for by its locks, held here.
        let running = try SyncLocks.acquire(
            source: try SyncEndpoint.localFolder(a), destination: try SyncEndpoint.localFolder(b), writesSource: false, writesDestination: true,
            environment: ["HOME": harness.home.path])
        let refused = try harness.run("sync", b.path, a.path, "--mode", "two-way")
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("Another sync"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: a.appendingPathComponent("only-in-b.txt").path))
        #expect(!FileManager.default.fileExists(atPath: b.appendingPathComponent("only-in-a.txt").path))
        // Another push into b is refused too; a push from a elsewhere is not (a is only read).
        #expect(try harness.run("sync", harness.home.appendingPathComponent("a").path, "default:copy").status == 0)
        _ = try harness.write("c", to: "c/c.txt")
        let intoB = try harness.run("sync", harness.home.appendingPathComponent("c").path, b.path)
        #expect(intoB.status == 1 && intoB.stderr.contains("Another sync"), "\(intoB.stderr)")
        running.release()
        let after = try harness.run("sync", b.path, a.path, "--mode", "two-way")
        #expect(after.status == 0, "\(after.stderr)")
        #expect(FileManager.default.fileExists(atPath: a.appendingPathComponent("only-in-b.txt").path))
        #expect(FileManager.default.fileExists(atPath: b.appendingPathComponent("only-in-a.txt").path))
    }

    /// Runs `script` in a fresh home handed to the unprivileged user (``Unprivileged``).
    func unprivileged(_ script: String, setup: String) throws -> BadInputCorpusTests.ShellResult {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-hardening-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer {
            _ = try? BadInputCorpusTests().shell("chmod -R u+rwx . 2>/dev/null", in: home)
            try? FileManager.default.removeItem(at: home)
        }
        let shell = BadInputCorpusTests()
        let environment = ["U": try Unprivileged.prefix()]
        let prepared = try shell.shell(setup, in: home, extraEnvironment: environment)
        try #require(prepared.status == 0, "setup failed: \(prepared.stderr)")
        try Unprivileged.handOver(home)
        return try shell.shell(script, in: home, extraEnvironment: environment)
    }

    @Test("A configuration file the user may not read exits 4 (denied), saying so in words")
    func unreadableConfiguration() throws {
        let result = try unprivileged(
            "chmod 000 config/buckia/config.json && $U $B ls default:",
            setup: "mkdir -p config/buckia && printf '{}' > config/buckia/config.json")
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("permission denied"), "\(result.stderr)")
        #expect(!result.stderr.contains("permissionDenied"), "an error code's name leaked: \(result.stderr)")
    }

    @Test("A copy into a folder the user may not write names the destination, never Buckia's temporary")
    func deniedNamesDestination() throws {
        let result = try unprivileged("chmod 555 ro && $U $B cp f.txt ro/x.txt", setup: "mkdir ro && printf hello > f.txt")
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("ro/x.txt"), "\(result.stderr)")
        #expect(!result.stderr.contains(".buckia-"), "the message names the temporary: \(result.stderr)")
    }

    @Test("ls of one object the user may not open still describes it, as a listing does (its attributes are what need it open)")
    func unreadableObjectIsDescribed() throws {
        let result = try unprivileged(
            "chmod 000 data/x.txt && $U $B ls d:x.txt",
            setup: #"mkdir -p config/buckia data && printf '{"remotes":{"d":{"provider":"local","options":{"root":"%s/data"}}}}' "$PWD" > config/buckia/config.json && printf hello > data/x.txt"#)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("x.txt") && result.stdout.contains("5"), "\(result.stdout)")
    }
}
