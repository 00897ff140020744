import BuckiaConformance
import BuckiaCore
import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

@testable import BuckiaS3

/// A multipart upload killed half-way (SIGKILL of a real `buckia cp`) and run again sends only
/// the parts S3 does not already hold.
@Suite("S3 multipart resume")
struct MultipartResumeTests {
    /// With the file's MD5 given, the rerun hashes each part as it reads it; without, one pass
    /// hashes the file and every part first. Either way held parts must be recognised.
    @Test("A killed upload resumes without re-sending finished parts", arguments: [true, false])
    func killAndResume(givenMD5: Bool) async throws {
        try await MemoryProbe.exclusively { try await killAndResumeBody(givenMD5: givenMD5) }
    }

    private func killAndResumeBody(givenMD5: Bool) async throws {
        let (provider, server, bucket) = try await makeS3Provider(auth: false, options: ["multipartThresholdMiB": "5", "partSizeMiB": "5"])
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        // Enough parts that a fast transport cannot finish between two polls once two are in.
        let partCount = 16
        let source = work.appendingPathComponent("source.bin")
        let data = Data((0..<(partCount * 5 * 1_048_576 - 3)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) })
        try data.write(to: source)
        let state = provider.settings.stateDirectory

        // 1. A real process, one part at a time, killed once two parts are on the server.
        let environment = [
            "HOME": work.path, "PATH": "/usr/bin:/bin", "BUCKIA_REMOTE_MOTO_PROVIDER": "s3", "BUCKIA_REMOTE_MOTO_BUCKET": bucket,
            "BUCKIA_REMOTE_MOTO_ENDPOINT": server.endpoint.absoluteString, "BUCKIA_REMOTE_MOTO_CREDENTIAL_ACCESS_KEY_ID": server.accessKeyId,
            "BUCKIA_REMOTE_MOTO_CREDENTIAL_SECRET_ACCESS_KEY": server.secretAccessKey.exposedValue,
            "BUCKIA_REMOTE_MOTO_MULTIPART_THRESHOLD_MI_B": "5", "BUCKIA_REMOTE_MOTO_PART_SIZE_MI_B": "5",
            "BUCKIA_REMOTE_MOTO_MAX_CONCURRENT_OPERATIONS": "1", "BUCKIA_REMOTE_MOTO_STATE_DIRECTORY": state.path,
        ]
        // The kill follows the process's own log (its second part acknowledged), not polls of
        // moto, which a busy moto answers too late to catch a fast upload.
        let cli = try Spawned(
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia"),
            ["cp", "--verbose", source.path, "moto:big.bin"], environment: environment, errors: .pipe)
        var before: [Int: String] = [:]
        var acknowledged = 0
        while acknowledged < 2, let line = cli.readLine(timeout: .seconds(60), errors: true) {
            if line.contains("partNumber="), line.contains("-> 200") { acknowledged += 1 }
        }
        if acknowledged >= 2 { cli.signal(SIGKILL) }
        // Drain what is left so the process never blocks on a full pipe.
        while cli.readLine(timeout: .seconds(60), errors: true) != nil {}
        _ = cli.wait(.seconds(60))
        cli.stop()
        #expect(cli.termination == .signalled(SIGKILL), "the upload finished before it could be killed")
        let saved = try #require(try FileManager.default.contentsOfDirectory(at: state, includingPropertiesForKeys: nil).first)
        let uploadId = try JSONDecoder().decode(MultipartState.self, from: Data(contentsOf: saved)).uploadId
        before = try await provider.listParts(ObjectKey("big.bin"), uploadId: uploadId)

        // 2. The same upload again, counting the parts it sends.
        let sent = Locked<[Int]>([])
        let lines = Locked<[String]>([])
        let resumed = S3Provider(settings: provider.settings, log: { line in
            lines.withLock { $0.append(line) }
            guard line.contains("attempt 1/"), let range = line.range(of: "partNumber=") else { return }
            if let number = Int(line[range.upperBound...].prefix { $0.isNumber }) { sent.withLock { $0.append(number) } }
        }, resources: .tests)
        // Given the MD5, the rerun reads the held parts in order to check the whole file too.
        let md5 = try Hashing.digest(data, .md5).hex
        let stored = try await resumed.uploadFile(
            localURL: source, remotePath: "big.bin", options: UploadOptions(knownChecksums: givenMD5 ? [.md5: md5] : [:]))
        #expect(before.count >= 2)
        // No part the server held is sent again, none twice, and together they make the file. (A
        // part whose bytes reached moto just before the kill may register after `before` was
        // read; the rerun rightly skips it too.)
        let numbers = sent.withLock { $0 }
        let context = "sent parts \(numbers) with \(before.keys.sorted()) already there; log:\n\(lines.withLock { $0 }.joined(separator: "\n"))"
        #expect(Set(numbers).isDisjoint(with: before.keys), "\(context)")
        #expect(Set(numbers).count == numbers.count, "\(context)")
        // The process sent one part at a time, so at most the one part in flight at the kill (the
        // next after those listed) may have reached moto after `before` was read and be skipped
        // by the rerun without being in `before`; the byte check below proves it was held.
        let unaccounted = Set(1...partCount).subtracting(numbers).subtracting(before.keys)
        #expect(unaccounted.isEmpty || unaccounted == [(before.keys.max() ?? 0) + 1], "\(context)")
        #expect(try stored.checksums[.md5] == Hashing.digest(data, .md5).hex)
        #expect(try await resumed.readData(remotePath: "big.bin") == data)
        #expect(try FileManager.default.contentsOfDirectory(at: state, includingPropertiesForKeys: nil).isEmpty, "state is removed once complete")
    }
}
