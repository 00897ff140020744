import BuckiaCore
import Foundation

extension ProviderConformance {
    /// Every byte of `stream`, in order.
    static func collect(_ stream: ObjectReadStream) async throws -> Data {
        var data = Data()
        for try await chunk in stream.bytes {
            try Expect.that(!chunk.isEmpty, "the stream handed out an empty chunk")
            data.append(chunk)
        }
        return data
    }

    static var streamScenarios: [ProviderScenario] {
        [
            ProviderScenario(
                "stream: reads whole objects and ranges",
                contract: "openRead hands out exactly the object's bytes (or the range's, clamped at the end) with its size, fails a missing key with notFound, and a stream stopped early leaves the provider working."
            ) { context in
                // Several MiB held at once: kept apart from memory measurements.
                try await MemoryProbe.exclusively { try await streamWholeAndRanges(context) }
            },
            ProviderScenario(
                "stream: never mixes two versions",
                contract: "A stream of an object replaced while it is read either hands out the old version whole or ends with conditionNotMatch; it never ends normally with the new version spliced in."
            ) { context in
                try await MemoryProbe.exclusively { try await streamAcrossReplacement(context) }
            },
            ProviderScenario(
                "stream: if-match reads only the version given", contract: "openRead with a stale ifMatch fails with conditionNotMatch.",
                requires: [.conditionalRead]
            ) { context in
                let key = try context.key("stream-tagged.bin")
                let first = try await context.provider.uploadData(Data("first".utf8), remotePath: key, options: UploadOptions())
                let described = try await context.provider.stat(remotePath: key)
                guard let tag = first.etag ?? described?.etag else {
                    throw ConformanceFailure("the provider reads conditionally but gave the object no entity tag")
                }
                let current = try await context.provider.openRead(remotePath: key, options: ReadOptions(ifMatch: tag))
                try Expect.sameBytes(try await collect(current), Data("first".utf8), "a stream with the current tag")
                try await context.provider.uploadData(Data("second!".utf8), remotePath: key, options: UploadOptions())
                try await Expect.error(.conditionNotMatch, "a stream with a stale tag") {
                    let stream = try await context.provider.openRead(remotePath: key, options: ReadOptions(ifMatch: tag))
                    return try await collect(stream)
                }
            },
            ProviderScenario(
                "stream: uploads what a stream hands out",
                contract: "upload(from:) stores exactly the bytes a stream hands out in chunks of any size (none, one byte, several parts); a stream that fails, or bytes that miss a known checksum, store nothing, leave the object that was there, and leave no unfinished upload behind."
            ) { context in
                // Several MiB held at once: kept apart from memory measurements.
                try await MemoryProbe.exclusively { try await streamUploads(context) }
            },
            ProviderScenario(
                "stream: an upload is under way before the stream ends",
                contract: "With streamingUploads, a stream three parts long is being uploaded (the backend lists its unfinished upload) before the stream hands out its last chunk: it is not copied somewhere first.",
                requires: [.streamingUploads, .unfinishedUploads]
            ) { context in
                try await streamUploadUnderWay(context)
            },
            ProviderScenario(
                "stream: a cancelled upload stores nothing, even when its stream ends",
                contract: "upload(from:) whose task is cancelled while it reads stores nothing, even when the stream then ends normally: a stream often ends because of the same cancellation (a pipe's producer killed by the same Ctrl-C), and what it handed out is then no whole object."
            ) { context in
                try await cancelledStreamUpload(context)
            },
        ]
    }

    static func cancelledStreamUpload(_ context: ProviderScenarioContext) async throws {
        let key = try context.key("stream-cancelled.bin")
        // The stream waits, before its first chunk, until the test has cancelled the task;
        // then it hands out three chunks and ends as if nothing happened.
        let gate = Locked((open: false, waiting: [CheckedContinuation<Void, Never>]()))
        let data = ProviderScenarioContext.pattern(count: 300, seed: 9)
        let inner = stream(data, chunks: [100])
        let first = Locked(true)
        let waiting = ByteStream {
            if first.withLock({ first in defer { first = false }; return first }) {
                await withCheckedContinuation { continuation in
                    let now = gate.withLock { gate -> Bool in
                        if !gate.open { gate.waiting.append(continuation) }
                        return gate.open
                    }
                    if now { continuation.resume() }
                }
            }
            return try await inner.next()
        }
        let provider = context.provider
        let upload = Task { try await provider.upload(from: waiting, remotePath: key, options: UploadOptions()) }
        upload.cancel()
        for continuation in gate.withLock({ gate -> [CheckedContinuation<Void, Never>] in
            gate.open = true
            defer { gate.waiting = [] }
            return gate.waiting
        }) { continuation.resume() }
        do {
            let stored = try await upload.value
            throw ConformanceFailure("a cancelled upload stored \(stored.size) bytes at \(key.rawValue)")
        } catch let error as BuckiaError {
            try Expect.equal(error.code, .cancelled, "the cancelled upload's error")
        }
        try Expect.that(try await context.provider.stat(remotePath: key) == nil, "nothing is stored at \(key.rawValue)")
    }

