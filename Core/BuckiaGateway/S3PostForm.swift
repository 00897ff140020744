import BuckiaCore
import Foundation

/// A `multipart/form-data` body as a browser's form upload sends it: the fields first, read
/// whole (at most 20 KiB together, S3's limit), then the `file` field, streamed in pieces
/// with memory bounded by the read size, whatever its length. Fields after the file are
/// ignored, as S3 ignores them.
final class S3PostForm {
    private let body: HTTPRequestBody
    /// `\r\n--BOUNDARY`: what ends every part.
    private let delimiter: Data
    private var buffer = Data()
    private var fileDone = false
    /// The fields before the file, names lowercase.
    private(set) var fields: [String: String] = [:]
    /// The file field's own `filename`, for `${filename}` in the key.
    private(set) var filename: String?
    /// The file's bytes read so far.
    private(set) var count: Int64 = 0

    static let fieldLimit = 20 * 1024

    /// Reads the fields up to the file.
    ///
    /// - Throws: ``S3Failure`` for a body that is not such a form.
    init(contentType: String, body: HTTPRequestBody) throws {
        self.body = body
        let malformed = S3Failure("MalformedPOSTRequest", "The body of your POST request is not well-formed multipart/form-data.")
        let parameters = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parameters.first?.lowercased() == "multipart/form-data",
              let boundaryParameter = parameters.dropFirst().first(where: { $0.lowercased().hasPrefix("boundary=") })
        else { throw malformed }
        var boundary = String(boundaryParameter.dropFirst("boundary=".count))
        if boundary.hasPrefix("\""), boundary.hasSuffix("\""), boundary.count >= 2 { boundary = String(boundary.dropFirst().dropLast()) }
        guard (1...70).contains(boundary.utf8.count) else { throw malformed }
        delimiter = Data("\r\n--\(boundary)".utf8)
        // The first boundary may open the body without the CRLF before it.
        buffer = Data("\r\n".utf8)
        var total = 0
        guard try skip(through: delimiter, limit: Self.fieldLimit) else { throw malformed }
        while true {
            // After a boundary: `--` ends the form, CRLF starts a part.
            guard try fill(atLeast: 2) else { throw malformed }
            if buffer.starts(with: Data("--".utf8)) { throw S3Failure("InvalidArgument", "POST requires exactly one file upload per request.") }
            guard buffer.starts(with: Data("\r\n".utf8)) else { throw malformed }
            buffer.removeFirst(2)
            guard let headerEnd = try find(Data("\r\n\r\n".utf8), limit: 8 * 1024) else { throw malformed }
            let headers = String(decoding: buffer.prefix(headerEnd), as: UTF8.self)
            buffer.removeFirst(headerEnd + 4)
            guard let part = Self.disposition(headers) else { throw malformed }
            let (name, file) = part
            if name == "file" {
                filename = file
                return
            }
            guard let end = try find(delimiter, limit: Self.fieldLimit - total) else {
                throw S3Failure("MaxPostPreDataLengthExceeded", "Your POST request fields preceding the upload file were too large.")
            }
            total += end
            guard let value = String(data: buffer.prefix(end), encoding: .utf8) else { throw malformed }
            buffer.removeFirst(end + delimiter.count)
            guard fields.updateValue(value, forKey: name) == nil else {
                throw S3Failure("InvalidArgument", "The form names the field \(name) twice.")
            }
        }
    }

    /// The form-data part's field name (lowercase) and file name, from its headers.
    static func disposition(_ headers: String) -> (String, String?)? {
        for line in headers.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == "content-disposition" else { continue }
            var name: String?
            var filename: String?
            for parameter in line[line.index(after: colon)...].split(separator: ";").dropFirst() {
                let pair = parameter.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { continue }
                var value = pair[1]
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                switch pair[0].lowercased() {
                case "name": name = value.lowercased()
                case "filename": filename = value
                default: break
                }
            }
            return name.map { ($0, filename) }
        }
        return nil
    }

    /// The file's next bytes, or nil at its end; past `limit` bytes, `EntityTooLarge`.
    func nextFileChunk(limit: Int64) throws -> Data? {
        if fileDone { return nil }
        while true {
            if let end = buffer.range(of: delimiter)?.lowerBound {
                let chunk = Data(buffer[buffer.startIndex..<end])
                buffer = Data()
                fileDone = true
                return try counted(chunk, limit: limit)
            }
            // Everything but what could be the start of the delimiter is the file's.
            let keep = delimiter.count - 1
            if buffer.count > 256 * 1024 {
                let cut = buffer.count - keep
                let chunk = Data(buffer.prefix(cut))
                buffer = Data(buffer.suffix(keep))
                return try counted(chunk, limit: limit)
            }
            guard let more = try body.read(upTo: 256 * 1024), !more.isEmpty else {
                throw S3Failure("IncompleteBody", "The form ended inside the file, before its closing boundary.")
            }
            buffer.append(more)
        }
    }

    private func counted(_ chunk: Data, limit: Int64) throws -> Data? {
        count += Int64(chunk.count)
        guard count <= limit else { throw S3Failure("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size.") }
        return chunk.isEmpty ? nil : chunk
    }

    /// Reads until `buffer` holds `count` bytes; false at the body's end.
    private func fill(atLeast count: Int) throws -> Bool {
        while buffer.count < count {
            guard let more = try body.read(upTo: 64 * 1024), !more.isEmpty else { return false }
            buffer.append(more)
        }
        return true
    }

    /// The offset of `pattern` in `buffer`, reading on until it appears or `limit` bytes come first.
    private func find(_ pattern: Data, limit: Int) throws -> Int? {
        while true {
            if let range = buffer.range(of: pattern) { return range.lowerBound - buffer.startIndex }
            guard buffer.count <= max(0, limit) + pattern.count else { return nil }
            guard let more = try body.read(upTo: 64 * 1024), !more.isEmpty else { return nil }
            buffer.append(more)
        }
    }

    /// Drops everything through the first `pattern`; false when it does not come within `limit`.
    private func skip(through pattern: Data, limit: Int) throws -> Bool {
        guard let offset = try find(pattern, limit: limit) else { return false }
        buffer.removeFirst(offset + pattern.count)
        return true
    }
}
