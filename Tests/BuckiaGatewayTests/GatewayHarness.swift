import BuckiaCore
import BuckiaGateway
import BuckiaLocal
import BuckiaMemory
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation


/// A running gateway a test talks to: in this process (``GatewayHarness``) or as
/// `buckia serve s3` (``GatewayProcess``).
protocol GatewayEndpoint: Sendable {
    var endpoint: URL { get }
    var accessKeyId: String { get }
    var secretAccessKey: Secret { get }
    /// What the backend behind the gateway supports.
    var backendCapabilities: ProviderCapabilities { get }
    /// How long a request waits for the answer's next bytes, in seconds: a hang guard.
    var answerTimeout: Int { get }
}

extension GatewayEndpoint {
    var answerTimeout: Int { 20 }
}

/// A gateway on 127.0.0.1 in front of a provider, with one static key pair and keys for
/// temporary credentials; stopped (and its staging folder removed) by ``stop()``.
final class GatewayHarness: GatewayEndpoint, @unchecked Sendable {
    let provider: any StorageProvider
    let gateway: S3Gateway
    let server: HTTPServer
    let keys: GatewayKeys
    let accessKeyId = "GATEWAYADMIN"
    let secretAccessKey = Secret("gateway-admin-secret-\(UUID().uuidString)")
    let log = Locked<[S3AccessLogEntry]>([])
    private let folder: URL?
    let answerTimeout: Int

    var endpoint: URL { URL(string: "http://127.0.0.1:\(server.port)")! }
    var backendCapabilities: ProviderCapabilities { provider.capabilities }

    /// A gateway over `provider`, or over a fresh local folder when nil.
    ///
    /// - Parameters:
    ///   - removing: A folder behind `provider` that ``stop()`` removes.
    ///   - authenticatorClock: What signatures and session tokens are checked by (a test that
    ///     moves the gateway's clock for credentials passes the same one).
    ///   - answerTimeout: How long a request waits for the answer's next bytes: a hang guard,
    ///     longer for a backend that answers over the network from a loaded machine.
    init(
        provider: (any StorageProvider)? = nil, removing: URL? = nil, limits: HTTPServerLimits = HTTPServerLimits(),
        configure: (inout S3GatewayOptions) -> Void = { _ in }, authenticatorClock: @escaping @Sendable () -> Date = { Date() },
        answerTimeout: Int = 20
    ) throws {
        self.answerTimeout = answerTimeout
        if let provider {
            self.provider = provider
            folder = removing
        } else {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-gateway-root-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            self.provider = try LocalProvider(root: root)
            folder = root
        }
        keys = try GatewayKeys(signingKey: UserTokenSigningKey.generate(keyId: "gw"), derivationKey: Secret(String(repeating: "k", count: 40)))
        var options = S3GatewayOptions()
        let log = self.log
        options.log = { entry in log.withLock { $0.append(entry) } }
        configure(&options)
        let authenticator = GatewayAuthenticator(keys: keys, staticKeys: [accessKeyId: secretAccessKey], clock: authenticatorClock)
        gateway = try S3Gateway(provider: self.provider, authenticator: authenticator, options: options)
        server = try HTTPServer(limits: limits, handler: gateway)
    }

    /// The local folder the gateway serves, when it serves one.
    var root: URL? { folder }

    func stop() {
        _ = server.stop(timeout: .seconds(10))
        try? gateway.close()
        if let folder { try? FileManager.default.removeItem(at: folder) }
    }

    /// Temporary credentials for `user` with `grants`.
    func credentials(user: String = "alice", grants: StorageGrants, lifetime: Duration = .seconds(3600)) throws -> TemporaryS3Credentials {
        try keys.issue(userId: user, grants: grants, lifetime: lifetime)
    }

}

extension GatewayEndpoint {
    /// Creates `bucket` through the gateway with the static key pair.
    func createBucket(_ bucket: String) async throws {
        let (status, body) = try await send("PUT", "/\(bucket)")
        guard status == 200 else { throw BuckiaError(.io, "CreateBucket \(bucket) answered \(status): \(String(decoding: body, as: UTF8.self))") }
    }

    /// Sends a request signed with the static key pair (or `credentials`) over a socket of its
    /// own (``RawHTTP``), not URLSession: FoundationNetworking shares one transfer thread per
    /// process, and a known deadlock in it (CancellationStormTests) stalled these requests for
    /// minutes under the full suite.
    func send(
        _ method: String, _ target: String, body: Data = Data(), headers: [String: String] = [:], credentials: AWSCredentials? = nil
    ) async throws -> (Int, Data) {
        let answer = try await exchange(method, target, body: body, headers: headers, credentials: credentials)
        return (answer.status, answer.body)
    }

