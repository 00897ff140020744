import BuckiaB2
import BuckiaBunny
import BuckiaCore
import BuckiaGateway
import BuckiaHTTP
import BuckiaLocal
import BuckiaS3
import BuckiaSecurity
import BuckiaSigV4
import BuckiaTestSupport
import Foundation
import Testing

/// The fault matrix (issue 30): every HTTP provider × every operation × every fault the proxy
/// makes, aimed at each request an operation sends in turn — once (the request fails, its
/// retry does not) and from then on (every request after it fails too).
///
/// A cell passes when the operation either succeeds with every byte checked against the server
/// directly (not through the proxy), or fails with a typed ``BuckiaError`` after a bounded
/// number of requests — and, whichever it did, the server holds the old object or the whole
/// new one, never part of one. Where a retry is the contract (a lost connection, a 503, a
/// stalled body), the once-faulted cell must succeed. Waits between retries are recorded by
/// the retry policy's injected sleep, never slept. What each cell did is written to
/// `.build/reliability/fault-matrix-<backend>.json` for `Tools/fuzz/reliability`.
@Suite("Fault matrix: every HTTP provider × operation × fault")
struct FaultMatrixTests {
    @Test("Every operation survives every fault at every request it sends", arguments: MatrixBackend.allCases)
    func matrix(_ backend: MatrixBackend) async throws {
        let rig = try await MatrixRig.start(backend)
        defer { rig.stop() }
        var cells: [MatrixCell] = []
        for operation in MatrixOperation.allCases {
            if let needed = operation.needs, !rig.capabilities.supports(needed) {
                cells.append(MatrixCell(operation: operation, kind: "-", mode: .once, request: 0, outcome: .notSupported(needed.rawValue)))
                continue
            }
            let requests = try await rig.probe(operation)
            #expect(requests > 0, "\(backend) \(operation) sent no request through the proxy")
            // A whole object's body can be checked only against a checksum the server declares.
            let unchecked = operation == .get ? try await rig.declaresNoChecksum() : false
            for kind in FaultProxy.everyKind {
                for mode in MatrixMode.allCases {
                    if let reason = operation.undetectable(kind, checksumless: unchecked) ?? backend.meaningless(kind, mode) {
                        cells.append(MatrixCell(operation: operation, kind: kind, mode: mode, request: 0, outcome: .notInjected(reason)))
                        continue
                    }
                    for request in MatrixRig.aimedRequests(of: requests) {
                        let cell = try await rig.run(operation, kind: kind, mode: mode, request: request, cleanRequests: requests)
                        cells.append(cell)
                        cell.check(backend: backend)
                    }
                }
            }
        }
        let report = MatrixReport(backend: backend.description, cells: cells)
        try report.write()
        print("fault matrix, \(backend): \(report.summary)")
        #expect(report.injected > 0, "no fault was injected into \(backend)")
    }
}

/// The providers the matrix runs, each against the server the other tests use.
enum MatrixBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case s3 = "s3-moto"
    case b2
    case bunny
    case gateway = "s3-gateway"

    var description: String { rawValue }

    var dialect: FaultProxy.Dialect {
        switch self {
        case .s3, .gateway: .s3
        case .b2: .b2
        case .bunny: .bunny
        }
    }

    /// Whether the provider renews an expired authorization itself (B2's account token, which
    /// it obtains with the key it holds); the others sign with what they were given.
    var renewsAuthorization: Bool { self == .b2 }

    /// Why a cell means nothing for this provider: a credential it was given stays expired
    /// until a person renews it, so an authorization that expires for one request only is not
    /// a state its server can be in (the "always" column tests it).
    func meaningless(_ kind: String, _ mode: MatrixMode) -> String? {
        kind == "expired-auth" && mode == .once && !renewsAuthorization ? "a given credential does not expire for one request" : nil
    }
}

enum MatrixMode: String, CaseIterable, Sendable, Codable {
    /// Only the aimed request fails.
    case once
    /// The aimed request and every one after it fail.
    case always
}

