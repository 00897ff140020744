import BuckiaCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension HTTPClient {
    /// What one attempt produced: a status, its headers, and the body (in memory, the start
    /// of an error body, or the file a 2xx download was moved to).
    struct Outcome {
        var status: Int
        var headers: HTTPHeaders
        var body: HTTPResponse.Body
        var isBodyTruncated: Bool
    }

    /// A URL loading failure reduced to its code: the `URLError` itself is dropped because its
    /// description and `userInfo` hold the unredacted URL.
    struct TransferFailure: Error {
        var code: URLError.Code
    }

    /// Makes one attempt with the URLSession API that keeps memory bounded for the body kind.
    ///
    /// - Throws: ``TransferFailure`` for URL loading failures (cancellation included);
    ///   ``BuckiaCore/BuckiaError`` for local file failures.
    func transfer(_ request: HTTPRequest, destination: URL?) async throws -> Outcome {
        var urlRequest = makeURLRequest(request)
        do {
            if let destination {
                if case .data(let data) = request.body { urlRequest.httpBody = data }
                let (temporary, response) = try await session.download(for: urlRequest, delegate: redirectRefusal)
                defer { try? FileManager.default.removeItem(at: temporary) }
                let http = try httpResponse(response, request)
                let headers = HTTPHeaders(responseFields: http.allHeaderFields)
                guard (200...299).contains(http.statusCode) else {
                    let (data, truncated) = try readStart(of: temporary)
                    return Outcome(status: http.statusCode, headers: headers, body: .data(data), isBodyTruncated: truncated)
                }
                try move(temporary, to: destination)
                return Outcome(status: http.statusCode, headers: headers, body: .file(destination), isBodyTruncated: false)
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
            }
            let http = try httpResponse(response, request)
            return Outcome(
                status: http.statusCode, headers: HTTPHeaders(responseFields: http.allHeaderFields), body: .data(data),
                isBodyTruncated: false)
        } catch let error as URLError {
            throw TransferFailure(code: error.code)
        } catch is CancellationError {
            throw TransferFailure(code: .cancelled)
        } catch let error as NSError where error.domain == NSURLErrorDomain {
            throw TransferFailure(code: URLError.Code(rawValue: error.code) ?? .unknown)
        }
    }

    /// Builds the `URLRequest` for one attempt.
    func makeURLRequest(_ request: HTTPRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        urlRequest.timeoutInterval = (request.timeout ?? configuration.timeout).wholeSecondsForTimeout
        for field in request.headers {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name)
        }
        if !request.headers.contains("User-Agent") {
            urlRequest.setValue(configuration.userAgent, forHTTPHeaderField: "User-Agent")
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
            throw BuckiaError(.io, "\(request.summary(configuration.redaction)) did not get an HTTP response.")
        }
        return http
    }

    /// Reads at most ``Configuration/errorBodyLimit`` bytes from the start of a downloaded
    /// error body.
    private func readStart(of file: URL) throws -> (Data, Bool) {
        let handle = try LocalFile.openForReading(file)
        defer { try? handle.close() }
        let limit = max(0, configuration.errorBodyLimit)
        let data = try handle.read(count: limit + 1, at: 0)
        return data.count > limit ? (data.prefix(limit), true) : (data, false)
    }

    /// Moves a downloaded body over `destination` in one atomic rename, or an atomic copy when
    /// the temporary directory is on another file system.
    private func move(_ temporary: URL, to destination: URL) throws {
        if rename(temporary.path, destination.path) == 0 { return }
        let code = errno
        guard code == EXDEV else {
            throw BuckiaError.posix(code, operation: "download", path: destination.path)
        }
        try AtomicFile.copy(from: temporary, to: destination, options: AtomicFile.Options(durable: false))
    }
}
