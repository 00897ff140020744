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

    /// Listing prefixes a lister must refuse: each is tried alone and under the scenario's
    /// own prefix.
    static func invalidPrefixes(under prefix: String) -> [String] {
        let names = ["/absolute", "../escape", "a/../b", "./here", "a/./b", "a//b", "nul\u{0}byte"]
        return names + names.filter { !$0.hasPrefix("/") }.map { prefix + $0 }
    }

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
            ProviderScenario(
                "keys: a lister refuses an invalid prefix",
                contract: "makeLister, called directly, refuses a prefix with '..', '.', an empty segment, a leading '/' or NUL with invalidPath, and lists nothing outside the store."
            ) { context in
                try await put(context, ["inside.txt"])
                for prefix in invalidPrefixes(under: context.prefix) {
                    do {
                        let lister = try await context.provider.makeLister(ListRequest(options: ListOptions(prefix: prefix)))
                        var listed: [String] = []
                        while let page = try await lister.nextPage() { listed += page.entries.map(\.path) }
                        throw ConformanceFailure("makeLister accepted the prefix \(prefix.debugDescription) and listed \(listed.prefix(5))")
                    } catch let error as BuckiaError {
                        try Expect.equal(error.code, .invalidPath, "the error for the prefix \(prefix.debugDescription)")
                    }
                }
            },
            ProviderScenario(
                "keys: case is significant",
                contract: "Keys that differ only in letter case are two objects, stored, read, listed and deleted apart.",
                excludedBy: [.caseInsensitiveKeys]
            ) { context in
                let upper = try context.key("Case/Photo.JPG"), lower = try context.key("case/photo.jpg")
                try await context.provider.uploadData(Data("upper".utf8), remotePath: upper, options: UploadOptions())
                try await context.provider.uploadData(Data("lower".utf8), remotePath: lower, options: UploadOptions())
                try Expect.sameBytes(try await context.provider.readData(remotePath: upper, range: nil), Data("upper".utf8), "the upper-case object")
                try Expect.sameBytes(try await context.provider.readData(remotePath: lower, range: nil), Data("lower".utf8), "the lower-case object")
                try Expect.equal(try await context.listedPaths(), ["Case/Photo.JPG", "case/photo.jpg"], "keys listed for two spellings")
                try await context.provider.deleteFile(remotePath: lower)
                try Expect.that(try await context.provider.stat(remotePath: upper) != nil, "deleting the lower-case key removed the upper-case object")
            },
            ProviderScenario(
                "keys: case folds as declared",
                contract: "A provider that declares caseInsensitiveKeys treats keys differing only in case as one object: the second write replaces the first, and either spelling reads it.",
                requires: [.caseInsensitiveKeys]
            ) { context in
                let upper = try context.key("Case/Photo.JPG"), lower = try context.key("case/photo.jpg")
                try await context.provider.uploadData(Data("upper".utf8), remotePath: upper, options: UploadOptions())
                try await context.provider.uploadData(Data("lower".utf8), remotePath: lower, options: UploadOptions())
                try Expect.sameBytes(try await context.provider.readData(remotePath: upper, range: nil), Data("lower".utf8), "the upper-case spelling after the lower-case write")
                try Expect.equal(try await context.listedPaths().count, 1, "objects listed for two spellings")
                try await context.provider.deleteFile(remotePath: upper)
                try Expect.that(try await context.provider.stat(remotePath: lower) == nil, "deleting one spelling left the other")
            },
        ]
    }
}
