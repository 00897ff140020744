import BuckiaCore
import BuckiaHTTP
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The project's fault-injecting proxy (`Resources/fault_proxy.py`), started on 127.0.0.1 in
/// front of a test server: each request is hit by one fault with probability `rate` — 503,
/// 429 with Retry-After, a connection dropped before or after the server acted, headers
/// without a body, a truncated or corrupted body, a corrupted request body answered
/// `BadDigest`, a stall, or bytes that are not HTTP. The script's header lists them. A test can
/// also aim one fault at one request (``arm(_:skip:count:)``).
public final class FaultProxy: Sendable {
    /// The kinds a mixed run draws from: every fault a client can recover from by retrying.
    public static let allKinds = [
        "503", "429", "drop-before", "drop-after", "headers-only", "truncate", "corrupt", "corrupt-request", "stall", "garbage",
    ]

    /// Every kind the proxy knows: ``allKinds``, an expired authorization (answered in the
    /// server's dialect), a body under a `Content-Length` one byte short, and a body sent slowly
    /// but whole.
    public static let everyKind = allKinds + ["expired-auth", "wrong-length", "slow"]

    /// Whose error documents the proxy answers with.
    public enum Dialect: String, Sendable {
        case s3, b2, bunny
    }

    /// Where clients connect instead of the upstream server.
    public let endpoint: URL
    private let child: Spawned

    private init(endpoint: URL, child: Spawned) {
        self.endpoint = endpoint
        self.child = child
    }

    deinit { stop() }

    /// Starts a proxy in front of `upstream` (an `http://127.0.0.1:PORT` URL).
    ///
    /// - Parameters:
    ///   - rate: The share of requests that meet a fault, 0 to 1.
    ///   - seed: Seeds the proxy's choices, so a failing run can be replayed.
    ///   - kinds: Which faults to draw from (all by default).
    ///   - stall: How long a stalled response sends nothing before its connection closes.
    ///   - dialect: The shape of the error answers it makes up.
    ///   - slowPause: The pause between the four pieces of a `slow` body.
    public static func start(
        upstream: URL, rate: Double, seed: UInt64, kinds: [String] = allKinds, stall: Duration = .seconds(3), dialect: Dialect = .s3,
        slowPause: Duration = .milliseconds(300)
    ) throws -> FaultProxy {
        guard let script = Bundle.module.url(forResource: "fault_proxy", withExtension: "py", subdirectory: "Resources") else {
            throw BuckiaError(.notFound, "fault_proxy.py is missing from the BuckiaTestSupport bundle.")
        }
        let arguments = [
            script.path, "--upstream", upstream.absoluteString, "--rate", String(rate), "--seed", String(seed),
            "--faults", kinds.joined(separator: ","), "--stall-seconds", String(Double(stall.components.seconds)), "--lifetime", "1800",
            "--dialect", dialect.rawValue, "--slow-pause", String(Double(slowPause.components.seconds) + Double(slowPause.components.attoseconds) / 1e18),
        ]
        let child = try Spawned(try PythonProcess.executable(), arguments, input: .pipe, output: .pipe)
        func abandon(_ message: String) -> BuckiaError {
            child.closeInput()
            child.stop()
            return BuckiaError(.io, message)
        }
        guard let line = child.readLine(timeout: .seconds(30)) else {
            throw abandon("fault_proxy.py printed nothing within 30 s; run `python3 \(script.path) --upstream \(upstream)` to see why.")
        }
        guard let object = try? JSONDecoder().decode([String: String].self, from: Data(line.utf8)),
            let text = object["endpoint"], let endpoint = URL(string: text)
        else {
            throw abandon("fault_proxy.py did not start: \(line)")
        }
        return FaultProxy(endpoint: endpoint, child: child)
    }

