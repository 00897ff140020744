import Buckia
import BuckiaHTTP
import Foundation

extension CLI {
    static let serveCommand = Command(
        name: "serve", summary: "Serve a remote over the S3 API, enforcing the grants of temporary credentials.",
        usage: "serve s3 REMOTE:[PATH] [--addr 127.0.0.1:8333] [--auth-key ID,SECRET]... [--token-key KEY_ID] [--staging DIR] [--deliver-max-size MIB] [--web-identity FILE] [--stop-timeout S] [--json]",
        positionals: 2...2,
        options: [
            .value("addr", "The IPv4 address and port to listen on (default 127.0.0.1:8333; port 0 picks a free one)."),
            .value("auth-key", "A static key pair ID,SECRET with full access, as rclone serve s3 has them; give it once per pair."),
            .value("token-key", "The saved signing key that temporary credentials are checked with (default: the only one saved)."),
            .value("region", "The region GetBucketLocation names (default us-east-1); requests signed for any region are accepted."),
            .value("max-connections", "Connections served at once (default 256); one more is answered 503."),
            .value(
                "staging",
                "Where a multipart upload's part waits while it is sent to a remote that takes parts from a file: S3, B2, Bunny (default: the temporary folder). Over a local remote a part goes straight into the remote's folder."
            ),
            .value(
                "deliver-max-size",
                "The largest object, in MiB, a deliver grant alone may put (default 4; 1 to 1024). A delivery is a new <KSUID>.sqlite directly in the granted folder, never a replacement."
            ),
            .value(
                "web-identity",
                "A JSON file naming the OpenID Connect issuer, audiences and grant template (read,list:home/${sub}/, ...) with which STS AssumeRoleWithWebIdentity trades a login's token for temporary credentials (Docs/Gateway.md)."
            ),
            .value("stop-timeout", "Seconds requests in flight get to finish after SIGINT or SIGTERM before they are cut off (default 10)."),
            .flag("json", "Write the access log as one JSON object per request."),
        ],
        details: """
            The remote's top-level folders (under PATH) are the buckets. Clients sign with SigV4:
            with a static key pair (--auth-key), or with temporary credentials from
            buckia token issue --s3, whose grants are enforced on every request and listing.
            Temporary credentials are accepted once the secret store holds the gateway's keys
            (the first buckia token issue --s3 creates them). One access-log line per request goes
            to standard output, never a secret. SIGINT or SIGTERM stops accepting, lets requests
            in flight finish, and exits. Unfinished multipart uploads are kept in the remote, so
            this or another gateway over it can finish them; one started more than a day ago is
            aborted. Plain HTTP: serve on loopback, or put a TLS proxy in front (Docs/Gateway.md).
            """
    ) { invocation in
        let arguments = invocation.positionals
        guard arguments[0] == "s3" else { throw UsageError(description: "serve has one protocol, s3: buckia serve s3 REMOTE:[PATH].") }
        guard case .remote(let name, let path) = Location(arguments[1]) else {
            throw UsageError(description: "serve s3 serves a configured remote: give REMOTE:[PATH], not a local path.")
        }
        var host = "127.0.0.1"
        var port: UInt16 = 8333
        if let address = invocation.arguments.value("addr") {
            guard !address.hasPrefix("[") else {
                throw UsageError(description: "--addr \(address.debugDescription) is an IPv6 form; serve s3 listens on IPv4: give HOST:PORT, such as 127.0.0.1:8333.")
            }
            guard let colon = address.lastIndex(of: ":"), let number = UInt16(address[address.index(after: colon)...]) else {
                throw UsageError(description: "--addr \(address.debugDescription) is not HOST:PORT; give an IPv4 address and a port, such as 127.0.0.1:8333.")
            }
            host = colon == address.startIndex ? "127.0.0.1" : String(address[..<colon])
            var parsed = in_addr()
            guard inet_pton(AF_INET, host, &parsed) == 1 else {
                throw UsageError(description: "--addr \(address.debugDescription): \(host.debugDescription) is not an IPv4 address (names are not looked up); give one such as 127.0.0.1:8333.")
            }
            port = number
        }
        var staticKeys: [String: Secret] = [:]
        for pair in invocation.arguments.all("auth-key") {
            guard let comma = pair.firstIndex(of: ","), comma != pair.startIndex, pair.index(after: comma) != pair.endIndex else {
                throw UsageError(description: "--auth-key is ID,SECRET, both non-empty.")
            }
            let id = String(pair[..<comma]), secret = String(pair[pair.index(after: comma)...])
            // An access key id travels in the credential scope (ID/DATE/REGION/s3/aws4_request)
            // and in the access log: printable ASCII without a slash or space.
            guard id.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "/") }) else {
                throw UsageError(description: "--auth-key: the access key id \(id.debugDescription) may hold only printable ASCII without spaces or slashes.")
            }
            guard secret.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                throw UsageError(description: "--auth-key: the secret for \(id.debugDescription) may hold only printable ASCII (it is signed with as bytes).")
            }
            guard staticKeys[id] == nil else {
                throw UsageError(description: "--auth-key: the access key id \(id.debugDescription) is given twice; give each id once, with its one secret.")
            }
            staticKeys[id] = Secret(secret)
        }
        let region = invocation.arguments.value("region") ?? "us-east-1"
        guard (1...64).contains(region.utf8.count), region.utf8.allSatisfy({ byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }) else {
            throw UsageError(description: "--region \(region.debugDescription) is not a region name; use letters, digits, '-' and '_' (such as us-east-1).")
        }
        let tokens = TokenManager(store: FileSecretStore.standard(environment: invocation.environment))
        var keys: GatewayKeys?
        let keyId = invocation.arguments.value("token-key")
        let saved = try tokens.signingKeys()
        let webIdentity = invocation.arguments.value("web-identity")
        if webIdentity != nil {
            // Credentials for logins are issued here: the derivation key is made if missing.
            keys = try GatewayKeys.stored(in: tokens, keyId: keyId, create: true)
        } else if keyId != nil || !saved.isEmpty {
            do {
                keys = try GatewayKeys.stored(in: tokens, keyId: keyId, create: false)
            } catch let error as BuckiaError where error.code == .notFound && keyId == nil {
                keys = nil  // no temporary credentials have been issued yet: static keys only
            }
        }
        guard keys != nil || !staticKeys.isEmpty else {
            throw BuckiaError(
                .invalidConfiguration,
                "serve s3 has no credentials to accept: give --auth-key ID,SECRET, or issue temporary credentials once with buckia token issue --s3.")
        }
        var limits = HTTPServerLimits()
        if let text = invocation.arguments.value("max-connections") {
            guard let count = Int(text), (1...10_000).contains(count) else { throw UsageError(description: "--max-connections is 1 to 10000.") }
            limits.maximumConnections = count
        }
        var stopTimeout: UInt32 = 10
        if let text = invocation.arguments.value("stop-timeout") {
            guard let seconds = UInt32(text), seconds <= 3600 else {
                throw UsageError(description: "--stop-timeout \(text.debugDescription) is not a number of seconds from 0 to 3600.")
            }
            stopTimeout = seconds
        }
        let (provider, configuration) = try invocation.provider(named: name)
        if configuration.provider == .local, let root = configuration.options["root"] {
            // A file where the served folder should be would answer every request with an error.
            let served = URL(fileURLWithPath: root, isDirectory: true).appendingPathComponent(path.trimmedSlashes, isDirectory: true)
            if let mode = try LocalFile.existingMode(served.path), (mode & S_IFMT) != S_IFDIR {
                throw UsageError(description: "\(name):\(path) is \(LocalFile.kind(of: mode)) (\(served.path)), not a folder; serve s3 serves a folder.")
            }
        }
        var options = S3GatewayOptions()
        options.root = path.folderPrefix
        options.region = region
        if let text = invocation.arguments.value("deliver-max-size") {
            guard let mebibytes = Int64(text), (1...1024).contains(mebibytes) else {
                throw UsageError(description: "--deliver-max-size \(text.debugDescription) is not a number of MiB from 1 to 1024.")
            }
            options.delivery.maximumSize = mebibytes << 20
        }
        if let staging = invocation.arguments.value("staging") {
            guard !staging.isEmpty else { throw UsageError(description: "--staging names a folder.") }
            let folder = URL(fileURLWithPath: staging, isDirectory: true)
            // An existing folder of the user's: never created (a typo would make a folder
            // anywhere), never a file or device.
            guard let mode = try LocalFile.existingMode(folder.path) else {
                throw BuckiaError(.notFound, "The --staging folder \(staging) does not exist; create it first, or leave --staging out to use the temporary folder.", path: staging)
            }
            guard (mode & S_IFMT) == S_IFDIR else {
                throw UsageError(description: "--staging \(staging) is \(LocalFile.kind(of: mode)), not a folder; give a folder for multipart parts on their way to the remote.")
            }
            // Inside the served folder its files would show as a bucket.
            if configuration.provider == .local, let root = configuration.options["root"],
               Self.isInside(folder, URL(fileURLWithPath: root, isDirectory: true))
            {
                throw UsageError(description: "--staging \(staging) is inside the folder \(name): serves; give a folder outside it.")
            }
            options.stagingDirectory = folder
        }
        if let webIdentity {
            options.webIdentity = try await WebIdentityFile.load(webIdentity, http: HTTPClient())
        }
        let json = invocation.arguments.flag("json")
        options.log = { entry in
            if json {
                let encoder = JSONEncoder()
                encoder.dateEncodingStrategy = .iso8601
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                do {
                    Console.out(String(decoding: try encoder.encode(entry), as: UTF8.self))
                } catch {
                    Console.error("buckia: an access-log entry could not be encoded: \(error)")
                }
            } else {
                Console.out(entry.line)
            }
        }
        let authenticator = GatewayAuthenticator(keys: keys, staticKeys: staticKeys)
        let gateway = try S3Gateway(provider: provider, authenticator: authenticator, options: options)
        let server: HTTPServer
        do {
            server = try HTTPServer(host: host, port: port, limits: limits, handler: gateway)
        } catch {
            try gateway.close()
            throw error
        }
        let stopped = StopSignal()
        // The signal is taken as a clean stop before the line that says the server is ready: a
        // supervisor that stops it as soon as it reads that line gets a clean stop, not 143.
        // The process ends anyway 5 s after the stop timeout.
        await ProcessEnd.stoppingCleanly("the server", grace: stopTimeout + 5, stop: { stopped.fire() }) {
            Console.error("buckia: serving \(name):\(path) over S3 at http://\(host):\(server.port)\(keys == nil ? "" : " (temporary credentials accepted)")\(options.webIdentity == nil ? "" : "; STS AssumeRoleWithWebIdentity at /")")
            await stopped.wait()
        }
        let finished = server.stop(timeout: .seconds(stopTimeout))
        if !finished {
            // What the requests cut off were writing goes before the backend closes (as on a
            // second interrupt), and no new temporary may start: the served folder keeps nothing
            // of theirs.
            Temporaries.removeAllBeforeExit()
        }
        try gateway.close()
        Console.error("buckia: stopped serving\(finished ? "" : "; requests still running after \(stopTimeout) s were cut off")")
        return .success
    }
}

extension CLI {
    /// Whether `folder` is `root` or inside it, once both are absolute with links resolved.
    static func isInside(_ folder: URL, _ root: URL) -> Bool {
        let inner = folder.standardizedFileURL.resolvingSymlinksInPath().path
        let outer = root.standardizedFileURL.resolvingSymlinksInPath().path
        return inner == outer || inner.hasPrefix(outer.hasSuffix("/") ? outer : outer + "/")
    }
}

/// Fired once from a signal's thread; awaited by the command.
private final class StopSignal: Sendable {
    private let state = Locked<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
