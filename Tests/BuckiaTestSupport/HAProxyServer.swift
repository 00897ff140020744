import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's HAProxy as a round-robin HTTP load balancer on 127.0.0.1 in front of `servers`:
/// every request is balanced on its own (`http-server-close`, no stickiness), and one refused
/// by a server that is gone is sent to another (`redispatch`).
///
/// The listening socket is made here and handed to HAProxy (`bind fd@3`), so its port is known
/// before HAProxy runs and a client that connects before HAProxy accepts waits in the backlog:
/// nothing waits for HAProxy to be ready.
public final class HAProxyServer: Sendable {
    /// The port on 127.0.0.1.
    public let port: Int
    private let process: Spawned
    private let work: URL

    public var endpoint: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Starts HAProxy in front of the HTTP servers on 127.0.0.1 at `servers` (ports).
    ///
    /// - Throws: `notFound` when HAProxy is not installed (Tools/test installs it); `io` when
    ///   the socket cannot be made or HAProxy cannot start.
    public init(servers: [Int]) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/haproxy") else {
            throw BuckiaError(.notFound, "HAProxy is not installed; `apt-get install -y haproxy` (Tools/test does).")
        }
        let (socket, port) = try Self.listeningSocket()
        defer { close(socket) }
        work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-haproxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let configuration = """
            global
              maxconn 1024
            defaults
              mode http
              timeout connect 5s
              timeout client 600s
              timeout server 600s
              option http-server-close
              option redispatch
              retries 3
            frontend balancer
              bind fd@3
              default_backend gateways
            backend gateways
              balance roundrobin
            \(servers.enumerated().map { "  server gateway\($0.offset) 127.0.0.1:\($0.element)" }.joined(separator: "\n"))

            """
        let file = work.appendingPathComponent("haproxy.cfg")
        try Data(configuration.utf8).write(to: file)
        process = try Spawned(
            URL(fileURLWithPath: "/usr/sbin/haproxy"), ["-f", file.path, "-db"], environment: ["PATH": "/usr/sbin:/usr/bin:/bin"],
            output: .file(work.appendingPathComponent("stdout")), errors: .file(work.appendingPathComponent("stderr")), inherited: [socket])
        self.port = port
    }

    deinit { stop() }

    /// Stops HAProxy and removes its folder.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: work)
    }

    /// What HAProxy wrote to standard error (its warnings and errors).
    public var errors: String { (try? String(contentsOf: work.appendingPathComponent("stderr"), encoding: .utf8)) ?? "" }

    /// A TCP socket listening on 127.0.0.1 at a port the kernel picks, and that port.
    static func listeningSocket() throws -> (Int32, Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw BuckiaError.posix(errno, operation: "socket", path: "127.0.0.1") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { general in
                bind(descriptor, general, length) == 0 && listen(descriptor, 1024) == 0 && getsockname(descriptor, general, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(descriptor)
            throw BuckiaError.posix(code, operation: "listen", path: "127.0.0.1")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }
}
