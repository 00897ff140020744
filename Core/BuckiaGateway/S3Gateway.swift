import BuckiaCore
import BuckiaProviderKit
import BuckiaSecurity
import BuckiaSigV4
import Foundation

/// How an ``S3Gateway`` serves its remote.
public struct S3GatewayOptions: Sendable {
    /// The folder of the remote whose subfolders are the buckets (`""`: the remote's root).
    public var root: String = ""
    /// The region the gateway names in `GetBucketLocation`; requests signed for any region are accepted.
    public var region = "us-east-1"
    /// Where a multipart upload's part waits, for the length of its request, on its way to a
    /// backend that takes parts from a file (S3, B2, the parts kept in any other backend): a
    /// private folder the gateway creates and removes (under the system's temporary folder when
    /// nil). A local folder takes its parts straight into place, with no wait here.
    public var stagingDirectory: URL?
    /// The largest single PUT or part, in bytes (S3's 5 GiB).
    public var maximumPartSize: Int64 = 5 << 30
    /// The smallest part but the last of a multipart upload (S3's 5 MiB).
    public var minimumPartSize: Int64 = 5 << 20
    /// How long after it started a multipart upload is aborted, its parts deleted, as S3's
    /// lifecycle rule `AbortIncompleteMultipartUpload` does (checked by whichever gateway
    /// starts an upload next, at most once a minute); nil keeps them until they are aborted.
    public var abandonedUploadLifetime: Duration? = .seconds(24 * 3600)
    /// Called once per request, after its response, with what the access log records.
    public var log: (@Sendable (S3AccessLogEntry) -> Void)?
    /// The clock signatures and conditions are checked against.
    public var clock: @Sendable () -> Date = { Date() }
    /// What a delivery (a PUT allowed by a `deliver` grant alone) may be.
    public var delivery = DeliveryRules()
    /// Which logins STS's `AssumeRoleWithWebIdentity` (a form POST to `/`) trades for temporary
    /// credentials, and with which grants; nil answers every STS call `InvalidAction`.
    public var webIdentity: WebIdentityPolicy?

    /// The defaults.
    public init() {}
}

/// What the gateway lets a `deliver` grant put: a new object, never a replacement (the gateway
/// makes every delivery `If-None-Match: *` whatever the client sends), of a bounded size, with
/// a change file's name. Nothing else a deliverer sends is accepted: reads, listings, copies,
/// deletes and multipart uploads need their own grants.
public struct DeliveryRules: Sendable, Hashable {
    /// The largest delivery, in bytes (4 MiB by default: a change file of a few thousand rows).
    public var maximumSize: Int64 = 4 << 20
    /// The extensions a delivered name may have after its KSUID: a delivery is named
    /// `<27-character KSUID>.<extension>`, as `DatabaseManager.send` names a change file
    /// (`.sqlite`) or a sealed one (`.sealed`).
    public var extensions: Set<String> = ["sqlite", "sealed"]

    /// The defaults.
    public init() {}

    /// Throws `AccessDenied` unless `name` (a key's last segment) is a delivery's name.
    func checkName(_ name: Substring) throws {
        guard let dot = name.firstIndex(of: "."), KSUID(String(name[..<dot])) != nil, extensions.contains(String(name[name.index(after: dot)...])) else {
            throw S3Failure(
                "AccessDenied",
                "Access Denied: a delivery is named <KSUID>.<extension> (\(extensions.sorted().joined(separator: ", "))); \(String(name).debugDescription) is not.")
        }
    }
}

/// One request as the access log records it: never a signature, a token or a query string.
public struct S3AccessLogEntry: Sendable, Hashable, Codable {
    /// When the request arrived.
    public var time: Date
    /// The user (a session token's subject), the static key's id, or `-` when unauthenticated.
    public var principal: String
    /// The S3 operation (`GetObject`, `ListObjectsV2`, …), or `-` when the request was refused
    /// before one was chosen.
    public var operation: String
    /// The method.
    public var method: String
    /// The bucket and key, decoded (no query string: presigned URLs carry credentials in it).
    public var resource: String
    /// The status answered.
    public var status: Int
    /// The S3 error code, when the answer is an error.
    public var errorCode: String?
    /// How the body was signed: `signed` (its SHA-256), `UNSIGNED-PAYLOAD`, or the streaming
    /// form (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`, …); `-` when the request was not authenticated.
    public var payload: String
    /// Body bytes received (decoded) and sent.
    public var bytesIn: Int64
    public var bytesOut: Int64
    /// How long the request took, in milliseconds.
    public var milliseconds: Double

