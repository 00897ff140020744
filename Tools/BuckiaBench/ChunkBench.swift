#if os(macOS) || os(Linux)
import Buckia
import BuckiaTestSupport
import Foundation

/// `chunks`: storing a file as FastCDC chunks in a local chunk store, against the limits in
/// the same run — SHA-256 over the file's bytes and a plain copy of the file — then storing it
/// again with a stretch in the middle changed.
enum ChunkBench {
    static func run(_ arguments: [String]) async -> Int32 {
        var sizeMiB = 1024
        var changeMiB = 1
        var average = 65_536
        var folder: String?
        var compress = false
        var depth = 1
        var index = 0
        while index < arguments.count {
            let value = index + 1 < arguments.count ? arguments[index + 1] : ""
            switch arguments[index] {
            case "--size-mib": sizeMiB = max(1, Int(value) ?? sizeMiB)
            case "--change-mib": changeMiB = max(0, Int(value) ?? changeMiB)
            case "--average": average = Int(value) ?? average
            case "--folder": folder = value
            case "--depth": depth = min(max(Int(value) ?? 1, 1), 4)
            case "--compress":
                compress = true
                index -= 1
            default:
                print("Unknown option \(arguments[index])\n\(BenchCommand.usage)")
                return 2
            }
            index += 2
        }
        do {
            try await measure(sizeMiB: sizeMiB, changeMiB: changeMiB, average: average, folder: folder, compress: compress, depth: depth)
            return 0
        } catch {
            print("chunks: \(error)")
            return 1
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Flushes everything written so far, so each measurement starts with a clean page cache.
    static func flush(_ folder: URL) throws { try DirectoryHandle(path: folder.path).syncFileSystem() }

    static func measure(sizeMiB: Int, changeMiB: Int, average: Int, folder: String?, compress: Bool, depth: Int) async throws {
        let base = URL(fileURLWithPath: folder ?? FileManager.default.temporaryDirectory.path).appendingPathComponent("buckia-chunk-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let source = base.appendingPathComponent("source.bin")
        let size = sizeMiB << 20
        // Random bytes, written 1 MiB at a time: deduplication finds nothing by accident.
        var random = RandomBytes(seed: 0x9E37_79B9_7F4A_7C15)
        try random.writeFile(source, mebibytes: sizeMiB)
        try flush(base)
        print("chunks: a \(sizeMiB) MiB file of random bytes in \(base.path), FastCDC average \(average), Git-style depth \(depth), \(ProcessInfo.processInfo.activeProcessorCount) cores\(compress ? ", zlib" : "")")

        // The limits: read and hash with SHA-256; read and copy to another file, synced.
        let clock = ContinuousClock()
        var start = clock.now
        let hasher = try DigestHasher(.sha256)
        let reader = try FileReader(source)
        try reader.forEachChunk(in: 0..<Int64(size)) { hasher.update($0) }
        _ = hasher.finalize()
        let hashSeconds = seconds(clock.now - start)
        try flush(base)
        start = clock.now
        let copy = base.appendingPathComponent("copy.bin")
        try AtomicFile.copy(from: source, to: copy, options: AtomicFile.Options(durable: true))
        let copySeconds = seconds(clock.now - start)
        try FileManager.default.removeItem(at: copy)
        try flush(base)

        // Cutting alone.
        let chunker = try FastCDC(averageSize: average)
        start = clock.now
        let cutter = FastCDCReader(chunker: chunker, file: reader)
        var count = 0
        while try cutter.next() != nil { count += 1 }
        let cutSeconds = seconds(clock.now - start)

        // Storing: cut, hash, check and write every chunk, then sync the file system.
        var storage: any ChunkStorageComposable = ComposableFileSystemChunkStorage(
            baseURL: base.appendingPathComponent("chunks"), organization: GitStyleOrganization(directoryDepth: depth))
        if compress { storage = try storage.decorated { try CompressedRetrieval(wrapped: $0) } }
        let files = ChunkedFileStore(storage: storage, chunker: chunker)
        try flush(base)
        start = clock.now
        let first = try await files.store(fileAt: source)
        let storeSeconds = seconds(clock.now - start)

        // The same file with `changeMiB` overwritten in the middle.
        if changeMiB > 0 {
            let handle = try FileHandle(forWritingTo: source)
            try handle.seek(toOffset: UInt64(size / 2))
            var block = [UInt8](repeating: 0, count: 1 << 20)
            for _ in 0..<changeMiB {
                random.fill(&block)
                try handle.write(contentsOf: block)
            }
            try handle.close()
        }
        try flush(base)
        start = clock.now
        let second = try await files.store(fileAt: source)
        let restoreSeconds = seconds(clock.now - start)

        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let peakMiB = Double(usage.ru_maxrss) / 1024

        func rate(_ seconds: Double) -> String { String(format: "%8.0f MB/s", Double(size) / seconds / 1e6) }
        print("")
        print("                                      time      throughput   vs SHA-256")
        print(String(format: "raw SHA-256 (read + hash)       %8.2f s  %@       1.00", hashSeconds, rate(hashSeconds)))
        print(String(format: "raw copy (read + write + fsync) %8.2f s  %@   %8.2f", copySeconds, rate(copySeconds), hashSeconds / copySeconds))
        print(String(format: "FastCDC cut only                %8.2f s  %@   %8.2f", cutSeconds, rate(cutSeconds), hashSeconds / cutSeconds))
        print(String(format: "chunk store, first time         %8.2f s  %@   %8.2f", storeSeconds, rate(storeSeconds), hashSeconds / storeSeconds))
        print(String(format: "chunk store, %d MiB changed      %8.2f s  %@   %8.2f", changeMiB, restoreSeconds, rate(restoreSeconds), hashSeconds / restoreSeconds))
        print("")
        print("first store:  \(first.statistics.chunks) chunks (\(count) cut alone), \(first.statistics.chunksWritten) written, \(first.statistics.newBytes) new bytes")
        print("second store: \(second.statistics.chunksWritten) chunks written, \(second.statistics.newBytes) new bytes (\(String(format: "%.2f", Double(second.statistics.newBytes) / 1_048_576)) MiB), \(second.statistics.chunksReused) reused")
        print(String(format: "peak RSS of this process: %.1f MiB", peakMiB))
        let ratio = hashSeconds / storeSeconds
        print(String(format: "first store at %.2f of raw SHA-256 throughput (target ≥ 0.50): %@", ratio, ratio >= 0.5 ? "met" : "NOT met"))
        let newMiB = Double(second.statistics.newBytes) / 1_048_576
        print(String(format: "new chunk data after the change: %.2f MiB (target < 2 MiB): %@", newMiB, newMiB < 2 ? "met" : "NOT met"))
        print(String(format: "peak RSS %.1f MiB (target < 64 MiB): %@", peakMiB, peakMiB < 64 ? "met" : "NOT met"))
    }
}
#endif