enum MatrixOperation: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    case put, multipartPut = "multipart-put", get, rangedGet = "ranged-get", stat, list, delete, copy

    var description: String { rawValue }

    /// The capability an operation needs; a provider without it skips the row, and says so.
    var needs: Capability? {
        switch self {
        case .multipartPut: .multipartUpload
        case .rangedGet: .readWithRange
        case .copy: .serverSideCopy
        default: nil
        }
    }

    /// Why a fault is not injected into this operation, when no client can detect it: no
    /// checksum covers a byte range (S3's, B2's and Bunny's describe the whole object), so a
    /// flipped byte in a ranged answer is the transport's to catch (TLS, in production); and a
    /// whole object whose server declares no checksum for it (`checksumless`: the gateway over
    /// a folder, whose entity tags are not MD5s) can be damaged, or cut under a matching
    /// `Content-Length`, with nothing to tell.
    func undetectable(_ kind: String, checksumless: Bool) -> String? {
        if self == .rangedGet && kind == "corrupt" { return "no checksum covers a range; TLS guards it" }
        if checksumless && ["corrupt", "wrong-length"].contains(kind) { return "the server declares no checksum for the object; TLS guards it" }
        return nil
    }

    /// The range a ranged read asks for.
    static let range: Range<Int64> = 1_000..<30_000
}

/// What one cell did.
struct MatrixCell: Codable, Sendable {
    enum Outcome: Codable, Sendable, Equatable {
        /// Succeeded; every byte checked.
        case success
        /// Failed with this typed error code.
        case typedError(String)
        /// A delete whose answer was lost found nothing to delete on its retry: gone either way.
        case alreadyGone
        /// Returned or stored bytes that are not the object's: never acceptable.
        case wrongBytes(String)
        /// Failed with something that is not a ``BuckiaError``, or with a code no fault explains.
        case untyped(String)
        /// Did not end within the cell's bound.
        case hung
        case notSupported(String)
        case notInjected(String)
    }

    var operation: MatrixOperation
    var kind: String
    var mode: MatrixMode
    /// Which request of the operation the fault was aimed at (0: its first).
    var request: Int
    var outcome: Outcome
    /// Requests the operation sent (retries included) and faults the proxy applied to them.
    var sent = 0
    var applied = 0
    /// Requests the operation sends when nothing fails.
    var clean = 0
    /// Retries the client recorded (waits its retry policy was asked for).
    var retries = 0
    /// How long the operation took (reported, never asserted).
    var seconds = 0.0
    var message = ""

    /// The codes a fault may end an operation with; anything else is a bug.
    static let acceptedCodes: Set<String> = ["transient", "rateLimited", "unauthorized", "corrupt", "checksumMismatch", "io"]

    /// Records an issue for every way this cell broke the matrix's rules.
    func check(backend: MatrixBackend) {
        let name = "\(backend) \(operation) \(kind) \(mode) at request \(request)"
        switch outcome {
        case .wrongBytes(let what): Issue.record("\(name): wrong bytes accepted: \(what)")
        case .untyped(let what): Issue.record("\(name): not a typed error: \(what)")
        case .hung: Issue.record("\(name): did not end within 60 s")
        default: break
        }
        // Bounded: each request an operation sends gets at most three attempts (the policy's
        // maxAttempts), plus a few for a renewed authorization or upload URL.
        #expect(sent <= clean * 3 + 4, "\(name): \(sent) requests for an operation of \(clean)")
        guard applied > 0 else {
            // The fault did not apply to the request it was aimed at (no body to cut, say):
            // the operation saw no fault and must have succeeded.
            #expect(outcome == .success, "\(name): no fault applied, yet \(outcome) (\(message))")
            return
        }
        switch (mode, kind) {
        case (_, "slow"):
            #expect(outcome == .success, "\(name): a slow body is whole; the client must wait for it: \(outcome) (\(message))")
        case (.once, "wrong-length"):
            // A body one byte short under its own Content-Length: an object's fails its checksum
            // or its Content-Range and is fetched again; a document (XML, JSON) that no longer
            // parses is refused as corrupt, since the server sent it whole by its own account.
            #expect(
                outcome == .success || outcome == .typedError("corrupt"),
                "\(name): a short body is fetched again or refused as corrupt: \(outcome) (\(message))")
        case (.once, "expired-auth"):
            #expect(outcome == .success, "\(name): B2 renews its authorization and retries: \(outcome) (\(message))")
        case (.once, _):
            // One failed request: its retry succeeds.
            #expect(outcome == .success || outcome == .alreadyGone, "\(name): one fault, then a retry: \(outcome) (\(message))")
        case (.always, _):
            // Every request from the aimed one on fails. Aimed at the first, nothing can succeed
            // but an operation whose damaged answers it did not need (a short body after a PUT,
            // which the client does not read); aimed later, the faulted requests may be ones the
            // operation no longer needed (a folder a listing read ahead).
            var failed = outcome == .alreadyGone
            if case .typedError = outcome { failed = true }
            if request == 0 && kind != "wrong-length" {
                #expect(failed, "\(name): every request failed, yet \(outcome) (\(message))")
            }
            if failed && kind == "expired-auth" && !backend.renewsAuthorization {
                #expect(outcome == .typedError("unauthorized"), "\(name): an expired credential is unauthorized: \(outcome) (\(message))")
                #expect(retries == 0, "\(name): an expired credential is not retried (\(retries) retries)")
            }
        }
    }
}

