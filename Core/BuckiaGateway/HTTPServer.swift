import BuckiaCore
import Foundation

/// An HTTP/1.1 server on POSIX sockets, for `buckia serve s3`: keep-alive, `Content-Length` and
/// chunked bodies both ways, `Expect: 100-continue`, bounded connections, limits on the request
/// line and header fields, read and idle timeouts, and a graceful stop. Plain HTTP only: put a
/// TLS proxy in front for anything but loopback.
///
/// One thread per connection, up to ``HTTPServerLimits/maximumConnections``: the handler may block
/// without starving anything else, and memory stays bounded by the connection count.
public final class HTTPServer: Sendable {
    /// The port it listens on.
    public let port: UInt16
    /// The address it listens on.
    public let host: String
    private let listener: Int32
    private let handler: any HTTPServerHandler
    private let limits: HTTPServerLimits
    private let state = Locked(State())
    /// Signalled when the last connection ends after ``stop(timeout:)`` began.
    private let drained = DispatchSemaphore(value: 0)

    private struct State {
        var stopping = false
        var connections: [Int32: Bool] = [:]  // descriptor → busy with a request
        /// When each connection last became idle (a counter, not a clock): the oldest idle one
        /// makes room when every place is taken.
        var idleSince: [Int32: UInt64] = [:]
        var tick: UInt64 = 0
        /// Connections told to close to make room, not yet gone.
        var evicted: Set<Int32> = []
    }

    /// Starts listening on `host:port` (port 0 picks a free one) and serving `handler`.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError`` when the address cannot be bound.
    public init(host: String = "127.0.0.1", port: UInt16 = 0, limits: HTTPServerLimits = HTTPServerLimits(), handler: any HTTPServerHandler) throws {
        let (descriptor, bound) = try Self.openListener(host: host, port: port)
        self.port = bound
        self.host = host
        self.listener = descriptor
        self.handler = handler
        self.limits = limits
        let thread = Thread { [self] in
            SystemCalls.nameThread("buckia-accept")
            acceptLoop()
        }
        thread.start()
    }

    /// Stops: no new connections; requests in flight finish (their responses say
    /// `Connection: close`); idle connections close. Waits at most `timeout` for them.
    ///
    /// - Returns: Whether no request was still in flight when it returned: false only when one
    ///   was cut off by `timeout` (an idle connection is closed, never counted).
    @discardableResult
    public func stop(timeout: Duration = .seconds(30)) -> Bool {
        let (idle, first) = state.withLock { state in
            defer { state.stopping = true }
            return (state.connections.filter { !$0.value }.map(\.key), !state.stopping)
        }
        if first {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
        for descriptor in idle { shutdown(descriptor, Int32(SHUT_RD)) }
        if state.withLock({ $0.connections.isEmpty }) { return true }
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        if drained.wait(timeout: .now() + max(0, seconds)) == .success {
            drained.signal()  // for a later call, which finds the server drained too
            return true
        }
        return !state.withLock { $0.connections.values.contains(true) }
    }

    /// Connections open now.
    public var connectionCount: Int { state.withLock { $0.connections.count } }

    /// Connections inside a request now (head read, response not yet written).
    public var busyConnectionCount: Int { state.withLock { $0.connections.values.filter { $0 }.count } }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return  // the listener was closed: stopping
            }
            // A response goes out as a head and a body in two writes; with Nagle's algorithm the
            // second waits for the client's delayed ACK of the first (40 ms on Linux), which
            // capped small GETs at 25 a second per connection.
            var noDelay: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            SystemCalls.neverSignalOnWrite(client)
            let admitted: Bool = state.withLock { state in
                guard !state.stopping else { return false }
                if state.connections.count - state.evicted.count >= limits.maximumConnections {
                    // Every place is taken. The connection idle the longest (waiting for a
                    // request, or sending its head) makes room: a client that opens connections
                    // and sends nothing cannot shut others out. Only when every one is inside a
                    // request is the newcomer refused. The descriptor is shut down while the lock
                    // is held, so it cannot have been closed and reused meanwhile.
                    guard let oldest = state.idleSince.filter({ !state.evicted.contains($0.key) }).min(by: { $0.value < $1.value })?.key else {
                        return false
                    }
                    state.evicted.insert(oldest)
                    shutdown(oldest, Int32(SHUT_RDWR))
                }
                state.connections[client] = false
                state.tick += 1
                state.idleSince[client] = state.tick
                return true
            }
            guard admitted else {
                Self.sendAll(client, Array("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
                close(client)
                continue
            }
            let thread = Thread { [self] in
                SystemCalls.nameThread("buckia-http")
                serve(client)
                let last = state.withLock { state in
                    state.connections.removeValue(forKey: client)
                    state.idleSince.removeValue(forKey: client)
                    state.evicted.remove(client)
                    return state.stopping && state.connections.isEmpty
                }
                close(client)
                if last { drained.signal() }
            }
            thread.start()
        }
    }

