@testable import BuckiaHTTP
import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// ``HTTPClient/stream(_:)``: a 2xx body handed out as it arrives, over either transport.
@Suite("HTTPClient streamed bodies")
struct HTTPStreamTests {
    static let kinds = HTTPClient.TransportKind.privateKinds

    /// Every byte of a streamed body.
    func collect(_ stream: ByteStream) async throws -> Data {
        var data = Data()
        for try await chunk in stream { data.append(chunk) }
        return data
    }

    @Test("A streamed body arrives whole, checked against its digest as it streams", arguments: kinds)
    func whole(_ kind: HTTPClient.TransportKind) async throws {
        try await withTestServer { server in
            // Past the 4 MiB high-water mark, hashed as it arrives rather than held: the
            // conformance suite measures the process's memory meanwhile.
            let size = 6 * 1_048_576 + 3
            let digest = try Hashing.digest(patternBytes(count: size), .sha256)
            let client = HTTPClient(configuration: .init(retryPolicy: .none, transport: kind))
            let url = try server.url("/download?size=\(size)")
            let response = try await client.stream { _ in
                var request = HTTPRequest(.get, url)
                request.bodyCheck = HTTPBodyCheck { _ in [.sha256: digest] }
                return request
            }
            #expect(response.status == 200)
            #expect(response.contentLength == Int64(size))
            let stream = try #require(response.bodyStream)
            let hasher = try DigestHasher(.sha256)
            var count = 0
            for try await chunk in stream {
                hasher.update(chunk)
                count += chunk.count
            }
            #expect(count == size)
            #expect(hasher.finalize() == digest)
        }
    }

    @Test("A body that fails its check ends the stream with checksumMismatch, not quietly", arguments: kinds)
    func damaged(_ kind: HTTPClient.TransportKind) async throws {
        try await withTestServer { server in
            let client = HTTPClient(configuration: .init(retryPolicy: .none, transport: kind))
            let url = try server.url("/download?size=3000000")
            let wrong = try Hashing.digest(Data("not the body".utf8), .sha256)
            do {
                let response = try await client.stream { _ in
                    var request = HTTPRequest(.get, url)
                    request.bodyCheck = HTTPBodyCheck { _ in [.sha256: wrong] }
                    return request
                }
                let stream = try #require(response.bodyStream)
                let error = await #expect(throws: BuckiaError.self) { _ = try await collect(stream) }
                #expect(error?.code == .checksumMismatch)
            } catch let error as BuckiaError {
                // The default stream downloads first, so the check fails before any stream.
                #expect(kind == .urlSession && error.code == .checksumMismatch, "\(error)")
            }
        }
    }

    @Test("A body cut short ends the stream with a transient error; a refused status throws before any stream", arguments: kinds)
    func failures(_ kind: HTTPClient.TransportKind) async throws {
        try await withTestServer { server in
            let client = HTTPClient(configuration: .init(retryPolicy: .none, transport: kind))
            let cut = try server.url("/truncate?id=\(uniqueID())")
            do {
                // libcurl hands out the 100 bytes, then the failure; the default (a download first)
                // fails before any stream.
                let response = try await client.stream { _ in HTTPRequest(.get, cut) }
                let stream = try #require(response.bodyStream)
                let error = await #expect(throws: BuckiaError.self) { _ = try await collect(stream) }
                #expect(error?.code == .transient)
            } catch let error as BuckiaError {
                #expect(kind == .urlSession && error.code == .transient, "\(error)")
            }
            let missing = try server.url("/notfound")
            let error = await #expect(throws: BuckiaError.self) { _ = try await client.stream { _ in HTTPRequest(.get, missing) } }
            #expect(error?.code == .notFound)
        }
    }

    @Test("A stream stopped after one chunk frees its connection: the client goes on", arguments: kinds)
    func stoppedEarly(_ kind: HTTPClient.TransportKind) async throws {
        try await withTestServer { server in
            // One connection per host: a paused transfer left behind would block the next request.
            let client = HTTPClient(configuration: .init(maximumConnectionsPerHost: 1, retryPolicy: .none, transport: kind))
            let url = try server.url("/download?size=\(64 * 1_048_576)")
            for _ in 0..<3 {
                let response = try await client.stream { _ in HTTPRequest(.get, url) }
                let stream = try #require(response.bodyStream)
                let first = try await stream.next()
                #expect((first?.count ?? 0) > 0)
                stream.cancel()
                #expect(try await stream.next() == nil)
            }
            let small = try await client.send(HTTPRequest(.get, try server.url("/download?size=10")))
            #expect(small.data == patternBytes(count: 10))
        }
    }

