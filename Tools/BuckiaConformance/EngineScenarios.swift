import BuckiaCore
import Foundation

extension EngineConformance {
    /// Keys every engine must store and give back byte for byte, including path tricks a
    /// file-per-key engine must neutralise.
    public static let unusualKeys: [String] = [
        "plain", "with space", "caf\u{E9}-nfc", "cafe\u{301}-nfd", "emoji-\u{1F600}", "日本語", "../../etc/passwd",
        "a/b/c", "/absolute", ".", "..", "CON", "trailing.", "back\\slash", "percent%2F", "tab\tnewline\n",
        String(repeating: "k", count: 300), String(repeating: "é", count: CacheKey.maximumUTF8Length / 2),
    ]

    static var dataScenarios: [EngineScenario] {
        [
            EngineScenario("engine: batch round trip", contract: "A batch write reads back whole: by keys in their order, and all in key order.") { context in
                let engine = try await context.open()
                let items = (0..<10).map { (key: CacheKey(verbatim: "item-\($0)"), data: Data("value \($0)".utf8)) }
                try await engine.write(items.reversed())
                let wanted = [items[3].key, CacheKey(verbatim: "absent"), items[1].key]
                try Expect.equal(try await engine.read(keys: wanted), [items[3].data, items[1].data], "read(keys:) skips missing keys and keeps order")
                try Expect.equal(try await engine.readDataAndKeys(keys: wanted).map(\.key), [items[3].key, items[1].key], "readDataAndKeys(keys:)")
                try Expect.equal(try await engine.readAllData(), items.map(\.data), "readAllData in key order")
                try Expect.equal(try await engine.readAllDataAndKeys().map(\.key), items.map(\.key), "readAllDataAndKeys in key order")
            },
            EngineScenario("engine: NFC and NFD keys are two values", contract: "Keys that differ only in Unicode normalisation hold separate values.") { context in
                let engine = try await context.open()
                let nfc = CacheKey(verbatim: "caf\u{E9}"), nfd = CacheKey(verbatim: "cafe\u{301}")
                try Expect.that(nfc != nfd, "the conformance suite's own keys compare equal")
                try await engine.write(Data("composed".utf8), key: nfc)
                try await engine.write(Data("decomposed".utf8), key: nfd)
                try Expect.equal(try await engine.read(key: nfc), Data("composed".utf8), "the NFC value")
                try Expect.equal(try await engine.read(key: nfd), Data("decomposed".utf8), "the NFD value")
                try Expect.equal(try await engine.keyCount(), 2, "values stored for two spellings")
                try await engine.remove(key: nfc)
                try Expect.equal(try await engine.read(key: nfd), Data("decomposed".utf8), "the NFD value after removing the NFC one")
            },
            EngineScenario("engine: empty and 1 MiB values", contract: "An empty value and a 1 MiB value read back identical.") { context in
                let engine = try await context.open()
                let large = ProviderScenarioContext.pattern(count: 1 << 20)
                try await engine.write(Data(), key: CacheKey(verbatim: "empty"))
                try await engine.write(large, key: CacheKey(verbatim: "large"))
                guard let empty = try await engine.read(key: CacheKey(verbatim: "empty")) else {
                    throw ConformanceFailure("an empty value read back as missing")
                }
                try Expect.equal(empty.count, 0, "empty value size")
                try Expect.sameBytes(try await engine.read(key: CacheKey(verbatim: "large")) ?? Data(), large, "1 MiB value")
            },
            EngineScenario("engine: unusual keys", contract: "Unicode, path-like and long keys round-trip, and allKeys returns them byte for byte.") { context in
                let engine = try await context.open()
                for (index, key) in unusualKeys.enumerated() {
                    try await engine.write(Data("v\(index)".utf8), key: CacheKey(verbatim: key))
                }
                for (index, key) in unusualKeys.enumerated() {
                    try Expect.sameBytes(try await engine.read(key: CacheKey(verbatim: key)) ?? Data(), Data("v\(index)".utf8), "value of \(key.prefix(40).debugDescription)")
                }
                let keys = try await engine.allKeys().map { Array($0.value.utf8) }
                let expected = unusualKeys.map(CacheKey.init(verbatim:)).sorted().map { Array($0.value.utf8) }
                try Expect.that(keys == expected, "allKeys returned \(keys.count) keys that differ from the \(expected.count) written")
                try Expect.equal(try await engine.keyCount(), unusualKeys.count, "keyCount")
            },
            EngineScenario("engine: keys, existence and counts", contract: "keyExists, keyCount and allKeys agree with what was written and removed.") { context in
                let engine = try await context.open()
                try Expect.equal(try await engine.keyCount(), 0, "keyCount of a new engine")
                try await engine.write((0..<5).map { (CacheKey(verbatim: "k\($0)"), Data([UInt8($0)])) })
                try await engine.remove(key: CacheKey(verbatim: "k2"))
                try Expect.equal(try await engine.allKeys().map(\.value), ["k0", "k1", "k3", "k4"], "allKeys")
                try Expect.equal(try await engine.keyCount(), 4, "keyCount")
                try Expect.that(try await engine.keyExists(CacheKey(verbatim: "k3")), "keyExists(k3)")
                try Expect.that(try await !engine.keyExists(CacheKey(verbatim: "k2")), "keyExists(k2) after remove")
            },
            EngineScenario("engine: timestamps", contract: "createdAt and updatedAt are the engine clock's time of writing, and nil for missing keys.") { context in
                let engine = try await context.open()
                context.clock.advance(by: 86_400)
                let written = context.clock.now
                try await engine.write(Data("t".utf8), key: CacheKey(verbatim: "t"))
                context.clock.advance(by: 5)
                try expectTime(try await engine.createdAt(key: CacheKey(verbatim: "t")), written, "createdAt")
                try expectTime(try await engine.updatedAt(key: CacheKey(verbatim: "t")), written, "updatedAt")
                try Expect.that(try await engine.updatedAt(key: CacheKey(verbatim: "missing")) == nil, "updatedAt of a missing key")
                try Expect.that(try await engine.createdAt(key: CacheKey(verbatim: "missing")) == nil, "createdAt of a missing key")
            },
            EngineScenario("engine: declared capabilities are known", contract: "Every capability the engine declares is an engine capability Buckia defines or a dotted name of a third party's (a misspelt one would silently never apply).") { context in
                let unknown = try await context.open().capabilities.filter { !$0.isExtension && !EngineCapability.known.contains($0) }
                try Expect.that(unknown.isEmpty, "the engine declares capabilities Buckia does not define: \(unknown.sorted().map(\.rawValue))")
            },
            EngineScenario("engine: invalid keys are refused", contract: "An empty key or one over 4,096 bytes fails with invalidPath and writes nothing.") { context in
                let engine = try await context.open()
                try await engine.write(Data("existing".utf8), key: CacheKey(verbatim: "existing"))
                for key in ["", String(repeating: "x", count: 10_000)] {
                    try await Expect.error(.invalidPath, "write of a \(key.utf8.count)-byte key") {
                        try await engine.write(Data("x".utf8), key: CacheKey(verbatim: key))
                    }
                    try await Expect.error(.invalidPath, "batch with a \(key.utf8.count)-byte key") {
                        try await engine.write([(CacheKey(verbatim: "ok"), Data("x".utf8)), (CacheKey(verbatim: key), Data("x".utf8))])
                    }
                }
                try Expect.equal(try await engine.allKeys().map(\.value), ["existing"], "keys after refused writes")
                try Expect.sameBytes(try await engine.read(key: CacheKey(verbatim: "existing")) ?? Data(), Data("existing".utf8), "existing value")
            },
            EngineScenario("engine: pagination", contract: "101 values in pages of 50 arrive as 50, 50, 1, then the end, in key order.", requires: [.pagination]) { context in
                guard let engine = try await context.open() as? any PaginatedStorageEngine else {
                    throw ConformanceFailure("the engine declares pagination but is not a PaginatedStorageEngine")
                }
                let items = (0..<101).map { (key: CacheKey(verbatim: String(format: "p%03d", $0)), data: Data(String(format: "%03d", $0).utf8)) }
                try await engine.write(items)
                var sizes: [Int] = []
                var keys: [CacheKey] = []
                for try await page in engine.readDataAndKeys(options: PaginationOptions(limit: 50)) {
                    sizes.append(page.count)
                    keys += page.map(\.key)
                }
                try Expect.equal(sizes, [50, 50, 1], "page sizes")
                try Expect.equal(keys, items.map(\.key), "keys across pages")
                var dataPages = 0
                for try await page in engine.readData(options: PaginationOptions(limit: 50, after: items[59].key)) {
                    dataPages += 1
                    try Expect.equal(page.first, items[60].data, "first value after the cursor")
                    break
                }
                try Expect.equal(dataPages, 1, "pages read after a cursor")
            },
            EngineScenario("engine: 8 concurrent writers", contract: "8 tasks writing at once lose nothing.") { context in
                let engine = try await context.open()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<8 {
                        group.addTask {
                            for item in 0..<25 {
                                try await engine.write(Data("\(writer)-\(item)".utf8), key: CacheKey(verbatim: "w\(writer)-\(item)"))
                            }
                            try await engine.write((25..<50).map { (CacheKey(verbatim: "w\(writer)-\($0)"), Data("\(writer)-\($0)".utf8)) })
                        }
                    }
                    try await group.waitForAll()
                }
                try Expect.equal(try await engine.keyCount(), 400, "keys after concurrent writes")
                for writer in 0..<8 {
                    for item in [0, 24, 25, 49] {
                        try Expect.sameBytes(try await engine.read(key: CacheKey(verbatim: "w\(writer)-\(item)")) ?? Data(), Data("\(writer)-\(item)".utf8), "w\(writer)-\(item)")
                    }
                }
            },
        ]
    }
}