    /// The entry as one line of text.
    public var line: String {
        let stamp = S3Gateway.isoDate(time)
        return "\(stamp) \(principal) \(operation) \(method) \(resource.debugDescription) \(status)\(errorCode.map { " " + $0 } ?? "") in=\(bytesIn) out=\(bytesOut) \(Self.tenths(milliseconds))ms"
    }

    /// `value` with one decimal, as `%.1f` writes it, without Foundation's formatter (a tenth of
    /// a small request's log line went to it).
    static func tenths(_ value: Double) -> String {
        guard value.isFinite, value >= 0, value < 1e15 else { return String(format: "%.1f", value) }
        let tenths = Int((value * 10).rounded(.toNearestOrEven))
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// An S3 API in front of any ``BuckiaCore/StorageProvider``, which enforces Buckia grants on
/// every request: `buckia serve s3`.
///
/// The remote's top-level folders are the buckets, as `rclone serve s3` has them. Requests are
/// signed with SigV4 by a static key pair (full access) or by temporary credentials whose
/// session token carries the grants (``GatewayAuthenticator``); every key an operation touches
/// is checked with ``BuckiaSecurity/StorageGrants/permits(_:key:)`` before the backend sees it,
/// and listings show only what the grants allow to list. Bodies stream through the backend's
/// own transfers with memory bounded per request; a body whose signature, length or checksum
/// fails is never stored. What the gateway does not implement answers `NotImplemented`.
///
/// Serve it with ``HTTPServer``:
///
/// ```swift
/// let gateway = try S3Gateway(provider: provider, authenticator: authenticator)
/// let server = try HTTPServer(port: 8333, handler: gateway)
/// ```
public final class S3Gateway: HTTPServerHandler, Sendable {
    let provider: any StorageProvider
    let authenticator: GatewayAuthenticator
    let options: S3GatewayOptions
    /// The private folder under ``S3GatewayOptions/stagingDirectory`` where parts wait.
    package let staging: URL
    let state = Locked(GatewayState())

    struct GatewayState {
        /// Buckets seen to exist (a record or an object in the backend), and when: believed
        /// for ``S3Gateway/bucketBelief`` seconds.
        var knownBuckets: [String: Date] = [:]
        /// The keys deliveries are being stored at: a second delivery to one of them fails at
        /// once, as its `If-None-Match: *` would once the first is stored.
        var deliveries: Set<String> = []
        /// Records of uploads a backend holds (``Capability/partUploads``), read once each:
        /// a record never changes.
        var uploadRecords: [String: BackendUploadRecord] = [:]
        /// When this gateway last swept the backend for abandoned uploads.
        var lastSweep: Date?
    }

    /// A gateway for `provider`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError`` when the staging folder cannot be made, or the root
    ///   is not a folder key.
    public init(provider: any StorageProvider, authenticator: GatewayAuthenticator, options: S3GatewayOptions = S3GatewayOptions()) throws {
        var options = options
        if !options.root.isEmpty && !options.root.hasSuffix("/") { options.root += "/" }
        try ObjectKey.validatePrefix(options.root)
        if options.webIdentity != nil, authenticator.issuingKeys == nil {
            throw BuckiaError(
                .invalidConfiguration, "A gateway that answers AssumeRoleWithWebIdentity needs the keys temporary credentials are issued with.")
        }
        if provider.capabilities.supports(.partUploads) {
            self.provider = provider
        } else {
            // Parts kept in the backend itself, under the reserved folder no grant reaches, so
            // any gateway over the backend serves an upload another started.
            self.provider = try PartStagingProvider(base: provider, prefix: options.root + Self.reservedFolder + "/staged/", clock: options.clock)
        }
        self.authenticator = authenticator
        self.options = options
        let parent = options.stagingDirectory ?? FileManager.default.temporaryDirectory
        staging = parent.appendingPathComponent("buckia-gateway-\(UUID().uuidString)", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw BuckiaError.wrapping(error, operation: "serve s3", path: staging.path)
        }
    }

    /// Removes the staging folder (parts on their way to the backend).
    public func close() throws {
        do {
            try FileManager.default.removeItem(at: staging)
        } catch {
            throw BuckiaError.wrapping(error, operation: "serve s3", path: staging.path)
        }
    }

    // MARK: - Requests

    public func respond(to request: HTTPServerRequest, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let started = options.clock()
        let began = ContinuousClock.now
        var context = RequestContext(request: request)
        var response: HTTPServerResponse
        do {
            response = try handle(&context, body: body)
        } catch {
            let failure = S3Failure(error)
            context.errorCode = failure.code
            response = failure.response(resource: context.resource, requestId: context.requestId)
        }
        response.headers.append(("x-amz-request-id", context.requestId))
        response.headers.append(("Server", "Buckia"))
        if let log = options.log {
            let sent: Int64
            switch response.body {
            case .data(let data): sent = Int64(data.count)
            case .stream(let length, _): sent = length ?? -1
            }
            let elapsed = ContinuousClock.now - began
            let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            log(
                S3AccessLogEntry(
                    time: started, principal: context.principal?.name ?? "-", operation: context.operation, method: request.method,
                    resource: context.resource, status: response.status, errorCode: context.errorCode,
                    payload: context.authentication.map { $0.authorization.payloadHash.utf8.count == 64 ? "signed" : $0.authorization.payloadHash } ?? "-",
                    bytesIn: context.bytesIn, bytesOut: sent,
                    milliseconds: milliseconds))
        }
        return response
    }

    /// What one request carries through its handling.
    struct RequestContext {
        let request: HTTPServerRequest
        let requestId = RequestContext.nextRequestId()
        var principal: GatewayPrincipal?
        var authentication: GatewayAuthentication?
        var operation = "-"
        var resource = "/"
        var errorCode: String?
        var bytesIn: Int64 = 0
        var bucket = ""
        var key = ""
        var query: [String: String] = [:]

        init(request: HTTPServerRequest) { self.request = request }

        /// This process's random half of every request id, and how many it has handed out.
        private static let requestIds = (prefix: UInt32.random(in: .min ... .max), count: Locked<UInt32>(0))

        /// Sixteen hex digits, as S3's ids are: this process's random half, then a count, so
        /// ids from a fleet of gateways do not collide and making one costs no system call.
        static func nextRequestId() -> String {
            let count = requestIds.count.withLock { count in
                count &+= 1
                return count
            }
            let value = UInt64(requestIds.prefix) << 32 | UInt64(count)
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }

        /// The header `name` when sent once; a repeated one is refused.
        func header(_ name: String) throws -> String? {
            let values = request.values(name)
            guard values.count <= 1 else { throw S3Failure("InvalidArgument", "The header \(name) is sent more than once.") }
            return values.first
        }
    }

    private func handle(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let target = context.request.target
        let question = target.firstIndex(of: "?")
        let rawPath = question.map { String(target[..<$0]) } ?? target
        guard rawPath.hasPrefix("/"), let path = Self.percentDecoded(rawPath[...]) else {
            throw S3Failure("InvalidURI", "The request path could not be parsed.")
        }
        var query: [String: String] = [:]
        if let question {
            for pair in target[target.index(after: question)...].split(separator: "&", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = Self.percentDecoded(parts[0]), let value = parts.count > 1 ? Self.percentDecoded(parts[1]) : ""
                else { throw S3Failure("InvalidURI", "The query string could not be parsed.") }
                guard query.updateValue(value, forKey: name) == nil else { throw S3Failure("InvalidArgument", "The query names \(name) twice.") }
            }
        }
        context.query = query
        let trimmed = path.dropFirst()
        if let slash = trimmed.firstIndex(of: "/") {
            context.bucket = String(trimmed[..<slash])
            context.key = String(trimmed[trimmed.index(after: slash)...])
        } else {
            context.bucket = String(trimmed)
        }
        context.resource = path
        if Self.isSTSRequest(context) { return stsResponse(&context, body: body) }
        if Self.isPostObject(context) { return try postObject(&context, body: body) }

        let signed = SigV4Request(method: context.request.method, target: target, headers: context.request.headers)
        let authentication: GatewayAuthentication
        do {
            authentication = try authenticator.authenticateRequest(signed)
        } catch {
            // An anonymous request for a bucket that does not exist learns that, as from S3.
            if context.request.values("authorization").isEmpty, query["X-Amz-Signature"] == nil, Self.isBucketName(context.bucket) {
                try requireBucket(context.bucket)
            }
            throw S3Failure(error.code, error.message, status: error.status)
        }
        context.authentication = authentication
        context.principal = authentication.principal

        let method = context.request.method
        if context.bucket.isEmpty {
            guard method == "GET" else { throw S3Failure.unsupportedFeature("\(method) on the service") }
            context.operation = "ListBuckets"
            return try listBuckets(context)
        }
        try Self.checkBucketName(context.bucket)
        if context.key.isEmpty {
            return try bucketRequest(&context, body: body)
        }
        return try objectRequest(&context, body: body)
    }

    /// The subresources of a bucket request this gateway reads; any other is `NotImplemented`.
    private static let bucketQueries: Set<String> = [
        "list-type", "prefix", "delimiter", "marker", "start-after", "continuation-token", "max-keys", "encoding-type", "fetch-owner", "uploads",
        "delete", "location", "key-marker", "upload-id-marker", "max-uploads", "x-id", "versions", "versioning", "version-id-marker",
    ]

    private func bucketRequest(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let method = context.request.method
        try Self.refuseUnknownQueries(context.query, known: Self.bucketQueries)
        switch method {
        case "GET" where context.query["location"] != nil:
            context.operation = "GetBucketLocation"
            try requireBucketVisible(context)
            try requireBucket(context.bucket)
            let constraint = options.region == "us-east-1" ? "" : options.region.xmlEscaped
            return Self.xml("<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\(constraint)</LocationConstraint>")
        case "GET" where context.query["uploads"] != nil:
            context.operation = "ListMultipartUploads"
            return try listUploads(context)
        case "GET" where context.query["versioning"] != nil:
            context.operation = "GetBucketVersioning"
            try requireBucketVisible(context)
            try requireBucket(context.bucket)
            // Never enabled: S3 answers an empty configuration, with no Status.
            return Self.xml("<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>")
        case "GET" where context.query["versions"] != nil:
            context.operation = "ListObjectVersions"
            return try listObjects(context, versions: true)
        case "GET":
            context.operation = context.query["list-type"] == "2" ? "ListObjectsV2" : "ListObjects"
            return try listObjects(context)
        case "HEAD":
            context.operation = "HeadBucket"
            try requireBucketVisible(context)
            try requireBucket(context.bucket)
            return HTTPServerResponse(status: 200, headers: [("x-amz-bucket-region", options.region)])
        case "PUT":
            context.operation = "CreateBucket"
            return try createBucket(&context, body: body)
        case "DELETE":
            context.operation = "DeleteBucket"
            return try deleteBucket(context)
        case "POST" where context.query["delete"] != nil:
            context.operation = "DeleteObjects"
            return try deleteObjects(&context, body: body)
        default:
            throw S3Failure.unsupportedFeature("\(method) on a bucket")
        }
    }

    /// The subresources of an object request this gateway reads; any other is `NotImplemented`.
    private static let objectQueries: Set<String> = [
        "uploadId", "partNumber", "uploads", "x-id", "max-parts", "part-number-marker", "attributes", "response-content-type", "response-content-language",
        "response-expires", "response-cache-control", "response-content-disposition", "response-content-encoding",
        "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token",
    ]

    private func objectRequest(_ context: inout RequestContext, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let method = context.request.method
        try Self.refuseUnknownQueries(context.query, known: Self.objectQueries)
        if Self.isFolderMarker(context) { return try folderMarkerRequest(&context, body: body) }
        let uploadId = context.query["uploadId"]
        switch method {
        case "GET" where uploadId != nil:
            context.operation = "ListParts"
            return try listParts(context, uploadId: uploadId ?? "")
        case "GET" where context.query["attributes"] != nil:
            context.operation = "GetObjectAttributes"
            return try objectAttributes(context)
        case "GET", "HEAD":
            context.operation = method == "GET" ? "GetObject" : "HeadObject"
            return try getObject(context, head: method == "HEAD")
        case "PUT" where uploadId != nil:
            context.operation = "UploadPart"
            return try uploadPart(&context, uploadId: uploadId ?? "", body: body)
        case "PUT" where context.request.values("x-amz-copy-source").isEmpty == false:
            context.operation = "CopyObject"
            return try copyObject(&context)
        case "PUT":
            context.operation = "PutObject"
            return try putObject(&context, body: body)
        case "DELETE" where uploadId != nil:
            context.operation = "AbortMultipartUpload"
            return try abortUpload(context, uploadId: uploadId ?? "")
        case "DELETE":
            context.operation = "DeleteObject"
            return try deleteObject(context)
        case "POST" where context.query["uploads"] != nil:
            context.operation = "CreateMultipartUpload"
            return try createUpload(&context)
        case "POST" where uploadId != nil:
            context.operation = "CompleteMultipartUpload"
            return try completeUpload(&context, uploadId: uploadId ?? "", body: body)
        default:
            throw S3Failure.unsupportedFeature("\(method) on an object")
        }
    }

    private static func refuseUnknownQueries(_ query: [String: String], known: Set<String>) throws {
        if let unknown = query.keys.sorted().first(where: { !known.contains($0) }) {
            throw S3Failure.unsupportedFeature("the ?\(unknown) subresource")
        }
    }

    /// `text` with its `%XX` escapes decoded, or nil when an escape is malformed or the bytes are
    /// not UTF-8. (`+` stays `+`: S3 paths and SigV4 queries encode a space as `%20`.)
    static func percentDecoded(_ text: Substring) -> String? {
        let utf8 = text.utf8
        guard utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first < utf8.endIndex else { return nil }
                let second = utf8.index(after: first)
                guard second < utf8.endIndex, let high = hex(utf8[first]), let low = hex(utf8[second]) else { return nil }
                bytes.append(high << 4 | low)
                index = utf8.index(after: second)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// S3's bucket name rules, loosened to what a folder name may be: 1 to 255 bytes of a valid
    /// key segment. Creating one holds to S3's rules (``checkNewBucketName(_:)``).
    static func checkBucketName(_ name: String) throws {
        guard isBucketName(name) else { throw S3Failure("InvalidBucketName", "The bucket name is not valid here.", status: 400) }
    }

    /// Whether ``checkBucketName(_:)`` accepts `name`.
    static func isBucketName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && !name.contains("/") && ObjectKey(ifValid: name) != nil && name.lowercased() != reservedFolder
    }

    // MARK: - Responses

    static let xmlHeader = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

    static func xml(_ body: String, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "application/xml")], body: .data(Data((xmlHeader + body).utf8)))
    }

    /// S3's `Last-Modified` form (RFC 9110's IMF-fixdate), written by hand: a `DateFormatter`
    /// made per response cost a quarter of a small GET's time.
    static func httpDate(_ date: Date) -> String {
        let parts = utcParts(date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let weekday = days[Int(parts.tm_wday) % 7]
        let month = months[Int(parts.tm_mon) % 12]
        return "\(weekday), \(digits(Int(parts.tm_mday), 2)) \(month) \(digits(Int(parts.tm_year) + 1900, 4)) "
            + "\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):\(digits(Int(parts.tm_sec), 2)) GMT"
    }

    /// The calendar fields of `date` in UTC.
    static func utcParts(_ date: Date) -> tm {
        // A backend's date past any calendar (or not a number) is written as the epoch, not trapped on.
        let seconds = date.timeIntervalSince1970.rounded(.down)
        var time = seconds.isFinite && abs(seconds) < 1e14 ? time_t(seconds) : 0
        var parts = tm()
        gmtime_r(&time, &parts)
        return parts
    }

    /// `value` in decimal, zero-padded to `width` digits (SigV4's timestamps use the same).
    static func digits(_ value: Int, _ width: Int) -> String { UTCTimestamp.digits(value, width) }

    /// An HTTP date in any of RFC 9110's three forms, or nil.
    static func parseHTTPDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// S3's listing time form: ISO 8601 with milliseconds, in UTC.
    static func isoDate(_ date: Date) -> String {
        // Whole milliseconds, rounded once, so .999 is not written .998 and a rounding up carries into the seconds.
        let raw = (date.timeIntervalSince1970 * 1000).rounded()
        let total = raw.isFinite && abs(raw) < 1e17 ? raw : 0
        let seconds = (total / 1000).rounded(.down)
        let milliseconds = Int(total - seconds * 1000)
        let parts = utcParts(Date(timeIntervalSince1970: seconds))
        return "\(digits(Int(parts.tm_year) + 1900, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-\(digits(Int(parts.tm_mday), 2))T"
            + "\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):\(digits(Int(parts.tm_sec), 2)).\(digits(min(999, max(0, milliseconds)), 3))Z"
    }
}
