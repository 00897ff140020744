import Buckia
import Foundation

extension CLI {
    /// The longest line `kv import` reads: a key and a value of up to 12 MiB in base64.
    static let importLineLimit = 16 << 20
    /// A batch is written once it holds this many bytes of values, whatever `--batch` says.
    static let importBatchBytes = 32 << 20

    /// `kv import FILE`: JSON lines, written in batches, each batch one write of the engine
    /// (one transaction on the SQLite engine), each acknowledged on standard output with
    /// `--json` once it is stored.
    static func keyValueImport(_ invocation: Invocation, engine: any StorageEngine, file: String, batchSize: Int) async throws {
        let json = invocation.arguments.flag("json")
        let lines = try LineReader(file == "-" ? nil : CLI.checkImportFile(file, for: "kv import"), limit: importLineLimit)
        let name = file == "-" ? "standard input" : file
        var batch: [(key: CacheKey, data: Data)] = []
        var batchBytes = 0
        var imported = 0
        var batches = 0
        func flush() async throws {
            guard !batch.isEmpty else { return }
            try await engine.write(batch)
            imported += batch.count
            batches += 1
            if json { Console.out(#"{"event":"batch","values":\#(batch.count),"imported":\#(imported)}"#) }
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
        }
        while let (number, line) = try lines.next() {
            // Blank lines (a file's last newline, a CR LF file's CR) are skipped.
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }) { continue }
            let (key, value) = try importEntry(line, number: number, file: name)
            batch.append((key, value))
            batchBytes += value.count
            if batch.count >= batchSize || batchBytes >= importBatchBytes { try await flush() }
        }
        try await flush()
        if json {
            Console.out(#"{"event":"done","imported":\#(imported),"batches":\#(batches)}"#)
        } else {
            Console.out("Imported \(imported) value\(imported == 1 ? "" : "s") in \(batches) batch\(batches == 1 ? "" : "es").")
        }
    }

    /// One line of an import: `{"key": K, "value": TEXT}` or `{"key": K, "base64": BYTES}`.
    static func importEntry(_ line: ArraySlice<UInt8>, number: Int, file: String) throws -> (CacheKey, Data) {
        struct Entry: Decodable {
            let key: String
            let value: String?
            let base64: String?
        }
        func refuse(_ problem: String) -> BuckiaError {
            BuckiaError(
                .corrupt,
                "Line \(number) of \(file) \(problem); each line must be a JSON object with a \"key\" and one of \"value\" (text) or \"base64\" (bytes).",
                operation: "kv import", path: file)
        }
        let entry: Entry
        do {
            entry = try JSONValidation.decode(Entry.self, from: Data(line), what: "Line \(number) of \(file)", maximumDepth: 1)
        } catch let error as BuckiaError {
            throw BuckiaError(
                .corrupt, "\(error.message) Each line must be a JSON object with a \"key\" and one of \"value\" (text) or \"base64\" (bytes).",
                operation: "kv import", path: file)
        } catch {
            throw refuse("is not an object of strings")
        }
        let key = CacheKey(verbatim: entry.key)
        do {
            try key.validate()
        } catch let error as BuckiaError {
            throw BuckiaError(.invalidPath, "Line \(number) of \(file): \(error.message)", operation: "kv import", path: file)
        }
        switch (entry.value, entry.base64) {
        case (let text?, nil):
            return (key, Data(text.utf8))
        case (nil, let encoded?):
            guard let data = Data(base64Encoded: encoded) else { throw refuse("has a \"base64\" that is not base64") }
            return (key, data)
        case (nil, nil):
            throw refuse("has neither \"value\" nor \"base64\"")
        case (.some, .some):
            throw refuse("has both \"value\" and \"base64\"")
        }
    }
}

/// Lines of a file or of standard input, read 64 KiB at a time: memory stays at one line.
final class LineReader {
    private let descriptor: Int32
    private let file: LocalFile?
    private let limit: Int
    private let name: String
    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false
    private var number = 0

    /// Reads `url`, or standard input when nil.
    init(_ url: URL?, limit: Int) throws {
        self.limit = limit
        if let url {
            let file = try LocalFile.openForReading(url)
            self.file = file
            descriptor = -1
            name = url.path
        } else {
            if StandardStreams.wasClosed(STDIN_FILENO) {
                throw BuckiaError(.io, "Standard input is closed; name a file, or pipe the lines in.", operation: "read standard input")
            }
            file = nil
            descriptor = STDIN_FILENO
            name = "standard input"
        }
    }

    /// The next line (without its newline) and its number, or nil at the end.
    func next() throws -> (Int, ArraySlice<UInt8>)? {
        // Each byte is looked at once: `scanned` is where the search for a newline goes on
        // after more is read (a long line is read in many pieces).
        var scanned = start
        while true {
            if let newline = newline(from: scanned) {
                let line = buffer[start..<newline]
                start = newline + 1
                number += 1
                return (number, line)
            }
            scanned = buffer.count
            if ended {
                guard start < buffer.count else { return nil }
                let line = buffer[start...]
                start = buffer.count
                number += 1
                return (number, line)
            }
            guard buffer.count - start <= limit else {
                throw BuckiaError(
                    .corrupt, "Line \(number + 1) of \(name) is longer than \(limit >> 20) MiB; import values that size with kv put.",
                    operation: "kv import", path: name)
            }
            if start > 0 {
                buffer.removeFirst(start)
                scanned -= start
                start = 0
            }
            try fill()
        }
    }

    /// The index of the first newline at or after `from`, by `memchr`.
    private func newline(from: Int) -> Int? {
        guard from < buffer.count else { return nil }
        return buffer.withUnsafeBufferPointer { bytes -> Int? in
            guard let base = bytes.baseAddress, let found = memchr(base + from, Int32(UInt8(ascii: "\n")), bytes.count - from) else { return nil }
            return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let count = try chunk.withUnsafeMutableBytes { bytes -> Int in
            if let file { return try file.read(into: bytes) }
            while true {
                let count = read(descriptor, bytes.baseAddress, bytes.count)
                if count >= 0 { return count }
                if errno == EINTR { continue }
                throw BuckiaError(.io, "Standard input could not be read (\(String(cString: strerror(errno)))).", operation: "read standard input")
            }
        }
        if count == 0 { ended = true } else { buffer += chunk[0..<count] }
    }
}

extension CLI {
    /// `kv import --batch N`: values per batch, 1 to 100,000 (default 1,000).
    static func importBatchSize(_ invocation: Invocation) throws -> Int {
        let batchText = invocation.arguments.value("batch") ?? "1000"
        guard let batchSize = Int(batchText), (1...100_000).contains(batchSize) else {
            throw UsageError(description: "--batch takes a number of values from 1 to 100000, not \(batchText.debugDescription).")
        }
        return batchSize
    }

    /// The FILE an import reads, checked: nothing there is "not found" (exit 3) and a folder,
    /// device, FIFO or socket is refused (exit 2), each naming the file as the one to import.
    static func checkImportFile(_ path: String, for operation: String) throws -> URL {
        let url = URL(fileURLWithPath: path)
        do {
            try LocalFile.openForReading(url).closeAfterReading()
        } catch let error as BuckiaError where error.code == .notFound {
            throw BuckiaError(.notFound, "There is no file to import at \(path.debugDescription); check the path (- reads standard input).", operation: operation, path: path)
        } catch let error as BuckiaError where error.code == .invalidPath {
            throw BuckiaError(.invalidPath, "The file to import " + error.message, operation: operation, path: path)
        }
        return url
    }
}