    // MARK: One connection

    private func serve(_ descriptor: Int32) {
        let connection = Connection(descriptor: descriptor, limits: limits)
        var first = true
        while true {
            connection.setTimeout(first ? limits.readTimeout : limits.idleTimeout)
            first = false
            let head: HTTPServerRequest
            switch connection.readHead() {
            case .closed: return
            case .refused(let status, let reason):
                connection.respondAndClose(status: status, reason: reason)
                return
            case .request(let request):
                head = request
            }
            connection.setTimeout(limits.readTimeout)
            let busy = state.withLock { state -> Bool in
                guard !state.stopping, !state.evicted.contains(descriptor) else { return false }
                state.connections[descriptor] = true
                state.idleSince.removeValue(forKey: descriptor)
                return true
            }
            guard busy else {
                connection.respondAndClose(status: 503, reason: "the server is stopping")
                return
            }
            let keepAlive = serveOne(head, connection)
            let stopping = state.withLock { state -> Bool in
                state.connections[descriptor] = false
                state.tick += 1
                state.idleSince[descriptor] = state.tick
                return state.stopping
            }
            if !keepAlive || stopping { return }
        }
    }

    /// Serves one request; returns whether the connection may carry another.
    private func serveOne(_ request: HTTPServerRequest, _ connection: Connection) -> Bool {
        let body: HTTPRequestBody
        do {
            body = try HTTPRequestBody(request: request, connection: connection)
        } catch let refusal as HTTPRefusal {
            connection.respondAndClose(status: refusal.status, reason: refusal.reason)
            return false
        } catch {
            connection.respondAndClose(status: 400, reason: "the request cannot be read")
            return false
        }
        let wantsClose = request.values("connection").contains { $0.lowercased().contains("close") }
            || (request.version == "HTTP/1.0" && !request.values("connection").contains { $0.lowercased().contains("keep-alive") })
        var response: HTTPServerResponse
        do {
            response = try handler.respond(to: request, body: body)
        } catch let refusal as HTTPRefusal {
            response = HTTPServerResponse(status: refusal.status, body: .data(Data((refusal.reason + "\n").utf8)))
        } catch {
            response = HTTPServerResponse(status: 500, body: .data(Data("internal error\n".utf8)))
        }
        // A body the handler did not read to its end: drain a little, else the connection cannot be reused.
        let reusable = !wantsClose && !body.failed && body.drain(upTo: 1 << 20)
        let stopping = state.withLock { $0.stopping }
        return connection.write(response, method: request.method, close: !reusable || stopping) && reusable && !stopping
    }

    static func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Connection.sendAll(descriptor, $0) }
    }
}

/// What reading one request from a client's bytes came to (``HTTPServer/parse(_:limits:)``).
package enum HTTPParseOutcome: Sendable, Hashable {
    /// A request read whole: its method, target, number of header fields and body bytes.
    case request(method: String, target: String, headerCount: Int, bodyBytes: Int)
    /// The request refused with `status`; the connection ends there.
    case refused(status: Int, reason: String)
}

