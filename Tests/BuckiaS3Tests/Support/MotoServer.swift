// The moto S3 server the S3 tests start and stop themselves (`Resources/moto_server.py`).
//
// Signature checking. By default moto checks no signature at all, so a test that relies on it
// to catch a signing bug proves nothing. The script sets `INITIAL_NO_AUTH_ACTION_COUNT=3`
// before importing moto: moto serves its first 3 requests without checking, and the script
// spends exactly those on the IAM calls that make a key moto knows — CreateUser,
// PutUserPolicy (an allow-all inline policy) and CreateAccessKey. From request 4 on, every
// request must carry a SigV4 `Authorization` header made with that key: a wrong secret gets
// 403 `SignatureDoesNotMatch`, an unknown key 403 `InvalidAccessKeyId`. With N = 2 the setup's
// CreateAccessKey is refused; with N = 4 the first test request goes unchecked.
//
// What moto still does not check, even in this mode: Content-MD5, `x-amz-checksum-sha256`
// (stored and echoed, never verified), `x-amz-content-sha256` against the body, and presigned
// URLs. A request without an `Authorization` header — unsigned or presigned — gets 500 (a
// KeyError inside moto), which ``BuckiaHTTP/HTTPClient`` retries as transient: expect it with
// `retryPolicy: .none`. Presigned-URL tests use `MotoServer.shared(auth: false)`, which checks
// nothing and hands out dummy credentials.
//
// Lifetime. One server per mode is shared by the whole test process (moto takes about a second
// to start, more on a cold cache); tests keep apart by using unique bucket names
// (`uniqueBucketName()`). The server listens on 127.0.0.1 only, on a port it picks and prints.
// It exits when its stdin reaches EOF — so it dies with the test process, however that ends —
// on SIGTERM, or after an hour. ``stop()`` closes stdin and sends SIGKILL: a child started
// from an async test inherits a blocked SIGTERM.

import BuckiaCore
import BuckiaTestSupport
import BuckiaSigV4
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running moto S3 server and the credentials it accepts.
final class MotoServer: Sendable {
    /// `http://127.0.0.1:PORT`; buckets are addressed path-style (`endpoint/bucket/key`).
    let endpoint: URL
    /// The access key id of the IAM user the script created.
    let accessKeyId: String
    /// That key's secret.
    let secretAccessKey: Secret
    /// The region to sign for: `us-east-1`.
    let region: String
    /// Whether moto verifies header signatures (false for `auth: false` servers).
    let checksSignatures: Bool

    private struct Child {
        let process: Process
        let input: Pipe
    }

    /// nil once stopped. `Process` is not `Sendable`: it is touched only under this lock, which
    /// also makes `stop()` safe from any task and from `deinit`.
    private let child: Locked<Child?>

    private init(endpoint: URL, info: StartupLine, checksSignatures: Bool, child: Child) {
        self.endpoint = endpoint
        self.accessKeyId = info.accessKeyId
        self.secretAccessKey = Secret(info.secretAccessKey)
        self.region = info.region
        self.checksSignatures = checksSignatures
        self.child = Locked(child)
    }

    deinit { stop() }

    /// The credentials moto accepts.
    var credentials: AWSCredentials {
        AWSCredentials(accessKeyId: accessKeyId, secretAccessKey: secretAccessKey)
    }

    /// A path-style URL for a bucket, or an object when `key` is given (encoded per segment).
    func url(bucket: String, key: String? = nil) -> URL {
        var url = endpoint.appendingPathComponent(bucket)
        if let key {
            for segment in key.split(separator: "/", omittingEmptySubsequences: false) {
                url = url.appendingPathComponent(String(segment))
            }
        }
        return url
    }

    // MARK: Starting and stopping

    /// The server shared by every test of this process, started on first use.
    static func shared(auth: Bool = true) async throws -> MotoServer {
        try await (auth ? sharedAuth : sharedNoAuth).value
    }

    private static let sharedAuth = Task { try await start(auth: true) }
    private static let sharedNoAuth = Task { try await start(auth: false) }

    /// Starts a server of its own and waits for its JSON line.
    ///
    /// The blocking wait runs on a Dispatch thread, never on the cooperative pool.
    /// - Parameters:
    ///   - auth: Whether moto checks SigV4 header signatures (see the top of this file).
    ///   - timeout: How long moto may take to import and start; cold imports are slow.
    /// - Throws: `notFound` when python3, moto or boto3 is missing (the message says how to
    ///   install them); `io` when the server does not start in time.
    static func start(auth: Bool = true, timeout: Duration = .seconds(60)) async throws -> MotoServer {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try startBlocking(auth: auth, timeout: timeout) })
            }
        }
    }

    /// Stops the server: closes its stdin, sends SIGKILL and reaps it. Safe to call twice.
    func stop() {
        child.withLock { child in
            guard let running = child else { return }
            child = nil
            try? running.input.fileHandleForWriting.close()
            if running.process.isRunning { kill(running.process.processIdentifier, SIGKILL) }
            running.process.waitUntilExit()
        }
    }

    private struct StartupLine: Decodable {
        var endpoint: String
        var accessKeyId: String
        var secretAccessKey: String
        var region: String
    }

    private struct FailureLine: Decodable {
        var error: String
        var missing: Bool?
    }

    static let installHint = "python3 -m pip install 'moto[server]'"

    private static func startBlocking(auth: Bool, timeout: Duration) throws -> MotoServer {
        let script = try scriptURL().path
        let process = Process()
        process.executableURL = try PythonProcess.executable()
        process.arguments = [script] + (auth ? [] : ["--no-auth"])
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice  // moto prints a traceback per unsigned request
        try process.run()
        let child = Child(process: process, input: input)
        func abandon(_ error: BuckiaError) -> BuckiaError {
            try? input.fileHandleForWriting.close()
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return error
        }

        guard let line = PythonProcess.readLine(from: output.fileHandleForReading.fileDescriptor, timeout: timeout) else {
            throw abandon(
                BuckiaError(.io, "moto_server.py printed nothing within \(timeout); run `python3 \(script)` by hand to see why."))
        }
        let data = Data(line.utf8)
        if let failure = try? JSONDecoder().decode(FailureLine.self, from: data) {
            if failure.missing == true {
                // The script's message names the interpreter and says to run `installHint`.
                throw abandon(BuckiaError(.notFound, "The S3 tests need moto: \(failure.error)"))
            }
            throw abandon(BuckiaError(.io, "moto did not start: \(failure.error)"))
        }
        // The line holds the secret: never put it in an error.
        guard let info = try? JSONDecoder().decode(StartupLine.self, from: data) else {
            throw abandon(BuckiaError(.io, "moto_server.py printed a line that is not its startup JSON."))
        }
        guard let endpoint = URL(string: info.endpoint), endpoint.host == "127.0.0.1" else {
            throw abandon(BuckiaError(.io, "moto_server.py printed an endpoint that is not on 127.0.0.1: \(info.endpoint)"))
        }
        return MotoServer(endpoint: endpoint, info: info, checksSignatures: auth, child: child)
    }
}
