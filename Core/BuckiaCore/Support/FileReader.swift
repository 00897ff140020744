import Foundation

/// A file opened for reading at explicit offsets, shareable between tasks.
///
/// `pread` moves no shared offset, so many tasks can read distinct ranges of one file through
/// one descriptor at once: the parts of a multipart upload, the chunks of a content-defined
/// split, the ranges of a resumed transfer. It is `Sendable` because its state never changes
/// after opening; the descriptor closes when the last reference goes.
package final class FileReader: Sendable {
    private let descriptor: Int32
    /// The path the file was opened at, for messages.
    package let path: String

    /// Opens an existing regular file for reading.
    ///
    /// - Throws: ``BuckiaError`` (`notFound`, `permissionDenied`, `io`) naming the path;
    ///   `invalidPath` for anything but a regular file, refused at once (a FIFO is never
    ///   waited on).
    package init(_ url: URL) throws {
        descriptor = try LocalFile.openRegularFile(url.path).descriptor
        path = url.path
    }

    deinit { close(descriptor) }

    /// The file's size and modification time now.
    package func status() throws -> (size: Int64, modificationDate: Date) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw BuckiaError.posix(errno, operation: "stat", path: path) }
        return (Int64(info.st_size), LocalFile.modificationDate(of: info))
    }

    /// The file's size now.
    package func size() throws -> Int64 { try status().size }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            let count = pread(descriptor, buffer.baseAddress.map { $0 + filled }, buffer.count - filled, off_t(offset) + off_t(filled))
            if count < 0 {
                if errno == EINTR { continue }
                throw BuckiaError.posix(errno, operation: "read", path: path)
            }
            if count == 0 { break }
            filled += count
        }
        return filled
    }

    /// Hands the bytes of `range` to `body` in chunks of at most `bufferSize`, in order.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` when the file ends before the range does (it
    ///   shrank while being read), and whatever `body` throws.
    package func forEachChunk(
        in range: Range<Int64>, bufferSize: Int = AtomicFile.copyBufferSize, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try readRange(range, bufferSize: bufferSize, path: path, read: { try read(into: $0, at: $1) }, body)
    }

    /// The bytes of `range` in memory.
    package func read(_ range: Range<Int64>) throws -> Data {
        var data = Data()
        data.reserveCapacity(Int(clamping: range.count))
        try forEachChunk(in: range) { data.append(contentsOf: $0) }
        return data
    }

    /// The digests of the bytes in `range`, in one pass.
    package func digests(of range: Range<Int64>, _ algorithms: [HashAlgorithm]) throws -> [HashAlgorithm: Digest] {
        let digests = try DigestSet(algorithms)
        try forEachChunk(in: range) { digests.update($0) }
        return digests.finalize()
    }

    /// The digests of the bytes in `range`, each algorithm computed by a job of its own on
    /// ``BlockingWork``'s threads at once (the second read of each chunk comes from the page
    /// cache): a large file's MD5 and SHA-256 take the time of the slower one, not of both, and
    /// no cooperative thread waits on the disk. Cancelling the task stops the jobs between
    /// chunks.
    package func digestsConcurrently(of range: Range<Int64>, _ algorithms: [HashAlgorithm]) async throws -> [HashAlgorithm: Digest] {
        try await withThrowingTaskGroup(of: [HashAlgorithm: Digest].self) { group in
            for algorithm in Set(algorithms) {
                group.addTask {
                    try await BlockingWork.run("hash") {
                        let digests = try DigestSet([algorithm])
                        try self.forEachChunk(in: range) { chunk in
                            try BlockingWork.checkCancellation("hash")
                            digests.update(chunk)
                        }
                        return digests.finalize()
                    }
                }
            }
            var all: [HashAlgorithm: Digest] = [:]
            for try await digests in group { all.merge(digests) { first, _ in first } }
            return all
        }
    }

    /// Copies the bytes of `range` to `output`, hashing them on the way.
    @discardableResult
    package func copy(_ range: Range<Int64>, to output: LocalFile, hashing algorithms: [HashAlgorithm] = []) throws -> [HashAlgorithm: Digest] {
        let digests = try DigestSet(algorithms)
        try forEachChunk(in: range) { chunk in
            digests.update(chunk)
            try output.write(chunk)
        }
        return digests.finalize()
    }
}

/// Reads `range` through one buffer with a positional `read`, handing each chunk to `body`:
/// the loop ``FileReader`` and ``LocalFile`` share.
///
/// - Throws: ``BuckiaError/Code/corrupt`` when the file ends before the range does (it shrank
///   while being read), and whatever `read` or `body` throws.
func readRange(
    _ range: Range<Int64>, bufferSize: Int, path: String, read: (UnsafeMutableRawBufferPointer, Int64) throws -> Int,
    _ body: (UnsafeRawBufferPointer) throws -> Void
) throws {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bufferSize), alignment: 16)
    defer { buffer.deallocate() }
    var offset = range.lowerBound
    while offset < range.upperBound {
        let want = Int(min(Int64(buffer.count), range.upperBound - offset))
        let count = try read(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), offset)
        guard count > 0 else {
            throw BuckiaError(
                .corrupt, "The file ended at byte \(offset) while bytes up to \(range.upperBound) were being read; it changed while in use.",
                operation: "read", path: path)
        }
        try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        offset += Int64(count)
    }
}
