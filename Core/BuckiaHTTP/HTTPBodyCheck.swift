import BuckiaCore
import Foundation

/// What a successful response body must hash to, checked by the transport while the bytes
/// arrive, so that a body damaged on the way is refused before it reaches its destination and
/// the file is never read twice.
///
/// The expected digests come from the response's own headers (S3's `x-amz-meta-md5chksum` or
/// its single-part ETag, B2's `X-Bz-Content-Sha1`), so the check is a function of them:
///
/// ```swift
/// var request = HTTPRequest(.get, url)
/// request.bodyCheck = HTTPBodyCheck { headers in
///     headers["x-checksum-sha256"].flatMap { Hex.decode($0) }.map { [.sha256: Digest(bytes: $0)] } ?? [:]
/// }
/// ```
///
/// A mismatch ends the attempt as ``BuckiaCore/BuckiaError/Code/checksumMismatch`` and is
/// retried like any damage on the way; the destination is left as it was. HEAD responses and
/// non-2xx statuses are never checked.
public struct HTTPBodyCheck: Sendable {
    /// The digests the body must have, read from the response headers; empty means "nothing
    /// to check" (the server declared no digest).
    public var expected: @Sendable (HTTPHeaders) -> [HashAlgorithm: Digest]

    /// A check whose expected digests are read from the headers by `expected`.
    public init(expected: @escaping @Sendable (HTTPHeaders) -> [HashAlgorithm: Digest]) {
        self.expected = expected
    }

    /// Compares computed digests with the expected ones.
    ///
    /// - Throws: ``HTTPBodyMismatch`` for the first algorithm that differs.
    public static func compare(expected: [HashAlgorithm: Digest], actual: [HashAlgorithm: Digest]) throws {
        for algorithm in expected.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let want = expected[algorithm], actual[algorithm] == want else {
                throw HTTPBodyMismatch(algorithm: algorithm, expected: expected[algorithm], actual: actual[algorithm])
            }
        }
    }

    /// Checks a body held in memory (for transports that receive it whole).
    public func verify(_ data: Data, headers: HTTPHeaders) throws -> [HashAlgorithm: Digest] {
        let wanted = expected(headers)
        guard !wanted.isEmpty else { return [:] }
        let digests = try DigestSet(wanted.keys)
        digests.update(data)
        let actual = digests.finalize()
        try Self.compare(expected: wanted, actual: actual)
        return actual
    }

    /// Checks a body written to a file (for transports that cannot hash while receiving).
    public func verify(file: URL, headers: HTTPHeaders) throws -> [HashAlgorithm: Digest] {
        let wanted = expected(headers)
        guard !wanted.isEmpty else { return [:] }
        let actual = try Hashing.digests(ofFile: file, Array(wanted.keys))
        try Self.compare(expected: wanted, actual: actual)
        return actual
    }
}

/// A response body larger than its request's ``HTTPRequest/maximumBodySize``; the transport
/// threw it and removed what it had written.
public struct HTTPBodyTooLarge: Error, Sendable, Equatable {
    /// The limit the body crossed.
    public var limit: Int64
    /// What the body's headers declared, when they declared more than the limit.
    public var declared: Int64?

    /// Describes a body over `limit`.
    public init(limit: Int64, declared: Int64? = nil) {
        self.limit = limit
        self.declared = declared
    }
}

/// A response body whose digest differed from the one its headers declared; the transport
/// threw it instead of delivering the body.
public struct HTTPBodyMismatch: Error, Sendable, Equatable {
    /// The algorithm that differed.
    public var algorithm: HashAlgorithm
    /// What the headers declared.
    public var expected: Digest?
    /// What the body hashed to.
    public var actual: Digest?

    /// Describes a mismatch.
    public init(algorithm: HashAlgorithm, expected: Digest?, actual: Digest?) {
        self.algorithm = algorithm
        self.expected = expected
        self.actual = actual
    }
}
