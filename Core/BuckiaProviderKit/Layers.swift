import BuckiaCore
import Foundation

// The layers Buckia ships: each wraps any provider (built-in or your own) and changes one thing
// about every call, through the two hooks of `ForwardingStorageProvider`. They stack; the
// outermost sees a call first:
//
//     let remote = LoggingLayer(RetryLayer(ReadOnlyLayer(provider)), log: { print($0) })

/// Refuses every call that changes what is stored (a ``BuckiaCore/ProviderCall/Kind/write``:
/// uploads, deletes, copies, moves, parts, folders, upload URLs, tokens that may write) with
/// `permissionDenied`, before it reaches the provider. Reads, listings, connections and
/// maintenance (`synchronize`, `removeWorkingFiles`) go through.
public struct ReadOnlyLayer: ForwardingStorageProvider {
    public let base: any StorageProvider

    /// `base`, read-only.
    public init(_ base: any StorageProvider) { self.base = base }

    public func admit(_ call: ProviderCall) throws {
        guard call.kind == .write else { return }
        throw BuckiaError(.permissionDenied, "This remote is read-only; \(call) was refused.", operation: call.name, path: call.keys.first?.rawValue)
    }
}

/// Tries a call again when it fails with a retryable error (`transient`, or `rateLimited`, an
/// error of any type as ``BuckiaCore/BuckiaError/wrapping(_:operation:path:)`` maps it), up to
/// ``maxAttempts`` attempts. Before attempt n + 1 it waits a random time up to
/// `baseDelay × 2^(n−1)`, at most `maxDelay` (full jitter, so that clients failing together do
/// not retry together), and at least the error's ``BuckiaCore/BuckiaError/retryAfter`` when the
/// backend asked for one. Any other error, and a cancellation, ends it at once.
///
/// For providers with no retries of their own (the built-ins retry each HTTP request already).
/// A call whose bytes are read once (``BuckiaCore/ProviderCall/isReplayable`` is false: an
/// upload from a stream, a `receiveFile`) is never tried again. Every other call is, writes
/// included: a write whose answer was lost and that is tried again can fail where the first
/// succeeded (a move finds no source, a conditional upload's condition no longer holds), so
/// an app that retries such writes checks the object after a failure.
///
/// A listing or a read stream is retried as the call that opens it; the pages and bytes read
/// after it returns are not.
public struct RetryLayer: ForwardingStorageProvider {
    public let base: any StorageProvider
    /// The most attempts a call gets, the first included; 1 means never retry.
    public let maxAttempts: Int
    private let baseDelay: Duration
    private let maxDelay: Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    private let random: @Sendable () -> Double

    /// `base`, retried. `sleep` and `random` are for tests, which must not wait.
    public init(
        _ base: any StorageProvider, maxAttempts: Int = 4, baseDelay: Duration = .milliseconds(250), maxDelay: Duration = .seconds(10),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.base = base
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.sleep = sleep
        self.random = random
    }

    public func intercept<T>(_ call: ProviderCall, _ forward: () async throws -> T) async throws -> T {
        guard call.isReplayable else { return try await forward() }
        var attempt = 1
        while true {
            do {
                return try await forward()
            } catch {
                let failure = BuckiaError.wrapping(error, operation: call.name)
                guard failure.isRetryable, attempt < maxAttempts else { throw error }
                try await wait(before: attempt + 1, after: failure, call: call)
                attempt += 1
            }
        }
    }

    /// The wait before attempt `next`, after `failure`; a cancelled task ends the retries with
    /// `cancelled`, the last failure as its cause.
    private func wait(before next: Int, after failure: BuckiaError, call: ProviderCall) async throws {
        let ceiling = min(maxDelay, baseDelay * (1 << min(next - 2, 30)))
        let jittered = ceiling * min(1, max(0, random()))
        do {
            try Task.checkCancellation()
            try await sleep(max(jittered, failure.retryAfter ?? .zero))
            try Task.checkCancellation()
        } catch {
            throw BuckiaError(
                .cancelled, "\(call) was cancelled while waiting to try again.", operation: call.name, path: call.keys.first?.rawValue, cause: failure)
        }
    }
}

/// Writes a line for every async call when it ends: what it was, and how it ended (`ok` or the
/// error's code and message) after how long. A line names keys and never a credential: error
/// messages are scrubbed of secrets where they are made. A listing or a read stream is one
/// line, for the call that opens it.
public struct LoggingLayer: ForwardingStorageProvider {
    public let base: any StorageProvider
    private let log: @Sendable (String) -> Void
    private let now: @Sendable () -> ContinuousClock.Instant

    /// `base`, with each call written to `log`; `now` times it (tests give a clock of their own).
    public init(
        _ base: any StorageProvider, log: @escaping @Sendable (String) -> Void, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.base = base
        self.log = log
        self.now = now
    }

