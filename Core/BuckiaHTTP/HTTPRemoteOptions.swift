import BuckiaCore
import Foundation

/// The HTTP settings any HTTP provider reads from a remote's `options`, so one remote can be
/// tuned without touching the others: a slow link gets a longer stall timeout, a private
/// endpoint its own certificate authority.
///
/// | option | meaning | default |
/// |---|---|---|
/// | `connectTimeoutSeconds` | how long TCP and TLS setup may take | 10 |
/// | `stallTimeoutSeconds` | how long a request may go without moving a byte (waiting for the first byte included) before it is abandoned and retried | 60 |
/// | `caFile` | a PEM file of certificate authorities to trust instead of the system's (libcurl transport) | the system's store |
/// | `maxAttempts` | attempts per request, the first included (1 turns retries off) | 4 |
///
/// Seconds may have a fraction (`0.5`); each is at most an hour.
public struct HTTPRemoteOptions: Sendable, Equatable {
    /// The option names this type reads; a provider adds them to its known options.
    public static let names: Set<String> = ["connectTimeoutSeconds", "stallTimeoutSeconds", "caFile", "maxAttempts"]

    /// How long connecting may take, or nil for the client's default.
    public var connectTimeout: Duration?
    /// How long a request may go without moving a byte, or nil for the client's default.
    public var stallTimeout: Duration?
    /// A PEM file of certificate authorities, or nil for the system's store.
    public var caFile: String?
    /// Attempts per request, or nil for the retry policy's default.
    public var maxAttempts: Int?

    /// No overrides: every setting is the client's default.
    public init() {}

    /// Reads the options above from a remote's `options`, ignoring every other name.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` naming the option, when a
    ///   value is not a number in range or the CA file cannot be read.
    public init(options: [String: String]) throws {
        connectTimeout = try Self.seconds(options, "connectTimeoutSeconds")
        stallTimeout = try Self.seconds(options, "stallTimeoutSeconds")
        if let text = options["maxAttempts"] {
            guard let number = Int(text), (1...20).contains(number) else {
                throw BuckiaError(
                    .invalidConfiguration, "maxAttempts must be a whole number from 1 to 20; it is \(text.debugDescription).",
                    path: "options.maxAttempts")
            }
            maxAttempts = number
        }
        if let path = options["caFile"] {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw BuckiaError(
                    .invalidConfiguration, "caFile \(path.debugDescription) is not a readable file; give the path of a PEM bundle.",
                    path: "options.caFile")
            }
            caFile = path
        }
    }

    /// An HTTP provider's URL option (`endpoint`, `downloadURL`): `https`, or plain `http` to a
    /// loopback address, or to any host when `allowHTTP` is set — credentials sent over plain
    /// HTTP to another host can be read and replayed.
    ///
    /// - Parameters:
    ///   - provider: The provider's name, for messages (`S3`, `B2`).
    ///   - example: A URL of the right shape, for messages.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` naming `options.<option>`.
    public static func url(_ text: String, provider: String, option: String, example: String, allowHTTP: Bool) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw BuckiaError(
                .invalidConfiguration, "The \(provider) \(option) \(text.debugDescription) is not a URL like \(example).", path: "options.\(option)")
        }
        switch scheme {
        case "https": return url
        case "http":
            let loopback = host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
            guard loopback || allowHTTP else {
                throw BuckiaError(
                    .invalidConfiguration,
                    "The \(provider) \(option) uses plain http to \(host); use https, or set option allowHTTP to true if the network is trusted.",
                    path: "options.\(option)")
            }
            return url
        default:
            throw BuckiaError(.invalidConfiguration, "The \(provider) \(option) must be http or https; it is \(scheme).", path: "options.\(option)")
        }
    }

    /// Sets what these options override in a client configuration.
    public func apply(to configuration: inout HTTPClient.Configuration) {
        if let connectTimeout { configuration.connectTimeout = connectTimeout }
        if let stallTimeout { configuration.timeout = stallTimeout }
        if let caFile { configuration.caFile = caFile }
        if let maxAttempts { configuration.retryPolicy.maxAttempts = maxAttempts }
    }

    private static func seconds(_ options: [String: String], _ name: String) throws -> Duration? {
        guard let text = options[name] else { return nil }
        guard let value = Double(text), value.isFinite, value > 0, value <= 3600 else {
            throw BuckiaError(
                .invalidConfiguration, "\(name) must be a number of seconds above 0 and at most 3600; it is \(text.debugDescription).",
                path: "options.\(name)")
        }
        return .milliseconds(Int64((value * 1000).rounded(.up)))
    }
}
