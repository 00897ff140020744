import BuckiaB2
import BuckiaBunny
import BuckiaCore
import BuckiaS3
import Foundation

/// The `configuration` target: a remote's JSON configuration (`BuckiaConfiguration.decode`),
/// then, when it decodes, the provider's settings resolved from it and from an environment
/// (`S3Settings.resolve`, `B2Settings.resolve`, `BunnySettings.resolve`): the options' text
/// read as sizes, flags, URLs and durations, and the variables AWS's and each provider's
/// conventions read (`AWS_ACCESS_KEY_ID`, `AWS_REGION`, `AWS_ENDPOINT_URL`, …). The input is
/// the JSON, then optionally a line `--` and `NAME=value` lines for the environment.
///
/// The law besides never trapping: a secret (a credential in the configuration, or a variable
/// whose name says it holds one) never appears in a refusal's description or in the resolved
/// settings' description, unless the input also put the same text somewhere public, or the
/// description says it with every secret replaced (Buckia's own words).
enum ConfigurationTarget {
    /// Where the shared AWS files are looked for: an empty folder this process made (removed
    /// when it exits), so a run reads no file of the machine's, whatever is at any fixed path,
    /// and every input means the same on every machine.
    static let home: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-fuzz-home-\(getpid())-\(UUID().uuidString)").path
        _ = mkdir(path, 0o700)  // failing, it is absent, which reads the same: no shared files
        atexit { _ = rmdir(ConfigurationTarget.home) }
        return path
    }()

    static func run(_ data: Data) throws -> String? {
        let (json, environment) = split(data)
        let configuration: BuckiaConfiguration
        do {
            configuration = try BuckiaConfiguration.decode(from: json)
        } catch {
            return "\(error)"
        }
        let secrets = secretTexts(configuration, environment)
        guard let outcome = describe(configuration, environment) else { return nil }
        // Text that is still there when every secret is replaced is Buckia's own wording (a
        // credential of "advanced" beside "tokenScheme must be hmac, advanced or basic"), not
        // something the secret put there.
        let own = describe(withoutSecrets(configuration), Dictionary(uniqueKeysWithValues: environment.map { ($0.key, holdsSecret($0.key) ? "replaced-\u{2603}" : $0.value) }))
        let leaks = secrets.filter { own?.text.contains($0) != true }
        try checkNoSecret(in: outcome.text, leaks, what: outcome.refused ? "a refusal" : "the resolved settings")
        return outcome.refused ? outcome.text : nil
    }

    /// The provider's settings resolved from `configuration`, described, or the refusal's
    /// description; nil for a provider this target does not resolve.
    static func describe(_ configuration: BuckiaConfiguration, _ environment: [String: String]) -> (text: String, refused: Bool)? {
        do {
            switch configuration.provider {
            case .s3: return ("\(try S3Settings.resolve(configuration, environment: environment, home: home))", false)
            case .b2: return ("\(try B2Settings.resolve(configuration, environment: environment))", false)
            case .bunny: return ("\(try BunnySettings.resolve(configuration, environment: environment))", false)
            default: return nil
            }
        } catch {
            return ("\(error)", true)
        }
    }

    /// `configuration` with each secret credential replaced by a text of its own that no
    /// message contains.
    static func withoutSecrets(_ configuration: BuckiaConfiguration) -> BuckiaConfiguration {
        var copy = configuration
        var credentials = configuration.authConfig.credentials
        for (index, key) in credentials.keys.sorted().enumerated() where !key.lowercased().hasSuffix("id") {
            credentials[key] = Secret("replaced-\(index)-\u{2603}")
        }
        copy.authConfig = AuthenticationConfiguration(method: configuration.authConfig.method, credentials: credentials, tokenContext: configuration.authConfig.tokenContext)
        return copy
    }

    static func holdsSecret(_ name: String) -> Bool {
        let upper = name.uppercased()
        return (["SECRET", "TOKEN", "PASSWORD"].contains { upper.contains($0) } || upper.hasSuffix("KEY")) && !upper.hasSuffix("KEY_ID")
    }

    /// The JSON, and the environment after a `--` line (at most 32 variables; `HOME` and the
    /// AWS file paths are left out, so no file of the machine's is read).
    static func split(_ data: Data) -> (json: Data, environment: [String: String]) {
        let text = String(decoding: data, as: UTF8.self)
        guard let marker = text.range(of: "\n--\n") else { return (data, ["HOME": home]) }
        var environment: [String: String] = [:]
        for line in text[marker.upperBound...].split(separator: "\n").prefix(32) {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let name = String(line[..<equals])
            guard !["HOME", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"].contains(name) else { continue }
            environment[name] = String(line[line.index(after: equals)...])
        }
        environment["HOME"] = home
        return (Data(text[..<marker.lowerBound].utf8), environment)
    }

    /// The secret texts of an input long enough that a match is no coincidence (8 bytes or
    /// more), less any the input also put somewhere public (a bucket name, an option, a
    /// variable that holds no secret), where printing it is no leak.
    static func secretTexts(_ configuration: BuckiaConfiguration, _ environment: [String: String]) -> [String] {
        // A key's id (`accessKeyId`, `applicationKeyId`) names the key and may be shown.
        var secrets = configuration.authConfig.credentials.filter { !$0.key.lowercased().hasSuffix("id") }.values.map(\.exposedValue)
        secrets += environment.filter { holdsSecret($0.key) }.map(\.value)
        var publicTexts = [configuration.bucketName, configuration.authConfig.tokenContext ?? ""]
        publicTexts += configuration.options.flatMap { [$0.key, $0.value] } + configuration.includePatterns + configuration.excludePatterns
        publicTexts += environment.filter { !holdsSecret($0.key) }.flatMap { [$0.key, $0.value] }
        publicTexts += configuration.authConfig.credentials.filter { $0.key.lowercased().hasSuffix("id") }.flatMap { [$0.key, $0.value.exposedValue] }
        publicTexts += configuration.authConfig.credentials.keys
        return secrets.filter { secret in secret.utf8.count >= 8 && !publicTexts.contains { $0.contains(secret) } }
    }

    static func checkNoSecret(in text: String, _ secrets: [String], what: String) throws {
        if let leaked = secrets.first(where: { text.contains($0) }) {
            throw FuzzFinding("\(what) printed the secret \(leaked.debugDescription): \(text.debugDescription)")
        }
    }
}
