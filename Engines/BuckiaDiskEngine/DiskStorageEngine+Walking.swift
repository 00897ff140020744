import BuckiaCore
import Foundation

/// Finding the values in the directory without an index: a walk of the layout's folders that
/// keeps only regular files with names the engine writes (see ``DiskFileName``).
extension DiskStorageEngine {
    /// Every value file with its key, unsorted. Hashed names have their header read.
    func valueFiles() throws -> [(key: CacheKey, path: String)] {
        var files: [(key: CacheKey, path: String)] = []
        try walkValueFiles { folder, name, parsed in
            let path = rootPath + "/" + folder + name
            switch parsed {
            case .key(let key):
                files.append((key, path))
            case .hashed:
                // The file may vanish between the listing and the read; then it is not a value.
                guard let header = try readHeader(at: path, subject: path) else { return }
                let key = CacheKey(verbatim: String(decoding: header.key, as: UTF8.self))
                guard key.value.utf8.elementsEqual(header.key), DiskFileName.hashedName(name, matches: key) else {
                    throw BuckiaError(
                        .corrupt, "The header of \(name) holds a key that does not hash to its name; the file was renamed or damaged.",
                        operation: "list", path: path)
                }
                files.append((key, path))
            }
        }
        return files
    }

    /// Every value file, in key order.
    func sortedValueFiles() throws -> [(key: CacheKey, path: String)] {
        try valueFiles().sorted { $0.key < $1.key }
    }

    /// Calls `visit` with the folder (relative, empty or ending in `/`), name and parsed name
    /// of every regular file at the layout's depth whose name the engine would write.
    /// `visitFolder` sees each fan-out folder after its contents.
    nonisolated func walkValueFiles(
        _ visit: (_ folder: String, _ name: String, _ parsed: DiskFileName.Parsed) throws -> Void,
        visitFolder: ((_ folder: String) -> Void)? = nil
    ) throws {
        try walk(folder: "", remaining: fanOutDepth, visit, visitFolder)
    }

    private nonisolated func walk(
        folder: String, remaining: Int,
        _ visit: (String, String, DiskFileName.Parsed) throws -> Void,
        _ visitFolder: ((String) -> Void)?
    ) throws {
        guard let entries = try DiskFileSystem.entries(of: folderPath(folder)) else { return }
        for entry in entries {
            if remaining == 0 {
                guard entry.kind == .file, let parsed = DiskFileName.parse(entry.name) else { continue }
                try visit(folder, String(decoding: entry.name, as: UTF8.self), parsed)
            } else {
                guard entry.kind == .directory, Self.isFanOutFolderName(entry.name) else { continue }
                let child = folder + String(decoding: entry.name, as: UTF8.self) + "/"
                try walk(folder: child, remaining: remaining - 1, visit, visitFolder)
                visitFolder?(child)
            }
        }
    }

    /// Whether `name` is a fan-out folder's name: two lowercase hex digits.
    static func isFanOutFolderName(_ name: [UInt8]) -> Bool {
        name.count == 2 && name.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