    public func intercept<T>(_ call: ProviderCall, _ forward: () async throws -> T) async throws -> T {
        try await timed(forward, now: now) { error, took in
            guard let error else { return log("\(call): ok in \(Self.milliseconds(took)) ms") }
            let failure = BuckiaError.wrapping(error, operation: call.name)
            log("\(call): \(failure.code) in \(Self.milliseconds(took)) ms: \(failure.message)")
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}

/// Counts the async calls through a ``MetricsLayer``: how many of each, how many failed, and
/// the time they took, by requirement name. One may be shared by several layers (every remote
/// of an app) to count them together.
public final class ProviderMetrics: Sendable {
    /// The counts of one requirement.
    public struct Counts: Sendable, Hashable {
        /// Calls that ended, failed ones included.
        public var calls = 0
        /// Calls that threw.
        public var failures = 0
        /// Their time, added up.
        public var time = Duration.zero

        /// Counts, none by default.
        public init(calls: Int = 0, failures: Int = 0, time: Duration = .zero) {
            self.calls = calls
            self.failures = failures
            self.time = time
        }
    }

    private let counts = Locked<[String: Counts]>([:])

    /// No calls yet.
    public init() {}

    /// The counts so far, by requirement name (`uploadFile`, `stat`, …).
    public var snapshot: [String: Counts] { counts.withLock { $0 } }

    func record(_ name: String, failed: Bool, time: Duration) {
        counts.withLock { all in
            all[name, default: Counts()].calls += 1
            all[name, default: Counts()].failures += failed ? 1 : 0
            all[name, default: Counts()].time += time
        }
    }
}

/// Counts every async call into a ``ProviderMetrics``; a listing or a read stream counts as the
/// call that opens it.
public struct MetricsLayer: ForwardingStorageProvider {
    public let base: any StorageProvider
    /// Where the counts go.
    public let metrics: ProviderMetrics
    private let now: @Sendable () -> ContinuousClock.Instant

    /// `base`, counted into `metrics`; `now` times the calls.
    public init(_ base: any StorageProvider, metrics: ProviderMetrics, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.base = base
        self.metrics = metrics
        self.now = now
    }

    public func intercept<T>(_ call: ProviderCall, _ forward: () async throws -> T) async throws -> T {
        try await timed(forward, now: now) { error, took in metrics.record(call.name, failed: error != nil, time: took) }
    }
}

/// Runs `forward`, then tells `ended` how it ended (its error, or nil) and how long it took by
/// `now`; returns or rethrows what `forward` did.
private func timed<T>(
    _ forward: () async throws -> T, now: @Sendable () -> ContinuousClock.Instant, ended: (_ error: (any Error)?, _ took: Duration) -> Void
) async throws -> T {
    let start = now()
    do {
        let result = try await forward()
        ended(nil, now() - start)
        return result
    } catch {
        ended(error, now() - start)
        throw error
    }
}

/// Which calls a ``FaultLayer`` fails, and with what: for tests of how an app or a sync copes
/// with a backend that refuses, times out or loses an answer. Each rule fails the next `times`
/// calls it matches; ``injected`` counts the faults thrown.
public final class FaultPlan: Sendable {
    /// When a fault strikes.
    public enum Moment: Sendable, Hashable {
        /// Before the call reaches the provider: nothing is done.
        case before
        /// After the provider has done it: the work is done and its answer is lost, as when a
        /// connection drops before the response.
        case after
    }

    /// Fail the next `times` calls that match every criterion given.
    public struct Rule: Sendable {
        /// The requirement's name (`stat`, `uploadData`, …); nil for any.
        public var name: String?
        /// The kind of call; nil for any.
        public var kind: ProviderCall.Kind?
        /// A key the call touches; nil for any.
        public var key: ObjectKey?
        /// How many matching calls fail; one fewer each time.
        public var times: Int
        /// Before the provider acts, or after it has answered.
        public var moment: Moment
        /// What the failing calls throw.
        public var error: BuckiaError

        /// A rule; a criterion left nil matches every call.
        public init(
            name: String? = nil, kind: ProviderCall.Kind? = nil, key: ObjectKey? = nil, times: Int = 1, moment: Moment = .before,
            error: BuckiaError = BuckiaError(.transient, "Injected fault.")
        ) {
            self.name = name
            self.kind = kind
            self.key = key
            self.times = times
            self.moment = moment
            self.error = error
        }

        func matches(_ call: ProviderCall) -> Bool {
            (name == nil || name == call.name) && (kind == nil || kind == call.kind) && (key.map { call.keys.contains($0) } ?? true)
        }
    }

    private let state: Locked<(rules: [Rule], injected: Int)>

    /// A plan of `rules`. At each moment of a call, the first rule for that moment that matches
    /// it and has faults left decides.
    public init(_ rules: [Rule]) { state = Locked((rules, 0)) }

    /// How many faults have been thrown.
    public var injected: Int { state.withLock { $0.injected } }

    /// The fault for `call` at `moment`, if a rule with faults left matches it; counts it.
    func fault(for call: ProviderCall, at moment: Moment) -> BuckiaError? {
        state.withLock { state in
            guard let index = state.rules.firstIndex(where: { $0.times > 0 && $0.moment == moment && $0.matches(call) }) else { return nil }
            state.rules[index].times -= 1
            state.injected += 1
            return state.rules[index].error
        }
    }
}

/// Fails the calls a ``FaultPlan`` names, before they reach the provider or after it has
/// answered (async calls only: a synchronous one, such as `presignedURL`, fails before or not
/// at all); every other call goes through unchanged.
public struct FaultLayer: ForwardingStorageProvider {
    public let base: any StorageProvider
    /// The faults to throw.
    public let plan: FaultPlan

    /// `base`, failing as `plan` says.
    public init(_ base: any StorageProvider, plan: FaultPlan) {
        self.base = base
        self.plan = plan
    }

    public func admit(_ call: ProviderCall) throws {
        if let fault = plan.fault(for: call, at: .before) { throw fault }
    }

    public func intercept<T>(_ call: ProviderCall, _ forward: () async throws -> T) async throws -> T {
        let result = try await forward()
        if let fault = plan.fault(for: call, at: .after) { throw fault }
        return result
    }
}