/// A backend's cells, summed, and written for `Tools/fuzz/reliability`.
struct MatrixReport: Codable {
    var backend: String
    var cells: [MatrixCell]

    var injected: Int { cells.reduce(0) { $0 + $1.applied } }
    var run: [MatrixCell] { cells.filter { $0.sent > 0 } }

    var summary: String {
        let succeeded = run.filter { $0.outcome == .success || $0.outcome == .alreadyGone }.count
        let typed = run.filter { if case .typedError = $0.outcome { true } else { false } }.count
        let retries = run.reduce(0) { $0 + $1.retries }
        let skipped = cells.filter { $0.sent == 0 }.map { $0.kind == "-" ? "\($0.operation) (\($0.outcome))" : "\($0.operation) \($0.kind) \($0.mode.rawValue)" }
        return "\(run.count) cells, \(injected) faults injected: \(succeeded) succeeded with every byte checked, \(typed) ended in a typed error; \(retries) retries; not run: \(skipped.isEmpty ? "none" : skipped.joined(separator: ", "))"
    }

    /// Writes the report under the package's `.build/reliability/`.
    func write() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/reliability")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: folder.appendingPathComponent("fault-matrix-\(backend).json"), options: .atomic)
    }
}

/// A backend's server, the fault proxy in front of it, and providers pointed at either.
final class MatrixRig: Sendable {
    let backend: MatrixBackend
    let proxy: FaultProxy
    /// Straight to the server: what checks the cells.
    let direct: any StorageProvider
    private let build: @Sendable (URL, RetryPolicy) throws -> any StorageProvider
    private let teardown: @Sendable () -> Void
    /// The small object's bytes, and the large one's (above the multipart threshold).
    let small: Data
    let large: URL
    let largeData: Data
    let work: URL

    var capabilities: ProviderCapabilities { direct.capabilities }

