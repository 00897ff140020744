import BuckiaCore
import Foundation

extension HTTPServer {
    /// A socket listening on the IPv4 `host:port` (port 0 picks a free one), and the port it got.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for an address that is not
    ///   IPv4, is in use, or is not this machine's; what the system reports otherwise.
    static func openListener(host: String, port: UInt16) throws -> (descriptor: Int32, port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw BuckiaError(.invalidConfiguration, "\(host) is not an IPv4 address to listen on.")
        }
        let descriptor = SystemCalls.streamSocket()
        guard descriptor >= 0 else { throw BuckiaError.posix(errno, operation: "listen", path: host) }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 1024) == 0 else {
            let code = errno
            close(descriptor)
            if code == EADDRINUSE {
                throw BuckiaError(
                    .invalidConfiguration, "The address \(host):\(port) is in use by another program; choose another port (0 picks a free one) or stop that program.",
                    operation: "listen", path: "\(host):\(port)", cause: POSIXErrorNumber(rawValue: code))
            }
            if code == EADDRNOTAVAIL {
                throw BuckiaError(
                    .invalidConfiguration, "\(host) is not an address of this machine, so nothing can listen on it; use 127.0.0.1 or one of this machine's addresses.",
                    operation: "listen", path: "\(host):\(port)", cause: POSIXErrorNumber(rawValue: code))
            }
            throw BuckiaError.posix(code, operation: "listen on \(host):\(port)", path: host)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        return (descriptor, UInt16(bigEndian: actual.sin_port))
    }
}
