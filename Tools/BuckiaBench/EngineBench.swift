#if os(macOS) || os(Linux)
import Buckia
import Foundation

/// The engines section: every engine against its limit, for each size.
struct EngineBench {
    let sizes: [Int]
    let repeats: Int
    let valueBytes: Int
    let engines: [EngineType]

    static let operations = ["batch write", "read all", "point reads", "allKeys", "open + 1 read"]

    /// The limit each built-in engine is compared with.
    static func limit(for engine: EngineType) -> String? {
        switch engine {
        case .sqlite: "raw sqlite"
        case .disk: "raw files"
        default: nil
        }
    }

    func run() async throws -> String {
        let scratch = try Scratch()
        defer { scratch.remove() }
        var output = [
            "buckia-bench engines — \(ProcessInfo.processInfo.activeProcessorCount) cores, median of \(repeats) runs, values of \(valueBytes) bytes",
            "disk runs with fsync=false and sqlite with synchronous=NORMAL (WAL); the raw limits do the same.",
        ]
        for size in sizes {
            let items = (0..<size).map { index in
                (key: CacheKey(verbatim: String(format: "key-%08d", index)), data: value(index))
            }
            var results: [String: [String: Double]] = [:]
            for engine in engines {
                results[engine.rawValue] = try await measureEngine(engine, items: items, scratch: scratch)
            }
            results["raw sqlite"] = try await measure { try RawSQLite.run(items: items, folder: scratch.fresh("raw-sqlite")) }
            results["raw files"] = try await measure { try RawFiles.run(items: items, folder: scratch.fresh("raw-files")) }
            output.append("")
            output.append(table(size: size, results: results))
        }
        return output.joined(separator: "\n")
    }

    private func value(_ index: Int) -> Data {
        var data = Data(repeating: UInt8(truncatingIfNeeded: index), count: valueBytes)
        withUnsafeBytes(of: UInt64(index).littleEndian) { data.replaceSubrange(0..<min(8, valueBytes), with: $0.prefix(valueBytes)) }
        return data
    }

    /// Runs `once` `repeats` times and keeps the median of each operation.
    private func measure(_ once: () async throws -> [String: Double]) async throws -> [String: Double] {
        var runs: [[String: Double]] = []
        for _ in 0..<repeats { runs.append(try await once()) }
        var medians: [String: Double] = [:]
        for operation in EngineBench.operations {
            medians[operation] = Stopwatch.median(runs.compactMap { $0[operation] })
        }
        return medians
    }

    private func measureEngine(_ type: EngineType, items: [(key: CacheKey, data: Data)], scratch: Scratch) async throws -> [String: Double] {
        try await measure {
            let folder = try scratch.fresh(type.rawValue)
            let configuration = EngineConfiguration(type: type, directory: folder.path, options: type == .disk ? ["fsync": "false"] : [:])
            var times: [String: Double] = [:]
            do {
                let engine = try await EngineRegistry.builtIn.makeEngine(for: configuration)
                times["batch write"] = try await Stopwatch.time { try await engine.write(items) }
                times["read all"] = try await Stopwatch.time {
                    let all = try await engine.readAllDataAndKeys()
                    guard all.count == items.count else { throw BenchFailure("\(type) read \(all.count) of \(items.count) values") }
                }
                times["point reads"] = try await Stopwatch.time {
                    for item in items where try await engine.read(key: item.key) == nil {
                        throw BenchFailure("\(type) lost \(item.key)")
                    }
                }
                times["allKeys"] = try await Stopwatch.time {
                    guard try await engine.allKeys().count == items.count else { throw BenchFailure("\(type) allKeys is short") }
                }
            }
            // Closing the last connection after a bulk write checkpoints the WAL (the raw limit
            // pays that in its untimed close); one untimed open and close settles it, so the timed
            // open measures opening, as an app launching over existing data sees it.
            _ = try await EngineRegistry.builtIn.makeEngine(for: configuration)
            times["open + 1 read"] = try await Stopwatch.time {
                let reopened = try await EngineRegistry.builtIn.makeEngine(for: configuration)
                guard try await reopened.read(key: items[items.count / 2].key) != nil else { throw BenchFailure("\(type) reopened empty") }
            }
            return times
        }
    }

    private func table(size: Int, results: [String: [String: Double]]) -> String {
        var columns: [(String, [String: Double], [String: Double]?)] = []
        for engine in engines {
            let limit = EngineBench.limit(for: engine)
            columns.append((engine.rawValue, results[engine.rawValue] ?? [:], limit.flatMap { results[$0] }))
            if let limit, !engines.contains(where: { EngineBench.limit(for: $0) == limit && $0 != engine && columns.contains { $0.0 == limit } }) {
                columns.append((limit, results[limit] ?? [:], nil))
            }
        }
        let header = ["N = \(size)"] + columns.flatMap { $0.2 == nil ? [$0.0] : [$0.0, "× limit"] }
        var rows = [header]
        for operation in EngineBench.operations {
            var row = [operation]
            for (_, times, limit) in columns {
                let time = times[operation] ?? 0
                row.append(Stopwatch.format(time))
                if let limit { row.append(String(format: "%.2f×", time / max(limit[operation] ?? 0, 1e-9))) }
            }
            rows.append(row)
        }
        let widths = (0..<header.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == 0 ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[index] - cell.count) + cell
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
