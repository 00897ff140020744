import BuckiaCore
import Foundation

extension ProviderConformance {
    /// Scenarios for what the listing model promises: keys are bytes, listing entries mean
    /// what stat means, resume tokens resume, and times keep their declared precision.
    static var contractScenarios: [ProviderScenario] {
        [
            ProviderScenario("keys: NFC and NFD are two objects", contract: "Two keys that differ only in Unicode normalisation are two objects, stored, read, listed and deleted apart.") { context in
                let nfc = try context.key("caf\u{E9}.txt")
                let nfd = try context.key("cafe\u{301}.txt")
                try Expect.that(nfc != nfd, "the conformance suite's own keys compare equal")
                try await context.provider.uploadData(Data("composed".utf8), remotePath: nfc, options: UploadOptions())
                try await context.provider.uploadData(Data("decomposed".utf8), remotePath: nfd, options: UploadOptions())
                try Expect.sameBytes(try await context.provider.readData(remotePath: nfc, range: nil), Data("composed".utf8), "the NFC object")
                try Expect.sameBytes(try await context.provider.readData(remotePath: nfd, range: nil), Data("decomposed".utf8), "the NFD object")
                let listed = try await context.listedPaths().map { Array($0.utf8) }
                try Expect.equal(listed.count, 2, "objects listed for two spellings")
                try await context.provider.deleteFile(remotePath: nfc)
                try Expect.that(try await context.provider.stat(remotePath: nfc) == nil, "the NFC object survived its delete")
                try Expect.that(try await context.provider.stat(remotePath: nfd) != nil, "deleting the NFC object removed the NFD one")
            },
            ProviderScenario("list: entries agree with stat", contract: "Every field a listing entry carries, as the provider declares, equals what stat reports, and declared listing checksums are present and right.") { context in
                let date = Date(timeIntervalSince1970: 1_234_567_890.25)
                var contents: [String: Data] = [:]
                for (index, name) in ["a.txt", "b/c.bin", "b/d e.json"].enumerated() {
                    let data = ProviderScenarioContext.pattern(count: 1000 + index * 777, seed: UInt64(index + 7))
                    contents[name] = data
                    let type = name.hasSuffix(".json") ? "application/json" : nil
                    try await context.provider.uploadData(
                        data, remotePath: context.key(name), options: UploadOptions(contentType: type, modificationDate: date))
                }
                let capabilities = context.provider.capabilities
                var seen = 0
                for try await entry in context.provider.list(ListOptions(prefix: context.prefix)) {
                    guard let listed = entry.file else { throw ConformanceFailure("the listing returned \(entry), not an object") }
                    seen += 1
                    let name = listed.path.dropping(prefix: context.prefix) ?? listed.path.rawValue
                    guard let data = contents[name], let stat = try await context.provider.stat(remotePath: listed.path) else {
                        throw ConformanceFailure("the listing returned \(listed.path), which was not written or stats as missing")
                    }
                    try Expect.equal(listed.size, stat.size, "\(name): listed size against stat")
                    try Expect.equal(listed.size, Int64(data.count), "\(name): listed size")
                    let fields = capabilities.listedFields
                    if fields.contains(.etag) { try Expect.equal(listed.etag, stat.etag, "\(name): listed etag against stat") }
                    if fields.contains(.contentType) { try Expect.equal(listed.contentType, stat.contentType, "\(name): listed content type against stat") }
                    if fields.contains(.metadata) { try Expect.equal(listed.metadata, stat.metadata, "\(name): listed metadata against stat") }
                    if fields.contains(.modificationDate) {
                        try expectClose(listed.modificationDate, stat.modificationDate, within: .microseconds(1), "\(name): listed modification time against stat")
                    }
                    if fields.contains(.serverModified) {
                        try expectClose(listed.serverModified, stat.serverModified, within: .seconds(1), "\(name): listed server time against stat")
                    }
                    for (algorithm, cost) in capabilities.checksums {
                        guard let hash = algorithm.hashAlgorithm else { continue }
                        let actual = try Hashing.digest(data, hash).hex
                        if cost == .listing {
                            try Expect.equal(listed.checksums[algorithm], actual, "\(name): \(algorithm), declared free in listings")
                        }
                        if cost <= .stat {
                            try Expect.equal(stat.checksums[algorithm], actual, "\(name): \(algorithm) reported by stat")
                        }
                        if let value = listed.checksums[algorithm] {
                            try Expect.equal(value, actual, "\(name): \(algorithm) carried by the listing")
                        }
                    }
                }
                try Expect.equal(seen, contents.count, "objects listed")
            },
            ProviderScenario(
                "list: a resume token continues the listing", contract: "A new listing given a page's resume token returns exactly the entries after that page.",
                requires: [.resumableListing]
            ) { context in
                try await put(context, ["k0", "k1", "k2", "k3/x", "k3/y", "k4", "k5", "k6"])
                for recursive in [true, false] {
                    let options = ListOptions(prefix: context.prefix, recursive: recursive, pageSize: 3)
                    var iterator = context.provider.list(options).pages.makeAsyncIterator()
                    guard let first = try await iterator.next() else { throw ConformanceFailure("the listing returned no page") }
                    guard let token = first.resumeToken else { throw ConformanceFailure("a resumable listing's first page has no resume token") }
                    var expectedRest: [String] = []
                    while let page = try await iterator.next() { expectedRest += page.entries.map(\.path) }
                    var resumed: [String] = []
                    for try await entry in context.provider.list(ListRequest(options: options, resumeToken: token)) { resumed.append(entry.path) }
                    try Expect.equal(resumed, expectedRest, "entries after the first page (recursive: \(recursive))")
                    try Expect.that(!resumed.isEmpty, "nothing came after the first page (recursive: \(recursive))")
                }
            },
            ProviderScenario(
                "times: kept within the declared precision", contract: "A modification time with a fractional second reads back within the provider's declared precision.",
                requires: [.preservesModificationTime]
            ) { context in
                guard let precision = context.provider.capabilities.modificationTimePrecision else {
                    throw ConformanceFailure("the provider keeps modification times but declares no precision")
                }
                let date = Date(timeIntervalSince1970: 1_500_000_000.123_456)
                let key = try context.key("precise.txt")
                try await context.provider.uploadData(Data("t".utf8), remotePath: key, options: UploadOptions(modificationDate: date))
                try expectClose(try await context.provider.stat(remotePath: key)?.modificationDate, date, within: precision, "the stored modification time")
                if context.provider.capabilities.listedFields.contains(.modificationDate) {
                    let listed = try await context.provider.listFiles(path: context.prefix).first?.modificationDate
                    try expectClose(listed, date, within: precision, "the listed modification time")
                }
            },
            ProviderScenario(
                "times: set without rewriting", contract: "setModificationTime changes the recorded time and leaves the bytes.",
                requires: [.setModificationTime]
            ) { context in
                let key = try context.key("retimed.bin")
                let data = ProviderScenarioContext.pattern(count: 3000)
                try await context.provider.uploadData(data, remotePath: key, options: UploadOptions(modificationDate: Date(timeIntervalSince1970: 1_000_000_000)))
                let date = Date(timeIntervalSince1970: 1_600_000_000.5)
                try await context.provider.setModificationTime(remotePath: key, to: date)
                let precision = context.provider.capabilities.modificationTimePrecision ?? .seconds(1)
                try expectClose(try await context.provider.stat(remotePath: key)?.modificationDate, date, within: precision, "the time after setModificationTime")
                try Expect.sameBytes(try await context.provider.readData(remotePath: key, range: nil), data, "the bytes after setModificationTime")
                try await Expect.error(.notFound, "setModificationTime of a missing object") {
                    try await context.provider.setModificationTime(remotePath: context.key("missing"), to: date)
                }
            },
            ProviderScenario(
                "metadata: user metadata round-trips", contract: "User metadata given at upload is reported by stat.", requires: [.userMetadata]
            ) { context in
                let key = try context.key("labelled.txt")
                let metadata = ["color": "blue", "owner-id": "42"]
                try await context.provider.uploadData(Data("m".utf8), remotePath: key, options: UploadOptions(metadata: metadata))
                let stored = try await context.provider.stat(remotePath: key)?.metadata ?? [:]
                for (name, value) in metadata { try Expect.equal(stored[name], value, "metadata \(name)") }
            },
            ProviderScenario("move: renames in one step", contract: "moveFile puts the bytes and time at the new key and removes the old one.", requires: [.move]) { context in
                try await checkMove(context)
            },
            ProviderScenario(
                "move: falls back to copy and delete", contract: "Without a native move, moveFile copies server-side and removes the source.",
                requires: [.serverSideCopy], excludedBy: [.move]
            ) { context in
                try await checkMove(context)
            },
        ]
    }

