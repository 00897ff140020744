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
        ]
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