    private init(
        backend: MatrixBackend, upstream: URL, work: URL, build: @escaping @Sendable (URL, RetryPolicy) throws -> any StorageProvider,
        teardown: @escaping @Sendable () -> Void
    ) throws {
        self.backend = backend
        self.work = work
        self.build = build
        self.teardown = teardown
        // The proxy gives up a stalled answer after 3 s; the providers after 2 s of silence.
        proxy = try FaultProxy.start(upstream: upstream, rate: 0, seed: 1, stall: .seconds(3), dialect: backend.dialect, slowPause: .milliseconds(150))
        direct = try build(upstream, .standard)
        var random = SplitMix64(seed: 30)
        small = Data((0..<40_000).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        // Two whole parts and a bit: three part uploads.
        let part = Int(direct.capabilities.uploadPartSize ?? 1_048_576)
        largeData = Data((0..<(2 * part + 1_000)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        large = work.appendingPathComponent("large.bin")
        try largeData.write(to: large)
    }

    func stop() {
        proxy.stop()
        teardown()
        try? FileManager.default.removeItem(at: work)
    }

    /// Starts `backend`'s server (or joins the shared one) and a proxy in front of it.
    static func start(_ backend: MatrixBackend) async throws -> MatrixRig {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-matrix-\(backend)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        // Stalls are given up after two seconds, before the proxy's three; connections after
        // two. (One second of silence was seen from moto on a loaded machine, with no fault.)
        let http = ["stallTimeoutSeconds": "2", "connectTimeoutSeconds": "2"]
        switch backend {
        case .s3:
            // moto without signature checks: it mis-verifies a listing's query holding `/`
            // (Docs/Testing.md). The gateway's row is the one whose signatures are checked.
            let server = try await S3TestServer.shared(auth: false)
            let bucket = uniqueBucketName("matrix")
            _ = try await harnessClient().send(server.signedRequest(.put, bucket: bucket))
            let (keyId, secret) = (server.accessKeyId, server.secretAccessKey.exposedValue)
            let state = work.appendingPathComponent("state").path
            return try MatrixRig(backend: backend, upstream: server.endpoint, work: work, build: { endpoint, policy in
                let configuration = BuckiaConfiguration(
                    provider: .s3, bucketName: bucket, authConfig: .awsSignature(accessKeyId: keyId, secretAccessKey: secret),
                    options: http.merging([
                        "endpoint": endpoint.absoluteString, "region": "us-east-1", "stateDirectory": state, "vendor": "moto",
                        "partSizeMiB": "5", "multipartThresholdMiB": "5",
                    ]) { $1 })
                return try S3Provider(settings: S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), retryPolicy: policy, resources: .tests)
            }, teardown: {})
        case .b2:
            let emulator = try await B2Emulator.start(buckets: ["matrix"], minimumPartSize: 65_536)
            return try MatrixRig(backend: backend, upstream: emulator.endpoint, work: work, build: { endpoint, policy in
                let configuration = emulator.configuration(
                    bucket: "matrix", options: http.merging(["endpoint": endpoint.absoluteString, "largeFileThreshold": "256K", "partSize": "128K"]) { $1 })
                return B2Provider(settings: try B2Settings.resolve(configuration, environment: [:]), retryPolicy: policy, resources: .tests)
            }, teardown: { emulator.stop() })
        case .bunny:
            let emulator = try await BunnyEmulator.start()
            return try MatrixRig(backend: backend, upstream: emulator.endpoint, work: work, build: { endpoint, policy in
                let configuration = emulator.configuration(options: http.merging(["endpoint": endpoint.absoluteString]) { $1 })
                return BunnyProvider(settings: try BunnySettings.resolve(configuration, environment: [:]), retryPolicy: policy, resources: .tests)
            }, teardown: { emulator.stop() })
        case .gateway:
            let root = work.appendingPathComponent("served")
            let local = try LocalProvider(root: root)
            let (accessKeyId, secret) = ("MATRIXADMIN", Secret("matrix-admin-secret-\(UUID().uuidString)"))
            let keys = try GatewayKeys(signingKey: UserTokenSigningKey.generate(keyId: "gw"), derivationKey: Secret(String(repeating: "k", count: 40)))
            let gateway = try S3Gateway(provider: local, authenticator: GatewayAuthenticator(keys: keys, staticKeys: [accessKeyId: secret]))
            let server = try HTTPServer(handler: gateway)
            guard let endpoint = URL(string: "http://127.0.0.1:\(server.port)") else { throw BuckiaError(.io, "no gateway URL") }
            let bucket = "matrix"
            let signer = SigV4Signer(credentials: AWSCredentials(accessKeyId: accessKeyId, secretAccessKey: secret), region: "us-east-1", service: "s3")
            let url = endpoint.appendingPathComponent(bucket)
            var request = HTTPRequest(.put, url)
            for (name, value) in signer.sign(method: "PUT", url: url, headers: [:], payloadHash: Hashing.sha256Hex(Data()), date: Date()) {
                request.headers.set(name, value)
            }
            _ = try await harnessClient().send(request)
            var options = http.merging([
                "region": "us-east-1", "vendor": "buckia", "allowHTTP": "true", "addressingStyle": "path", "partSizeMiB": "5", "multipartThresholdMiB": "5",
            ]) { $1 }
            if !local.capabilities.supports(.userMetadata) { options["userMetadata"] = "false" }
            if !local.capabilities.supports(.conditionalWrite) { options["conditionalWrites"] = "false" }
            let state = work.appendingPathComponent("state").path
            let fixed = options
            return try MatrixRig(backend: backend, upstream: endpoint, work: work, build: { endpoint, policy in
                let configuration = BuckiaConfiguration(
                    provider: .s3, bucketName: bucket, authConfig: .awsSignature(accessKeyId: accessKeyId, secretAccessKey: secret.exposedValue),
                    options: fixed.merging(["endpoint": endpoint.absoluteString, "stateDirectory": state]) { $1 })
                return try S3Provider(settings: S3Settings.resolve(configuration, environment: [:], home: TestHome.empty), retryPolicy: policy, resources: .tests)
            }, teardown: {
                _ = server.stop(timeout: .seconds(10))
                try? gateway.close()
            })
        }
    }

    /// A provider through the proxy, whose retry policy records its waits instead of sleeping.
    private func faulted() throws -> (any StorageProvider, Locked<[Duration]>) {
        let waits = Locked<[Duration]>([])
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), sleep: { wait in waits.withLock { $0.append(wait) } })
        return (try build(proxy.endpoint, policy), waits)
    }

