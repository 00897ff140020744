import Foundation

/// Bytes that arrive over time, in order, read once: a response body as the network delivers
/// it, an object read from a provider, a file read piece by piece.
///
/// A pull-based sequence: the producer waits while the consumer does (a libcurl transfer is
/// paused, a ranged read is not sent), so memory stays bounded however large the body and
/// however slow the reader. Iterate it once; an error ends it.
///
/// ```swift
/// for try await chunk in stream {
///     try output.write(chunk)
/// }
/// ```
///
/// Stopping early is allowed: ``cancel()``, or dropping the last reference, releases what the
/// producer holds (a connection, a temporary file).
public final class ByteStream: AsyncSequence, Sendable {
    public typealias Element = Data

    private let produce: @Sendable () async throws -> Data?
    private let release: @Sendable () -> Void
    private let released = Locked(false)

    /// A stream whose chunks come from `next` until it returns nil.
    ///
    /// - Parameters:
    ///   - next: The next chunk (never empty), or nil at the end. Called by one consumer at a
    ///     time, never again after it returned nil or threw.
    ///   - onCancel: Releases the producer's resources; called once, when the consumer
    ///     cancels, drops the stream, or has read it to the end.
    public init(next: @escaping @Sendable () async throws -> Data?, onCancel: @escaping @Sendable () -> Void = {}) {
        produce = next
        release = onCancel
    }

    deinit { cancel() }

    /// A stream of `data`, in chunks of at most `chunkSize` bytes.
    public static func of(_ data: Data, chunkSize: Int = 1 << 20) -> ByteStream {
        let offset = Locked(data.startIndex)
        let size = Swift.max(1, chunkSize)
        return ByteStream {
            offset.withLock { start -> Data? in
                guard start < data.endIndex else { return nil }
                let end = data.index(start, offsetBy: Swift.min(size, data.endIndex - start))
                defer { start = end }
                return data.subdata(in: start..<end)
            }
        }
    }

    /// The bytes of `count` streams one after another, stream `index` made by `open(index)`
    /// when the one before it has ended, so one is open at a time.
    package static func concatenating(_ count: Int, _ open: @escaping @Sendable (Int) async throws -> ByteStream) -> ByteStream {
        // The next stream to open and the one being read; one consumer at a time, as
        // ByteStream promises, so the lock is held only to look and never waited for.
        let cursor = Locked<(next: Int, current: ByteStream?)>((0, nil))
        return ByteStream(
            next: {
                while true {
                    let (next, current) = cursor.withLock { $0 }
                    if let current {
                        if let chunk = try await current.next() { return chunk }
                        cursor.withLock { $0.current = nil }
                        continue
                    }
                    guard next < count else { return nil }
                    let opened = try await open(next)
                    cursor.withLock { $0 = (next + 1, opened) }
                }
            },
            onCancel: { cursor.withLock { $0.current }?.cancel() })
    }

    /// Stops the stream: the producer releases its resources, and a later ``next()`` returns nil.
    public func cancel() {
        let first = released.withLock { flag -> Bool in
            defer { flag = true }
            return !flag
        }
        if first { release() }
    }

    /// The next chunk, or nil at the end (or after ``cancel()``).
    ///
    /// - Throws: Whatever ended the producer (``BuckiaError``); `cancelled` when the task is.
    public func next() async throws -> Data? {
        guard !released.withLock({ $0 }) else { return nil }
        do {
            guard let chunk = try await produce() else {
                cancel()
                return nil
            }
            return chunk
        } catch {
            cancel()
            throw error
        }
    }

    /// Iterates the stream.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: ByteStream

        public mutating func next() async throws -> Data? { try await stream.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }
}

/// An object's bytes as a stream, with what the provider said about the object when the read
/// began (size, entity tag, checksums, modification time).
///
/// The stream checks what it can before it ends: the byte count against ``file``'s size (or
/// the range's), and the checksums of ``file`` Buckia can compute (MD5, SHA-1, SHA-256)
/// over a whole-object read, so a short, long or damaged body ends in an error rather than
/// quietly. The bytes already handed out cannot be taken back: a consumer that must not act on
/// damaged bytes downloads to a file instead (``StorageProvider/downloadFile(remotePath:localURL:options:)``).
public struct ObjectReadStream: Sendable {
    /// The object as it was when the read began.
    public let file: RemoteFile
    /// Its bytes (those of the range, when one was asked for).
    public let bytes: ByteStream