    // These reach into the libcurl transport, which the portable build (BUCKIA_PORTABLE=1) leaves out.
    #if canImport(CCurl)
    @Test("The libcurl body queue pauses the transfer above its high-water mark and resumes it below the low one")
    func backpressure() async throws {
        let resumed = Locked(0)
        let abandoned = Locked(0)
        let buffer = CurlBodyBuffer(resume: { resumed.withLock { $0 += 1 } }, abandon: { abandoned.withLock { $0 += 1 } })
        let piece = Data(repeating: 7, count: 256 * 1024)
        var offered = 0
        // Offered until refused: a queue that never says "pause" would take all 64 MiB.
        while offered < 64 << 20 {
            let taken = piece.withUnsafeBytes { buffer.offer($0) }
            if !taken { break }
            offered += piece.count
        }
        #expect(offered == CurlBodyBuffer.highWater, "bytes queued before the transfer was paused")
        #expect(buffer.isPaused)
        // Read until the queue is below the low-water mark: the transfer is resumed once.
        var read = 0
        while offered - read >= CurlBodyBuffer.lowWater {
            read += try #require(try await buffer.next()).count
        }
        #expect(resumed.withLock { $0 } == 1)
        #expect(!buffer.isPaused)
        buffer.finish(.success(()))
        while let chunk = try await buffer.next() { read += chunk.count }
        #expect(read == offered)
        buffer.abandon()
        #expect(abandoned.withLock { $0 } == 1)
    }

    @Test("Streamed responses read, stopped or dropped leave no transfer allocated (no retain cycle)")
    func noTransferLeaks() async throws {
        try await withTestServer { server in
            let transport = try CurlTransport()
            let client = HTTPClient(configuration: .init(retryPolicy: .none), transport: transport)
            let url = try server.url("/download?size=\(8 * 1_048_576)")
            // Read to the end.
            let whole = try #require(try await client.stream { _ in HTTPRequest(.get, url) }.bodyStream)
            while try await whole.next() != nil {}
            // Stopped after one chunk.
            let stopped = try #require(try await client.stream { _ in HTTPRequest(.get, url) }.bodyStream)
            _ = try await stopped.next()
            stopped.cancel()
            // Dropped without a word.
            do {
                let dropped = try #require(try await client.stream { _ in HTTPRequest(.get, url) }.bodyStream)
                _ = try await dropped.next()
            }
            await transport.shutdown()
            #expect(transport.liveTransfers == 0, "transfers still allocated after every stream ended")
        }
    }

    /// The bytes the kernel counts as written by one thread of this process (`wchar` in
    /// `/proc/self/task/<tid>/io`: files, sockets and pipes alike).
    func bytesWritten(byThread thread: Int32) throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/task/\(thread)/io", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("wchar:") })
        return try #require(Int(line.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces)))
    }

    @Test("A download's 32 MiB are written to disk by the blocking-work threads, not by the one libcurl thread every transfer shares")
    func downloadsWriteOffTheCurlThread() async throws {
        try await withTestServer { server in
            let transport = try CurlTransport()
            defer { Task { await transport.shutdown() } }
            let client = HTTPClient(configuration: .init(retryPolicy: .none), transport: transport)
            // One request first, so the thread exists and its count starts after it.
            _ = try await client.send(HTTPRequest(.get, try server.url("/download?size=10")))
            let thread = try #require(transport.threadID)
            let before = try bytesWritten(byThread: thread)
            let size = 32 * 1_048_576
            let digest = try Hashing.digest(patternBytes(count: size), .sha256)
            try await TemporaryFile.with { destination in
                var request = HTTPRequest(.get, try server.url("/download?size=\(size)"))
                request.bodyCheck = HTTPBodyCheck { _ in [.sha256: digest] }
                let response = try await client.download(request, to: destination)
                #expect(response.bodyDigests[.sha256] == digest)
                #expect(try Hashing.digests(ofFile: destination, [.sha256])[.sha256] == digest)
            }
            // The request's own bytes (its line and headers) are all the thread wrote.
            let written = try bytesWritten(byThread: thread) - before
            #expect(written < 64 * 1024, "the libcurl thread wrote \(written) bytes during a \(size)-byte download")
        }
    }

    @Test("Shutdown ends a stream whose reader never came back, instead of waiting for it forever", .timeLimit(.minutes(15)))
    func shutdownWithUnreadStream() async throws {
        try await withTestServer { server in
            let transport = try CurlTransport()
            let client = HTTPClient(configuration: .init(retryPolicy: .none), transport: transport)
            let url = try server.url("/download?size=\(64 * 1_048_576)")
            let stream = try #require(try await client.stream { _ in HTTPRequest(.get, url) }.bodyStream)
            _ = try await stream.next()
            await transport.shutdown()
            // Whatever was queued may still be read; then the stream ends as cancelled.
            let error = await #expect(throws: BuckiaError.self) { while try await stream.next() != nil {} }
            #expect(error?.code == .cancelled)
            let thread = try #require(transport.threadID)
            #expect(Threads.ended(thread))
        }
    }

    @Test("Two shutdowns at once both return only once the transport's thread is gone")
    func concurrentShutdowns() async throws {
        let transport = try CurlTransport()
        _ = try await HTTPClient(configuration: .init(retryPolicy: .none), transport: transport)
            .send(HTTPRequest(.get, try await TestServer.shared().url("/download?size=10")))
        let thread = try #require(transport.threadID)
        let gone = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    await transport.shutdown()
                    return Threads.ended(thread)
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(gone == [true, true])
    }
    #endif
}
