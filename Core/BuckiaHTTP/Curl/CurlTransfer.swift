#if canImport(CCurl)
import BuckiaCore
import CCurl
import Foundation

/// One attempt of one request on a libcurl easy handle: the body it sends, the status, headers
/// and body it receives, and the continuation waiting for it.
///
/// Set up on the caller's thread, then touched only by the ``CurlLoop`` thread (libcurl's
/// callbacks run there) until ``finish(code:)`` hands the result back.
final class CurlTransfer: @unchecked Sendable {  // on the loop thread from submit to finish, as said above
    enum Source {
        case none
        case data(Data)
        /// `size` bytes of the file from `start`.
        case file(FileReader, start: Int64, size: Int64)
    }

    let easy: UnsafeMutableRawPointer
    private let request: HTTPRequest
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// What the request sends; dropped at ``finish(code:)``, so a body in memory (an upload
    /// part of several MiB) is let go before the waiting task resumes, not whenever the loop
    /// thread lets go of the transfer.
    private var source: Source
    private var offset: Int64 = 0
    private let errorBodyLimit: Int
    /// Whether a 2xx body goes to the reader as it arrives (``CurlTransport/stream(_:errorBodyLimit:)``).
    private let streaming: Bool
    /// A streamed 2xx body's queue, from its first byte (loop thread sets it).
    private var body: CurlBodyBuffer?
    /// The loop running the transfer, for a streamed body's reader to resume or end it.
    private var loop: CurlLoop?

    private var status = 0
    private var headers = HTTPHeaders()
    private var memory = Data()
    private var truncated = false
    private var localError: (any Error)?
    private let cancelled = Locked(false)
    private var stallLimit: Duration = .seconds(60)
    private var lastMoved: (bytes: Int64, at: ContinuousClock.Instant)?
    private var stalled = false
    /// The body check's expected digests and the running hash, set at the first body byte.
    private var check: (expected: [HashAlgorithm: Digest], digests: DigestSet?)?
    private var continuation: CheckedContinuation<HTTPTransportResult, any Error>?
    /// Who hears of bytes moving (the starting task's ``TransferProgress/observer``), and how
    /// many it has heard of.
    private let observer = TransferProgress.observer
    private var reported: Int64 = 0

    var isCancelled: Bool { cancelled.withLock { $0 } }

    /// Prepares the easy handle for `request`.
    init(
        _ request: HTTPRequest, errorBodyLimit: Int, settings: CurlTransport.Settings, freshConnection: Bool = false,
        streaming: Bool = false, live: Locked<Int>? = nil
    ) throws {
        // The body first: a file that cannot be opened fails before a handle exists to leak.
        let source: Source
        switch request.body {
        case .none: source = .none
        case .data(let data): source = .data(data)
        case .file(let url):
            let reader = try FileReader(url)
            source = .file(reader, start: 0, size: try reader.size())
        case .fileRange(let url, let range):
            let reader = try HTTPRequest.Body.rangeReader(url, range)
            source = .file(reader, start: range.lowerBound, size: Int64(range.count))
        }
        guard let easy = curl_easy_init() else {
            throw BuckiaError(.io, "libcurl could not create a handle (out of memory?).", operation: "http")
        }
        self.easy = easy
        self.source = source
        var request = request
        request.body = .none  // `source` holds it, until the transfer ends
        self.request = request
        self.errorBodyLimit = max(0, errorBodyLimit)
        self.streaming = streaming && request.method != .head
        self.live = live
        live?.withLock { $0 += 1 }
        configure(settings)
        if freshConnection { _ = buckia_curl_set_long(easy, CURLOPT_FRESH_CONNECT, 1) }
    }

    /// Whether the body is being handed to a reader as it arrives.
    var isStreamingBody: Bool { body != nil }

    /// Restarts the stall clock: a transfer resumed after a pause has not stalled (loop thread).
    func restartStallClock() { lastMoved = nil }

