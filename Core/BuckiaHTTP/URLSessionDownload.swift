import BuckiaCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session delegate of every ``URLSessionTransport``: it refuses redirects (as
/// ``RedirectRefusal`` does for each task) and hands the data-task callbacks of a download to
/// its ``URLSessionDownload``.
final class URLSessionEvents: NSObject, URLSessionDataDelegate, Sendable {
    private let downloads = Locked<[Int: URLSessionDownload]>([:])

    /// Routes `task`'s callbacks to `download` until the task completes.
    func register(_ download: URLSessionDownload, for task: URLSessionTask) {
        downloads.withLock { $0[task.taskIdentifier] = download }
    }

    private func download(_ task: URLSessionTask) -> URLSessionDownload? {
        downloads.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(download(dataTask)?.start(response) == false ? .cancel : .allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if download(dataTask)?.receive(data) == false { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        downloads.withLock { $0.removeValue(forKey: task.taskIdentifier) }?.finish(error)
    }
}

/// One download with a size limit over a URLSession data task, as libcurl's does it: a 2xx body is written as it
/// arrives to a Buckia temporary file beside the destination, counted against the request's
/// ``HTTPRequest/maximumBodySize`` and hashed for its ``HTTPRequest/bodyCheck``, and moved over
/// the destination once complete and checked; any other status keeps the start of its body in
/// memory. (URLSession's own download task writes to the system's temporary folder and hands
/// the file over only at the end: a body without a length could fill the disk before any limit
/// was checked, and a killed process left it there.)
///
/// The callbacks come one at a time on the session's serial delegate queue, where the file is
/// written (off the cooperative pool); the lock orders them with the task that awaits the end.
final class URLSessionDownload: Sendable {
    private struct State {
        var continuation: CheckedContinuation<HTTPTransportResult, any Error>?
        var response: HTTPURLResponse?
        var headers = HTTPHeaders()
        var output: (folder: DirectoryHandle, name: String, file: LocalFile)?
        var errorBody = Data()
        var truncated = false
        var received: Int64 = 0
        var expected: [HashAlgorithm: Digest] = [:]
        var digests: RunningDigests?
        var failure: (any Error)?
    }

    private let request: HTTPRequest
    private let destination: URL
    private let errorBodyLimit: Int
    /// Every field, reached only inside the lock.
    private let state = Exclusive<State>(State())

    init(_ request: HTTPRequest, destination: URL, errorBodyLimit: Int) {
        self.request = request
        self.destination = destination
        self.errorBodyLimit = max(0, errorBodyLimit)
    }

    /// Sends `urlRequest` on `session` and returns when the body is in place (2xx) or read (any
    /// other status); a cancelled task cancels the transfer and removes what it wrote.
    func run(_ urlRequest: URLRequest, on session: URLSession, events: URLSessionEvents) async throws -> HTTPTransportResult {
        let task = session.dataTask(with: urlRequest)
        events.register(self, for: task)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.continuation = continuation }
                task.resume()
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            task.cancel()
        }
    }

    /// The response has arrived; false stops the transfer (a declared length over the limit,
    /// or no file to write to).
    func start(_ response: URLResponse) -> Bool {
        state.withLock { state in
            guard let http = response as? HTTPURLResponse else {
                state.failure = BuckiaError(.io, "\(request.summary()) did not get an HTTP response.")
                return false
            }
            state.response = http
            state.headers = HTTPHeaders(responseFields: http.allHeaderFields)
            guard (200...299).contains(http.statusCode), request.method != .head else { return true }
            if let limit = request.maximumBodySize, let declared = HTTPResponse.declaredLength(state.headers), declared > limit {
                state.failure = HTTPBodyTooLarge(limit: limit, declared: declared)
                return false
            }
            do {
                state.expected = request.bodyCheck?.expected(state.headers) ?? [:]
                state.digests = state.expected.isEmpty ? nil : RunningDigests(state.expected.keys)
                let folder = try DirectoryHandle(path: destination.deletingLastPathComponent().path)
                let (name, file) = try folder.createTemporaryFile(permissions: 0o644)
                state.output = (folder, name, file)
                return true
            } catch {
                state.failure = error
                return false
            }
        }
    }

    /// Bytes of the body; false stops the transfer (over the limit, or a write failed).
    func receive(_ data: Data) -> Bool {
        state.withLock { state in
            guard state.failure == nil else { return false }
            guard let output = state.output else {
                // An error body (or a HEAD's): its start, in memory.
                let room = errorBodyLimit - state.errorBody.count
                if data.count > room { state.truncated = true }
                if room > 0 { state.errorBody.append(data.prefix(room)) }
                return true
            }
            state.received += Int64(data.count)
            if let limit = request.maximumBodySize, state.received > limit {
                state.failure = HTTPBodyTooLarge(limit: limit)
                return false
            }
            state.digests?.update(data)
            do {
                try output.file.write(data)
                return true
            } catch {
                state.failure = error
                return false
            }
        }
    }

    /// The transfer ended: the body moves into place, or what was written is removed and the
    /// awaiting task hears why.
    func finish(_ error: (any Error)?) {
        state.withLock { state in
            let outcome: Result<HTTPTransportResult, any Error>
            do {
                if let failure = state.failure { throw failure }
                if let error { throw Self.transportError(error) }
                guard let response = state.response else {
                    throw BuckiaError(.io, "\(request.summary()) ended without an HTTP response.")
                }
                outcome = .success(try complete(&state, response))
            } catch {
                if let output = state.output {
                    do { try output.file.close() } catch {}
                    do { _ = try output.folder.removeFile(output.name) } catch {}
                    Temporaries.unregister(output.file.path)
                }
                outcome = .failure(error)
            }
            state.continuation?.resume(with: outcome)
            state.continuation = nil
        }
    }

    private func complete(_ state: inout State, _ response: HTTPURLResponse) throws -> HTTPTransportResult {
        guard let output = state.output else {
            return HTTPTransportResult(status: response.statusCode, headers: state.headers, body: .data(state.errorBody), isBodyTruncated: state.truncated)
        }
        var digests: [HashAlgorithm: Digest] = [:]
        if let set = state.digests {
            digests = set.finalize()
            try HTTPBodyCheck.compare(expected: state.expected, actual: digests)
        }
        try output.file.close()
        try output.folder.move(output.name, to: output.folder, as: destination.lastPathComponent)
        Temporaries.unregister(output.file.path)
        state.output = nil
        return HTTPTransportResult(status: response.statusCode, headers: state.headers, body: .file(destination), bodyDigests: digests)
    }

    /// URLSession's failure in the transports' vocabulary; the URLError itself is dropped, since
    /// its description holds the unredacted URL.
    static func transportError(_ error: any Error) -> any Error {
        if let error = error as? URLError { return HTTPTransportError(code: error.code) }
        let error = error as NSError
        if error.domain == NSURLErrorDomain { return HTTPTransportError(code: URLError.Code(rawValue: error.code) ?? .unknown) }
        return error
    }
}