    /// Which requests of an operation sending `count` the faults are aimed at: its first,
    /// middle and last (what CI runs), or every one with `BUCKIA_FAULT_MATRIX=full`
    /// (`Tools/fuzz/reliability --long`).
    static func aimedRequests(of count: Int) -> [Int] {
        if ProcessInfo.processInfo.environment["BUCKIA_FAULT_MATRIX"] == "full" { return Array(0..<count) }
        return Array(Set([0, count / 2, count - 1])).sorted()
    }

    /// Whether the server declares no checksum for an object (the direct provider's `stat`).
    func declaresNoChecksum() async throws -> Bool {
        let key = try ObjectKey("m/checksum-\(UUID().uuidString.prefix(8)).bin")
        _ = try await direct.uploadData(small, remotePath: key, options: UploadOptions())
        guard let file = try await direct.stat(remotePath: key) else { throw BuckiaError.notFound(key, operation: "stat") }
        return file.checksums.isEmpty
    }

    /// The requests `operation` sends through the proxy when nothing fails.
    func probe(_ operation: MatrixOperation) async throws -> Int {
        let cell = try await run(operation, kind: "503", mode: .once, request: 1_000_000, cleanRequests: 0)
        guard cell.outcome == .success else {
            throw BuckiaError(.io, "\(backend) \(operation) fails with no fault injected: \(cell.outcome) \(cell.message)")
        }
        return cell.sent
    }