    static func checkMove(_ context: ProviderScenarioContext) async throws {
        let data = ProviderScenarioContext.pattern(count: 2048)
        let date = Date(timeIntervalSince1970: 1_100_000_000)
        try await context.provider.uploadData(data, remotePath: context.key("from.bin"), options: UploadOptions(modificationDate: date))
        try await context.provider.moveFile(from: context.key("from.bin"), to: context.key("to/moved.bin"))
        try Expect.that(try await context.provider.stat(remotePath: context.key("from.bin")) == nil, "the source is still there after the move")
        try Expect.sameBytes(try await context.provider.readData(remotePath: context.key("to/moved.bin"), range: nil), data, "the moved bytes")
        if context.provider.capabilities.supports(.preservesModificationTime) {
            try expectClose(try await context.provider.stat(remotePath: context.key("to/moved.bin"))?.modificationDate, date, within: .seconds(1), "the moved object's time")
        }
        try await Expect.error(.notFound, "moving a missing object") {
            try await context.provider.moveFile(from: context.key("missing"), to: context.key("never"))
        }
    }

    /// Fails unless both dates exist and differ by at most `tolerance` (plus the microsecond a
    /// `Date` can lose in conversion).
    static func expectClose(_ actual: Date?, _ expected: Date?, within tolerance: Duration, _ what: String) throws {
        guard let actual, let expected else {
            throw ConformanceFailure("\(what): expected \(String(describing: expected)), got \(String(describing: actual))")
        }
        let (seconds, attoseconds) = tolerance.components
        let allowed = Double(seconds) + Double(attoseconds) / 1e18 + 1e-6
        let difference = abs(actual.timeIntervalSince(expected))
        try Expect.that(difference <= allowed, "\(what): \(actual.timeIntervalSince1970) differs from \(expected.timeIntervalSince1970) by \(difference) s; the allowance is \(allowed) s")
    }
}
