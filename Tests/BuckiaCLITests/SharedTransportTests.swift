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

    // The libcurl transport, which the portable build (BUCKIA_PORTABLE=1) leaves out.
    #if canImport(CCurl)
    @Test("Shutting SharedResources down ends every thread it started: the HTTP transport's and the blocking pool's")
    func shutdownEndsEveryThread() async throws {
        let b2 = try await B2Emulator.start(buckets: ["every-thread"])
        defer { b2.stop() }
        let folder = try TestFolder.make("every-thread")
        defer { TestFolder.remove(folder) }
        let resources = SharedResources()
        let registry = ProviderRegistry.builtIn
        let remote = try registry.makeProvider(for: b2.configuration(bucket: "every-thread"), environment: [:], resources: resources)
        let local = try registry.makeProvider(
            for: BuckiaConfiguration(provider: .local, bucketName: "local", options: ["root": folder.path]), environment: [:], resources: resources)
        let key = try ObjectKey("a.txt")
        _ = try await local.uploadData(Data("local".utf8), remotePath: key, options: UploadOptions())  // on the pool
        _ = try await remote.uploadData(Data("remote".utf8), remotePath: key, options: UploadOptions())  // on the transport

        let threads = resources.threadIDs
        let names = threads.compactMap(Threads.name)
        #expect(names.filter { $0 == "buckia-curl" }.count == 1)
        #expect(names.filter { $0 == "buckia-io" }.count == BlockingPool.defaultThreadCount)
        #expect(names.count == threads.count, "every thread was running before the shutdown")
        await resources.shutdown()
        for id in threads {
            #expect(Threads.ended(id), "thread \(id) ended with the resources")
        }
        let error = await #expect(throws: BuckiaError.self) {
            _ = try await local.uploadData(Data("late".utf8), remotePath: key, options: UploadOptions())
        }
        #expect(error?.code == .cancelled)
    }

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
        #expect(Threads.name(thread) == "buckia-curl")
        await resources.shutdown()
        #expect(Threads.ended(thread), "the transport's thread is gone after shutdown")

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
