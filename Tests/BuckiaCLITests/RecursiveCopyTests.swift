import Foundation
import Testing

@Suite("buckia cp -r")
struct RecursiveCopyTests {
    // Regression: cp -r once reported "Copied 0 files" and exit 0 for a missing or file source,
    // and silently dropped symbolic links.
    @Test("A missing source folder exits 3; a file source with -r exits 2")
    func badSources() throws {
        let harness = try CLIHarness()
        let file = try harness.write("x", to: "single.txt")
        #expect(try harness.run("cp", "-r", harness.home.appendingPathComponent("absent").path, "default:x").status == 3)
        #expect(try harness.run("cp", "-r", file.path, "default:x").status == 2)
        #expect(try harness.run("cp", "-r", "default:nothing-here", harness.home.appendingPathComponent("out").path).status == 3)
    }

    @Test("Links in a copied tree are skipped and reported, never followed")
    func linksAreReported() throws {
        let harness = try CLIHarness()
        let real = try harness.write("real", to: "tree/sub/real.txt")
        try FileManager.default.createSymbolicLink(atPath: harness.home.appendingPathComponent("tree/link.txt").path, withDestinationPath: real.path)
        let result = try harness.run("cp", "-r", harness.home.appendingPathComponent("tree").path, "default:t")
        #expect(result.status == 0)
        #expect(result.stderr.contains("skipped link.txt"))
        #expect(try harness.run("ls", "-R", "default:t").stdout.contains("t/sub/real.txt"))
        #expect(!(try harness.run("ls", "-R", "default:t").stdout.contains("link.txt")))
    }
}
