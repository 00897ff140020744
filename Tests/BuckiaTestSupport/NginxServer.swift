import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx with WebDAV `PUT`, run in the foreground from a private prefix on 127.0.0.1:
/// a real, fast HTTP server for tests (TLS, HTTP/2) and for `buckia-bench http`.
///
/// Files live under `<work>/data`; with `logRequests`, `<work>/access.log` gets one line per
/// request: `PROTOCOL METHOD CONNECTION STATUS`.
public final class NginxServer: Sendable {
    /// A certificate and key in PEM, to serve HTTPS (with HTTP/2 offered by ALPN).
    public struct TLS: Sendable {
        public var certificate: URL
        public var key: URL
        public init(certificate: URL, key: URL) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// The port on 127.0.0.1.
    public let port: Int
    /// The request log (with `logRequests`).
    public let accessLog: URL
    private let process: Spawned

    private init(process: Spawned, port: Int, accessLog: URL) {
        self.process = process
        self.port = port
        self.accessLog = accessLog
    }

    deinit { stop() }

    /// The version `nginx -v` reports, or "?".
    public static func version() -> String {
        let text: String
        do {
            text = try ToolRun.run(path: URL(fileURLWithPath: "/usr/sbin/nginx"), ["-v"], exactEnvironment: ProcessInfo.processInfo.environment, limit: .seconds(30)).errors
        } catch {
            return "?"  // only for a benchmark's label: no nginx, no version
        }
        return text.split(separator: "/").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? "?"
    }

    /// Starts nginx with its prefix in `work` (which must exist).
    ///
    /// - Parameters:
    ///   - tls: Serve HTTPS with this certificate, offering HTTP/2.
    ///   - logRequests: Write the access log (off for benchmarks).
    ///   - tuned: Large buffers and keep-alive limits for benchmarks.
    /// - Throws: `notFound` when nginx is not installed (Tools/test installs `nginx-light`), `io`
    ///   when it does not start within five seconds.
    public static func start(in work: URL, tls: TLS? = nil, logRequests: Bool = false, tuned: Bool = false) throws -> NginxServer {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") else {
            throw BuckiaError(.notFound, "nginx is not installed; `apt-get install -y nginx-light` (Tools/test does).")
        }
        for name in ["data", "tmp", "conf"] {
            try FileManager.default.createDirectory(at: work.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        let port = try freePort()
        let tmp = work.appendingPathComponent("tmp").path
        let accessLog = work.appendingPathComponent("access.log")
        let listen = tls.map { "listen 127.0.0.1:\(port) ssl http2;\n        ssl_certificate \($0.certificate.path);\n        ssl_certificate_key \($0.key.path);" }
            ?? "listen 127.0.0.1:\(port);"
        let config = """
            \(geteuid() == 0 ? "user root;" : "")
            daemon off;
            worker_processes \(tuned ? 2 : 1);
            pid \(work.appendingPathComponent("nginx.pid").path);
            error_log \(work.appendingPathComponent("error.log").path) error;
            events { worker_connections 1024; }
            http {
                log_format buckia '$server_protocol $request_method $connection $status';
                access_log \(logRequests ? "\(accessLog.path) buckia" : "off");
                sendfile on;
                tcp_nopush on;
                keepalive_requests 1000000;
                keepalive_timeout 60;
                client_max_body_size 0;
                client_body_buffer_size \(tuned ? "1m" : "16k");
                client_body_temp_path \(tmp)/body;
                proxy_temp_path \(tmp)/proxy;
                fastcgi_temp_path \(tmp)/fastcgi;
                uwsgi_temp_path \(tmp)/uwsgi;
                scgi_temp_path \(tmp)/scgi;
                server {
                    \(listen)
                    root \(work.appendingPathComponent("data").path);
                    location / {
                        dav_methods PUT DELETE;
                        create_full_put_path on;
                    }
                }
            }
            """
        let file = work.appendingPathComponent("conf/nginx.conf")
        try Data(config.utf8).write(to: file)
        let process = try Spawned(
            URL(fileURLWithPath: "/usr/sbin/nginx"), ["-p", work.path, "-c", file.path, "-e", work.appendingPathComponent("error.log").path])
        let server = NginxServer(process: process, port: port, accessLog: accessLog)
        for _ in 0..<100 {
            if canConnect(port) { return server }
            guard process.isRunning else { break }
            usleep(50_000)
        }
        server.stop()
        let log = (try? String(contentsOf: work.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        throw BuckiaError(.io, "nginx did not start on port \(port): \(log.suffix(400))")
    }

    /// Stops nginx gracefully (SIGQUIT) and reaps it; one still running after 30 s is
    /// killed. Safe to call twice.
    public func stop() {
        process.signal(SIGQUIT)
        _ = process.wait(.seconds(30))
        process.stop()
    }

    /// The lines of the access log so far.
    public func requests() -> [String] {
        ((try? String(contentsOf: accessLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BuckiaError(.io, "socket() failed.") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw BuckiaError(.io, "bind() failed.") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func canConnect(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
