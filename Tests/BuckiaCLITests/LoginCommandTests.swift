import Buckia
import BuckiaTestSupport
import Foundation
import Testing

@Suite("buckia login and logout against the OAuth emulator")
struct LoginCommandTests {
    /// Runs `body` on a thread of its own, off the cooperative pool (it blocks on pipes).
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    @Test("login shows a code, waits for approval and saves the tokens; logout revokes and forgets them")
    func loginLogout() async throws {
        let emulator = try await OAuthEmulator.start(interval: 1)
        defer { emulator.stop() }
        let harness = try CLIHarness()
        let remote = [
            "BUCKIA_REMOTE_WORK_PROVIDER": "local", "BUCKIA_REMOTE_WORK_ROOT": harness.home.appendingPathComponent("work").path,
            "BUCKIA_REMOTE_WORK_AUTH_METHOD": "oauth", "BUCKIA_REMOTE_WORK_CREDENTIAL_ISSUER": emulator.issuer.absoluteString,
            "BUCKIA_REMOTE_WORK_CREDENTIAL_CLIENT_ID": emulator.clientId,
        ]
        // Standard output to a file, read once login has ended; standard error a pipe, read
        // as login prints its code.
        let outURL = harness.home.appendingPathComponent("login.out")
        let process = try Spawned(
            CLIHarness.executable, ["login", "work"], environment: harness.environment.merging(remote) { $1 }, output: .file(outURL),
            errors: .pipe)

        // The code, from what login prints on standard error (30 s at most).
        let code: String = try await Self.offThePool {
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline, let line = process.readLine(timeout: deadline - ContinuousClock.now, errors: true) {
                if let range = line.range(of: "enter the code ") { return String(line[range.upperBound...]) }
            }
            throw CancellationError()
        }
        try await emulator.control("approve", ["user_code": code, "sub": "alice"])
        let ended = await process.ended(within: .seconds(120))
        #expect(ended, "login did not end within two minutes of the approval")
        let status = process.status
        #expect(status == 0)
        #expect(String(decoding: try Data(contentsOf: outURL), as: UTF8.self).hasPrefix("logged in to "))

        let listed = try harness.run("secrets", "list")
        #expect(listed.stdout.contains("oauth/work/access") && listed.stdout.contains("oauth/work/refresh"))
        let store = FileSecretStore(folder: harness.home.appendingPathComponent("config/buckia/secrets"))
        let refresh = try #require(try store.load("oauth/work/refresh")).value.exposedValue
        let logout = try harness.run("logout", "work", extraEnvironment: remote)
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(try await !emulator.refreshes(refresh))
        #expect(try harness.run("secrets", "list").stdout.isEmpty)
        #expect(try harness.run("logout", "work", extraEnvironment: remote).status == 3)
        // A remote without an OAuth issuer is a configuration error.
        #expect(try harness.run("login", "default").status == 5)
    }
}
