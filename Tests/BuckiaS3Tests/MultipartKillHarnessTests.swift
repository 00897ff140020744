import BuckiaCore
@testable import BuckiaS3
import BuckiaTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `buckia cp` of a 24 MiB file to S3 (moto, 5 MiB parts) killed with SIGKILL at 20 moments of
/// its multipart upload: in half the trials a random number of bytes it has read of the file (its
/// own count), in the other half once S3 has stored a random 1 to 3 of the upload's parts — the
/// pass-through proxy holds every request after those parts' answers, so the kill lands there
/// however slow the machine (a harness that listed the parts itself and then killed came too
/// late on a busy CI machine: no rerun of 20 resumed). The proxy also counts what each rerun
/// sends. Each trial writes a new 5 MiB stretch of the file first and dates it a minute later.
/// After each kill the object is the previous version or the new one, never a mix. The rerun (the
/// same command) must leave exactly the new file; after a kill with parts stored it sends only
/// the missing parts, and where the file changed again in between (one trial in four) none of the
/// killed run's parts may be used. Uploads a kill orphaned (killed before its resume state was
/// written) are what `buckia cleanup --max-age 0s` is for: after it, none is left.
@Suite("Multipart kill harness: SIGKILL at random moments of a multipart upload to S3")
struct MultipartKillHarnessTests {
    static let kills = 20

