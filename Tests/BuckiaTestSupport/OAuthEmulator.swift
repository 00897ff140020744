import BuckiaCore
import BuckiaHTTP
import Foundation

/// The OAuth 2 / OIDC emulator (`Tests/Emulators/oauth_emulator.py`) on 127.0.0.1.
public final class OAuthEmulator: Sendable {
    /// The issuer: `http://127.0.0.1:PORT`.
    public let issuer: URL
    /// The client id it accepts.
    public let clientId: String
    private let server: EmulatorServer

    private init(issuer: URL, clientId: String, server: EmulatorServer) {
        self.issuer = issuer
        self.clientId = clientId
        self.server = server
    }

    /// Starts an emulator whose access tokens live `accessTTL` seconds.
    public static func start(accessTTL: Int = 300, rotate: Bool = true, interval: Int = 5) async throws -> OAuthEmulator {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                        .appendingPathComponent("Emulators/oauth_emulator.py")
                    var arguments = ["--client-id", "buckia-cli", "--access-ttl", String(accessTTL), "--interval", String(interval)]
                    if !rotate { arguments.append("--no-rotate") }
                    let server = try EmulatorServer(script: script, arguments: arguments)
                    return OAuthEmulator(issuer: server.endpoint, clientId: "buckia-cli", server: server)
                })
            }
        }
    }

    /// Stops the emulator; safe to call twice.
    public func stop() { server.stop() }

    /// Calls a control endpoint (`approve`, `slow-down`, `expire-access`, `revoke-all`, `hold`, `stall`, `advance-clock`).
    @discardableResult
    public func control(_ name: String, _ body: [String: any Sendable] = [:]) async throws -> Data {
        try await server.control(name, body: body)
    }

    /// An ID token the emulator signs for `sub`, its usual claims overridden by `claims` (a
    /// null removes one) and its header by `alg` and `kid`; `key: "new"` signs with a key no
    /// JWKS holds.
    public func idToken(sub: String, _ claims: [String: any Sendable] = [:]) async throws -> String {
        var body = claims
        body["sub"] = sub
        let data = try await server.control("id-token", body: body)
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any], let token = object["id_token"] as? String else {
            throw BuckiaError(.corrupt, "The OAuth emulator answered no id_token.")
        }
        return token
    }

    /// How many times the JWKS was fetched.
    public func jwksFetches() async throws -> Int { (try await stats())["jwks"] as? Int ?? 0 }

    /// The emulator's counters: `token` requests by grant type, `device` authorizations, `polls`, `held`.
    public func stats() async throws -> [String: Any] {
        let data = try await server.control("stats", method: .get)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    /// How many token requests of `grant` the emulator has received.
    public func tokenRequests(_ grant: String) async throws -> Int {
        ((try await stats())["token"] as? [String: Any])?[grant] as? Int ?? 0
    }

    /// Whether `refreshToken` still refreshes (it is spent by the answer when tokens rotate).
    public func refreshes(_ refreshToken: String) async throws -> Bool {
        let body = "grant_type=refresh_token&client_id=\(clientId)&refresh_token=" + (refreshToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        var request = HTTPRequest(.post, issuer.appendingPathComponent("token"), body: .data(Data(body.utf8)), accepts: .all, retryPolicy: RetryPolicy.none)
        request.headers.set("Content-Type", "application/x-www-form-urlencoded")
        return try await HTTPClient().send(request).status == 200
    }

    /// Whether `accessToken` opens the userinfo endpoint now.
    public func accepts(_ accessToken: String) async throws -> Bool {
        var request = HTTPRequest(.get, issuer.appendingPathComponent("userinfo"), accepts: .all, retryPolicy: RetryPolicy.none)
        request.headers.set("Authorization", secret: Secret("Bearer " + accessToken))
        return try await HTTPClient().send(request).status == 200
    }
}