    /// Whether the transfer failed on a kept-alive connection before any response arrived:
    /// the server had closed it meanwhile, and the same request on a new connection is not a
    /// retry of anything the server saw. Set on the loop thread at completion and read by the
    /// waiting task. The continuation's resumption orders the two, but ThreadSanitizer did not
    /// see that order (it reported this field in one of six loaded cancellation storms), so the
    /// hand-over is a lock it can see.
    var failedOnReusedConnection: Bool { reusedConnectionFailed.withLock { $0 } }
    private let reusedConnectionFailed = Locked(false)

    /// The count of the transport's allocated transfers, which this one is in until it is freed.
    private let live: Locked<Int>?

    deinit {
        live?.withLock { $0 -= 1 }
        curl_easy_cleanup(easy)
        if let headerList { curl_slist_free_all(headerList) }
    }

    private var bodySize: Int64? {
        switch source {
        case .none: nil
        case .data(let data): Int64(data.count)
        case .file(_, _, let size): size
        }
    }

    private func configure(_ settings: CurlTransport.Settings) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = buckia_curl_set_string(easy, CURLOPT_URL, request.url.absoluteString)
        _ = buckia_curl_set_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = buckia_curl_set_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        _ = buckia_curl_set_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = buckia_curl_set_long(easy, CURLOPT_TCP_NODELAY, 1)
        // A proxy's answer to CONNECT is not the response.
        _ = buckia_curl_set_long(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        // HTTP/2 where TLS negotiates it (libcurl's default for https); a new transfer waits for
        // a connection being set up rather than opening another, so concurrent requests to an
        // HTTP/2 server share one connection.
        _ = buckia_curl_set_long(easy, CURLOPT_PIPEWAIT, 1)
        _ = buckia_curl_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, (request.connectTimeout ?? settings.connectTimeout).wholeMilliseconds)
        // Stall detection instead of a whole-request timeout: no byte moving either way for the
        // timeout's length (waiting for the first byte included) abandons the transfer, however
        // long a big transfer that keeps moving takes. libcurl's own low-speed check averages
        // over several seconds, so a burst before a stall delays it; the progress callback
        // (called at least once a second) measures from the last byte instead.
        stallLimit = request.timeout ?? settings.timeout
        _ = buckia_curl_set_long(easy, CURLOPT_NOPROGRESS, 0)
        _ = buckia_curl_set_progress_callback(easy, curlProgress)
        _ = buckia_curl_set_pointer(easy, CURLOPT_XFERINFODATA, context)
        _ = buckia_curl_set_long(easy, CURLOPT_BUFFERSIZE, 128 * 1024)
        _ = buckia_curl_set_long(easy, CURLOPT_UPLOAD_BUFFERSIZE, 256 * 1024)
        if let caFile = request.caFile ?? settings.caFile { _ = buckia_curl_set_string(easy, CURLOPT_CAINFO, caFile) }
        _ = buckia_curl_set_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeader)
        _ = buckia_curl_set_pointer(easy, CURLOPT_HEADERDATA, context)
        _ = buckia_curl_set_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWrite)
        _ = buckia_curl_set_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = buckia_curl_set_data_callback(easy, CURLOPT_READFUNCTION, curlRead)
        _ = buckia_curl_set_pointer(easy, CURLOPT_READDATA, context)
        _ = buckia_curl_set_seek_callback(easy, curlSeek)
        _ = buckia_curl_set_pointer(easy, CURLOPT_SEEKDATA, context)

        switch (request.method, bodySize) {
        case (.get, nil):
            _ = buckia_curl_set_long(easy, CURLOPT_HTTPGET, 1)
        case (.head, _):
            _ = buckia_curl_set_long(easy, CURLOPT_NOBODY, 1)
        case (.post, let size):
            _ = buckia_curl_set_long(easy, CURLOPT_POST, 1)
            _ = buckia_curl_set_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(size ?? 0))
        case (.put, let size):
            _ = buckia_curl_set_long(easy, CURLOPT_UPLOAD, 1)
            _ = buckia_curl_set_offset(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(size ?? 0))
        case (let method, let size?):
            _ = buckia_curl_set_long(easy, CURLOPT_UPLOAD, 1)
            _ = buckia_curl_set_offset(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(size))
            _ = buckia_curl_set_string(easy, CURLOPT_CUSTOMREQUEST, method.rawValue)
        case (let method, nil):
            _ = buckia_curl_set_string(easy, CURLOPT_CUSTOMREQUEST, method.rawValue)
        }

        var lines: [String] = []
        // libcurl drops a header written `Name:` with nothing after the colon (that form is how
        // a default header is removed, as `Expect:` below): an empty value is written `Name;`,
        // which libcurl sends as `Name:`. A signer lists every header it signs, so one dropped on
        // the way fails the signature at every server that checks (S3's empty user metadata did).
        for field in request.headers {
            lines.append(field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
        }
        if !request.headers.contains("User-Agent") { lines.append("User-Agent: \(settings.userAgent)") }
        // Bytes must arrive exactly as stored; nothing is decoded.
        if !request.headers.contains("Accept-Encoding") { lines.append("Accept-Encoding: identity") }
        if request.method == .post, bodySize != nil, !request.headers.contains("Content-Type") {
            lines.append("Content-Type: application/octet-stream")
        }
        // No 100-continue round trip (libcurl asks for one on large uploads), and no chunking.
        lines.append("Expect:")
        lines.append("Transfer-Encoding:")
        for line in lines { headerList = curl_slist_append(headerList, line) }
        _ = buckia_curl_set_list(easy, CURLOPT_HTTPHEADER, headerList)
    }

    /// Runs the transfer on `loop`, cancelled with the calling task.
    func run(on loop: CurlLoop) async throws -> HTTPTransportResult {
        self.loop = loop
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                self.continuation = continuation
                loop.submit(self)
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
            loop.cancel(self)
        }
    }

    // MARK: libcurl's callbacks (loop thread)

    fileprivate func receiveHeader(_ line: UnsafeRawBufferPointer) -> Int {
        // Parsed as bytes: this runs for every header of every response, and Foundation's
        // string trimming cost more CPU than the rest of a small request together.
        let bytes = line.trimmingHTTPSpace()
        if bytes.starts(with: "HTTP/".utf8) {
            // A new status line (after a 100 Continue, say) starts the headers afresh.
            let parts = bytes.split(separator: UInt8(ascii: " "), maxSplits: 2)
            status = parts.count >= 2 ? Int(String(decoding: parts[1], as: UTF8.self)) ?? 0 : 0
            headers = HTTPHeaders()
        } else if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            let name = UnsafeRawBufferPointer(rebasing: bytes[..<colon]).trimmingHTTPSpace()
            let value = UnsafeRawBufferPointer(rebasing: bytes[(colon + 1)...]).trimmingHTTPSpace()
            if !name.isEmpty { headers.add(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)) }
        }
        return line.count
    }

    /// Starts the body check once the headers are complete (at the first body byte, or at the
    /// end for an empty body).
    private func startCheck() throws {
        guard check == nil, let bodyCheck = request.bodyCheck, (200...299).contains(status), request.method != .head else { return }
        let expected = bodyCheck.expected(headers)
        check = (expected, expected.isEmpty ? nil : try DigestSet(expected.keys))
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        do {
            try startCheck()
        } catch {
            localError = error
            return 0
        }
        let success = (200...299).contains(status)
        if streaming, success {
            // Nothing to hand on: an empty chunk would read as the end.
            guard bytes.count > 0 else { return 0 }
            guard deliverHead().offer(bytes) else { return buckia_curl_write_pause() }
            check?.digests?.update(bytes)
            return bytes.count
        }
        check?.digests?.update(bytes)
        let limit = !streaming || success ? Int.max : errorBodyLimit
        let room = max(0, limit - memory.count)
        if bytes.count > room { truncated = true }
        memory.append(contentsOf: bytes.prefix(room))
        return bytes.count
    }

    /// The streamed body's queue, made at the first byte of a 2xx body, when the waiting task
    /// gets the status and headers with a stream to read the body from.
    private func deliverHead() -> CurlBodyBuffer {
        if let body { return body }
        let loop = self.loop
        // Weak: the loop's `running` holds the transfer while it runs; the buffer must not keep
        // it (and its easy handle) alive after that.
        let buffer = CurlBodyBuffer(
            resume: { [weak self] in if let self { loop?.resume(self) } },
            abandon: { [weak self] in if let self { loop?.cancel(self) } })
        body = buffer
        let stream = ByteStream(next: { try await buffer.next() }, onCancel: { buffer.abandon() })
        if let continuation {
            self.continuation = nil
            continuation.resume(returning: HTTPTransportResult(status: status, headers: headers, body: .data(Data()), bodyStream: stream))
        }
        return buffer
    }

    fileprivate func sendBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        switch source {
        case .none:
            return 0
        case .data(let data):
            let start = Int(offset)
            let count = min(buffer.count, data.count - start)
            guard count > 0 else { return 0 }
            data.withUnsafeBytes { bytes in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)]))
            }
            offset += Int64(count)
            return count
        case .file(let reader, let start, let size):
            let wanted = Int(min(Int64(buffer.count), size - offset))
            guard wanted > 0 else { return 0 }
            do {
                let count = try reader.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), at: start + offset)
                guard count > 0 else {
                    // The file shrank under the upload: Content-Length can no longer be met.
                    localError = BuckiaError(.io, "The file being uploaded got shorter during the upload.", operation: "upload")
                    return Int(CURL_READFUNC_ABORT)
                }
                offset += Int64(count)
                return count
            } catch {
                localError = error
                return Int(CURL_READFUNC_ABORT)
            }
        }
    }

    /// Ends the transfer (nonzero) once no byte has moved for the stall limit.
    fileprivate func progress(moved: Int64) -> Int32 {
        if let observer, moved > reported {
            observer.report(moved - reported)
            reported = moved
        }
        let now = ContinuousClock.now
        // Paused for a slow reader: not a stall of the server's.
        guard let last = lastMoved, last.bytes == moved, body?.isPaused != true else {
            lastMoved = (moved, now)
            return 0
        }
        guard now - last.at >= stallLimit else { return 0 }
        stalled = true
        return 1
    }

    fileprivate func seek(to position: Int64) -> Int32 {
        guard position >= 0, position <= (bodySize ?? 0) else { return Int32(CURL_SEEKFUNC_FAIL) }
        offset = position
        return Int32(CURL_SEEKFUNC_OK)
    }

    // MARK: Completion (loop thread)

    /// Completes the waiting task without running: the loop has been shut down.
    func refuse() {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(throwing: BuckiaError(
            .cancelled, "The HTTP transport was shut down (SharedResources.shutdown()); the request was not sent.", operation: "http"))
    }

    /// Completes the waiting task with the response, or with the error libcurl reported; or,
    /// once a streamed body has been handed out, ends that body.
    func finish(code: CURLcode) {
        source = .none
        if [CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING].contains(code), status == 0, !isCancelled {
            var connects = 0
            _ = buckia_curl_get_long(easy, CURLINFO_NUM_CONNECTS, &connects)
            reusedConnectionFailed.withLock { $0 = connects == 0 }
        }
        if let continuation {
            self.continuation = nil
            if streaming, code == CURLE_OK, !isCancelled, (200...299).contains(status), body == nil {
                // An empty 2xx body: a stream that ends at once, after the body check.
                continuation.resume(with: result(code).map { result in
                    var result = result
                    result.bodyStream = ByteStream { nil }
                    return result
                })
                return
            }
            continuation.resume(with: result(code))
        } else if let body {
            body.finish(result(code).map { _ in () })
        }
    }

    private func result(_ code: CURLcode) -> Result<HTTPTransportResult, any Error> {
        if code != CURLE_OK || isCancelled {
            if let localError { return .failure(localError) }
            let reason: URLError.Code = isCancelled ? .cancelled : stalled ? .timedOut : CurlTransfer.urlErrorCode(code)
            return .failure(HTTPTransportError(code: reason))
        }
        // The body check, before anything is delivered: a damaged body never reaches its reader.
        var digests: [HashAlgorithm: Digest] = [:]
        do {
            try startCheck()
            if let check, let running = check.digests {
                digests = running.finalize()
                try HTTPBodyCheck.compare(expected: check.expected, actual: digests)
            }
        } catch {
            return .failure(error)
        }
        return .success(
            HTTPTransportResult(status: status, headers: headers, body: .data(memory), isBodyTruncated: truncated, bodyDigests: digests))
    }

    /// The `URLError` code for a libcurl failure: the vocabulary ``HTTPClient`` maps and retries by.
    static func urlErrorCode(_ code: CURLcode) -> URLError.Code {
        switch code {
        case CURLE_COULDNT_CONNECT: .cannotConnectToHost
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .cannotFindHost
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM: .networkConnectionLost
        case CURLE_GOT_NOTHING: .badServerResponse
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_CONTENT_ENCODING: .cannotParseResponse
        case CURLE_PEER_FAILED_VERIFICATION: .serverCertificateUntrusted
        case CURLE_SSL_CONNECT_ERROR: .secureConnectionFailed
        case CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE: .clientCertificateRejected
        case CURLE_URL_MALFORMAT: .badURL
        case CURLE_ABORTED_BY_CALLBACK: .cancelled
        case CURLE_WRITE_ERROR: .cannotWriteToFile
        case CURLE_READ_ERROR: .cannotOpenFile
        case CURLE_TOO_MANY_REDIRECTS: .httpTooManyRedirects
        default: .unknown
        }
    }
}

