import BuckiaCore
import BuckiaSigV4
import Foundation
import Testing

/// AWS's published example of a chunked upload (the S3 API reference, "Signature Calculations
/// for the Authorization Header: Transferring Payload in Multiple Chunks"): 66,560 bytes of
/// `a` in chunks of 64 KiB, 1 KiB and 0, with the seed signature and each chunk's signature as
/// AWS printed them.
@Suite("SigV4 chunk signatures: AWS's worked example")
struct SigV4ChunkVerifierTests {
    static let secret = Secret("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
    static let chunkSignatures = [
        "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    ]
    static let chunks = [Data(repeating: UInt8(ascii: "a"), count: 65_536), Data(repeating: UInt8(ascii: "a"), count: 1024), Data()]

    static var request: SigV4Request {
        SigV4Request(
            method: "PUT", target: "/examplebucket/chunkObject.txt",
            headers: [
                ("Host", "s3.amazonaws.com"), ("x-amz-date", "20130524T000000Z"), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                (
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=\(seed)"
                ),
                ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"), ("Content-Encoding", "aws-chunked"),
                ("x-amz-decoded-content-length", "66560"), ("Content-Length", "66824"),
            ])
    }

    static let signedAt = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z

    @Test("The seed signature verifies, and each chunk's signature chains from it")
    func example() throws {
        let authorization = try SigV4Verifier.parse(Self.request)
        try SigV4Verifier.verify(Self.request, authorization, secret: Self.secret, now: Self.signedAt)
        var verifier = SigV4ChunkVerifier(authorization: authorization, secret: Self.secret)
        for (chunk, signature) in zip(Self.chunks, Self.chunkSignatures) {
            try verifier.verifyChunk(sha256: Hashing.sha256(chunk), signature: signature)
        }
    }

    @Test("A changed, dropped or reordered chunk is refused where it happens", arguments: ["changed", "dropped", "reordered", "wrong secret"])
    func tampered(_ kind: String) throws {
        let authorization = try SigV4Verifier.parse(Self.request)
        var chunks = Self.chunks
        var signatures = Self.chunkSignatures
        var secret = Self.secret
        switch kind {
        case "changed": chunks[1] = Data(repeating: UInt8(ascii: "b"), count: 1024)
        case "dropped": chunks.remove(at: 0); signatures.remove(at: 0)
        case "reordered": chunks.swapAt(0, 1); signatures.swapAt(0, 1)
        default: secret = Secret("not-the-secret")
        }
        var verifier = SigV4ChunkVerifier(authorization: authorization, secret: secret)
        #expect(throws: SigV4Refusal.self) {
            for (chunk, signature) in zip(chunks, signatures) {
                try verifier.verifyChunk(sha256: Hashing.sha256(chunk), signature: signature)
            }
        }
    }
}
