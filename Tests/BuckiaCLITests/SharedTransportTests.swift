import Buckia
import BuckiaHTTP
import BuckiaTestSupport
import Foundation
import Testing

/// The process's HTTP transport as the issue asked for it: every provider built with one
/// ``SharedResources`` sends through one transport, on one thread, which `shutdown()` ends.
@Suite("One HTTP transport for every provider")
struct SharedTransportTests {
    /// Passes every attempt to the shared transport, counting them.
    final class Counting: HTTPTransport, ShutdownableResource {
        let inner: any HTTPTransport
        let attempts = Locked(0)

        init(_ inner: any HTTPTransport) { self.inner = inner }

        func perform(_ request: HTTPRequest, destination: URL?, errorBodyLimit: Int) async throws -> HTTPTransportResult {
            attempts.withLock { $0 += 1 }
            return try await inner.perform(request, destination: destination, errorBodyLimit: errorBodyLimit)
        }

        func shutdown() async {
            if let inner = inner as? any ShutdownableResource { await inner.shutdown() }
        }
    }

    /// The name the kernel gives thread `id` of this process, or nil when there is no such thread.
    static func threadName(_ id: Int32) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/self/task/\(id)/comm") else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // The libcurl transport, which the portable build (BUCKIA_PORTABLE=1) leaves out.
    #if canImport(CCurl)
    @Test("Ten B2 and Bunny providers send every attempt through the one transport, whose thread shutdown ends")
    func tenProviders() async throws {
        let b2 = try await B2Emulator.start(buckets: ["shared-transport"])
        defer { b2.stop() }
        let bunny = try await BunnyEmulator.start()
        defer { bunny.stop() }

        // The default shared transport, made as SharedResources makes it, behind a counter.
        let resources = SharedResources()
        let shared = Counting(try SharedHTTPTransport.makeResource())
        try resources.provide(SharedHTTPTransport.self, shared)
        let curl = try #require(shared.inner as? CurlTransport)

        // Every attempt each provider makes is logged by its client: the total to match.
        let logged = Locked(0)
        let log: @Sendable (String) -> Void = { line in
            if line.contains(" attempt ") { logged.withLock { $0 += 1 } }
        }
        var providers: [any StorageProvider] = []
        for index in 0..<10 {
            let configuration = index.isMultiple(of: 2) ? b2.configuration(bucket: "shared-transport") : bunny.configuration()
            providers.append(try ProviderRegistry.builtIn.makeProvider(for: configuration, environment: [:], log: log, resources: resources))
        }
        for (index, provider) in providers.enumerated() {
            _ = try await provider.uploadData(Data("provider \(index)".utf8), remotePath: try ObjectKey("p\(index).txt"), options: UploadOptions())
            #expect(try await provider.readData(remotePath: try ObjectKey("p\(index).txt"), options: ReadOptions()) == Data("provider \(index)".utf8))
        }
        let attempts = shared.attempts.withLock { $0 }
        #expect(attempts >= 20)
        #expect(attempts == logged.withLock { $0 }, "every attempt a provider logged went through the shared transport")

        // One thread did it: the transport's own, which ends with shutdown.
        let thread = try #require(curl.threadID)
        #expect(Self.threadName(thread) == "buckia-curl")
        await resources.shutdown()
        #expect(Self.threadName(thread) == nil, "the transport's thread is gone after shutdown")

        // A provider of the shut-down resources fails its requests at once, saying why.
        let error = await #expect(throws: BuckiaError.self) {
            _ = try await providers[1].readData(remotePath: try ObjectKey("p1.txt"), options: ReadOptions())
        }
        #expect(error?.code == .cancelled)
        #expect(error?.message.contains("shut down") == true)
        #expect(throws: BuckiaError.self) { _ = try resources.resource(SharedHTTPTransport.self) }
    }
    #endif

    @Test("A transport is supplied before the first provider or not at all")
    func provideTooLate() throws {
        let resources = SharedResources()
        _ = try resources.resource(SharedHTTPTransport.self)
        let error = #expect(throws: BuckiaError.self) {
            try resources.provide(SharedHTTPTransport.self, URLSessionTransport())
        }
        #expect(error?.code == .alreadyExists)
    }
}
