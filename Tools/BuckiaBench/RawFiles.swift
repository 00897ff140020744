#if os(macOS) || os(Linux)
import BuckiaCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The limit for the disk engine: one file per value in one folder through open, write, read
/// and close, with no header, no atomic rename and no sync.
enum RawFiles {
    static func run(items: [(key: CacheKey, data: Data)], folder: URL) throws -> [String: Double] {
        let base = folder.path + "/"
        var times: [String: Double] = [:]
        times["batch write"] = try Stopwatch.seconds {
            for (key, data) in items {
                let fd = open(base + key.value, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                guard fd >= 0 else { throw BenchFailure("raw file create failed") }
                let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
                guard written == data.count else { throw BenchFailure("raw file write was short") }
            }
        }
        times["read all"] = try Stopwatch.seconds {
            var values: [(String, Data)] = []
            for name in try names(folder) { values.append((name, try read(base + name))) }
            guard values.count == items.count else { throw BenchFailure("raw read all is short") }
        }
        times["point reads"] = try Stopwatch.seconds {
            for (key, _) in items where try read(base + key.value).isEmpty { throw BenchFailure("raw point read failed") }
        }
        times["allKeys"] = try Stopwatch.seconds {
            guard try names(folder).count == items.count else { throw BenchFailure("raw names are short") }
        }
        times["open + 1 read"] = try Stopwatch.seconds {
            guard let directory = opendir(folder.path) else { throw BenchFailure("raw opendir failed") }
            closedir(directory)
            _ = try read(base + items[items.count / 2].key.value)
        }
        return times
    }

    private static func names(_ folder: URL) throws -> [String] {
        guard let directory = opendir(folder.path) else { throw BenchFailure("raw opendir failed") }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    private static func read(_ path: String) throws -> Data {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw BenchFailure("raw open failed") }
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        var data = Data(count: Int(info.st_size))
        let count = data.withUnsafeMutableBytes { readBytes(fd, $0.baseAddress, $0.count) }
        guard count == data.count else { throw BenchFailure("raw read was short") }
        return data
    }
}

/// read(2), named apart from `RawFiles.read` so the call is unambiguous on every platform.
private func readBytes(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
#endif
