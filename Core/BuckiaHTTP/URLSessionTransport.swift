import BuckiaCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport over Foundation's `URLSession`: Apple platforms' native stack, and the
/// fallback on Linux, where FoundationNetworking drives libcurl from one dispatch queue.
///
/// It uses the URLSession API that keeps memory bounded for each body kind: file bodies go
/// out with `upload(for:fromFile:)` (a real `Content-Length`, never chunked); downloads land in
/// a file through `download(for:)`, or, for a body with a size limit, a data task that writes,
/// counts and hashes it beside its destination as it arrives (``URLSessionDownload``); either
/// is moved into place only for a 2xx. Redirects are refused (``RedirectRefusal``), cookies
/// never stored, nothing cached.
public final class URLSessionTransport: HTTPTransport, ShutdownableResource {
    let session: URLSession
    let redirectRefusal: RedirectRefusal
    private let events: URLSessionEvents
    private let timeout: Duration
    private let userAgent: String

    /// Creates a transport with its own session.
    ///
    /// - Parameters:
    ///   - maximumConnectionsPerHost: URLSession's default of 6 throttles parallel transfers.
    ///   - timeout: How long a request may go without moving a byte (whole seconds, rounded up);
    ///     ``HTTPRequest/timeout`` overrides it per request.
    ///   - userAgent: Sent unless a request sets its own.
    public init(maximumConnectionsPerHost: Int = 16, timeout: Duration = .seconds(60), userAgent: String = BuckiaVersion.userAgent()) {
        self.timeout = timeout
        self.userAgent = userAgent
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.httpMaximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        sessionConfiguration.timeoutIntervalForRequest = timeout.wholeSecondsForTimeout
        sessionConfiguration.httpCookieAcceptPolicy = .never
        sessionConfiguration.httpShouldSetCookies = false
        sessionConfiguration.httpCookieStorage = nil
        sessionConfiguration.urlCache = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        redirectRefusal = RedirectRefusal()
        events = URLSessionEvents()
        session = URLSession(configuration: sessionConfiguration, delegate: events, delegateQueue: nil)
    }

    private let isShutDown = Locked(false)

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Lets the tasks in flight finish and invalidates the session; a request made afterwards
    /// fails at once (`cancelled`).
    public func shutdown() async {
        let first = isShutDown.withLock { flag -> Bool in
            defer { flag = true }
            return !flag
        }
        if first { session.finishTasksAndInvalidate() }
    }