    /// A stream of `data` in chunks whose sizes cycle through `sizes`, which throws
    /// `failure` instead of handing out the bytes from `failingAt` on.
    static func stream(_ data: Data, chunks sizes: [Int], failingAt: Int? = nil, failure: BuckiaError? = nil) -> ByteStream {
        let state = Locked((offset: 0, turn: 0))
        return ByteStream {
            try state.withLock { state -> Data? in
                guard state.offset < data.count else { return nil }
                let size = sizes[state.turn % sizes.count]
                let end = min(data.count, state.offset + size)
                if let failingAt, end > failingAt, let failure { throw failure }
                defer { (state.offset, state.turn) = (end, state.turn + 1) }
                return data.subdata(in: state.offset..<end)
            }
        }
    }

    /// The body of "stream: uploads what a stream hands out".
    static func streamUploads(_ context: ProviderScenarioContext) async throws {
        let provider = context.provider
        let key = try context.key("streamed.bin")
        let odd = [1, 4_095, 1_048_577, 65_536, 3]
        for (count, seed) in [(0, 1), (1, 2), (12 * 1_048_576 + 3, 3)] as [(Int, UInt64)] {
            let data = ProviderScenarioContext.pattern(count: count, seed: seed)
            let stored = try await provider.upload(from: stream(data, chunks: odd), remotePath: key, options: UploadOptions())
            try Expect.equal(stored.size, Int64(count), "the size upload(from:) reports for \(count) bytes")
            try Expect.equal(try await provider.stat(remotePath: key)?.size, Int64(count), "the size stat reports for \(count) streamed bytes")
            try Expect.sameBytes(try await provider.readData(remotePath: key, range: nil), data, "\(count) streamed bytes read back")
            for (algorithm, _) in provider.capabilities.checksums {
                guard let hash = algorithm.hashAlgorithm, let reported = try await provider.checksum(remotePath: key, algorithm: algorithm) else { continue }
                try Expect.equal(reported, try Hashing.digest(data, hash).hex, "the \(algorithm) of \(count) streamed bytes")
            }
        }

        let before = Data("the version that must survive".utf8)
        try await provider.uploadData(before, remotePath: key, options: UploadOptions())
        let long = ProviderScenarioContext.pattern(count: 12 * 1_048_576, seed: 4)
        let broken = BuckiaError(.io, "The scenario's source failed on purpose.", operation: "read source")
        try await Expect.error(.io, "an upload whose stream fails after 10 MiB") {
            try await provider.upload(from: stream(long, chunks: odd, failingAt: 10 * 1_048_576, failure: broken), remotePath: key, options: UploadOptions())
        }
        try await Expect.error(.io, "an upload whose stream fails at once") {
            try await provider.upload(from: stream(long, chunks: odd, failingAt: 0, failure: broken), remotePath: key, options: UploadOptions())
        }
        try Expect.sameBytes(try await provider.readData(remotePath: key, range: nil), before, "the object after streams that failed")
        if provider.capabilities.supports(.verifiesKnownChecksums) {
            let wrong = UploadOptions(knownChecksums: [.sha256: String(repeating: "0", count: 64)])
            try await Expect.error(.checksumMismatch, "a streamed upload with a wrong known SHA-256") {
                try await provider.upload(from: stream(long, chunks: odd), remotePath: key, options: wrong)
            }
            let wrongSHA1 = UploadOptions(knownChecksums: [.sha1: String(repeating: "0", count: 40)])
            try await Expect.error(.checksumMismatch, "a short streamed upload with a wrong known SHA-1") {
                try await provider.upload(from: stream(Data("short".utf8), chunks: odd), remotePath: key, options: wrongSHA1)
            }
            try Expect.sameBytes(try await provider.readData(remotePath: key, range: nil), before, "the object after a refused checksum")
        }
        if provider.capabilities.supports(.unfinishedUploads) {
            let left = try await provider.unfinishedUploads(prefix: key.rawValue).filter { $0.key == key.rawValue }
            try Expect.equal(left.count, 0, "unfinished uploads left behind by failed streamed uploads")
        }
    }

