import Foundation
import Testing

/// What `Tools/fuzz/sanitize --canary` runs to show that a sanitizer run can fail: a data race for
/// ThreadSanitizer, a read past a heap block for AddressSanitizer. It runs only when
/// `BUCKIA_SANITIZER_CANARY` names one (`thread` or `address`), and is skipped otherwise.
@Suite("Sanitizer canary")
struct SanitizerCanaryTests {
    /// A counter two threads update without a lock.
    private final class Racy: @unchecked Sendable {
        var count = 0
    }

    @Test(
        "A deliberate race or overflow, for the sanitizer script to catch",
        .enabled(if: ProcessInfo.processInfo.environment["BUCKIA_SANITIZER_CANARY"] != nil, "only under Tools/fuzz/sanitize --canary"))
    func canary() {
        switch ProcessInfo.processInfo.environment["BUCKIA_SANITIZER_CANARY"] {
        case "thread":
            // Two threads of their own, each released only once both have started, so their
            // updates are never ordered. (concurrentPerform let a loaded machine run both
            // iterations on one thread, one after the other: no race, and the canary slept.)
            let racy = Racy()
            let started = DispatchSemaphore(value: 0)
            let go = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for _ in 0..<2 {
                done.enter()
                Thread.detachNewThread {
                    started.signal()
                    go.wait()
                    for _ in 0..<10_000 { racy.count += 1 }
                    done.leave()
                }
            }
            started.wait()
            started.wait()
            go.signal()
            go.signal()
            done.wait()
            #expect(racy.count > 0)
        case "address":
            let block = UnsafeMutablePointer<UInt8>.allocate(capacity: 8)
            block.initialize(repeating: 1, count: 8)
            let past = block + 8
            #expect(past.pointee != 7, "read past the end of an 8-byte block")
            block.deallocate()
        default:
            Issue.record("BUCKIA_SANITIZER_CANARY must be thread or address")
        }
    }
}
