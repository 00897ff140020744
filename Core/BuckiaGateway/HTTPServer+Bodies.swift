import BuckiaCore
import Foundation

/// Writes a streamed response body.
public final class HTTPBodyWriter {
    let connection: Connection
    let chunked: Bool
    var remaining: Int64?

    init(connection: Connection, chunked: Bool, length: Int64?) {
        self.connection = connection
        self.chunked = chunked
        self.remaining = length
    }

    /// Sends `bytes`.
    ///
    /// - Throws: ``HTTPRefusal`` when the client has gone, or more bytes than the promised length.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        if let remaining {
            guard Int64(bytes.count) <= remaining else { throw HTTPRefusal(status: 500, reason: "the body is longer than its Content-Length") }
            self.remaining = remaining - Int64(bytes.count)
        }
        if chunked {
            guard connection.send(Array((String(bytes.count, radix: 16) + "\r\n").utf8)) else { throw HTTPRefusal(status: 499, reason: "the client closed") }
        }
        guard Connection.sendAll(connection.descriptor, bytes), !chunked || connection.send(Array("\r\n".utf8)) else {
            throw HTTPRefusal(status: 499, reason: "the client closed")
        }
    }

    /// Sends `data`.
    public func write(_ data: Data) throws {
        try data.withUnsafeBytes { try write($0) }
    }
}

/// A request body as it arrives: `Content-Length` bytes, or chunked, read on demand.
public final class HTTPRequestBody {
    private enum Framing {
        case none
        case length(remaining: Int64)
        case chunked(remainingInChunk: Int64, finished: Bool)
    }

    private let connection: Connection
    private var framing: Framing
    private var continueOwed: Bool
    /// Whether reading failed (the client stopped or sent a malformed chunk); the connection is done.
    public private(set) var failed = false
    /// The declared length, when the body has one.
    public let declaredLength: Int64?

    init(request: HTTPServerRequest, connection: Connection) throws {
        self.connection = connection
        let lengths = request.values("content-length")
        let encodings = request.values("transfer-encoding")
        if !encodings.isEmpty {
            guard lengths.isEmpty else { throw HTTPRefusal(status: 400, reason: "a request may not have both Content-Length and Transfer-Encoding") }
            guard encodings.count == 1, encodings[0].trimmingCharacters(in: .whitespaces).lowercased() == "chunked" else {
                throw HTTPRefusal(status: 501, reason: "only the chunked transfer coding is supported")
            }
            framing = .chunked(remainingInChunk: 0, finished: false)
            declaredLength = nil
        } else if !lengths.isEmpty {
            let values = Set(lengths.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } })
            guard values.count == 1, let text = values.first, !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }), text.utf8.count <= 18,
                  let length = Int64(text)
            else { throw HTTPRefusal(status: 400, reason: "the Content-Length is not one number") }
            framing = length == 0 ? .none : .length(remaining: length)
            declaredLength = length
        } else {
            framing = .none
            declaredLength = 0
        }
        continueOwed = request.values("expect").contains { $0.lowercased() == "100-continue" } && request.version == "HTTP/1.1"
    }

    /// Up to `maximum` bytes of the body, or nil at its end.
    ///
    /// - Throws: ``HTTPRefusal`` (400) when the client stops before the end or sends a malformed chunk.
    public func read(upTo maximum: Int) throws -> Data? {
        if continueOwed {
            continueOwed = false
            guard connection.send(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return try fail("the client closed") }
        }
        switch framing {
        case .none:
            return nil
        case .length(let remaining):
            let wanted = Int(min(Int64(maximum), remaining))
            guard let bytes = connection.readSome(upTo: wanted) else { return try fail("the client stopped \(remaining) bytes before the end of the body") }
            let left = remaining - Int64(bytes.count)
            framing = left == 0 ? .none : .length(remaining: left)
            return bytes
        case .chunked(let remainingInChunk, let finished):
            if finished { return nil }
            var left = remainingInChunk
            if left == 0 {
                guard let line = connection.readLine(limit: 1024) else { return try fail("a chunk size line is missing or too long") }
                let sizeText = line.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard !sizeText.isEmpty, sizeText.utf8.count <= 15, let size = Int64(sizeText, radix: 16), size >= 0 else {
                    return try fail("a chunk size is not hexadecimal")
                }
                if size == 0 {
                    // Trailer fields (aws-chunked checksums arrive here), then the blank line.
                    var trailerBytes = 0
                    while true {
                        guard let trailer = connection.readLine(limit: 8192) else { return try fail("the chunked body's trailer is cut short") }
                        if trailer.isEmpty { break }
                        trailerBytes += trailer.utf8.count
                        guard trailerBytes <= 65_536 else { return try fail("the trailer is too long") }
                    }
                    framing = .chunked(remainingInChunk: 0, finished: true)
                    return nil
                }
                left = size
            }
            let wanted = Int(min(Int64(maximum), left))
            guard let bytes = connection.readSome(upTo: wanted) else { return try fail("the client stopped inside a chunk") }
            left -= Int64(bytes.count)
            if left == 0 {
                guard let end = connection.readLine(limit: 2), end.isEmpty else { return try fail("a chunk does not end with CRLF") }
            }
            framing = .chunked(remainingInChunk: left, finished: false)
            return bytes
        }
    }

    /// Reads and discards what is left, up to `limit` bytes; returns whether the body ended.
    func drain(upTo limit: Int) -> Bool {
        if continueOwed { return false }  // never asked for: the client has not sent it, and will not
        var read = 0
        while read <= limit {
            do {
                guard let bytes = try self.read(upTo: 64 * 1024) else { return true }
                read += bytes.count
            } catch {
                return false
            }
        }
        return false
    }

    private func fail(_ reason: String) throws -> Data? {
        failed = true
        throw HTTPRefusal(status: 400, reason: reason)
    }
}
