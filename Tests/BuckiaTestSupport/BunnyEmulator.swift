import BuckiaCore
import BuckiaHTTP
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Bunny Edge Storage emulator (`Tests/Emulators/bunny_emulator.py`), started and stopped by
/// the tests on 127.0.0.1: one storage zone, its password and read-only password.
public final class BunnyEmulator: Sendable {
    /// `http://127.0.0.1:PORT`: the provider's `endpoint`.
    public let endpoint: URL
    public let zone: String
    public let password: String
    public let readOnlyPassword: String

    private let server: EmulatorServer

    private init(endpoint: URL, zone: String, password: String, readOnlyPassword: String, server: EmulatorServer) {
        self.endpoint = endpoint
        self.zone = zone
        self.password = password
        self.readOnlyPassword = readOnlyPassword
        self.server = server
    }

    /// Starts an emulator and waits (at most 10 s) for its port. `latencyMilliseconds` delays
    /// every answer, as a network round trip would (benchmarks only).
    public static func start(zone: String = "buckia-zone", retryAfter: Int = 0, latencyMilliseconds: Int = 0) async throws -> BunnyEmulator {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    let password = "pw-" + UUID().uuidString, readOnly = "ro-" + UUID().uuidString
                    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                        .appendingPathComponent("Emulators/bunny_emulator.py")
                    let server = try EmulatorServer(
                        script: script,
                        arguments: ["--zone", zone, "--password", password, "--read-only-password", readOnly, "--retry-after", String(retryAfter),
                                    "--latency-ms", String(latencyMilliseconds)])
                    return BunnyEmulator(endpoint: server.endpoint, zone: zone, password: password, readOnlyPassword: readOnly, server: server)
                })
            }
        }
    }

    /// Stops the emulator; safe to call twice.
    public func stop() { server.stop() }

    /// A configuration for the bunny provider against this emulator.
    public func configuration(readOnly: Bool = false, options: [String: String] = [:], tokenKey: String? = nil) -> BuckiaConfiguration {
        var credentials = ["accessKey": readOnly ? readOnlyPassword : password]
        if let tokenKey { credentials["tokenKey"] = tokenKey }
        return BuckiaConfiguration(
            provider: .bunny, bucketName: zone, authConfig: .providerSpecific(type: .bunny, credentials: credentials),
            options: options.merging(["endpoint": endpoint.absoluteString]) { mine, _ in mine })
    }

    /// What the emulator counted since the last reset.
    public struct Stats: Decodable, Sendable {
        /// Requests per call: put, get, list, describe, delete.
        public let requests: [String: Int]
        public let faults: [String: Int]
        /// Uploads refused because their bytes did not match their Checksum.
        public let checksum_rejections: Int
        /// Files stored.
        public let files: Int

        public func count(_ call: String) -> Int { requests[call] ?? 0 }
        public var total: Int { requests.values.reduce(0, +) }
    }

    public func stats() async throws -> Stats { try JSONDecoder().decode(Stats.self, from: try await control("stats", method: .get)) }
    public func resetStats() async throws { _ = try await control("reset-stats") }

    /// Injects faults into `rate` of the requests (`500`, `503`, `429`, `drop`, `drop_after`,
    /// `truncate`, `corrupt`, `corrupt_upload`), seeded; `calls` limits them.
    public func setFaults(rate: Double, kinds: [String], seed: UInt64 = 1, calls: [String]? = nil) async throws {
        var body: [String: any Sendable] = ["rate": rate, "kinds": kinds, "seed": seed]
        if let calls { body["calls"] = calls }
        _ = try await control("faults", body: body)
    }

    private func control(_ name: String, method: HTTPRequest.Method = .post, body: [String: any Sendable] = [:]) async throws -> Data {
        try await server.control(name, method: method, body: body)
    }
}