extension HTTPServer {
    /// Reads requests from `bytes` as a connection would from a client that sends them and
    /// then closes: each head and its whole body (by `Content-Length` or chunked), until the
    /// bytes end or a request is refused. The server's own parser, over bytes instead of a
    /// socket: for the fuzzer (`buckia-fuzz http-request`) and tests of pipelining.
    package static func parse(_ bytes: [UInt8], limits: HTTPServerLimits = HTTPServerLimits()) -> [HTTPParseOutcome] {
        let connection = Connection(bytes: bytes, limits: limits)
        var outcomes: [HTTPParseOutcome] = []
        while true {
            switch connection.readHead() {
            case .closed:
                return outcomes
            case .refused(let status, let reason):
                return outcomes + [.refused(status: status, reason: reason)]
            case .request(let request):
                do {
                    let body = try HTTPRequestBody(request: request, connection: connection)
                    var count = 0
                    while let piece = try body.read(upTo: 64 * 1024) { count += piece.count }
                    outcomes.append(.request(method: request.method, target: request.target, headerCount: request.headers.count, bodyBytes: count))
                } catch let refusal as HTTPRefusal {
                    return outcomes + [.refused(status: refusal.status, reason: refusal.reason)]
                } catch {
                    return outcomes + [.refused(status: 400, reason: "the request cannot be read")]
                }
            }
        }
    }
}

/// A refusal a handler (or the body reader) throws to answer with `status`.
public struct HTTPRefusal: Error, Sendable {
    /// The status to answer.
    public var status: Int
    /// Why, for the body and the log.
    public var reason: String

    /// Creates a refusal.
    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }
}

/// One client connection: buffered reads with limits, whole writes.
final class Connection {
    let descriptor: Int32
    let limits: HTTPServerLimits
    private var buffer: [UInt8] = []
    private var start = 0
    /// What a connection over bytes (no socket) has yet to receive: all of it at the first read.
    private var unreceived: [UInt8]?
    /// Where `recv` writes, allocated once per connection.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    deinit { scratch.deallocate() }

    init(descriptor: Int32, limits: HTTPServerLimits) {
        self.descriptor = descriptor
        self.limits = limits
    }

    /// A connection whose client sends `bytes` and then closes, and whose answers go nowhere:
    /// the parser exactly as a socket drives it, for ``HTTPServer/parse(_:limits:)``.
    init(bytes: [UInt8], limits: HTTPServerLimits) {
        descriptor = -1
        self.limits = limits
        unreceived = bytes
    }

    enum Head {
        case request(HTTPServerRequest)
        case refused(Int, String)
        case closed
    }

