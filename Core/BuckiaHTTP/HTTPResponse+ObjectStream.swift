import BuckiaCore
import Foundation

extension HTTPResponse {
    /// A streamed GET's body as an object's stream, after the checks every provider's
    /// streaming read needs: a body with a `Content-Length` (else a cut body could not be told
    /// from a whole one) and, for a ranged read, a `206` rather than a whole object the server
    /// sent instead (passed on, it would read as the range).
    ///
    /// - Parameters:
    ///   - file: The object as the response describes it; its size is the object's.
    ///   - range: The range asked for, if any.
    ///   - provider: The provider's name, for messages.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` for either failed check (the stream is
    ///   released); what ``BuckiaCore/ObjectReadStream`` throws.
    package func objectStream(file: RemoteFile, range: Range<Int64>?, key: ObjectKey, provider: String) throws -> ObjectReadStream {
        guard let bytes = bodyStream, let count = contentLength else {
            bodyStream?.cancel()
            throw BuckiaError(
                .corrupt, "\(provider) answered the read without a Content-Length; Buckia cannot tell a whole body from a cut one.",
                operation: "read", path: key.rawValue)
        }
        if let range, status == 200, range.lowerBound > 0 || range.upperBound < count {
            bytes.cancel()
            throw BuckiaError(
                .corrupt, "Asked for bytes \(range.lowerBound) to \(range.upperBound - 1), \(provider) sent the whole object (\(count) bytes) instead.",
                operation: "read", path: key.rawValue)
        }
        if let span = contentRangeSpan, span != count {
            bytes.cancel()
            throw BuckiaError(
                .corrupt, "\(provider) sent \(count) bytes for a range of \(span) (Content-Range \(header("Content-Range") ?? "")); the answer contradicts itself.",
                operation: "read", path: key.rawValue)
        }
        // The transport checks a whole body's declared digest as it streams; the stream counts.
        return try ObjectReadStream(file: file, bytes: bytes, expectedCount: count, verifyChecksums: false, key: key)
    }

    /// How many bytes a `206`'s `Content-Range` (`bytes 0-9/1234`: 10) says its body holds, if
    /// it says. No checksum covers a range, so this is the one check a ranged body gets beyond
    /// its `Content-Length`, which a broken server or proxy can get wrong as easily.
    package var contentRangeSpan: Int64? {
        guard status == 206, let value = header("Content-Range") else { return nil }
        return Self.span(ofContentRange: value)
    }

    /// The byte count of a `Content-Range` value (`bytes FIRST-LAST/TOTAL` or `/*`), or nil when
    /// it is not of that shape.
    package static func span(ofContentRange value: String) -> Int64? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst(6).split(separator: "/", maxSplits: 1).first ?? ""
        let ends = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { Int64($0.trimmingCharacters(in: .whitespaces)) }
        guard ends.count == 2, let first = ends[0], let last = ends[1], first >= 0, last >= first else { return nil }
        return last - first + 1
    }

    /// The object's whole size from a `206`'s `Content-Range` (`bytes 0-9/1234`), if it says.
    package var contentRangeTotal: Int64? {
        guard status == 206 else { return nil }
        return header("Content-Range")?.split(separator: "/").last.flatMap { Int64($0) }
    }
}
