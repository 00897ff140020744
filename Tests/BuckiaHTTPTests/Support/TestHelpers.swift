import BuckiaCore
import BuckiaHTTP
import Foundation

/// Records what the retry machinery asked for, instead of sleeping.
final class SleepRecorder: Sendable {
    private let delays = Locked<[Duration]>([])

    /// The delays asked for so far.
    var recorded: [Duration] { delays.withLock { $0 } }

    /// A policy that records its sleeps and uses the top of the jitter range, so computed
    /// delays are exactly `min(maxDelay, baseDelay × 2^(retry − 1))`.
    func policy(maxAttempts: Int = 4, maxRetryAfter: Duration = .seconds(60), now: Date = Date()) -> RetryPolicy {
        RetryPolicy(
            maxAttempts: maxAttempts, baseDelay: .milliseconds(100), maxDelay: .seconds(2), maxRetryAfter: maxRetryAfter,
            sleep: { [delays] delay in delays.withLock { $0.append(delay) } },
            random: { 1.0 },
            now: { now })
    }
}

/// Collects log lines.
final class LogRecorder: Sendable {
    private let lines = Locked<[String]>([])

    /// The lines logged so far.
    var recorded: [String] { lines.withLock { $0 } }

    /// A log hook for ``HTTPClient/Configuration/log``.
    var hook: @Sendable (String) -> Void { { [lines] line in lines.withLock { $0.append(line) } } }
}

/// A fresh id, so requests of parallel tests never share a server counter.
func uniqueID() -> String { UUID().uuidString.lowercased() }

/// Decodes a JSON object whose values the test reads as strings or numbers.
func json(_ response: HTTPResponse) throws -> [String: Any] {
    (try JSONSerialization.jsonObject(with: response.data) as? [String: Any]) ?? [:]
}

/// The bytes `/download?size=N` serves.
func patternBytes(count: Int) -> Data {
    let pattern = (0..<251).map { UInt8(($0 * 7 + 3) % 251) }
    var data = Data(capacity: count)
    while data.count < count {
        data.append(contentsOf: pattern.prefix(count - data.count))
    }
    return data
}
