import BuckiaCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPClient {
    /// Runs the attempts of one request until one is final.
    func perform(_ request: HTTPRequest, destination: URL?) async throws -> HTTPResponse {
        let policy = request.retryPolicy ?? configuration.retryPolicy
        let redaction = configuration.redaction
        let summary = request.summary(redaction)
        try checkUploadFile(request)
        var attempt = 1
        while true {
            guard !Task.isCancelled else {
                log("http \(summary) cancelled before attempt \(attempt)")
                throw HTTPTransportFailure(method: request.method.rawValue, url: redaction.redact(request.url), code: .cancelled, attempts: attempt).buckiaError()
            }
            log("http \(summary) attempt \(attempt)/\(policy.maxAttempts) headers: \(request.headers.redactedText(redaction))")
            let started = ContinuousClock.now
            let outcome: Outcome
            do {
                outcome = try await transfer(request, destination: destination)
            } catch let failure as TransferFailure {
                let transport = HTTPTransportFailure(
                    method: request.method.rawValue, url: redaction.redact(request.url), code: failure.code, attempts: attempt)
                if failure.code != .cancelled, policy.isRetryable(failure.code),
                    let delay = policy.delay(beforeRetry: attempt, retryAfter: nil)
                {
                    log("http \(summary) \(transport.reason); retrying in \(delay.secondsText) (attempt \(attempt + 1)/\(policy.maxAttempts))")
                    try await sleep(policy, delay, summary: summary)
                    attempt += 1
                    continue
                }
                log("http \(summary) \(transport.reason) after \(attempt) attempt(s)")
                throw transport.buckiaError()
            }
            let elapsed = ContinuousClock.now - started
            let retryAfter = outcome.headers["Retry-After"].flatMap { RetryAfter.parse($0, now: policy.now()) }
            if shouldRetry(outcome.status, request: request, policy: policy) {
                if let delay = policy.delay(beforeRetry: attempt, retryAfter: retryAfter) {
                    log("http \(summary) -> \(outcome.status); retrying in \(delay.secondsText) (attempt \(attempt + 1)/\(policy.maxAttempts))")
                    try await sleep(policy, delay, summary: summary)
                    attempt += 1
                    continue
                }
                if let retryAfter, retryAfter > policy.maxRetryAfter, attempt < policy.maxAttempts {
                    log("http \(summary) -> \(outcome.status); not retrying: Retry-After \(retryAfter.secondsText) exceeds \(policy.maxRetryAfter.secondsText)")
                }
            }
            log("http \(summary) -> \(outcome.status) in \(elapsed.millisecondsText) after \(attempt) attempt(s)")
            if request.accepts.accepts(outcome.status) {
                return HTTPResponse(
                    status: outcome.status, headers: outcome.headers, body: outcome.body,
                    redactedURL: redaction.redact(request.url), attempts: attempt)
            }
            let (body, truncated) = errorBody(outcome, request: request)
            let failure = HTTPFailure(
                method: request.method.rawValue, url: redaction.redact(request.url), status: outcome.status,
                headers: outcome.headers, body: body, isBodyTruncated: truncated, retryAfter: retryAfter, attempts: attempt)
            throw configuration.mapFailure?(failure) ?? failure.buckiaError()
        }
    }

    /// Whether a status should be retried: a retryable failure the caller did not ask for.
    private func shouldRetry(_ status: Int, request: HTTPRequest, policy: RetryPolicy) -> Bool {
        guard !(200...299).contains(status), policy.isRetryable(status: status) else { return false }
        if case .successfulAnd(let statuses) = request.accepts, statuses.contains(status) { return false }
        return true
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
    private func errorBody(_ outcome: Outcome, request: HTTPRequest) -> (Data, Bool) {
        guard case .data(let data) = outcome.body, !data.isEmpty else { return (Data(), outcome.isBodyTruncated) }
        let limit = max(0, configuration.errorBodyLimit)
        let text = String(decoding: data.prefix(limit), as: UTF8.self)
        let redaction = configuration.redaction
        let redacted = Data(redaction.redact(text: text, secrets: request.secrets(redaction)).utf8)
        return (redacted, outcome.isBodyTruncated || data.count > limit)
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
