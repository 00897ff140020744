import BuckiaConformance
import BuckiaCore
import BuckiaS3
import Foundation
import Testing

/// Known MD5s on multipart uploads are checked by the provider itself, against the parts'
/// bytes as they are read, so this holds on moto too (which checks no `Content-MD5`).
@Suite("S3 known checksums on multipart uploads")
struct S3KnownChecksumTests {
    @Test("A multipart upload given the right MD5 stores it; given a wrong one it fails and stores nothing")
    func multipartKnownMD5() async throws {
        try await MemoryProbe.exclusively {
            let (provider, _, _) = try await makeS3Provider(auth: false, options: ["multipartThresholdMiB": "5", "partSizeMiB": "5"])
            let data = Data((0..<(12 * 1_048_576 + 5)).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ $0 >> 9) })
            let source = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-known-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: source) }
            try data.write(to: source)
            let md5 = try Hashing.digest(data, .md5).hex

            let stored = try await provider.uploadFile(localURL: source, remotePath: "right.bin", options: UploadOptions(knownChecksums: [.md5: md5]))
            #expect(stored.etag?.hasSuffix("-3\"") == true, "three parts: \(stored.etag ?? "none")")
            #expect(try await provider.stat(remotePath: "right.bin")?.checksums[.md5] == md5)

            let wrong = String(repeating: "ab", count: 16)
            let error = await #expect(throws: BuckiaError.self) {
                try await provider.uploadFile(localURL: source, remotePath: "wrong.bin", options: UploadOptions(knownChecksums: [.md5: wrong]))
            }
            #expect(error?.code == .checksumMismatch)
            #expect(error?.message.contains(md5) == true, "\(String(describing: error))")
            #expect(try await provider.stat(remotePath: "wrong.bin") == nil)
            let state = provider.settings.stateDirectory
            #expect((try? FileManager.default.contentsOfDirectory(atPath: state.path))?.isEmpty ?? true, "a failed upload left its resume state")
        }
    }
}
