import BuckiaCore
import Foundation

extension ProviderConformance {
    /// Key spellings every provider must store and list byte for byte.
    public static let unusualKeyNames: [String] = [
        "with space.txt", "plus+sign.txt", "percent%20encoded.txt", "hash#mark.txt", "question?mark.txt",
        "ampersand&equals=.txt", "quote'and\"double.txt", "caf\u{E9}-nfc.txt", "cafe\u{301}-nfd.txt",
        "emoji-\u{1F600}-\u{1F44D}\u{1F3FD}.txt", "日本語/ファイル.txt", "tilde~and!bang.txt",
        "d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/deep.txt",
    ]

    /// Paths that must be refused with invalidPath before any I/O.
    public static let invalidKeyNames: [String] = [
        "", "/absolute", "a/../b", "..", "../escape", ".", "a/./b", "a//b", "trailing/", "nul\u{0}byte",
        String(repeating: "x", count: ObjectKey.maximumUTF8Length + 1),
    ]

    static var keyScenarios: [ProviderScenario] {
        [
            ProviderScenario("keys: unusual characters", contract: "Keys with spaces, +, %, #, ?, quotes, NFC and NFD accents, emoji and deep nesting round-trip and list verbatim.") { context in
                for name in unusualKeyNames {
                    let key = try context.key(name)
                    let data = Data("content of \(name)".utf8)
                    try await context.provider.uploadData(data, remotePath: key, options: UploadOptions())
                    try Expect.sameBytes(try await context.provider.readData(remotePath: key, range: nil), data, "content of \(name.debugDescription)")
                    guard let file = try await context.provider.stat(remotePath: key) else {
                        throw ConformanceFailure("stat of \(name.debugDescription) returned nil")
                    }
                    try Expect.that(Array(file.path.rawValue.utf8) == Array(key.rawValue.utf8), "stat returned path \(file.path.rawValue.debugDescription) for \(key.rawValue.debugDescription)")
                }
                // Compare bytes: Swift's String == treats NFC and NFD spellings as equal.
                let listed = try await context.listedPaths().map { Array($0.utf8) }
                let expected = sortedByUTF8(unusualKeyNames).map { Array($0.utf8) }
                try Expect.that(listed == expected, "listing returned \(listed.map { String(decoding: $0, as: UTF8.self) }) for \(sortedByUTF8(unusualKeyNames))")
            },
            ProviderScenario("keys: invalid paths are refused", contract: "Keys with '..', '.', empty segments, a leading '/', NUL, or over 1,024 bytes fail with invalidPath and touch nothing.") { context in
                let provider = context.provider
                let source = try context.localFile("source.txt", contents: Data("payload".utf8))
                let target = context.scratch.appendingPathComponent("never-created.txt")
                for name in invalidKeyNames {
                    for candidate in [name, context.prefix + name] {
                        let what = "path \(candidate.debugDescription)"
                        try await Expect.error(.invalidPath, "upload to \(what)") { try await provider.uploadFile(localURL: source, remotePath: candidate) }
                        try await Expect.error(.invalidPath, "uploadData to \(what)") { try await provider.uploadData(Data("x".utf8), remotePath: candidate) }
                        try await Expect.error(.invalidPath, "download of \(what)") { try await provider.downloadFile(remotePath: candidate, localURL: target) }
                        try await Expect.error(.invalidPath, "read of \(what)") { try await provider.readData(remotePath: candidate) }
                        try await Expect.error(.invalidPath, "stat of \(what)") { try await provider.stat(remotePath: candidate) }
                        try await Expect.error(.invalidPath, "delete of \(what)") { try await provider.deleteFile(remotePath: candidate) }
                    }
                }
                try Expect.that(!FileManager.default.fileExists(atPath: target.path), "a refused download created its destination")
                try Expect.equal(try await context.listedPaths(), [], "objects under the scenario prefix")
            },
        ]
    }
}
