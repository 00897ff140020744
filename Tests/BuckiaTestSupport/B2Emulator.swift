import BuckiaCore
import BuckiaHTTP
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The B2 native-API emulator (`Tests/Emulators/b2_emulator.py`), started and stopped by the
/// tests themselves on 127.0.0.1.
///
/// Each emulator has its own buckets, keys and files; tests that share one keep apart by
/// prefix. It dies with the test process: it exits when its stdin closes, and ``stop()`` sends
/// SIGKILL.
public final class B2Emulator: Sendable {
    /// `http://127.0.0.1:PORT`: where accounts are authorized (the provider's `endpoint`).
    public let endpoint: URL
    /// The master key's id and key.
    public let keyId: String
    public let key: String
    /// The buckets the emulator was started with, by name.
    public let buckets: [String]

    private let server: EmulatorServer

    private init(endpoint: URL, keyId: String, key: String, buckets: [String], server: EmulatorServer) {
        self.endpoint = endpoint
        self.keyId = keyId
        self.key = key
        self.buckets = buckets
        self.server = server
    }

    /// Starts an emulator and waits (at most 10 s) for it to print its port.
    ///
    /// - Parameters:
    ///   - buckets: Bucket names; `NAME:allPublic` makes a public one.
    ///   - restrictedKeys: `ID:SECRET:BUCKET[:PREFIX]` keys limited to a bucket and name prefix.
    ///   - minimumPartSize: The `absoluteMinimumPartSize` the authorization reports and the
    ///     finish call enforces (B2's is 5,000,000).
    ///   - retryAfter: The `Retry-After` seconds of injected 429 and 503 answers.
    public static func start(
        buckets: [String] = ["buckia-test"], restrictedKeys: [String] = [], minimumPartSize: Int = 5_000_000, retryAfter: Int = 0
    ) async throws -> B2Emulator {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try startBlocking(buckets: buckets, restrictedKeys: restrictedKeys, minimumPartSize: minimumPartSize, retryAfter: retryAfter)
                })
            }
        }
    }

    private static func startBlocking(buckets: [String], restrictedKeys: [String], minimumPartSize: Int, retryAfter: Int) throws -> B2Emulator {
        let keyId = "000emulatedkey0001"
        let key = "K000" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        var arguments = ["--key-id", keyId, "--key", key, "--min-part-size", String(minimumPartSize), "--retry-after", String(retryAfter)]
        for bucket in buckets { arguments += ["--bucket", bucket] }
        for restricted in restrictedKeys { arguments += ["--restricted-key", restricted] }
        let server = try EmulatorServer(script: try scriptURL(), arguments: arguments)
        return B2Emulator(endpoint: server.endpoint, keyId: keyId, key: key, buckets: buckets.map { String($0.split(separator: ":")[0]) }, server: server)
    }

    /// Stops the emulator; safe to call twice.
    public func stop() { server.stop() }

    /// The emulator script, found beside this file in the checkout.
    public static func scriptURL() throws -> URL {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Emulators/b2_emulator.py")
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw BuckiaError(.notFound, "The B2 emulator is missing at \(url.path).")
        }
        return url
    }

    /// A configuration for the b2 provider against this emulator, with the master key.
    public func configuration(bucket: String? = nil, options: [String: String] = [:]) -> BuckiaConfiguration {
        BuckiaConfiguration(
            provider: .b2, bucketName: bucket ?? buckets.first ?? "buckia-test",
            authConfig: .providerSpecific(type: .b2, credentials: ["applicationKeyId": keyId, "applicationKey": key]),
            options: options.merging(["endpoint": endpoint.absoluteString]) { mine, _ in mine })
    }

    // MARK: Control

    /// What the emulator counted since the last reset.
    public struct Stats: Decodable, Sendable {
        /// Requests per API call name (downloads by name are `b2_download_file_by_name`).
        public let requests: [String: Int]
        /// Faults injected, by kind.
        public let faults: [String: Int]
        /// Successful `b2_authorize_account` calls.
        public let authorizations: Int
        /// Uploads refused because the bytes did not match their SHA-1.
        public let sha1_rejections: Int
        /// Uploads refused because their upload URL was in use by another upload.
        public let shared_upload_urls: Int
        /// File versions stored (uploads, hide markers and unfinished large files).
        public let versions: Int

        /// Requests of `call`.
        public func count(_ call: String) -> Int { requests[call] ?? 0 }
        /// Every request counted.
        public var total: Int { requests.values.reduce(0, +) }
    }

    public func stats() async throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: try await control("stats", method: .get))
    }

    public func resetStats() async throws { _ = try await control("reset-stats") }

    /// Injects faults into `rate` of the requests (0 stops), choosing among `kinds` (`500`,
    /// `503`, `429`, `expired_auth`, `drop`, `truncate`, `corrupt`) with a seeded generator;
    /// `calls` limits them to those API calls.
    public func setFaults(rate: Double, kinds: [String], seed: UInt64 = 1, calls: [String]? = nil) async throws {
        var body: [String: any Sendable] = ["rate": rate, "kinds": kinds, "seed": seed]
        if let calls { body["calls"] = calls }
        _ = try await control("faults", body: body)
    }

    /// Waits until `call` has been requested `count` times since the last reset (the emulator
    /// answers then, or after 120 s) and returns the count.
    public func awaitRequests(_ call: String, count: Int) async throws -> Int {
        var request = HTTPRequest(.get, endpoint.appendingPathComponent("_emulator/await"), timeout: .seconds(150))
        request.url = URL(string: request.url.absoluteString + "?call=\(call)&count=\(count)") ?? request.url
        let data = try await HTTPClient(configuration: .init(retryPolicy: .none)).send(request).data
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["count"] as? Int ?? -1
    }

    /// Holds the requests of `call` after the `after`-th (counted since the last reset) until
    /// ``release()``: they arrive and wait, so a client is stopped at a known point.
    public func hold(_ call: String, after: Int) async throws { _ = try await control("hold", body: ["call": call, "after": after]) }

    /// Lets held requests go on.
    public func release() async throws { _ = try await control("hold") }

    /// Expires every account authorization now.
    public func expireTokens() async throws { _ = try await control("expire-tokens") }

    /// Moves the emulator's clock `seconds` ahead (upload timestamps, token expiry).
    public func advanceClock(seconds: Int) async throws { _ = try await control("advance-clock", body: ["seconds": seconds]) }

    private func control(_ name: String, method: HTTPRequest.Method = .post, body: [String: any Sendable] = [:]) async throws -> Data {
        try await server.control(name, method: method, body: body)
    }
}
