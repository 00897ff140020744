// The S3 servers the S3 tests start and stop themselves: moto (`Resources/moto_server.py`) and
// Ceph's RADOS Gateway (`Tests/Emulators/ceph_rgw.sh`).
//
// moto's signature checking. By default moto checks no signature at all, so a test that relies
// on it to catch a signing bug proves nothing. The script sets `INITIAL_NO_AUTH_ACTION_COUNT=3`
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
// `retryPolicy: .none`. Presigned-URL tests use `S3TestServer.moto(auth: false)`, which checks
// nothing and hands out dummy credentials.
//
// Ceph RGW checks what AWS checks: every signature (header and presigned), Content-MD5 and the
// payload hash. It runs as one memstore OSD, a monitor, a manager and the gateway, all children
// of the script (about 13 s to start; Docs/Testing.md), and is what proves the S3 provider
// against a real distributed object store rather than a mock.
//
// Lifetime. One server per kind is shared by the whole test process; tests keep apart by using
// unique bucket names (`uniqueBucketName()`). Each listens on 127.0.0.1 only, on a port it
// picks and prints in a JSON line. Each exits when its stdin reaches EOF — so it dies with the
// test process, however that ends — on SIGTERM, or after an hour. ``stop()`` closes stdin; moto
// is then killed at once, the Ceph script is given time to stop its daemons and remove its
// folder.

import BuckiaCore
import BuckiaSigV4
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running S3 test server and the credentials it accepts.
public final class S3TestServer: Sendable {
    /// Which server runs.
    public enum Kind: String, Sendable, CustomStringConvertible {
        case moto
        case cephRGW = "ceph-rgw"

        public var description: String { self == .moto ? "moto" : "Ceph RGW" }
    }

    public let kind: Kind
    /// `http://127.0.0.1:PORT`; buckets are addressed path-style (`endpoint/bucket/key`).
    public let endpoint: URL
    /// The access key id the script created.
    public let accessKeyId: String
    /// That key's secret.
    public let secretAccessKey: Secret
    /// The region to sign for: `us-east-1`.
    public let region: String
    /// Whether the server verifies header signatures (false for moto's `auth: false` server).
    public let checksSignatures: Bool

    /// The server's process (``Spawned``: its end is seen whatever another child holds).
    private let child: Spawned

    private init(kind: Kind, endpoint: URL, info: StartupLine, checksSignatures: Bool, child: Spawned) {
        self.kind = kind
        self.endpoint = endpoint
        self.accessKeyId = info.accessKeyId
        self.secretAccessKey = Secret(info.secretAccessKey)
        self.region = info.region
        self.checksSignatures = checksSignatures
        self.child = child
    }

    deinit { stop() }

    /// The credentials the server accepts.
    public var credentials: AWSCredentials {
        AWSCredentials(accessKeyId: accessKeyId, secretAccessKey: secretAccessKey)
    }

    /// A path-style URL for a bucket, or an object when `key` is given (encoded per segment).
    public func url(bucket: String, key: String? = nil) -> URL {
        var url = endpoint.appendingPathComponent(bucket)
        if let key {
            for segment in key.split(separator: "/", omittingEmptySubsequences: false) {
                url = url.appendingPathComponent(String(segment))
            }
        }
        return url
    }

    // MARK: Starting and stopping

    /// The moto server shared by every test of this process, started on first use.
    public static func shared(auth: Bool = true) async throws -> S3TestServer {
        try await (auth ? sharedAuth : sharedNoAuth).value
    }

    /// The shared server of `kind` (moto with signatures checked).
    public static func shared(_ kind: Kind) async throws -> S3TestServer {
        switch kind {
        case .moto: try await sharedAuth.value
        case .cephRGW: try await sharedRGW.value
        }
    }

    private static let sharedAuth = Task { try await start(auth: true) }
    private static let sharedNoAuth = Task { try await start(auth: false) }
    private static let sharedRGW = Task { try await startRGW() }