    /// Runs one cell: sets up what the operation needs (directly), aims the fault, runs the
    /// operation through the proxy, and checks what the server then holds (directly).
    func run(_ operation: MatrixOperation, kind: String, mode: MatrixMode, request: Int, cleanRequests: Int) async throws -> MatrixCell {
        let base = "m/\(operation)/\(kind)/\(mode)/\(request)/\(UUID().uuidString.prefix(8))"
        let key = try ObjectKey("\(base)/object.bin")
        let copyKey = try ObjectKey("\(base)/copy.bin")
        let listed = try (0..<3).map { try ObjectKey("\(base)/list/item-\($0).bin") }
        switch operation {
        case .put, .multipartPut: break
        case .list: for item in listed { _ = try await direct.uploadData(small, remotePath: item, options: UploadOptions()) }
        default: _ = try await direct.uploadData(small, remotePath: key, options: UploadOptions())
        }
        let (provider, waits) = try faulted()
        _ = try await provider.connect()
        try await proxy.arm(kind, skip: request, count: mode == .once ? 1 : 1_000)
        var cell = MatrixCell(operation: operation, kind: kind, mode: mode, request: request, outcome: .success, clean: cleanRequests)
        let started = ContinuousClock.now
        let result = await Self.bounded {
            switch operation {
            case .put: _ = try await provider.uploadData(self.small, remotePath: key, options: UploadOptions())
            case .multipartPut: _ = try await provider.uploadFile(localURL: self.large, remotePath: key, options: UploadOptions())
            case .get: return try await provider.readData(remotePath: key, options: ReadOptions())
            case .rangedGet: return try await provider.readData(remotePath: key, options: ReadOptions(range: MatrixOperation.range))
            case .stat:
                guard let file = try await provider.stat(remotePath: key) else { return Data("missing".utf8) }
                return Data("\(file.size)".utf8)
            case .list: return Data(try await provider.listFiles(path: base).map(\.path.rawValue).sorted().joined(separator: "\n").utf8)
            case .delete: try await provider.deleteFile(remotePath: key)
            case .copy: _ = try await provider.copyFile(from: key, to: copyKey)
            }
            return nil
        }
        let elapsed = ContinuousClock.now - started
        cell.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        try await proxy.disarm()
        let stats = try await proxy.stats()
        cell.sent = stats.armed.seen
        cell.applied = stats.armed.applied
        cell.retries = waits.withLock { $0.count }

        switch result {
        case .none:
            cell.outcome = .hung
            return cell
        case .some(.failure(let error)):
            if let error = error as? BuckiaError {
                cell.message = error.message
                if operation == .delete && error.code == .notFound {
                    cell.outcome = .alreadyGone
                } else if MatrixCell.acceptedCodes.contains(error.code.description), !error.message.isEmpty {
                    cell.outcome = .typedError(error.code.description)
                } else {
                    cell.outcome = .untyped("\(error.code.description): \(error.message)")
                }
            } else {
                cell.outcome = .untyped(String(describing: error))
            }
        case .some(.success(let returned)):
            switch operation {
            case .get where returned != small: cell.outcome = .wrongBytes("read \(returned?.count ?? 0) bytes that are not the object's")
            case .rangedGet where returned != small[Int(MatrixOperation.range.lowerBound)..<Int(MatrixOperation.range.upperBound)]:
                cell.outcome = .wrongBytes("read \(returned?.count ?? 0) bytes that are not the range's")
            case .stat where returned != Data("\(small.count)".utf8):
                cell.outcome = .wrongBytes("described as \(String(decoding: returned ?? Data(), as: UTF8.self)), not \(small.count) bytes")
            case .list where returned != Data(listed.map(\.rawValue).joined(separator: "\n").utf8):
                cell.outcome = .wrongBytes("listed \(String(decoding: returned ?? Data(), as: UTF8.self))")
            default: break
            }
        }
        // Whatever the operation reported, the server holds the old state or the whole new one.
        switch operation {
        case .put, .multipartPut:
            let expected = operation == .put ? small : largeData
            let stored = try await storedBytes(key)
            if case .success = cell.outcome, stored != expected {
                cell.outcome = .wrongBytes("reported stored, but the server holds \(stored?.count ?? -1) other bytes")
            } else if let stored, stored != expected {
                cell.outcome = .wrongBytes("the server holds \(stored.count) bytes that are neither nothing nor the upload")
            }
        case .delete:
            let stored = try await storedBytes(key)
            if cell.outcome == .success || cell.outcome == .alreadyGone, stored != nil {
                cell.outcome = .wrongBytes("reported deleted, but the object is still there")
            } else if let stored, stored != small {
                cell.outcome = .wrongBytes("the object changed")
            }
        case .copy:
            let stored = try await storedBytes(copyKey)
            if case .success = cell.outcome, stored != small {
                cell.outcome = .wrongBytes("reported copied, but the copy holds \(stored?.count ?? -1) other bytes")
            } else if let stored, stored != small {
                cell.outcome = .wrongBytes("the copy holds \(stored.count) bytes that are not the source's")
            }
        default: break
        }
        return cell
    }

    /// The object's bytes read directly, or nil when there is none.
    private func storedBytes(_ key: ObjectKey) async throws -> Data? {
        guard try await direct.stat(remotePath: key) != nil else { return nil }
        return try await direct.readData(remotePath: key, options: ReadOptions())
    }

    /// Runs `body`, or gives up on it after 60 s (nil: a hang, which the cell reports).
    private static func bounded(_ body: @escaping @Sendable () async throws -> Data?) async -> Result<Data?, any Error>? {
        await withTaskGroup(of: Result<Data?, any Error>?.self) { group in
            group.addTask {
                do { return .success(try await body()) } catch { return .failure(error) }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(60))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