    public func perform(_ request: HTTPRequest, destination: URL?, errorBodyLimit: Int) async throws -> HTTPTransportResult {
        guard !isShutDown.withLock({ $0 }) else {
            throw BuckiaError(.cancelled, "The HTTP transport was shut down; the request was not sent.", operation: "http")
        }
        if case .fileRange(let file, let range) = request.body {
            // URLSession sends whole files only: the range goes to a private copy first.
            let reader = try HTTPRequest.Body.rangeReader(file, range)
            return try await TemporaryFile.with { copy in
                let output = try LocalFile.createExclusive(copy, permissions: 0o600)
                defer { try? output.close() }
                _ = try reader.copy(range, to: output)
                try output.close()
                var whole = request
                whole.body = .file(copy)
                return try await perform(whole, destination: destination, errorBodyLimit: errorBodyLimit)
            }
        }
        try checkUploadFile(request)
        var urlRequest = makeURLRequest(request)
        do {
            if let destination {
                if case .data(let data) = request.body { urlRequest.httpBody = data }
                // A body with a size limit (the resource cache's) is received as libcurl receives
                // it: counted, hashed and written beside its destination as it arrives, so the
                // limit stops it at the crossing and a killed process leaves nothing elsewhere.
                // FoundationNetworking hands a data task's bytes to its delegate with no flow
                // control, though: a fast body without a limit would pile up in memory (a 1 GiB
                // `cat` peaked at 397 MiB), so any other download stays a download task, which
                // writes at its own pace to the system's temporary folder.
                if request.maximumBodySize != nil {
                    return try await URLSessionDownload(request, destination: destination, errorBodyLimit: errorBodyLimit)
                        .run(urlRequest, on: session, events: events)
                }
                let (temporary, response) = try await session.download(for: urlRequest, delegate: redirectRefusal)
                defer { try? FileManager.default.removeItem(at: temporary) }
                let http = try httpResponse(response, request)
                let headers = HTTPHeaders(responseFields: http.allHeaderFields)
                guard (200...299).contains(http.statusCode) else {
                    let (data, truncated) = try readStart(of: temporary, limit: errorBodyLimit)
                    return HTTPTransportResult(status: http.statusCode, headers: headers, body: .data(data), isBodyTruncated: truncated)
                }
                // URLSession cannot hash as it receives: the check reads the file once, before
                // it replaces anything.
                let digests = request.method == .head ? [:] : try request.bodyCheck?.verify(file: temporary, headers: headers) ?? [:]
                try move(temporary, to: destination)
                return HTTPTransportResult(status: http.statusCode, headers: headers, body: .file(destination), bodyDigests: digests)
            }
            let data: Data
            let response: URLResponse
            switch request.body {
            case .none:
                (data, response) = try await session.data(for: urlRequest, delegate: redirectRefusal)
            case .data(let body):
                (data, response) = try await session.upload(for: urlRequest, from: body, delegate: redirectRefusal)
            case .file(let file):
                (data, response) = try await session.upload(for: urlRequest, fromFile: file, delegate: redirectRefusal)
            case .fileRange:
                throw BuckiaError(.unsupported, "A ranged file body reached URLSession unconverted.", operation: "upload")
            }
            let http = try httpResponse(response, request)
            let headers = HTTPHeaders(responseFields: http.allHeaderFields)
            var digests: [HashAlgorithm: Digest] = [:]
            if (200...299).contains(http.statusCode), request.method != .head, let check = request.bodyCheck {
                digests = try check.verify(data, headers: headers)
            }
            return HTTPTransportResult(status: http.statusCode, headers: headers, body: .data(data), bodyDigests: digests)
        } catch let error as URLError {
            // The URLError itself is dropped: its description and userInfo hold the unredacted URL.
            throw HTTPTransportError(code: error.code)
        } catch is CancellationError {
            throw HTTPTransportError(code: .cancelled)
        } catch let error as NSError where error.domain == NSURLErrorDomain {
            throw HTTPTransportError(code: URLError.Code(rawValue: error.code) ?? .unknown)
        }
    }

    /// Builds the `URLRequest` for one attempt.
    func makeURLRequest(_ request: HTTPRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        urlRequest.timeoutInterval = (request.timeout ?? timeout).wholeSecondsForTimeout
        for field in request.headers {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name)
        }
        if !request.headers.contains("User-Agent") {
            urlRequest.setValue(userAgent, forHTTPHeaderField: "User-Agent")
        }
        // Bytes must arrive exactly as stored: libcurl would otherwise ask for gzip and
        // decode it, changing sizes and checksums.
        if !request.headers.contains("Accept-Encoding") {
            urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        }
        // libcurl labels a POST body form-urlencoded unless told otherwise.
        if request.method == .post, request.body != .none, !request.headers.contains("Content-Type") {
            urlRequest.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        return urlRequest
    }

    /// Fails early, with a local-file error naming the path, when a file body cannot be read.
    func checkUploadFile(_ request: HTTPRequest) throws {
        guard case .file(let file) = request.body else { return }
        let handle = try LocalFile.openForReading(file)
        try handle.close()
    }

    private func httpResponse(_ response: URLResponse, _ request: HTTPRequest) throws -> HTTPURLResponse {
        guard let http = response as? HTTPURLResponse else {
            throw BuckiaError(.io, "\(request.summary()) did not get an HTTP response.")
        }
        return http
    }

    /// Reads at most `limit` bytes from the start of a downloaded
    /// error body.
    private func readStart(of file: URL, limit: Int) throws -> (Data, Bool) {
        let handle = try LocalFile.openForReading(file)
        defer { try? handle.close() }
        let limit = max(0, limit)
        let data = try handle.read(count: limit + 1, at: 0)
        return data.count > limit ? (data.prefix(limit), true) : (data, false)
    }

    /// Moves a downloaded body over `destination` in one atomic rename, or an atomic copy when
    /// the temporary directory is on another file system.
    private func move(_ temporary: URL, to destination: URL) throws {
        try LocalFile.checkReplaceable(destination.path)
        if rename(temporary.path, destination.path) == 0 { return }
        let code = errno
        guard code == EXDEV else {
            throw BuckiaError.posix(code, operation: "download", path: destination.path)
        }
        try AtomicFile.copy(from: temporary, to: destination, options: AtomicFile.Options(durable: false))
    }
}