    /// As ``send(_:_:body:headers:credentials:)``, with the answer's headers.
    func exchange(
        _ method: String, _ target: String, body: Data = Data(), headers: [String: String] = [:], credentials: AWSCredentials? = nil
    ) async throws -> RawHTTP.Answer {
        guard let url = URL(string: endpoint.absoluteString + target) else { throw BuckiaError(.invalidPath, "bad target \(target)") }
        let signer = SigV4Signer(
            credentials: credentials ?? AWSCredentials(accessKeyId: accessKeyId, secretAccessKey: secretAccessKey), region: "us-east-1", service: "s3")
        let signed = signer.sign(method: method, url: url, headers: headers, payloadHash: Hashing.sha256Hex(body), date: Date())
        return try await RawHTTP.exchange(port: UInt16(endpoint.port ?? 0), method: method, target: target, headers: signed.map { ($0.key, $0.value) }, body: body, timeout: answerTimeout)
    }

    /// The configuration of Buckia's own S3 provider on `bucket` of this gateway.
    func s3Configuration(bucket: String, credentials: TemporaryS3Credentials? = nil) -> BuckiaConfiguration {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-s3-state-\(UUID().uuidString)")
        var options = [
            "endpoint": endpoint.absoluteString, "region": "us-east-1", "stateDirectory": state.path, "vendor": "buckia", "allowHTTP": "true",
            "addressingStyle": "path",
        ]
        if !backendCapabilities.supports(.userMetadata) { options["userMetadata"] = "false" }
        if !backendCapabilities.supports(.conditionalWrite) { options["conditionalWrites"] = "false" }
        let auth: AuthenticationConfiguration
        if let credentials {
            auth = .awsSignature(
                accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey.exposedValue,
                sessionToken: credentials.sessionToken.exposedValue)
        } else {
            auth = .awsSignature(accessKeyId: accessKeyId, secretAccessKey: secretAccessKey.exposedValue)
        }
        return BuckiaConfiguration(provider: .s3, bucketName: bucket, authConfig: auth, options: options)
    }
}

/// A bucket name no other test uses.
func freshBucket() -> String { "b-" + UUID().uuidString.lowercased().prefix(18) }

/// `buckia serve s3` in a process of its own, in front of a remote from `configuration`, with
/// one static key pair; stopped with SIGTERM by ``stop()``.
final class GatewayProcess: GatewayEndpoint, Sendable {
    let process: Spawned
    let home: URL
    let port: Int
    let accessKeyId = "GATEWAYADMIN"
    let secretAccessKey: Secret
    let backendCapabilities: ProviderCapabilities

    var endpoint: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The folder a local remote serves, when the remote is a local one (for the test to remove).
    var servedRoot: URL? {
        guard let data = try? Data(contentsOf: home.appendingPathComponent("config.json")),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let remote = (object["remotes"] as? [String: Any])?["served"] as? [String: Any],
              let root = (remote["options"] as? [String: String])?["root"]
        else { return nil }
        return URL(fileURLWithPath: root)
    }

    /// The temporary credentials `buckia token issue --s3` printed before the server started, if asked for.
    let temporary: (accessKeyId: String, secretAccessKey: String, sessionToken: String)?

