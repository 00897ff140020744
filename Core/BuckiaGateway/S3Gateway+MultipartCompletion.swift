import BuckiaCore
import Foundation

/// Completing a multipart upload: what the request lists, and the object's checksum from its
/// parts' (the backend's completion is in S3Gateway+BackendUploads.swift).
extension S3Gateway {
    /// What a CompleteMultipartUpload asks: the parts listed (ascending, each with its ETag and
    /// checksums), the object's checksum header if sent, and the write condition.
    struct CompletionRequest {
        var listed: [(number: Int, etag: String, checksums: [S3ChecksumAlgorithm: String])]
        var sentChecksum: (S3ChecksumAlgorithm, String)?
        var condition: WriteCondition?
        /// The parts as a retry must list them again to get the first answer.
        var asked: [String] { listed.map { "\($0.number) \(S3Gateway.bareTag($0.etag))" } }
    }

    func completionRequest(_ context: inout RequestContext, body: HTTPRequestBody) throws -> CompletionRequest {
        // A completion's checksum header is the object's (checked below), not its body's.
        let request = try S3UploadBody(context, body: body, maximumSize: 4 << 20, checksumsDescribeBody: false)
        var data = Data()
        while let chunk = try request.next() { data.append(chunk) }
        context.bytesIn = request.count
        let document = try Self.parseXML(data, what: "CompleteMultipartUpload")
        guard document.name == "CompleteMultipartUpload" else {
            throw S3Failure("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
        }
        var listed: [(number: Int, etag: String, checksums: [S3ChecksumAlgorithm: String])] = []
        for part in document.children("Part") {
            guard let numberText = part.value("PartNumber"), let number = Int(numberText.trimmingCharacters(in: .whitespacesAndNewlines)),
                  let etag = part.value("ETag")
            else { throw S3Failure("MalformedXML", "Each Part needs a PartNumber and an ETag.") }
            var checksums: [S3ChecksumAlgorithm: String] = [:]
            for algorithm in S3ChecksumAlgorithm.allCases {
                if let value = part.value(algorithm.xmlName) { checksums[algorithm] = value.trimmingCharacters(in: .whitespacesAndNewlines) }
            }
            listed.append((number, etag, checksums))
        }
        let sentChecksums = try S3ChecksumAlgorithm.allCases.compactMap { algorithm in try context.header(algorithm.header).map { (algorithm, $0) } }
        guard sentChecksums.count <= 1 else { throw S3Failure("InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.") }
        guard !listed.isEmpty else { throw S3Failure("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.") }
        for (previous, next) in zip(listed, listed.dropFirst()) where next.number <= previous.number {
            throw S3Failure("InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.")
        }
        return CompletionRequest(listed: listed, sentChecksum: sentChecksums.first, condition: try uploadOptions(context).condition)
    }

    func completeUpload(_ context: inout RequestContext, uploadId: String, body: HTTPRequestBody) throws -> HTTPServerResponse {
        let key = try remoteKey(context, for: .write)
        return try completeBackendUpload(&context, uploadId: uploadId, key: key, body: body)
    }

    /// The object's checksum in the upload's algorithm, from its parts' (each listed with the
    /// value it was given): of their checksums for `COMPOSITE` (`…-N`), combined into the CRC of
    /// the bytes for `FULL_OBJECT`. A checksum header on the completion must match it.
    static func objectChecksum(
        _ algorithm: S3ChecksumAlgorithm?, composite: Bool, parts: [Int: (size: Int64, checksum: [UInt8]?)],
        listed: [(number: Int, checksums: [S3ChecksumAlgorithm: String])], sent: (S3ChecksumAlgorithm, String)?
    ) throws -> S3StoredChecksum? {
        guard let algorithm else {
            if let sent { throw S3Failure("InvalidRequest", "The upload was created without a checksum, so the \(sent.0.header) header cannot be checked.") }
            return nil
        }
        var values: [[UInt8]] = []
        var sizes: [Int64] = []
        for item in listed {
            guard let given = item.checksums[algorithm] else {
                throw S3Failure(
                    "InvalidRequest",
                    "The upload was created using a \(algorithm.rawValue) checksum. The complete request must include the checksum for each part. It was missing for part \(item.number) in the request.")
            }
            guard let part = parts[item.number], let value = part.checksum, Data(base64Encoded: given).map(Array.init) == value else {
                throw S3Failure("InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified checksum may not match the part's checksum.")
            }
            values.append(value)
            sizes.append(part.size)
        }
        let checksum: S3StoredChecksum
        if composite {
            let value = Data(try algorithm.digest(Data(values.joined()))).base64EncodedString()
            checksum = S3StoredChecksum(algorithm: algorithm, value: "\(value)-\(values.count)", composite: true)
        } else {
            guard var combined = values.first else { return nil }
            for (value, size) in zip(values.dropFirst(), sizes.dropFirst()) {
                guard let next = algorithm.combine(combined, value, secondLength: size) else { return nil }
                combined = next
            }
            checksum = S3StoredChecksum(algorithm: algorithm, value: Data(combined).base64EncodedString(), composite: false)
        }
        if let (sentAlgorithm, sentValue) = sent {
            guard sentAlgorithm == algorithm else {
                throw S3Failure("InvalidRequest", "The upload was created using a \(algorithm.rawValue) checksum; the completion sent \(sentAlgorithm.header).")
            }
            let bare = checksum.value.split(separator: "-").first.map(String.init) ?? checksum.value
            guard sentValue.trimmingCharacters(in: .whitespaces) == checksum.value || sentValue.trimmingCharacters(in: .whitespaces) == bare else {
                throw S3Failure("BadDigest", "The \(algorithm.rawValue.uppercased()) you specified did not match the calculated checksum.")
            }
        }
        return checksum
    }

    /// A checksum as S3's XML answers give it: its value and its type.
    static func checksumElements(_ checksum: S3StoredChecksum?) -> String {
        guard let checksum else { return "" }
        return checksum.algorithm.element(checksum.value) + "<ChecksumType>\(checksum.type)</ChecksumType>"
    }

}
