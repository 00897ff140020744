import BuckiaCore
import BuckiaHTTP
import BuckiaTestSupport
import Foundation
import Testing

/// HTTPS against nginx with a certificate from a private CA made for the test: verified
/// against a configured CA file, refused against the system's store, and spoken as HTTP/2
/// (libcurl transport; URLSession trusts only the system's store).
@Suite("HTTPS and HTTP/2 against nginx (libcurl)", .serialized, .enabled(if: HTTPClient.TransportKind.libcurlIsBuilt, "a private CA file and HTTP/2 are libcurl's; this build has no libcurl"))
struct HTTPClientTLSTests {
    /// A CA, and a certificate for 127.0.0.1 it signed, made with the openssl tool.
    static func makeCertificates(in folder: URL) throws -> (ca: URL, tls: NginxServer.TLS) {
        func openssl(_ arguments: [String]) throws {
            let run = try ToolRun.run(
                path: URL(fileURLWithPath: "/usr/bin/openssl"), arguments, exactEnvironment: ProcessInfo.processInfo.environment, directory: folder,
                limit: .seconds(60))
            guard run.status == 0 else { throw BuckiaError(.io, "openssl \(arguments.first ?? "") failed: \(run.errors)") }
        }
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + key + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Buckia Test CA"])
        try openssl(["req"] + key + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"])
        try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: folder.appendingPathComponent("ext.cnf"))
        try openssl([
            "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2",
            "-extfile", "ext.cnf",
        ])
        return (
            folder.appendingPathComponent("ca.pem"),
            NginxServer.TLS(certificate: folder.appendingPathComponent("server.pem"), key: folder.appendingPathComponent("server.key"))
        )
    }

    @Test("A private CA file makes the server trusted; HTTP/2 is spoken and concurrent requests share a connection")
    func trustedWithCAFile() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let (ca, tls) = try Self.makeCertificates(in: work)
        let server = try NginxServer.start(in: work.appendingPathComponent("nginx"), tls: tls, logRequests: true)
        defer { server.stop() }
        let base = "https://127.0.0.1:\(server.port)"
        var configuration = HTTPClient.Configuration(retryPolicy: .none, transport: .libcurl)
        try HTTPRemoteOptions(options: ["caFile": ca.path]).apply(to: &configuration)
        let client = HTTPClient(configuration: configuration, resources: .tests)

        let body = patternBytes(count: 100_003)
        _ = try await client.send(HTTPRequest(.put, try #require(URL(string: "\(base)/a/object.bin")), body: .data(body)))
        #expect(try await client.send(HTTPRequest(.get, try #require(URL(string: "\(base)/a/object.bin")))).data == body)
        try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<16 {
                group.addTask { try await client.send(HTTPRequest(.get, try #require(URL(string: "\(base)/a/object.bin")))).data }
            }
            for try await data in group { #expect(data == body) }
        }
        server.stop()  // flushes the log
        let lines = server.requests()
        #expect(lines.count == 18, "\(lines)")
        #expect(lines.allSatisfy { $0.hasPrefix("HTTP/2.0 ") }, "\(lines)")
        let connections = Set(lines.compactMap { $0.split(separator: " ").dropFirst(2).first })
        #expect(connections.count < 4, "18 requests over \(connections.count) connections")
    }

    @Test("Without the CA file the same server is refused as untrusted, as a configuration error")
    func untrustedWithoutCAFile() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let (_, tls) = try Self.makeCertificates(in: work)
        let server = try NginxServer.start(in: work.appendingPathComponent("nginx"), tls: tls)
        defer { server.stop() }
        let client = HTTPClient(configuration: .init(retryPolicy: .none, transport: .libcurl))
        let error = await #expect(throws: BuckiaError.self) {
            try await client.send(HTTPRequest(.get, try #require(URL(string: "https://127.0.0.1:\(server.port)/x"))))
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("certificate is not trusted") == true, "\(error?.message ?? "")")
    }
}