    /// A stream handed out as it is, with nothing to check.
    private init(described file: RemoteFile, bytes: ByteStream) {
        self.file = file
        self.bytes = bytes
    }

    /// Wraps `bytes`, checking their count (`expectedCount`, the object's size by default) and,
    /// when `verifyChecksums`, the checksums in `file`.
    public init(file: RemoteFile, bytes: ByteStream, expectedCount: Int64? = nil, verifyChecksums: Bool = true, key: ObjectKey) throws {
        self.file = file
        let count = expectedCount ?? file.size
        let expected = verifyChecksums
            ? file.checksums.compactMap { algorithm, value in algorithm.hashAlgorithm.map { ($0, value.lowercased()) } } : []
        // One consumer at a time: the lock orders its calls, it is never contended.
        let progress = Locked((received: Int64(0), digests: RunningDigests(expected.map(\.0))))
        let path = key.rawValue
        self.bytes = ByteStream(
            next: {
                guard let chunk = try await bytes.next() else {
                    let (total, computed) = progress.withLock { ($0.received, $0.digests.finalize()) }
                    guard total == count else {
                        throw BuckiaError(
                            .corrupt, "The object ended after \(total) of the \(count) bytes its size promised; read it again.",
                            operation: "read", path: path)
                    }
                    for (algorithm, value) in expected where computed[algorithm]?.hex != value {
                        throw BuckiaError(
                            .checksumMismatch,
                            "The bytes read do not match the object's \(algorithm.rawValue.uppercased()) (\(value)); they were damaged on the way. Read it again.",
                            operation: "read", path: path)
                    }
                    return nil
                }
                try progress.withLock { progress in
                    progress.received += Int64(chunk.count)
                    guard progress.received <= count else {
                        throw BuckiaError(
                            .corrupt, "The server sent more than the \(count) bytes the object has; the read stops before they are used.",
                            operation: "read", path: path)
                    }
                    progress.digests.update(chunk)
                }
                return chunk
            },
            onCancel: { bytes.cancel() })
    }
}

extension ByteStream {
    /// The bytes of `range` of the file at `url`, read a piece at a time; with
    /// `removingWhenDone` the file is deleted once the stream ends or is cancelled (a
    /// temporary the stream owns).
    public static func file(_ url: URL, range: Range<Int64>? = nil, chunkSize: Int = AtomicFile.copyBufferSize, removingWhenDone: Bool = false) throws -> ByteStream {
        let reader: FileReader
        do {
            reader = try FileReader(url)
        } catch {
            if removingWhenDone { Self.remove(url) }
            throw error
        }
        let bounds: Range<Int64>
        if let range {
            guard range.lowerBound >= 0 else {
                if removingWhenDone { Self.remove(url) }
                throw BuckiaError(.invalidPath, "Bytes \(range.lowerBound)..<\(range.upperBound) of \(url.path) start before the file does.", operation: "read", path: url.path)
            }
            bounds = range
        } else {
            bounds = 0..<(try reader.size())
        }
        let offset = Locked(bounds.lowerBound)
        let size = Int64(Swift.max(1, chunkSize))
        return ByteStream(
            next: {
                try offset.withLock { start -> Data? in
                    guard start < bounds.upperBound else { return nil }
                    // Never `start + size`, which could overflow near Int64.max.
                    let chunk = try reader.read(start..<(start + Swift.min(size, bounds.upperBound - start)))
                    guard !chunk.isEmpty else {
                        throw BuckiaError(.io, "The file ended at byte \(start) while it was being read; it was cut short meanwhile.", operation: "read", path: url.path)
                    }
                    start += Int64(chunk.count)
                    return chunk
                }
            },
            onCancel: { if removingWhenDone { Self.remove(url) } })
    }

    private static func remove(_ url: URL) {
        // A temporary this process made: a failure leaves it to the temporaries sweep.
        do { try FileManager.default.removeItem(at: url) } catch {}
    }
}

extension ObjectReadStream {
    /// No bytes of `file`: an empty range, or one that starts past the end.
    public static func empty(of file: RemoteFile) -> ObjectReadStream {
        ObjectReadStream(described: file, bytes: ByteStream { nil })
    }

