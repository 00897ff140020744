import Foundation

/// A value guarded by a lock, for state shared between tasks in `Sendable` classes.
///
/// `@unchecked Sendable` because `NSLock` orders every access to `value` (each goes through
/// `withLock`, which holds the lock for the whole closure); `Value: Sendable`, so nothing read
/// out of the box can be raced on once the lock is let go.
package final class Locked<Value: Sendable>: @unchecked Sendable {
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

/// A value that is not `Sendable` (an open file, a running digest), owned by a lock: the shape
/// of the standard library's `Mutex`, which Buckia cannot use before macOS 15, iOS 18 and
/// tvOS 18.
///
/// `@unchecked Sendable` because the lock orders every access, and the compiler checks the
/// rest: the value comes in `sending` (no one else keeps a reference to it), and what a
/// closure returns goes out `sending`, so a reference to the value never leaves the lock.
package final class Exclusive<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Takes ownership of `value`.
    package init(_ value: sending Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout sending Value) throws -> sending Result) rethrows -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
