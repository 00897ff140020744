import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The harness that runs `buckia` and other programs for the tests.
@Suite("Test harness")
struct HarnessOutputTests {
    // Regression: the harness read a run's output from pipes until end of file, and saw its
    // end through Foundation's `Process`. A server another test started at the same moment
    // inherited the write end of one and the socket `Process` watches for a child's end, so
    // neither end came: a whole test run hung 20 minutes with `buckia` exited and unreaped.
    // Here a child left running holds what the shell was given, as that server did. The old
    // harness waited out the sleeper's ten minutes; the bound of 30 s makes that a failure
    // ("ran past"). (Not a test time limit: under a full run the cooperative pool can be
    // busy for a minute before a test's body starts, and a limit counts that too.)
    @Test("A run returns when its program ends, though something it left running holds its output")
    func outputHeldByAnotherProcess() throws {
        let harness = try CLIHarness()
        let result = try ToolRun.run(
            path: URL(fileURLWithPath: "/bin/sh"), ["-c", "sleep 600 & echo $!"], exactEnvironment: harness.environment, directory: harness.home,
            limit: .seconds(30))
        let pid = Int32(result.output.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(result.status == 0)
        #expect(pid != nil, "the shell printed the sleeper's process id: \(result.output.debugDescription)")
        if let pid { kill(pid, SIGKILL) }
    }
}
