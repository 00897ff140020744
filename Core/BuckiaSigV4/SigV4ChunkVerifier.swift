import BuckiaCore
import Foundation

/// Checks the signatures of a streaming upload's `aws-chunked` body
/// (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD` and its `-TRAILER` form): each chunk is signed over the
/// one before it, starting from the request's own signature, so a chunk dropped, reordered,
/// replaced or added is refused where it happens, not at the end.
///
/// The string to sign for a chunk is `AWS4-HMAC-SHA256-PAYLOAD`, the request's date and scope,
/// the previous signature, the SHA-256 of nothing and the SHA-256 of the chunk; for the trailer
/// it is `AWS4-HMAC-SHA256-TRAILER`, the date, the scope, the previous signature and the SHA-256
/// of the trailing fields as `name:value\n` lines.
public struct SigV4ChunkVerifier: Sendable {
    private let signer: SigV4Signer
    private let date: Date
    private var previous: String

    /// A verifier for the body of the request `authorization` describes, checked with `secret`
    /// (the one the request's own signature was verified with).
    public init(authorization: SigV4Authorization, secret: Secret) {
        signer = SigV4Signer(
            credentials: AWSCredentials(accessKeyId: authorization.accessKeyId, secretAccessKey: secret), region: authorization.region,
            service: authorization.service)
        date = authorization.date
        previous = authorization.signature
    }

    /// Checks the signature sent with the next chunk, whose SHA-256 is `chunkHash`.
    ///
    /// - Throws: ``SigV4Refusal`` `SignatureDoesNotMatch` when it is not the chunk's.
    public mutating func verifyChunk(sha256 chunkHash: Digest, signature: String) throws(SigV4Refusal) {
        let text = ["AWS4-HMAC-SHA256-PAYLOAD", SigV4Date(date).timestamp, signer.scope(date), previous, SigV4Signer.emptyPayloadHash, chunkHash.hex]
            .joined(separator: "\n")
        try check(text, signature, what: "a chunk")
    }

    /// Checks `x-amz-trailer-signature` over the trailing fields (lowercase names, in the order
    /// sent, without the signature itself).
    ///
    /// - Throws: ``SigV4Refusal`` `SignatureDoesNotMatch` when it is not theirs.
    public mutating func verifyTrailer(_ fields: [(name: String, value: String)], signature: String) throws(SigV4Refusal) {
        let canonical = fields.map { "\($0.name.lowercased()):\($0.value.trimmingCharacters(in: .whitespaces))\n" }.joined()
        let text = ["AWS4-HMAC-SHA256-TRAILER", SigV4Date(date).timestamp, signer.scope(date), previous, Hashing.sha256Hex(Data(canonical.utf8))]
            .joined(separator: "\n")
        try check(text, signature, what: "the trailer")
    }

    private mutating func check(_ stringToSign: String, _ signature: String, what: String) throws(SigV4Refusal) {
        let expected = signer.signature(stringToSign: stringToSign, date: date)
        guard HMAC.constantTimeEquals(Array(expected.utf8), Array(signature.utf8)) else {
            throw SigV4Refusal("SignatureDoesNotMatch", "The signature of \(what) of the streamed body does not match; the upload was not stored.")
        }
        previous = expected
    }
}
