import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When and how long ``HTTPClient`` waits before repeating a request that failed transiently.
///
/// Only transient failures are retried: the `URLError` codes in
/// ``HTTPTransportFailure/transientCodes`` and the statuses in ``retryableStatuses``. Waits grow
/// exponentially with full jitter (a random point between zero and
/// `min(maxDelay, baseDelay × 2^(retry − 1))`, which spreads out clients that failed
/// together). A `Retry-After` from the server replaces the computed wait; one longer than
/// ``maxRetryAfter`` stops the retries, and the error carries the wait in
/// ``BuckiaCore/BuckiaError/retryAfter`` for the caller to schedule.
///
/// Sleep, randomness and the clock are injected so tests run instantly and deterministically:
///
/// ```swift
/// let delays = Locked<[Duration]>([])
/// var policy = RetryPolicy(maxAttempts: 3)
/// policy.sleep = { delay in delays.withLock { $0.append(delay) } }
/// policy.random = { 1.0 }
/// ```
///
/// Every method is retried, POST included: storage APIs' POSTs (S3's multipart completion,
/// B2's uploads) are safe to repeat. Give a request ``none`` when repeating it is not.
public struct RetryPolicy: Sendable {
    /// The most attempts a request gets, the first included; 1 means never retry.
    public var maxAttempts: Int
    /// The upper bound of the first wait.
    public var baseDelay: Duration
    /// The largest computed wait.
    public var maxDelay: Duration
    /// The longest `Retry-After` the client waits out itself; a longer one ends the retries.
    public var maxRetryAfter: Duration
    /// The HTTP statuses that are retried.
    ///
    /// Default: 408, 429, 500, 502, 503 and 504 — the statuses that mean "try again". Other
    /// 5xx are not retried: 501 and 505 are permanent, 507 (storage full) and 511 need a
    /// person, and the remaining ones are rare proxy codes; they still map to `transient`, and
    /// a provider can add them here.
    public var retryableStatuses: Set<Int>
    /// Waits for the given duration; throws when the task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// Returns a random number in `0...1` for the jitter.
    public var random: @Sendable () -> Double
    /// The current time, to turn an HTTP-date `Retry-After` into a wait.
    public var now: @Sendable () -> Date

    /// Creates a policy; the defaults give four attempts over about two seconds at most.
    public init(
        maxAttempts: Int = 4,
        baseDelay: Duration = .milliseconds(250),
        maxDelay: Duration = .seconds(10),
        maxRetryAfter: Duration = .seconds(60),
        retryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504],
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) },
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.retryableStatuses = retryableStatuses
        self.sleep = sleep
        self.random = random
        self.now = now
    }

    /// The default policy.
    public static var standard: RetryPolicy { RetryPolicy() }

    /// A policy that never retries.
    public static var none: RetryPolicy { RetryPolicy(maxAttempts: 1) }

    /// Whether a response with this status may succeed if sent again.
    public func isRetryable(status: Int) -> Bool { retryableStatuses.contains(status) }

    /// Whether a transport failure with this code may succeed if sent again.
    public func isRetryable(_ code: URLError.Code) -> Bool { HTTPTransportFailure.transientCodes.contains(code) }

    /// The computed wait before retry number `retry` (1 for the first retry), with full jitter.
    public func backoff(retry: Int) -> Duration {
        let exponent = min(max(retry - 1, 0), 30)
        let ceiling = min(maxDelay, baseDelay * (1 << exponent))
        let fraction = min(max(random(), 0), 1)
        return ceiling * fraction
    }

    /// The wait before retry number `retry`, or nil when the request must not be retried.
    ///
    /// - Parameters:
    ///   - retry: 1 for the first retry.
    ///   - retryAfter: The server's `Retry-After`, already parsed.
    /// - Returns: nil when the attempts are used up or `retryAfter` exceeds ``maxRetryAfter``.
    public func delay(beforeRetry retry: Int, retryAfter: Duration?) -> Duration? {
        guard retry < maxAttempts else { return nil }
        if let retryAfter {
            return retryAfter <= maxRetryAfter ? retryAfter : nil
        }
        return backoff(retry: retry)
    }
}