    /// The body of "stream: an upload is under way before the stream ends".
    static func streamUploadUnderWay(_ context: ProviderScenarioContext) async throws {
        let provider = context.provider
        let key = try context.key("streamed-under-way.bin")
        let part = Int(clamping: provider.capabilities.uploadPartSize ?? 5 * 1_048_576)
        let chunk = 256 * 1024
        let chunks = (3 * part + chunk - 1) / chunk
        let state = Locked((index: 0, underWay: false, sent: RunningDigest(.sha256)))
        let bytes = ByteStream {
            let index = state.withLock { $0.index }
            guard index < chunks else { return nil }
            if index == chunks - 1 {
                let pending = try await provider.unfinishedUploads(prefix: key.rawValue)
                state.withLock { $0.underWay = pending.contains { $0.key == key.rawValue } }
            }
            let data = ProviderScenarioContext.pattern(count: chunk, seed: UInt64(index + 1))
            state.withLock {
                $0.sent.update(data)
                $0.index += 1
            }
            return data
        }
        let stored = try await provider.upload(from: bytes, remotePath: key, options: UploadOptions())
        try Expect.that(
            state.withLock { $0.underWay },
            "no unfinished upload of the key was listed when the stream handed out its last chunk: the stream was held whole before it was sent")
        try Expect.equal(stored.size, Int64(chunks * chunk), "the size of the streamed object")
        let read = try await provider.openRead(remotePath: key, options: ReadOptions())
        let received = try DigestHasher(.sha256)
        for try await piece in read.bytes { received.update(piece) }
        try Expect.equal(received.finalize().hex, state.withLock { $0.sent.finalize().hex }, "the SHA-256 of the streamed object read back")
    }

    /// The body of "stream: reads whole objects and ranges".
    static func streamWholeAndRanges(_ context: ProviderScenarioContext) async throws {
        let size = 3 * 1_048_576 + 17
        let data = ProviderScenarioContext.pattern(count: size, seed: 41)
        let key = try context.key("stream.bin")
        try await context.provider.uploadData(data, remotePath: key, options: UploadOptions())

        let whole = try await context.provider.openRead(remotePath: key, options: ReadOptions())
        try Expect.equal(whole.file.size, Int64(size), "the size the stream describes")
        try Expect.sameBytes(try await collect(whole), data, "the streamed object")

        let empty = try context.key("stream-empty.bin")
        try await context.provider.uploadData(Data(), remotePath: empty, options: UploadOptions())
        try Expect.sameBytes(try await collect(try await context.provider.openRead(remotePath: empty, options: ReadOptions())), Data(), "an empty object")

        try await Expect.error(.notFound, "a stream of a missing key") {
            try await context.provider.openRead(remotePath: try context.key("stream-missing.bin"), options: ReadOptions())
        }

        if context.provider.capabilities.supports(.readWithRange) {
            let end = Int64(size)
            for range: Range<Int64> in [0..<1, 1_048_570..<1_048_600, 1_000..<2_100_000, end - 1..<end, 0..<end, end - 10..<end + 100, end + 5..<end + 10] {
                let expected = range.lowerBound >= end ? Data() : data.subdata(in: Int(range.lowerBound)..<Int(min(range.upperBound, end)))
                let stream = try await context.provider.openRead(remotePath: key, options: ReadOptions(range: range))
                try Expect.sameBytes(try await collect(stream), expected, "the streamed bytes \(range)")
            }
        }

        // Stopped after one chunk: what the stream held is released, and the provider
        // reads on (a connection left paused would stall the next request to its host).
        let partial = try await context.provider.openRead(remotePath: key, options: ReadOptions())
        var iterator = partial.bytes.makeAsyncIterator()
        let first = try await iterator.next()
        try Expect.that((first?.count ?? 0) > 0, "the first chunk of a stream")
        partial.bytes.cancel()
        try Expect.that(try await partial.bytes.next() == nil, "a cancelled stream ends")
        for _ in 0..<3 {
            try Expect.sameBytes(try await context.provider.readData(remotePath: key, range: nil), data, "a read after a stream was stopped")
        }
    }

    /// The body of "stream: never mixes two versions".
    static func streamAcrossReplacement(_ context: ProviderScenarioContext) async throws {
        let size = 3 * 1_048_576
        let old = ProviderScenarioContext.pattern(count: size, seed: 5)
        let new = ProviderScenarioContext.pattern(count: size, seed: 6)
        let key = try context.key("stream-replaced.bin")
        try await context.provider.uploadData(old, remotePath: key, options: UploadOptions())
        let stream = try await context.provider.openRead(remotePath: key, options: ReadOptions())
        var received = Data()
        var iterator = stream.bytes.makeAsyncIterator()
        if let first = try await iterator.next() { received.append(first) }
        try await context.provider.uploadData(new, remotePath: key, options: UploadOptions())
        do {
            while let chunk = try await iterator.next() { received.append(chunk) }
            try Expect.sameBytes(received, old, "a stream that finished across a replacement")
        } catch let error as BuckiaError where error.code == .conditionNotMatch {
            // Said so: a provider without conditional reads notices at the end.
        }
    }
}
