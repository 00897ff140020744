import BuckiaCore
import Foundation

extension ProviderConformance {
    static var listingScenarios: [ProviderScenario] {
        [
            ProviderScenario("list: prefix is a string prefix", contract: "A prefix selects keys that start with it, folder or not.") { context in
                try await put(context, ["a.txt", "ab.txt", "b.txt", "a/c.txt", "ba/a.txt"])
                try Expect.equal(try await context.listedPaths(ListOptions(prefix: "a")), ["a.txt", "a/c.txt", "ab.txt"], "keys starting with 'a'")
                try Expect.equal(try await context.listedPaths(ListOptions(prefix: "a/")), ["a/c.txt"], "keys under 'a/'")
                try Expect.equal(try await context.listedPaths(ListOptions(prefix: "zzz")), [], "keys starting with 'zzz'")
            },
            ProviderScenario("list: recursive order", contract: "A recursive listing returns every nested key in UTF-8 byte order.") { context in
                let keys = ["a-b", "a.txt", "a/b.txt", "a/b/c/d.txt", "a0", "A", "z/y/x/w.txt", "é"]
                try await put(context, keys)
                try Expect.equal(try await context.listedPaths(), sortedByUTF8(keys), "recursive listing")
            },
            ProviderScenario("list: one level", contract: "A one-level listing returns the objects at that level and each folder once.") { context in
                try await put(context, ["top.txt", "dir/one.txt", "dir/two.txt", "dir/sub/three.txt", "other/four.txt", "zeta"])
                try Expect.equal(
                    try await context.listedPaths(ListOptions(recursive: false)), ["dir/", "other/", "top.txt", "zeta"], "root level")
                try Expect.equal(
                    try await context.listedPaths(ListOptions(prefix: "dir/", recursive: false)),
                    ["dir/one.txt", "dir/sub/", "dir/two.txt"], "level 'dir/'")
            },
            ProviderScenario("list: one level across pages", contract: "One-level pages join up with each folder exactly once, and start-after a folder skips it.") { context in
                try await put(context, ["a/1", "a/2", "b/1", "c", "d/1", "d/2", "d/e/3", "e", "x/ab/1", "x/ab2/3", "x/abc"])
                var listed: [String] = []
                for try await page in context.provider.list(ListOptions(prefix: context.prefix, recursive: false, pageSize: 2)).pages {
                    try Expect.that(page.entries.count <= 2, "a page of \(page.entries.count) entries exceeds the requested 2")
                    listed += page.entries.map { String($0.path.dropFirst(context.prefix.count)) }
                }
                try Expect.equal(listed, ["a/", "b/", "c", "d/", "e", "x/"], "one-level pages of 2")
                try Expect.equal(
                    try await context.listedPaths(ListOptions(recursive: false, startAfter: "b/")), ["c", "d/", "e", "x/"],
                    "one level after the folder 'b/'")
                try Expect.equal(
                    try await context.listedPaths(ListOptions(prefix: "x/ab", recursive: false)), ["x/ab/", "x/ab2/", "x/abc"],
                    "one level under the partial prefix 'x/ab'")
                try Expect.equal(
                    try await context.listedPaths(ListOptions(startAfter: "d/")), ["d/1", "d/2", "d/e/3", "e", "x/ab/1", "x/ab2/3", "x/abc"],
                    "recursive listing after 'd/' includes the keys under it")
            },
            ProviderScenario("list: a folder is not an object", contract: "A key that is only a folder of other keys reads as notFound and stats as nil.") { context in
                try await put(context, ["k/inner.txt"])
                try Expect.that(try await context.provider.stat(remotePath: context.key("k")) == nil, "stat of a folder-only key was not nil")
                try await Expect.error(.notFound, "readData of a folder-only key") { try await context.provider.readData(remotePath: context.key("k"), range: nil) }
            },
            ProviderScenario(
                "list: start-after", contract: "start-after returns only the keys after it, in order.", requires: [.listStartAfter]
            ) { context in
                let keys = (0..<10).map { "k\($0)" } + ["k4-dir/nested", "k5x", "k5-dir/deeper/file"]
                try await put(context, keys)
                let expected = sortedByUTF8(keys).filter { "k5".utf8Precedes($0) }
                try Expect.equal(try await context.listedPaths(ListOptions(startAfter: "k5")), expected, "keys after 'k5'")
                try Expect.equal(try await context.listedPaths(ListOptions(startAfter: "k9")), [], "keys after the last key")
            },
            ProviderScenario(
                "list: more than one page", contract: "1,100 objects list completely, in order, across pages.", requires: [.pagedListing]
            ) { context in
                let keys = (0..<1_100).map { String(format: "obj-%05d", $0) }
                try await forEachConcurrently(keys, width: 16) { name in
                    try await context.provider.uploadData(Data(name.utf8), remotePath: context.key(name), options: UploadOptions())
                }
                var pages = 0
                var listed: [String] = []
                for try await page in context.provider.list(ListOptions(prefix: context.prefix)).pages {
                    pages += 1
                    listed += page.entries.map { String($0.path.dropFirst(context.prefix.count)) }
                }
                try Expect.equal(listed.count, keys.count, "number of keys listed")
                try Expect.that(listed == keys, "keys listed out of order or wrong")
                try Expect.that(pages > 1, "1,100 keys arrived in \(pages) page; the provider pages at \(context.provider.capabilities.maxListPageSize)")
            },
            ProviderScenario("list: small pages", contract: "A requested page size is honoured and the pages join up exactly.") { context in
                let keys = (0..<7).map { "p\($0)" }
                try await put(context, keys)
                var sizes: [Int] = []
                var listed: [String] = []
                for try await page in context.provider.list(ListOptions(prefix: context.prefix, pageSize: 3)).pages {
                    sizes.append(page.entries.count)
                    listed += page.entries.map { String($0.path.dropFirst(context.prefix.count)) }
                }
                try Expect.equal(listed, keys, "keys across pages")
                try Expect.that(sizes.allSatisfy { $0 <= 3 }, "page sizes \(sizes) exceed the requested 3")
            },
        ]
    }

    static func put(_ context: ProviderScenarioContext, _ names: [String]) async throws {
        for name in names {
            try await context.provider.uploadData(Data(name.utf8), remotePath: context.key(name), options: UploadOptions())
        }
    }

    static func sortedByUTF8(_ strings: [String]) -> [String] {
        strings.sorted { $0.utf8Precedes($1) }
    }
}
