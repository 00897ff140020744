import BuckiaCore
import BuckiaDiskEngine
import Foundation

/// A fresh directory per test, removed afterwards.
struct DiskFixture: ~Copyable {
    let base: URL
    let directory: URL

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-disktests-\(UUID().uuidString)")
        directory = base.appendingPathComponent("values", isDirectory: true)
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: base) }

    /// A new engine over the fixture's directory.
    func open(layout: StorageLayout = .gitStyle, durable: Bool = true, now: @escaping @Sendable () -> Date = { Date() }) throws -> DiskStorageEngine {
        try DiskStorageEngine(directory: directory, layout: layout, durable: durable, now: now)
    }

    /// Every regular file under the directory, as paths relative to it.
    func files() -> [String] {
        guard let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        var result: [String] = []
        for case let url as URL in enumerator where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            result.append(String(url.standardizedFileURL.path.dropFirst(directory.standardizedFileURL.path.count + 1)))
        }
        return result.sorted()
    }

    /// Changes a file in place.
    static func damage(_ url: URL, writing bytes: [UInt8] = [], at offset: UInt64 = 0, truncatingTo length: UInt64? = nil) throws {
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        if !bytes.isEmpty {
            try handle.seek(toOffset: offset)
            try handle.write(contentsOf: Data(bytes))
        }
        if let length { try handle.truncate(atOffset: length) }
    }
}
