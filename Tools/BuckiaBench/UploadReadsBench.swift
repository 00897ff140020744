#if os(macOS) || os(Linux)
import Buckia
import Foundation

/// How many bytes an S3 upload reads per byte it sends: the whole-file passes an upload makes
/// before and while it transfers, measured by the process's own read counter
/// (`/proc/self/io` `rchar`: every byte `read`/`pread` returned, page cache included).
struct UploadReadsBench {
    let endpoint: URL
    let bucket: String
    let sizes: [Int]

    func run() async throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-bench-reads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = BuckiaConfiguration(
            provider: .s3, bucketName: bucket, authConfig: .awsSignature(accessKeyId: "bench", secretAccessKey: "bench"),
            options: ["endpoint": endpoint.absoluteString, "region": "us-east-1", "stateDirectory": folder.appendingPathComponent("state").path])
        let provider = try S3Provider(configuration: configuration)
        var rows = ["| file | upload | MD5 given | bytes read | read ÷ size |", "|---|---|---|---|---|"]
        for size in sizes {
            let source = folder.appendingPathComponent("source-\(size).bin")
            try writeFile(source, size: size)
            let md5 = try Hashing.digests(ofFile: source, [.md5])[.md5]?.hex ?? ""
            let kind = Int64(size) >= provider.settings.multipartThreshold ? "multipart" : "single PUT"
            for known in [false, true] {
                let options = UploadOptions(knownChecksums: known ? [.md5: md5] : [:])
                guard let before = UploadReadsBench.bytesRead() else { throw BuckiaError(.unsupported, "/proc/self/io is not readable here.") }
                try await provider.uploadFile(localURL: source, remotePath: ObjectKey("reads/\(size)-\(known)"), options: options)
                guard let after = UploadReadsBench.bytesRead() else { throw BuckiaError(.unsupported, "/proc/self/io is not readable here.") }
                let read = after - before
                rows.append("| \(size / 1_048_576) MiB | \(kind) | \(known ? "yes" : "no") | \(read) | \(String(format: "%.2f", Double(read) / Double(size))) |")
            }
        }
        return rows.joined(separator: "\n")
    }

    private func writeFile(_ url: URL, size: Int) throws {
        var generator = SystemRandomNumberGenerator()
        let piece = Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try AtomicFile.write(to: url, options: AtomicFile.Options(durable: false)) { file in
            var written = 0
            while written < size {
                let chunk = piece.prefix(size - written)
                try file.write(chunk)
                written += chunk.count
            }
        }
    }

    /// The `rchar` counter of this process, or nil without `/proc`.
    static func bytesRead() -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("rchar:") {
            return Int64(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
#endif