    @Test("Killed at 20 random moments: never a partial object, each rerun completes, cleanup leaves no upload", .timeLimit(.minutes(15)))
    func killAndRerun() async throws {
        let seed = ProcessInfo.processInfo.environment["BUCKIA_KILL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        var random = SplitMix64(seed: seed)
        var bytes = RandomBytes(seed: seed)
        func fresh(_ count: Int) -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: count)
            bytes.fill(&buffer)
            return buffer
        }
        let (direct, server, bucket) = try await makeS3Provider(auth: false)
        let proxy = try FaultProxy.start(upstream: server.endpoint, rate: 0, seed: 1)
        defer { proxy.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-mpkill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let state = work.appendingPathComponent("state")
        let environment = [
            "HOME": work.path, "PATH": "/usr/bin:/bin", "BUCKIA_REMOTE_M_PROVIDER": "s3", "BUCKIA_REMOTE_M_BUCKET": bucket,
            "BUCKIA_REMOTE_M_ENDPOINT": proxy.endpoint.absoluteString, "BUCKIA_REMOTE_M_CREDENTIAL_ACCESS_KEY_ID": server.accessKeyId,
            "BUCKIA_REMOTE_M_CREDENTIAL_SECRET_ACCESS_KEY": server.secretAccessKey.exposedValue,
            "BUCKIA_REMOTE_M_MULTIPART_THRESHOLD_MI_B": "5", "BUCKIA_REMOTE_M_PART_SIZE_MI_B": "5",
            "BUCKIA_REMOTE_M_STATE_DIRECTORY": state.path, "BUCKIA_REMOTE_M_MAX_CONCURRENT_OPERATIONS": "2",
        ]
        let size = 24 << 20
        let source = work.appendingPathComponent("big.bin")
        var current = Data(fresh(size))
        try current.write(to: source)
        let key = "big.bin"
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("buckia")
        func run(_ arguments: [String]) throws -> Int32 {
            let process = try Spawned(executable, arguments, environment: environment, errors: .file(work.appendingPathComponent("stderr.log")))
            guard process.wait(.seconds(180)) else {
                process.stop()
                throw BuckiaError(.io, "buckia \(arguments.joined(separator: " ")) ran past 3 minutes")
            }
            return process.status
        }
        let copy = ["cp", source.path, "m:big.bin"]
        guard try run(copy) == 0 else { throw BuckiaError(.io, "the first copy failed") }

        var (kills, midRun, resumed, orphans) = (0, 0, 0, 0)
        var violations: [String] = []
        for trial in 0..<Self.kills {
            let previous = current
            let offset = Int.random(in: 0...(size - (5 << 20)), using: &random)
            current.replaceSubrange(offset..<(offset + (5 << 20)), with: fresh(5 << 20))
            try current.write(to: source)
            // A later time of its own: cp skips a file of the same size and second, as rclone
            // and rsync do, and the trials come faster than a second apart.
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_800_000_000 + Double(trial) * 60)], ofItemAtPath: source.path)
            // Mostly within the parts; one trial in ten after the upload has ended.
            // The file is read three times over with libcurl: hashed whole first (its MD5 goes
            // with the completion), then each part hashed for its Content-MD5 and read again as
            // it is sent. Even trials: a moment anywhere in that. Odd trials: once S3 has stored
            // 1 to 3 of the 5 parts.
            let afterEnd = Int.random(in: 0..<10, using: &random) == 0
            let threshold = Int.random(in: 0..<(3 * size), using: &random)
            let partsWanted = Int.random(in: 1...3, using: &random)
            let holding = !afterEnd && trial % 2 == 1
            if holding { try await proxy.hold(after: partsWanted, matching: "partNumber=") }
            let process = try Spawned(executable, copy, environment: environment)
            var held = false
            if afterEnd {
                process.watch(until: { false }, limit: .seconds(120))
            } else if holding {
                let deadline = ContinuousClock.now + .seconds(120)
                while !held, process.isRunning, ContinuousClock.now < deadline {
                    held = try await proxy.held(waiting: .seconds(2)) > 0
                }
            } else {
                // Its own count of bytes read (/proc/PID/io), looked at locally: the proxy's count
                // of bytes received, asked over HTTP, came back after the upload had ended.
                process.watch(until: { (process.bytesRead ?? Int.max) >= threshold }, limit: .seconds(120))
            }
            process.stop()
            if holding { try await proxy.endHold() }
            if holding && !held { violations.append("trial \(trial): the run was never held after \(partsWanted) parts (exit \(process.status))") }
            kills += 1
            if process.termination == .signalled(SIGKILL) { midRun += 1 }
            let stored = try await direct.readData(remotePath: key)
            if stored != previous && stored != current {
                violations.append("trial \(trial): after the kill the object is neither version (\(stored.count) bytes)")
            }
            // One trial in four (an even one: the odd ones are kept to resume), the file changes
            // again before the rerun: the killed run's upload, and its parts, are of a version
            // that is gone, and must not be resumed.
            if trial % 4 == 2 {
                let again = Int.random(in: 0...(size - (1 << 20)), using: &random)
                current.replaceSubrange(again..<(again + (1 << 20)), with: fresh(1 << 20))
                try current.write(to: source)
                try FileManager.default.setAttributes(
                    [.modificationDate: Date(timeIntervalSince1970: 1_800_000_030 + Double(trial) * 60)], ofItemAtPath: source.path)
            }
            let sentBefore = try await proxy.stats().putBodyBytes
            let rerun = try run(copy)
            if rerun != 0 { violations.append("trial \(trial): the rerun exited \(rerun)") }
            let sent = try await proxy.stats().putBodyBytes - sentBefore
            if sent > 0 && sent < size { resumed += 1 }  // 0: nothing to send (the killed run had finished)
            if held && !(sent > 0 && sent <= size - partsWanted * (5 << 20)) {
                violations.append("trial \(trial): killed with \(partsWanted) parts stored, the rerun sent \(sent) bytes of \(size)")
            }
            if try await direct.readData(remotePath: key) != current { violations.append("trial \(trial): the rerun did not leave the new file") }
            // Regression (portable build): a kill while the resume state was being written left
            // its temporary in the state folder, where nothing swept it.
            let litter = FileManager.default.fileExists(atPath: state.path) ? try FileManager.default.contentsOfDirectory(atPath: state.path).filter { $0.hasPrefix(".buckia-") } : []
            if !litter.isEmpty { violations.append("trial \(trial): left in the state folder after the rerun: \(litter)") }
            orphans += try await direct.unfinishedUploads(prefix: "").count
        }
        // What the kills orphaned is aborted by cleanup, and then nothing is left.
        let cleanup = try run(["cleanup", "m:", "--max-age", "0s"])
        let left = try await direct.unfinishedUploads(prefix: "")
        print(
            "multipart kill harness: \(kills) kills (\(midRun) mid-run), \(resumed) reruns resumed a killed upload, "
                + "\(orphans) unfinished uploads seen after reruns, \(violations.count) violations (seed \(seed))")
        KillReport(
            component: "multipart cp to S3 (moto)", kills: kills, midRun: midRun, violations: violations.count + (left.isEmpty ? 0 : 1), seed: seed,
            checks: "the object the old version or the new, never a mix; the rerun resumes (\(resumed) of \(kills)) and completes; cleanup leaves no upload"
        ).write()
        #expect(cleanup == 0)
        #expect(left.isEmpty, "after cleanup: \(left.map { "\($0.key) \($0.id) \($0.status)" })")
        #expect(kills == Self.kills)
        #expect(midRun >= Self.kills / 2, "only \(midRun) of \(kills) kills landed mid-run")
        #expect(resumed > 0, "no rerun resumed the upload its killed run left")
        #expect(violations.isEmpty, "seed \(seed): \(violations.prefix(10).joined(separator: "; "))")
    }
}
