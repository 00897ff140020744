import BuckiaCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPClient {
    /// The request with this client's settings wherever it leaves them open: a transport may
    /// serve many clients (``SharedResources``), so what differs between them travels with
    /// each request.
    func applyingDefaults(to request: HTTPRequest) -> HTTPRequest {
        var request = request
        if request.timeout == nil { request.timeout = configuration.timeout }
        if request.connectTimeout == nil { request.connectTimeout = configuration.connectTimeout }
        if request.caFile == nil { request.caFile = configuration.caFile }
        if !request.headers.contains("User-Agent") { request.headers.set("User-Agent", configuration.userAgent) }
        return request
    }

    /// Runs the attempts of one request until one is final.
    ///
    /// Each attempt: build the request; send it; map a refused status through the provider's
    /// ``Configuration/mapFailure`` (or the default mapping); interpret an accepted response.
    /// Whatever error comes out is retried when it is retryable and attempts remain.
    func perform<T: Sendable>(
        destination: URL?, streaming: Bool = false, interpret: @Sendable (HTTPResponse) throws -> T,
        _ makeRequest: @Sendable (HTTPAttempt) async throws -> HTTPRequest
    ) async throws -> T {
        var attempt = 1
        var previousError: BuckiaError?
        let redaction = configuration.redaction
        while true {
            let request = applyingDefaults(to: try await makeRequest(HTTPAttempt(number: attempt, previousError: previousError)))
            let policy = request.retryPolicy ?? configuration.retryPolicy
            // Redacting the URL costs more than a small request's parsing: only for messages.
            lazy var summary = request.summary(redaction)
            guard !Task.isCancelled else {
                log("http \(summary) cancelled before attempt \(attempt)")
                throw HTTPTransportFailure(method: request.method.rawValue, url: redaction.redact(request.url), code: .cancelled, attempts: attempt).buckiaError()
            }
            log("http \(summary) attempt \(attempt)/\(policy.maxAttempts) headers: \(request.headers.redactedText(redaction))")
            let started = ContinuousClock.now
            let error: BuckiaError
            var retryable: Bool
            // What the attempt ended with, for the log: "-> 503" or the transport's reason.
            var outcome: String
            do {
                let result = streaming
                    ? try await transport.stream(request, errorBodyLimit: configuration.errorBodyLimit)
                    : try await transport.perform(request, destination: destination, errorBodyLimit: configuration.errorBodyLimit)
                outcome = "-> \(result.status)"
                do {
                    let response = try accept(result, request: request, policy: policy, attempt: attempt)
                    let value: T
                    do {
                        value = try interpret(response)
                    } catch {
                        response.bodyStream?.cancel()
                        throw BuckiaError.wrapping(error)
                    }
                    log("http \(summary) \(outcome) in \((ContinuousClock.now - started).millisecondsText) after \(attempt) attempt(s)")
                    return value
                } catch let mapped as MappedFailure {
                    (error, retryable) = (mapped.error, mapped.retryable)
                } catch let thrown as BuckiaError {
                    (error, retryable) = (thrown, thrown.isRetryable)
                }
            } catch let mismatch as HTTPBodyMismatch {
                // Damaged on the way (the server declared other bytes): the body was discarded
                // before delivery, and another attempt may get it whole.
                outcome = "body failed its \(mismatch.algorithm.rawValue) check"
                error = BuckiaError(
                    .checksumMismatch,
                    "\(summary) delivered a body whose \(mismatch.algorithm.rawValue) is \(mismatch.actual?.hex ?? "unknown"), not the \(mismatch.expected?.hex ?? "unknown") the server declared; it was discarded.",
                    cause: mismatch)
                retryable = true
            } catch let large as HTTPBodyTooLarge {
                // A limit of the caller's: another attempt would bring the same bytes.
                outcome = "body over \(large.limit) bytes"
                error = BuckiaError(
                    .invalidConfiguration,
                    "\(summary) " + (large.declared.map { "declared a body of \($0) bytes" } ?? "sent a body of more than \(large.limit) bytes")
                        + ", over the \(large.limit) bytes this request may take; it was stopped and nothing was kept.",
                    cause: large)
                retryable = false
            } catch let failure as HTTPTransportError {
                let transport = HTTPTransportFailure(
                    method: request.method.rawValue, url: redaction.redact(request.url), code: failure.code, attempts: attempt)
                outcome = transport.reason
                error = transport.buckiaError()
                // The mapping may know more than the code (a reply that was not HTTP, however the
                // transport reported it, is transient), so its verdict counts too.
                retryable = failure.code != .cancelled && (policy.isRetryable(failure.code) || error.code == .transient)
            }
            let delay = retryable ? policy.delay(beforeRetry: attempt, retryAfter: error.retryAfter) : nil
            guard let delay else {
                if retryable, let retryAfter = error.retryAfter, retryAfter > policy.maxRetryAfter, attempt < policy.maxAttempts {
                    log("http \(summary) \(outcome); not retrying: Retry-After \(retryAfter.secondsText) exceeds \(policy.maxRetryAfter.secondsText)")
                } else {
                    log("http \(summary) \(outcome) in \((ContinuousClock.now - started).millisecondsText) after \(attempt) attempt(s)")
                }
                throw error
            }
            log("http \(summary) \(outcome); retrying in \(delay.secondsText) (attempt \(attempt + 1)/\(policy.maxAttempts))")
            try await sleep(policy, delay, summary: summary)
            attempt += 1
            previousError = error
        }
    }

    /// A refused status, mapped, with whether it may be retried.
    private struct MappedFailure: Error {
        var error: BuckiaError
        var retryable: Bool
    }

    /// The response when the request accepts its status; otherwise throws the mapped failure.
    private func accept(_ result: HTTPTransportResult, request: HTTPRequest, policy: RetryPolicy, attempt: Int) throws -> HTTPResponse {
        let redaction = configuration.redaction
        let retryAfter = result.headers["Retry-After"].flatMap { RetryAfter.parse($0, now: policy.now()) }
        if let text = result.headers["Content-Length"], HTTPResponse.declaredLength(result.headers) == nil {
            // A length that does not parse (too long, negative, not a number) cannot be checked
            // against the body: the answer is damaged, and so is whatever it carries.
            result.bodyStream?.cancel()
            throw MappedFailure(
                error: BuckiaError(
                    .corrupt,
                    "\(request.summary(redaction)) answered with a Content-Length that is not a byte count (\(String(text.prefix(40)).debugDescription)); nothing was kept."),
                retryable: false)
        }
        if request.accepts.accepts(result.status) {
            var response = HTTPResponse(
                status: result.status, headers: result.headers, body: result.body, url: request.url, redaction: redaction, attempts: attempt)
            response.bodyDigests = result.bodyDigests
            response.bodyStream = result.bodyStream.map { mappingErrors(of: $0, request: request, attempt: attempt) }
            // A range held in memory is as long as its Content-Range says, or it was damaged on
            // the way (a Content-Length one byte short read as a whole body): another attempt.
            // (A streamed body is counted by its reader: its `data` is empty.)
            if result.bodyStream == nil, case .data(let data) = result.body, let span = response.contentRangeSpan, span != Int64(data.count) {
                throw MappedFailure(
                    error: BuckiaError(
                        .transient,
                        "\(request.summary(redaction)) delivered \(data.count) bytes for a range of \(span) (Content-Range \(response.header("Content-Range") ?? "")); they were discarded."),
                    retryable: true)
            }
            return response
        }
        result.bodyStream?.cancel()
        let (body, truncated) = errorBody(result, request: request)
        let failure = HTTPFailure(
            method: request.method.rawValue, url: redaction.redact(request.url), status: result.status,
            headers: result.headers, body: body, isBodyTruncated: truncated, retryAfter: retryAfter, attempts: attempt)
        if let mapped = configuration.mapFailure?(failure) {
            // The provider read the body: its verdict decides (S3's RequestTimeout is a 400).
            var error = mapped
            if error.retryAfter == nil { error.retryAfter = retryAfter }
            throw MappedFailure(error: error, retryable: error.isRetryable || Self.isBodyDamage(error, request))
        }
        let error = failure.buckiaError()
        throw MappedFailure(
            error: error, retryable: (error.isRetryable && policy.isRetryable(status: result.status)) || Self.isBodyDamage(error, request))
    }

    /// A streamed body whose failures are ``BuckiaCore/BuckiaError``s like every other of the
    /// client's: a dropped connection `transient`, a failed body check `checksumMismatch`.
    /// (Not retried: the bytes before the failure have been handed out.)
    private func mappingErrors(of stream: ByteStream, request: HTTPRequest, attempt: Int) -> ByteStream {
        let redaction = configuration.redaction
        let summary = request.summary(redaction)
        return ByteStream(
            next: {
                do {
                    return try await stream.next()
                } catch let failure as HTTPTransportError {
                    throw HTTPTransportFailure(
                        method: request.method.rawValue, url: redaction.redact(request.url), code: failure.code, attempts: attempt
                    ).buckiaError()
                } catch let mismatch as HTTPBodyMismatch {
                    throw BuckiaError(
                        .checksumMismatch,
                        "\(summary) delivered a body whose \(mismatch.algorithm.rawValue) is \(mismatch.actual?.hex ?? "unknown"), not the \(mismatch.expected?.hex ?? "unknown") the server declared.",
                        cause: mismatch)
                } catch {
                    throw BuckiaError.wrapping(error)
                }
            },
            onCancel: { stream.cancel() })
    }

    /// Whether the server refused a digest this request computed from its own body: bytes
    /// damaged on the way, worth sending again.
    private static func isBodyDamage(_ error: BuckiaError, _ request: HTTPRequest) -> Bool {
        error.code == .checksumMismatch && request.retriesDigestMismatch
    }

    /// Waits out a retry delay; cancellation while waiting surfaces as `cancelled`.
    private func sleep(_ policy: RetryPolicy, _ delay: Duration, summary: String) async throws {
        do {
            try await policy.sleep(delay)
        } catch {
            if error is CancellationError || Task.isCancelled {
                throw BuckiaError(.cancelled, "\(summary) was cancelled while waiting to retry.")
            }
            throw BuckiaError.wrapping(error)
        }
    }

    /// The start of an error body, at most ``Configuration/errorBodyLimit`` bytes, with the
    /// request's credentials scrubbed, and whether it was cut.
    private func errorBody(_ result: HTTPTransportResult, request: HTTPRequest) -> (Data, Bool) {
        guard case .data(let data) = result.body, !data.isEmpty else { return (Data(), result.isBodyTruncated) }
        let limit = max(0, configuration.errorBodyLimit)
        let text = String(decoding: data.prefix(limit), as: UTF8.self)
        let redaction = configuration.redaction
        let redacted = Data(redaction.redact(text: text, secrets: request.secrets(redaction)).utf8)
        return (redacted, result.isBodyTruncated || data.count > limit)
    }
}

extension HTTPHeaders {
    /// The fields as `Name: value` text with credentials redacted, for log lines.
    func redactedText(_ redaction: HTTPRedaction) -> String {
        "[" + redacted(redaction).map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]"
    }
}

extension Duration {
    /// Whole milliseconds, as log lines show elapsed time.
    var millisecondsText: String {
        let (seconds, attoseconds) = components
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000)ms"
    }
}