    static var executable: URL { URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia") }

    /// Starts `buckia serve s3 REMOTE:` for the remote `configuration` (JSON of one remote). With
    /// `temporaryFor`, the user's steps come first: `buckia token keygen`, then `buckia token issue
    /// --user USER --grant … --s3` in the same secret store, whose credentials the server accepts.
    init(
        remoteJSON: String, capabilities: ProviderCapabilities, arguments: [String] = [], environment extra: [String: String] = [:],
        temporaryFor: (user: String, grants: [String])? = nil, secret: Secret? = nil
    ) throws {
        secretAccessKey = secret ?? Secret("gateway-admin-secret-\(UUID().uuidString)")
        backendCapabilities = capabilities
        home = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-gateway-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let config = home.appendingPathComponent("config.json")
        try Data(#"{"remotes": {"served": \#(remoteJSON)}}"#.utf8).write(to: config)
        let environment = ["HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "PATH": "/usr/bin:/bin"].merging(extra) { $1 }
        if let temporaryFor {
            let keygen = try ToolRun.run(path: Self.executable, ["token", "keygen", "--key-id", "gw"], exactEnvironment: environment, limit: .seconds(60))
            guard keygen.status == 0 else { throw BuckiaError(.io, "token keygen failed: \(keygen.errors)") }
            let issue = try ToolRun.run(
                path: Self.executable, ["token", "issue", "--user", temporaryFor.user, "--s3"] + temporaryFor.grants.flatMap { ["--grant", $0] },
                exactEnvironment: environment, limit: .seconds(60))
            guard issue.status == 0, let object = try JSONSerialization.jsonObject(with: Data(issue.output.utf8)) as? [String: Any],
                  let id = object["AccessKeyId"] as? String, let secret = object["SecretAccessKey"] as? String, let token = object["SessionToken"] as? String
            else { throw BuckiaError(.io, "token issue --s3 failed: \(issue.errors)") }
            temporary = (id, secret, token)
        } else {
            temporary = nil
        }
        process = try Spawned(
            Self.executable,
            ["serve", "s3", "served:", "--config", config.path, "--addr", "127.0.0.1:0", "--auth-key", "\(accessKeyId),\(secretAccessKey.exposedValue)"]
                + arguments,
            environment: environment, output: .file(home.appendingPathComponent("stdout")), errors: .pipe)
        // It says where it listens once it is ready: its standard error is read line by line
        // as it comes, up to that line or its end (a 300 s bound is a hang guard).
        var found: Int?
        while found == nil, let line = Self.nextErrorLine(process, into: errorLines) {
            if let range = line.range(of: "at http://127.0.0.1:") { found = Int(line[range.upperBound...].prefix { $0.isNumber }) }
        }
        guard let found else {
            process.stop()
            throw BuckiaError(.io, "buckia serve s3 did not say where it listens: \(errorLines.withLock { $0 }.joined(separator: "\n"))")
        }
        port = found
    }

    /// What the server has written to standard error, line by line, as the test has read it.
    let errorLines = Locked<[String]>([])

    /// The next line of the server's standard error, kept in `lines`; nil at its end (the server
    /// exited) or after 300 s without one (a hang guard).
    static func nextErrorLine(_ process: Spawned, into lines: Locked<[String]>) -> String? {
        guard let line = process.readLine(timeout: .seconds(300), errors: true) else { return nil }
        lines.withLock { $0.append(line) }
        return line
    }

    /// Waits until the server's standard error holds `text`: false if it ends first (the server
    /// exited), or after 300 s without a line.
    func waitForError(_ text: String) -> Bool {
        if errorLines.withLock({ $0.contains { $0.contains(text) } }) { return true }
        while let line = Self.nextErrorLine(process, into: errorLines) {
            if line.contains(text) { return true }
        }
        return false
    }

    /// What the server has written to standard output (its access log) so far.
    var accessLog: String { (try? String(contentsOf: home.appendingPathComponent("stdout"), encoding: .utf8)) ?? "" }

    /// Waits (at most 400 s, a hang guard) for the server to exit on its own (after a signal
    /// the test sent); returns as ``stop()`` does.
    func waitForExit() -> (Int32, String) {
        _ = process.wait(.seconds(400))
        return stop()
    }

    /// Stops the server with SIGTERM (SIGKILL after a minute); returns its exit status (128
    /// plus the signal when one ended it) and what it wrote to standard error.
    @discardableResult
    func stop() -> (Int32, String) {
        process.signal(SIGTERM)
        _ = process.wait(.seconds(60))
        process.stop()
        while Self.nextErrorLine(process, into: errorLines) != nil {}  // the rest, to its end
        let text = errorLines.withLock { $0 }.joined(separator: "\n")
        try? FileManager.default.removeItem(at: home)
        return (process.status, text)
    }
}

/// Runs a peer tool on a thread of its own, never one of the cooperative pool's: the gateway in
/// this process needs the pool to answer the tool while the test waits for it.
func runTool(_ executable: String, _ arguments: [String], environment: [String: String] = [:], limit: Duration = .seconds(120)) async throws -> ToolRun.Result {
    try await offPool { try ToolRun.run(executable, arguments, environment: environment, limit: limit) }
}


/// A one-request HTTP/1.1 client on a raw socket, on a thread of its own: exactly the bytes asked
/// for go out (no path normalisation, no shared transfer thread), and the answer is read whole.
enum RawHTTP {
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: Data
    }

    /// Sends one request and reads the whole answer; a read waits at most `timeout` seconds for
    /// bytes (a hang guard: an answer that needs the issuer's keys may wait on a loaded machine).
    static func exchange(
        port: UInt16, method: String, target: String, headers: [(String, String)], body: Data = Data(), timeout: Int = 20
    ) async throws -> Answer {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers where name.lowercased() != "host" && name.lowercased() != "content-length" { head += "\(name): \(value)\r\n" }
        let wire = Array((head + "\r\n").utf8) + Array(body)
        let raw = try await offPool { () -> Data in
            let client = try RawClient(port: port, timeout: timeout)
            client.send(wire)
            return client.readAllData()
        }
        guard let split = raw.range(of: Data("\r\n\r\n".utf8)) else { throw BuckiaError(.io, "no HTTP answer: \(String(decoding: raw.prefix(200), as: UTF8.self))") }
        let lines = String(decoding: raw[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var content = Data(raw[split.upperBound...])
        if fields["transfer-encoding"]?.lowercased() == "chunked" {
            var decoded = Data()
            var rest = content[...]
            while let lineEnd = rest.range(of: Data("\r\n".utf8)), let size = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16), size > 0 {
                let start = lineEnd.upperBound
                guard rest.distance(from: start, to: rest.endIndex) >= size else { break }
                let end = rest.index(start, offsetBy: size)
                decoded.append(rest[start..<end])
                rest = rest[rest.index(end, offsetBy: min(2, rest.distance(from: end, to: rest.endIndex)))...]
            }
            content = decoded
        }
        return Answer(status: status, headers: fields, body: content)
    }
}