    /// Starts a moto server of its own and waits for its JSON line.
    ///
    /// The blocking wait runs on a Dispatch thread, never on the cooperative pool.
    /// - Parameters:
    ///   - auth: Whether moto checks SigV4 header signatures (see the top of this file).
    ///   - timeout: How long moto may take to import and start; cold imports are slow.
    /// - Throws: `notFound` when python3, moto or boto3 is missing (the message says how to
    ///   install them); `io` when the server does not start in time.
    public static func start(auth: Bool = true, timeout: Duration = .seconds(60)) async throws -> S3TestServer {
        try await offPool {
            let script = try motoScript()
            return try launch(
                .moto, executable: try PythonProcess.executable(), arguments: [script.path] + (auth ? [] : ["--no-auth"]),
                checksSignatures: auth, timeout: timeout,
                installHint: "python3 -m pip install 'moto[server]'", rerun: "python3 \(script.path)")
        }
    }

    /// Starts a Ceph cluster and RADOS Gateway of its own (`Tests/Emulators/ceph_rgw.sh serve`)
    /// in a fresh temporary folder, and waits for its JSON line.
    /// - Throws: `notFound` when Ceph's packages are missing (Tools/test installs them); `io`
    ///   when the cluster does not come up in `timeout`.
    public static func startRGW(timeout: Duration = .seconds(180)) async throws -> S3TestServer {
        try await offPool {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Emulators/ceph_rgw.sh")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-rgw-\(UUID().uuidString)")
            return try launch(
                .cephRGW, executable: URL(fileURLWithPath: "/bin/bash"), arguments: [script.path, "serve", folder.path],
                checksSignatures: true, timeout: timeout,
                installHint: "apt-get install ceph-mon ceph-mgr ceph-osd radosgw ceph-common",
                rerun: "bash \(script.path) start /tmp/rgw")
        }
    }

    /// Stops the server: closes its stdin and reaps it. moto is killed at once; the Ceph script
    /// stops its daemons and removes its folder when its stdin closes, and is killed only if it
    /// has not exited within 30 s. Safe to call twice.
    public func stop() {
        child.closeInput()
        if kind == .cephRGW { _ = child.wait(.seconds(30)) }
        child.stop()
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

    private static func motoScript() throws -> URL {
        if let url = Bundle.module.url(forResource: "moto_server", withExtension: "py", subdirectory: "Resources") {
            return url
        }
        throw BuckiaError(.notFound, "moto_server.py is missing from the BuckiaTestSupport bundle.")
    }

    private static func launch(
        _ kind: Kind, executable: URL, arguments: [String], checksSignatures: Bool, timeout: Duration, installHint: String, rerun: String
    ) throws -> S3TestServer {
        // Standard error to /dev/null: moto prints a traceback per unsigned request.
        let child = try Spawned(executable, arguments, input: .pipe, output: .pipe)
        func abandon(_ error: BuckiaError) -> BuckiaError {
            child.closeInput()
            if kind == .cephRGW { _ = child.wait(.seconds(30)) }
            child.stop()
            return error
        }

        guard let line = child.readLine(timeout: timeout) else {
            throw abandon(BuckiaError(.io, "The \(kind) server printed nothing within \(timeout); run `\(rerun)` by hand to see why."))
        }
        let data = Data(line.utf8)
        if let failure = try? JSONDecoder().decode(FailureLine.self, from: data) {
            if failure.missing == true {
                throw abandon(BuckiaError(.notFound, "The S3 tests need \(kind): \(failure.error) (\(installHint))."))
            }
            throw abandon(BuckiaError(.io, "The \(kind) server did not start: \(failure.error)"))
        }
        // The line holds the secret: never put it in an error.
        guard let info = try? JSONDecoder().decode(StartupLine.self, from: data) else {
            throw abandon(BuckiaError(.io, "The \(kind) server printed a line that is not its startup JSON."))
        }
        guard let endpoint = URL(string: info.endpoint), endpoint.host == "127.0.0.1" else {
            throw abandon(BuckiaError(.io, "The \(kind) server printed an endpoint that is not on 127.0.0.1: \(info.endpoint)"))
        }
        return S3TestServer(kind: kind, endpoint: endpoint, info: info, checksSignatures: checksSignatures, child: child)
    }
}
