import BuckiaCore
import BuckiaHTTP
import BuckiaTestSupport
import Foundation
import Testing

@Suite("Per-remote HTTP options")
struct HTTPRemoteOptionsTests {
    @Test("Valid values reach the client configuration")
    func validValues() throws {
        let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-ca-\(UUID().uuidString).pem")
        try Data("-----BEGIN CERTIFICATE-----\n".utf8).write(to: bundle)
        defer { try? FileManager.default.removeItem(at: bundle) }
        let options = try HTTPRemoteOptions(options: [
            "stallTimeoutSeconds": "0.5", "connectTimeoutSeconds": "3", "caFile": bundle.path, "maxAttempts": "7", "region": "ignored",
        ])
        var configuration = HTTPClient.Configuration()
        options.apply(to: &configuration)
        #expect(configuration.timeout == .milliseconds(500))
        #expect(configuration.connectTimeout == .seconds(3))
        #expect(configuration.caFile == bundle.path)
        #expect(configuration.retryPolicy.maxAttempts == 7)
    }

    @Test("No options change nothing")
    func noOptions() throws {
        var configuration = HTTPClient.Configuration()
        try HTTPRemoteOptions(options: [:]).apply(to: &configuration)
        let defaults = HTTPClient.Configuration()
        #expect(configuration.timeout == defaults.timeout && configuration.connectTimeout == defaults.connectTimeout)
        #expect(configuration.caFile == nil && configuration.retryPolicy.maxAttempts == defaults.retryPolicy.maxAttempts)
    }

    @Test("Bad values are configuration errors that name the option", arguments: [
        ("stallTimeoutSeconds", "0"), ("stallTimeoutSeconds", "-1"), ("stallTimeoutSeconds", "nan"), ("stallTimeoutSeconds", "inf"),
        ("stallTimeoutSeconds", "3601"), ("connectTimeoutSeconds", "ten"), ("connectTimeoutSeconds", ""), ("maxAttempts", "0"),
        ("maxAttempts", "21"), ("maxAttempts", "2.5"), ("maxAttempts", "99999999999999999999"), ("caFile", TestHome.empty + "/absent-ca.pem"),
    ])
    func badValues(_ name: String, _ value: String) {
        let error = #expect(throws: BuckiaError.self) { try HTTPRemoteOptions(options: [name: value]) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.path == "options.\(name)")
        #expect(error?.message.contains(name) == true)
    }
}
