import Foundation

/// Cuts a ``ByteStream`` into parts of a given size, for uploads that send a stream as it is
/// read: one request when the stream fits one part, a multipart upload beyond it.
///
/// The reader keeps at most one chunk of the stream beyond the part it returns, counts the
/// bytes and, when asked, computes digests of the whole stream on the way, so an upload can
/// check the caller's known checksums before it completes (and abort, storing nothing, when
/// they do not hold). One task reads it.
package final class StreamParts {
    /// What the default ``StorageProvider/upload(from:remotePath:options:)`` holds in memory
    /// before it spools to a temporary file.
    package static let inMemoryLimit = 8 << 20

    private let stream: ByteStream
    private var pending = Data()
    private var ended = false
    private let digests: DigestSet?
    /// The bytes handed out as parts so far.
    package private(set) var count: Int64 = 0

    /// A reader of `stream` that hashes everything it hands out with `algorithms`.
    package init(_ stream: ByteStream, hashing algorithms: [HashAlgorithm] = []) throws {
        self.stream = stream
        digests = algorithms.isEmpty ? nil : try DigestSet(algorithms)
    }

    /// A reader of `stream` that hashes nothing.
    package init(_ stream: ByteStream) {
        self.stream = stream
        digests = nil
    }

    /// The next `limit` bytes of the stream (fewer only at its end), or nil when none remain.
    ///
    /// The first MiB of a part is gathered in ordinary memory, so a short stream (the common
    /// case of a sync's small files) costs no system call; a part longer than that moves to a
    /// ``PartBuffer`` of its own, whose memory goes back to the system when the send that
    /// holds it is done. A chunk of exactly `limit` bytes is handed on as it is.
    package func next(upTo limit: Int) async throws -> Data? {
        let limit = max(1, limit)
        if pending.isEmpty {
            guard !ended, let chunk = try await pull() else { return nil }
            pending = chunk
        }
        if pending.count == limit, pending.startIndex == 0 {
            let part = pending
            pending = Data()
            return handOut(part)
        }
        var head = Data()
        let small = min(limit, PartBuffer.smallest)
        while head.count < small {
            if pending.isEmpty {
                guard !ended, let chunk = try await pull() else { break }
                pending = chunk
            }
            let take = min(small - head.count, pending.count)
            head.append(pending.prefix(take))
            pending = take == pending.count ? Data() : pending.dropFirst(take)
        }
        if head.count < small || head.count == limit { return head.isEmpty ? nil : handOut(head) }
        var buffer = PartBuffer(capacity: limit)
        _ = buffer.append(head)
        head = Data()
        while buffer.remaining > 0 {
            if pending.isEmpty {
                guard !ended, let chunk = try await pull() else { break }
                pending = chunk
            }
            let took = buffer.append(pending)
            pending = took == pending.count ? Data() : pending.dropFirst(took)
        }
        return handOut(buffer.data())
    }

    private func handOut(_ part: Data) -> Data {
        digests?.update(part)
        count += Int64(part.count)
        return part
    }

    /// Whether the stream ends within `limit` more bytes, reading ahead as far as it takes
    /// (at most `limit` bytes and a chunk are then held, and handed out by ``next(upTo:)``).
    package func endsWithin(_ limit: Int) async throws -> Bool {
        while pending.count <= limit {
            guard !ended, let chunk = try await pull() else { return true }
            if pending.isEmpty {
                pending = chunk
            } else {
                pending.append(chunk)
            }
        }
        return false
    }

    /// The most of a stream an upload reads before it reserves upload memory for a part: a
    /// stream that ends within it (most files a sync streams) never waits for a part's worth.
    package static let unreserved = 1 << 20

    /// Whether the stream has no byte left, reading ahead one chunk to find out.
    package func isAtEnd() async throws -> Bool {
        if !pending.isEmpty { return false }
        if ended { return true }
        guard let chunk = try await pull() else { return true }
        pending = chunk
        return false
    }

    /// The digests of every byte handed out, once the stream is read to its end.
    package func finalize() -> [HashAlgorithm: Digest] { digests?.finalize() ?? [:] }

    /// Once the stream is read to its end: fails when the bytes handed out miss a checksum in
    /// `known` (the algorithms this reader hashes).
    ///
    /// - Throws: ``BuckiaError/Code/checksumMismatch`` naming `key`; nothing should be stored.
    package func verify(_ known: [ChecksumAlgorithm: String], key: ObjectKey) throws {
        try DigestSet.check(finalize(), against: known, key: key)
    }

    /// The next chunk, or nil at the stream's end. A cancelled task gets `cancelled` instead,
    /// also at the end: a stream often ends because its task was cancelled (the producer of a
    /// pipe killed by the same Ctrl-C), and what it handed out is then no whole object.
    private func pull() async throws -> Data? {
        while let chunk = try await stream.next() {
            try Self.checkCancellation()
            if !chunk.isEmpty { return Data(chunk) }
        }
        try Self.checkCancellation()
        ended = true
        return nil
    }

    private static func checkCancellation() throws {
        if Task.isCancelled {
            throw BuckiaError(.cancelled, "The upload was cancelled while its stream was read; nothing was stored.", operation: "upload")
        }
    }

    /// Runs `send` for the parts in `head` (read already) and then each part of `size` bytes
    /// the stream hands out, numbered from 1, at most `width` at a time: the part after those
    /// running is read, then waits for a send to finish, so memory stays near `width + 1`
    /// parts however long the stream.
    ///
    /// With `memory`, each part holds a reservation of `size` (at most the budget's limit)
    /// from it while it is read and sent, so the streamed uploads of a process together stay
    /// within one budget: a part that cannot be reserved is not read until another upload's
    /// part is done. The caller reserved one for each part in `head`; from the call on,
    /// `sendAll` hands every reservation back, whether it returns or throws.
    ///
    /// - Returns: Each part's result, by number.
    /// - Throws: The first error of the stream or of a send; the other sends are cancelled.
    package func sendAll<Result: Sendable>(
        partsOf size: Int, startingWith head: [Data], width: Int, memory: UploadMemory? = nil,
        _ send: @escaping @Sendable (_ number: Int, _ part: Data) async throws -> Result
    ) async throws -> [Int: Result] {
        let each = memory.map { min(max(0, size), $0.limit) } ?? 0
        // Reserved for parts not yet handed to a send: handed back here on every way out.
        var unsent = each * head.count
        do {
            let results = try await withThrowingTaskGroup(of: (Int, Result).self) { group in
                var results: [Int: Result] = [:]
                var running = 0
                var number = 1
                var queued = head
                while true {
                    let part: Data
                    if !queued.isEmpty {
                        part = queued.removeFirst()
                    } else {
                        if let memory { unsent += try await memory.reserve(size) }
                        guard let next = try await next(upTo: size) else {
                            // No part after all: its reservation goes back now, not after the
                            // last sends.
                            memory?.release(each)
                            unsent -= each
                            break
                        }
                        part = next
                    }
                    if running >= max(1, width), let (done, result) = try await group.next() {
                        results[done] = result
                        running -= 1
                    }
                    let current = number
                    unsent -= each
                    group.addTask {
                        defer { memory?.release(each) }
                        return (current, try await send(current, part))
                    }
                    running += 1
                    number += 1
                }
                while let (done, result) = try await group.next() { results[done] = result }
                return results
            }
            memory?.release(unsent)
            return results
        } catch {
            memory?.release(unsent)
            throw error
        }
    }
}
