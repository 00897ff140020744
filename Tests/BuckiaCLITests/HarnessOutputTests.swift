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

    // Regression: test servers and kill harnesses started children with Foundation's
    // `Process` and waited with `waitUntilExit()`, unbounded, on cooperative threads; one end
    // unseen held a thread for ever, and a CI run sat silent for 80 minutes. Every child is
    // now a `Spawned`: it holds nothing of the test process (a pipe open here, not
    // close-on-exec, as Foundation's `Pipe` makes them, stays here), it starts with no signal
    // blocked (an async test's thread has SIGTERM blocked, and `Process` passed that on), and
    // its end is seen within a bound.
    @Test("A spawned program holds only its three descriptors, has no signal blocked, and its end is seen")
    func spawnedChildIsClean() async throws {
        var leaked: [Int32] = [-1, -1]
        try #require(pipe(&leaked) == 0)
        defer { leaked.forEach { _ = close($0) } }
        // A shell that says it is running its script (past its start, while the dynamic loader
        // held each library it opened as descriptor 3 for a moment) and then waits for input.
        let child = try Spawned(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo ready; read line"], input: .pipe, output: .pipe)
        #expect(child.readLine(timeout: .seconds(120)) == "ready")
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(child.pid)/fd").sorted()
        #expect(descriptors == ["0", "1", "2"])
        let status = try String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8)
        let blocked = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }
        #expect(blocked?.split(separator: "\t").last.map { $0.allSatisfy { $0 == "0" } } == true, "\(blocked ?? "no SigBlk line")")
        #expect(child.isRunning)
        child.signal(SIGTERM)
        #expect(await child.ended(within: .seconds(30)))
        #expect(child.termination == .signalled(SIGTERM))
    }
}
