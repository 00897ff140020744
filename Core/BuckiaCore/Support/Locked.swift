import Foundation

/// A value guarded by a lock, for state shared between tasks in `Sendable` classes.
///
/// `@unchecked Sendable` is sound because every access to `value` goes through `withLock`,
/// which holds the `NSLock` for the whole closure.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Creates the box with an initial value.
    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