    func setTimeout(_ duration: Duration) {
        var time = timeval(tv_sec: Int(duration.components.seconds), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Drops the bytes already consumed, so the buffer holds only what is unread.
    private func compact() {
        guard start > 0 else { return }
        buffer.removeFirst(start)
        start = 0
    }

    /// Reads more bytes into the buffer; false at end of stream, on error or timeout.
    private func fill() -> Bool {
        if let unreceived {
            guard !unreceived.isEmpty else { return false }
            buffer += unreceived
            self.unreceived = []
            return true
        }
        // The connection's own scratch space, never zeroed: only what arrives is copied on.
        while true {
            let count = recv(descriptor, scratch.baseAddress, scratch.count, 0)
            if count > 0 {
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
                return true
            }
            if count < 0 && errno == EINTR { continue }
            return false
        }
    }

    /// A line without its CRLF, or nil when the stream ends first or it is longer than `limit`.
    func readLine(limit: Int) -> String? {
        var scanned = start
        while true {
            while scanned + 1 < buffer.count {
                if buffer[scanned] == 13 && buffer[scanned + 1] == 10 {
                    let line = String(decoding: buffer[start..<scanned], as: UTF8.self)
                    start = scanned + 2
                    return line
                }
                scanned += 1
            }
            if buffer.count - start > limit + 2 { return nil }
            guard fill() else { return nil }
        }
    }

    /// Up to `count` bytes, or nil when the stream ends first.
    func readSome(upTo count: Int) -> Data? {
        if start == buffer.count {
            compact()
            guard fill() else { return nil }
        }
        let taken = min(count, buffer.count - start)
        let bytes = Data(buffer[start..<(start + taken)])
        start += taken
        return bytes
    }

    func readHead() -> Head {
        compact()
        // Blank lines before a request line are allowed (RFC 9112 §2.2).
        var requestLine = ""
        var sawAnything = false
        repeat {
            guard let line = readLine(limit: limits.requestLineBytes) else {
                if buffer.count - start > limits.requestLineBytes { return .refused(414, "the request line is longer than \(limits.requestLineBytes) bytes") }
                return sawAnything ? .refused(400, "the request head is cut short") : .closed
            }
            sawAnything = true
            requestLine = line
        } while requestLine.isEmpty
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.allSatisfy(Self.isTokenByte), parts[1].hasPrefix("/") || parts[1] == "*",
              parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0"
        else { return .refused(400, "the request line is not METHOD TARGET HTTP/1.x") }
        var headers: [(name: String, value: String)] = []
        var headerBytes = 0
        while true {
            guard let line = readLine(limit: limits.headerBytes) else {
                return buffer.count - start > limits.headerBytes ? .refused(431, "the header fields are too large") : .refused(400, "the request head is cut short")
            }
            if line.isEmpty { break }
            headerBytes += line.utf8.count + 2
            guard headerBytes <= limits.headerBytes else { return .refused(431, "the header fields are larger than \(limits.headerBytes) bytes") }
            guard headers.count < limits.headerCount else { return .refused(431, "more than \(limits.headerCount) header fields") }
            guard let colon = line.firstIndex(of: ":"), !line[..<colon].isEmpty, line[..<colon].utf8.allSatisfy(Self.isTokenByte) else {
                return .refused(400, "a header field is malformed (or folded)")
            }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
                return .refused(400, "a header value holds a control character")
            }
            headers.append((String(line[..<colon]), value))
        }
        let hosts = headers.lazy.filter { $0.name.equalsIgnoringASCIICase("host") }.count
        if parts[2] == "HTTP/1.1" && hosts != 1 { return .refused(400, "an HTTP/1.1 request needs exactly one Host header") }
        return .request(HTTPServerRequest(method: String(parts[0]), target: String(parts[1]), version: String(parts[2]), headers: headers))
    }

    /// Whether `byte` may be in a method or a field name (RFC 9110 §5.6.2's `tchar`).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    func send(_ bytes: [UInt8]) -> Bool { unreceived != nil || bytes.withUnsafeBytes { Self.sendAll(descriptor, $0) } }

    static func sendAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count, let base = bytes.baseAddress {
            let sent = SystemCalls.send(descriptor, base + offset, bytes.count - offset)
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }

    func respondAndClose(status: Int, reason: String) {
        let body = reason + "\n"
        let head = "HTTP/1.1 \(status) \(Self.phrase(status))\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        _ = send(Array((head + body).utf8))
    }

    /// Writes `response`; returns whether it all went out.
    func write(_ response: HTTPServerResponse, method: String, close: Bool) -> Bool {
        var head = "HTTP/1.1 \(response.status) \(Self.phrase(response.status))\r\n"
        for (name, value) in response.headers {
            // A CR or LF in a value would split the response: such a header is dropped.
            guard !name.contains(where: { $0 == "\r" || $0 == "\n" }), !value.contains(where: { $0 == "\r" || $0 == "\n" }) else { continue }
            head += "\(name): \(value)\r\n"
        }
        let noBody = method == "HEAD" || response.status == 204 || response.status == 304
        switch response.body {
        case .data(let data):
            if !response.headers.contains(where: { $0.name.lowercased() == "content-length" }) { head += "Content-Length: \(data.count)\r\n" }
            if close { head += "Connection: close\r\n" }
            var bytes = Array((head + "\r\n").utf8)
            if noBody || data.isEmpty { return send(bytes) }
            // A small body goes out with its head: one system call, one packet.
            guard data.count > 64 * 1024 else {
                bytes.append(contentsOf: data)
                return send(bytes)
            }
            guard send(bytes) else { return false }
            return data.withUnsafeBytes { Self.sendAll(descriptor, $0) }
        case .stream(let length, let produce):
            if let length { head += "Content-Length: \(length)\r\n" } else if !noBody { head += "Transfer-Encoding: chunked\r\n" }
            if close || (length == nil && noBody) { head += "Connection: close\r\n" }
            guard send(Array((head + "\r\n").utf8)) else { return false }
            if noBody { return true }
            let writer = HTTPBodyWriter(connection: self, chunked: length == nil, length: length)
            do {
                try produce(writer)
            } catch {
                return false  // a body cut short: the connection closes, so the client sees it
            }
            if let remaining = writer.remaining, remaining != 0 { return false }
            if length == nil { return send(Array("0\r\n\r\n".utf8)) }
            return true
        }
    }

    static func phrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 204: "No Content"
        case 206: "Partial Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 416: "Range Not Satisfiable"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
