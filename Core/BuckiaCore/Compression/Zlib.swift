import CZlib
import Foundation

/// The container around deflate-compressed bytes.
package enum CompressionFormat: String, Sendable, Codable, CaseIterable {
    /// RFC 1950: a two-byte header and an Adler-32 trailer.
    case zlib
    /// RFC 1952: the `.gz` file format, with a CRC-32 trailer.
    case gzip
    /// RFC 1951: bare deflate, no header or checksum.
    case raw

    var windowBits: Int32 {
        switch self {
        case .zlib: 15
        case .gzip: 31
        case .raw: -15
        }
    }
}

/// Compresses a stream of bytes piece by piece; memory stays bounded by the pieces.
///
/// Not `Sendable`: one stream belongs to one task.
package final class Deflater {
    private var stream = z_stream()
    private var finished = false

    /// Starts a compression stream.
    ///
    /// - Parameter level: 0 (store) to 9 (smallest); -1 is zlib's default (6).
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` for a level outside -1...9.
    package init(format: CompressionFormat = .zlib, level: Int32 = -1) throws {
        guard (-1...9).contains(level) else {
            throw BuckiaError(
                .invalidConfiguration, "The compression level is \(level); use 0 (store) to 9 (smallest), or -1 for the default.",
                operation: "start compressing")
        }
        let status = buckia_deflateInit2(&stream, level, format.windowBits, 8)
        guard status == Z_OK else { throw ZlibStream.error(status, "start compressing", &stream) }
    }

    deinit { deflateEnd(&stream) }

    /// Compresses `input`, returning whatever output is ready.
    package func update(_ input: Data) throws -> Data {
        try run(input, flush: Z_NO_FLUSH)
    }

    /// Ends the stream, returning the remaining output and trailer.
    package func finish() throws -> Data {
        guard !finished else { return Data() }
        finished = true
        return try run(Data(), flush: Z_FINISH)
    }

    private func run(_ input: Data, flush: Int32) throws -> Data {
        try ZlibStream.drive(&stream, input: input, operation: "compress") { stream in
            let status = deflate(&stream, flush)
            // Z_BUF_ERROR only means "no progress possible right now"; the loop handles it.
            guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                throw ZlibStream.error(status, "compress", &stream)
            }
            return flush == Z_FINISH ? status != Z_STREAM_END : stream.avail_out == 0
        }
    }
}

/// Decompresses a stream of bytes piece by piece, with an optional cap on the output.
///
/// Not `Sendable`: one stream belongs to one task.
package final class Inflater {
    private var stream = z_stream()
    private var ended = false
    private var produced: Int64 = 0
    private let maximumOutput: Int64?

    /// Starts a decompression stream.
    ///
    /// - Parameters:
    ///   - format: The container; nil detects zlib or gzip from the header.
    ///   - maximumOutput: Fail with ``BuckiaError/Code/corrupt`` rather than produce more
    ///     than this many bytes (a guard against decompression bombs).
    package init(format: CompressionFormat? = nil, maximumOutput: Int64? = nil) throws {
        self.maximumOutput = maximumOutput
        let status = buckia_inflateInit2(&stream, format?.windowBits ?? 47)
        guard status == Z_OK else { throw ZlibStream.error(status, "start decompressing", &stream) }
    }

    deinit { inflateEnd(&stream) }

    /// Whether the compressed stream's end marker has been seen.
    package var isComplete: Bool { ended }

    /// Decompresses `input`, returning whatever output is ready.
    package func update(_ input: Data) throws -> Data {
        if ended {
            guard input.isEmpty else {
                throw BuckiaError(.corrupt, "Compressed data continues after the end of the stream.", operation: "decompress")
            }
            return Data()
        }
        let alreadyProduced = produced
        let output = try ZlibStream.drive(
            &stream, input: input, operation: "decompress",
            // Checked after every chunk, so a bomb fails before it fills memory.
            checkOutput: { total in try self.checkLimit(alreadyProduced + Int64(total)) }
        ) { stream in
            let status = inflate(&stream, Z_NO_FLUSH)
            switch status {
            case Z_STREAM_END:
                ended = true
                if stream.avail_in != 0 {
                    throw BuckiaError(.corrupt, "Compressed data continues after the end of the stream.", operation: "decompress")
                }
                return false
            case Z_OK: return stream.avail_in > 0 || stream.avail_out == 0
            case Z_BUF_ERROR: return false
            case Z_NEED_DICT:
                // Buckia never compresses with a preset dictionary, so the header is not ours.
                throw BuckiaError(
                    .corrupt, "The compressed data asks for a preset dictionary; it was not written by Buckia.",
                    operation: "decompress")
            default: throw ZlibStream.error(status, "decompress", &stream)
            }
        }
        produced += Int64(output.count)
        return output
    }

    private func checkLimit(_ total: Int64) throws {
        if let maximumOutput, total > maximumOutput {
            throw BuckiaError(
                .corrupt, "Decompressed data exceeds the \(maximumOutput)-byte limit; the input may be a decompression bomb.",
                operation: "decompress")
        }
    }

    /// Checks the stream ended properly; truncated input fails here.
    package func finish() throws {
        guard ended else {
            throw BuckiaError(.corrupt, "The compressed data is truncated: the stream ended before its end marker.", operation: "decompress")
        }
    }
}

/// One-shot compression helpers.
package enum Zlib {
    /// Compresses `data` whole.
    package static func compress(_ data: Data, format: CompressionFormat = .zlib, level: Int32 = -1) throws -> Data {
        let deflater = try Deflater(format: format, level: level)
        var output = try deflater.update(data)
        output.append(try deflater.finish())
        return output
    }

    /// Decompresses `data` whole.
    ///
    /// - Throws: ``BuckiaError/Code/corrupt`` for malformed, truncated or oversized input.
    package static func decompress(_ data: Data, format: CompressionFormat? = nil, maximumOutput: Int64? = nil) throws -> Data {
        let inflater = try Inflater(format: format, maximumOutput: maximumOutput)
        let output = try inflater.update(data)
        try inflater.finish()
        return output
    }
}

enum ZlibStream {
    static let chunkSize = 64 * 1024

    /// Feeds `input` through `step` until it asks to stop, collecting output in chunks.
    ///
    /// - Parameter checkOutput: Sees the output size so far after every chunk, and may throw
    ///   to stop early.
    static func drive(
        _ stream: inout z_stream, input: Data, operation: String, checkOutput: (Int) throws -> Void = { _ in },
        step: (inout z_stream) throws -> Bool
    ) throws -> Data {
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        try input.withUnsafeBytes { (inputBuffer: UnsafeRawBufferPointer) in
            guard inputBuffer.count <= Int(uInt.max) else {
                throw BuckiaError(
                    .unsupported, "zlib takes at most \(uInt.max) bytes per call; pass larger data in pieces.",
                    operation: operation)
            }
            // zlib only reads through `next_in`; the header just lacks `const`.
            stream.next_in = inputBuffer.baseAddress.map { UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: Bytef.self)) }
            stream.avail_in = uInt(inputBuffer.count)
            defer {
                stream.next_in = nil
                stream.avail_in = 0
            }
            var more = true
            while more {
                try buffer.withUnsafeMutableBufferPointer { outputBuffer in
                    stream.next_out = outputBuffer.baseAddress
                    stream.avail_out = uInt(chunkSize)
                    more = try step(&stream)
                    output.append(outputBuffer.baseAddress!, count: chunkSize - Int(stream.avail_out))
                    stream.next_out = nil
                }
                try checkOutput(output.count)
            }
        }
        return output
    }

    static func error(_ status: Int32, _ operation: String, _ stream: inout z_stream) -> BuckiaError {
        let detail = stream.msg.map { String(cString: $0) } ?? "zlib status \(status)"
        let code: BuckiaError.Code = status == Z_DATA_ERROR || status == Z_NEED_DICT ? .corrupt : .io
        return BuckiaError(code, "Could not \(operation): \(detail).", operation: operation)
    }
}