// C callbacks: libcurl passes the transfer back as the context pointer.

private func transfer(_ context: UnsafeMutableRawPointer?) -> CurlTransfer? {
    context.map { Unmanaged<CurlTransfer>.fromOpaque($0).takeUnretainedValue() }
}

private let curlHeader: buckia_curl_data_callback = { buffer, size, count, context in
    guard let buffer, let transfer = transfer(context) else { return 0 }
    return transfer.receiveHeader(UnsafeRawBufferPointer(start: buffer, count: size * count))
}

private let curlWrite: buckia_curl_data_callback = { buffer, size, count, context in
    guard let transfer = transfer(context) else { return 0 }
    guard let buffer else { return 0 }
    return transfer.receiveBody(UnsafeRawBufferPointer(start: buffer, count: size * count))
}

private let curlRead: buckia_curl_data_callback = { buffer, size, count, context in
    guard let buffer, let transfer = transfer(context) else { return Int(CURL_READFUNC_ABORT) }
    return transfer.sendBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

private let curlProgress: buckia_curl_progress_callback = { context, _, downloaded, _, uploaded in
    guard let transfer = transfer(context) else { return 1 }
    return transfer.progress(moved: Int64(downloaded) + Int64(uploaded))
}

private let curlSeek: buckia_curl_seek_callback = { context, offset, origin in
    guard let transfer = transfer(context), origin == SEEK_SET else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
    return transfer.seek(to: Int64(offset))
}

extension Duration {
    /// Whole milliseconds, at least one, for libcurl's millisecond options.
    var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000)
        guard !overflow else { return Int.max }
        return Int(max(1, product + attoseconds / 1_000_000_000_000_000))
    }
}
#endif

extension UnsafeRawBufferPointer {
    /// The bytes without leading and trailing spaces, tabs, CR and LF.
    fileprivate func trimmingHTTPSpace() -> Slice<UnsafeRawBufferPointer> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = startIndex
        var end = endIndex
        while start < end, isSpace(self[start]) { start += 1 }
        while end > start, isSpace(self[end - 1]) { end -= 1 }
        return self[start..<end]
    }
}

extension Slice<UnsafeRawBufferPointer> {
    fileprivate func trimmingHTTPSpace() -> Slice<UnsafeRawBufferPointer> {
        UnsafeRawBufferPointer(rebasing: self).trimmingHTTPSpace()
    }
}
