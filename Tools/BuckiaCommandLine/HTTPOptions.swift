import Buckia
import BuckiaHTTP
import Foundation

extension CLI {
    /// The HTTP options a command that talks to a server without a remote takes: the same
    /// policy, names and bounds as a remote's `connectTimeoutSeconds`, `stallTimeoutSeconds` and
    /// `maxAttempts` (``HTTPRemoteOptions``), given as flags.
    static let httpOptionFlags: [(flag: String, option: String)] = [
        ("connect-timeout", "connectTimeoutSeconds"), ("stall-timeout", "stallTimeoutSeconds"), ("max-attempts", "maxAttempts"),
    ]

    static let httpOptionHelp: [OptionSpec] = [
        .value("connect-timeout", "Seconds connecting (TCP and TLS) may take (default 10)."),
        .value("stall-timeout", "Seconds a request may go without a byte moving, the wait for the answer included, before it is abandoned and retried (default 60)."),
        .value("max-attempts", "Attempts per request, the first included (default 4; 1 turns retries off)."),
    ]

    /// An HTTP client configured by `base` (a remote's options) and then the flags above.
    static func httpClient(_ invocation: Invocation, remoteOptions base: [String: String] = [:]) throws -> HTTPClient {
        var options = base
        for (flag, option) in httpOptionFlags {
            if let value = invocation.arguments.value(flag) { options[option] = value }
        }
        let http: HTTPRemoteOptions
        do {
            http = try HTTPRemoteOptions(options: options)
        } catch let error as BuckiaError {
            // A flag's mistake is a usage error, named as the flag.
            if let (flag, option) = httpOptionFlags.first(where: { error.path == "options.\($0.option)" && invocation.arguments.value($0.flag) != nil }) {
                throw UsageError(description: "--\(flag): " + error.message.replacingOccurrences(of: option, with: "the value"))
            }
            throw error
        }
        var configuration = HTTPClient.Configuration()
        http.apply(to: &configuration)
        return HTTPClient(configuration: configuration, resources: invocation.resources)
    }
}