    /// What the proxy has done so far: requests seen, faults drawn (one per request with
    /// probability `rate`), and faults injected by kind (those that applied to their request).
    public struct Stats: Decodable, Sendable, CustomStringConvertible {
        public var requests: Int
        public var drawn: Int
        public var faults: [String: Int]
        /// Requests by method.
        public var methods: [String: Int]
        /// PUTs that copy an object server-side (`x-amz-copy-source`).
        public var copies: Int
        /// The body bytes of every other PUT: what was uploaded.
        public var putBodyBytes: Int
        /// The last 200 requests, as `METHOD target`.
        public var recent: [String]
        /// What the current arming (``FaultProxy/arm(_:skip:count:)``) has seen and done.
        public var armed: Armed

        /// Requests seen since the proxy was armed, and faults it applied to them.
        public struct Armed: Decodable, Sendable {
            public var seen: Int
            public var applied: Int
        }

        /// The number of faults of every kind.
        public var totalFaults: Int { faults.values.reduce(0, +) }

        public var description: String {
            let kinds = faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "\(totalFaults) faults (of \(drawn) drawn) in \(requests) requests (\(kinds.isEmpty ? "none" : kinds))"
        }
    }

    /// Asks the proxy for its counts (the question itself is never faulted or counted).
    public func stats() async throws -> Stats {
        let response = try await HTTPClient(configuration: .init(retryPolicy: .none)).send(
            HTTPRequest(.get, endpoint.appendingPathComponent("__proxy__/stats")))
        return try JSONDecoder().decode(Stats.self, from: response.data)
    }

    /// Aims `kind` at requests: the next `skip` requests pass, the `count` after them are hit
    /// (a fault that does not apply to its request passes it intact); random draws stop until
    /// ``disarm()``. The stats' ``Stats/armed`` counts from here.
    public func arm(_ kind: String, skip: Int = 0, count: Int = 1) async throws {
        try await control(JSONSerialization.data(withJSONObject: ["kind": kind, "skip": skip, "count": count] as [String: Any]))
    }

    /// Stops aimed faults; random draws (at the proxy's rate) resume.
    public func disarm() async throws {
        try await control(Data(#"{"kind": null}"#.utf8))
    }

    /// Holds the run at a known point: once the upstream has answered `count` PUTs whose target
    /// contains `match` with success, every request that arrives next is read but never
    /// forwarded, and its connection is closed when ``endHold()`` is called. A harness that kills
    /// its client there knows what the server holds (say, `count` parts of a multipart upload),
    /// however slow the machine.
    public func hold(after count: Int, matching match: String) async throws {
        try await control(JSONSerialization.data(withJSONObject: ["after": count, "match": match] as [String: Any]), at: "hold")
    }

    /// Ends the hold: held requests' connections close (nothing of them was forwarded), and
    /// requests pass again.
    public func endHold() async throws {
        try await control(Data(#"{"after": null}"#.utf8), at: "hold")
    }

    /// How many requests the hold has held: answers as soon as one is, or after `limit` (at most
    /// 30 s) with 0.
    public func held(waiting limit: Duration) async throws -> Int {
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        var components = URLComponents(url: endpoint.appendingPathComponent("__proxy__/held"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "wait", value: String(seconds))]
        guard let url = components?.url else { throw BuckiaError(.invalidConfiguration, "The proxy's endpoint \(endpoint) takes no query.") }
        let response = try await HTTPClient(configuration: .init(retryPolicy: .none)).send(HTTPRequest(.get, url))
        struct Held: Decodable { var held: Int }
        return try JSONDecoder().decode(Held.self, from: response.data).held
    }

    private func control(_ body: Data, at name: String = "arm") async throws {
        _ = try await HTTPClient(configuration: .init(retryPolicy: .none)).send(
            HTTPRequest(.post, endpoint.appendingPathComponent("__proxy__/\(name)"), body: .data(body)))
    }

    /// Stops the proxy: closes its stdin, sends SIGKILL and reaps it. Safe to call twice.
    public func stop() {
        child.closeInput()
        child.stop()
    }
}