    /// How a provider without a streaming read of its own serves ``StorageProvider/openRead(remotePath:options:)``.
    ///
    /// With ``Capability/localFiles`` the object's file is read through one descriptor. With
    /// ``Capability/readWithRange``: the object is described once (``StorageProvider/stat(remotePath:)``),
    /// then read in ranges of 1 MiB, each one only when the consumer asks for it. With
    /// ``Capability/conditionalRead`` every range carries the version's entity tag, so a
    /// replaced object fails the read (`conditionNotMatch`) instead of splicing two versions;
    /// without it the object is described again at the end and a change fails the read the
    /// same way. Without ranged reads the object is downloaded to a temporary file first.
    public static func byRanges(of provider: some StorageProvider, key: ObjectKey, options: ReadOptions) async throws -> ObjectReadStream {
        try options.checkSupported(by: provider)
        let capabilities = provider.capabilities
        if capabilities.supports(.localFiles) {
            // The file itself, read through one descriptor: a rename over it meanwhile does not
            // change what this read sees.
            let (url, file) = try provider.fileForReading(key)
            let range = try described(file, options: options, key: key)
            return try ObjectReadStream(file: file, bytes: .file(url, range: range), expectedCount: Int64(range.count), verifyChecksums: false, key: key)
        }
        guard capabilities.supports(.readWithRange) else {
            let url = TemporaryFile.makeURL()
            let file: RemoteFile
            do {
                file = try await provider.downloadFile(remotePath: key, localURL: url, options: options).file
            } catch {
                do { try FileManager.default.removeItem(at: url) } catch {}
                throw error
            }
            // The download checked the bytes already.
            return try ObjectReadStream(file: file, bytes: .file(url, removingWhenDone: true), verifyChecksums: false, key: key)
        }
        guard let file = try await provider.stat(remotePath: key) else { throw BuckiaError.notFound(key, operation: "read") }
        try capabilities.checkSize(of: file, operation: "read")
        let bounds = try described(file, options: options, key: key)
        let version = capabilities.supports(.conditionalRead) ? (options.ifMatch ?? file.etag) : nil
        let offset = Locked(bounds.lowerBound)
        let bytes = ByteStream {
            let start = offset.withLock { $0 }
            guard start < bounds.upperBound else {
                if version == nil {
                    let after = try await provider.stat(remotePath: key)
                    guard let after, after.etag == file.etag, after.size == file.size, after.modificationDate == file.modificationDate else {
                        throw BuckiaError(
                            .conditionNotMatch, "The object changed or was deleted while it was being read, so the bytes read may mix two versions; read it again.",
                            operation: "read", path: key.rawValue)
                    }
                }
                return nil
            }
            let end = start + Swift.min(Int64(AtomicFile.copyBufferSize), bounds.upperBound - start)
            let chunk: Data
            do {
                chunk = try await provider.readData(remotePath: key, options: ReadOptions(range: start..<end, ifMatch: version))
            } catch let error as BuckiaError where error.code == .conditionNotMatch || (error.code == .notFound && start > bounds.lowerBound) {
                throw BuckiaError(
                    .conditionNotMatch, "The object changed while it was being read, at byte \(start); read it again.",
                    operation: "read", path: key.rawValue, cause: error)
            }
            // A server that ignores Range answers with the whole object: passed on, it would
            // repeat the start.
            guard Int64(chunk.count) <= end - start else {
                throw BuckiaError(
                    .corrupt, "Asked for bytes \(start) to \(end - 1), the server sent \(chunk.count) bytes; the read stops before they are mixed in.",
                    operation: "read", path: key.rawValue)
            }
            guard !chunk.isEmpty else {
                throw BuckiaError(.corrupt, "The object ended at byte \(start) of the \(file.size) its size promised.", operation: "read", path: key.rawValue)
            }
            offset.withLock { $0 = start + Int64(chunk.count) }
            return chunk
        }
        let whole = bounds == 0..<file.size
        return try ObjectReadStream(file: file, bytes: bytes, expectedCount: Int64(bounds.count), verifyChecksums: whole, key: key)
    }

    /// The bytes of `file` that `options` asks for, clamped to it (an empty range as the
    /// empty range at the end), once its entity tag is the one `options.ifMatch` names.
    private static func described(_ file: RemoteFile, options: ReadOptions, key: ObjectKey) throws -> Range<Int64> {
        if let ifMatch = options.ifMatch, file.etag != ifMatch {
            throw BuckiaError.conditionNotMatch(key, operation: "read", "its entity tag is \(file.etag ?? "unknown"), not \(ifMatch)")
        }
        guard let range = options.range else { return 0..<file.size }
        let clamped = Swift.min(file.size, Swift.max(0, range.lowerBound))..<Swift.min(file.size, Swift.max(0, range.upperBound))
        return clamped.isEmpty ? file.size..<file.size : clamped
    }
}
