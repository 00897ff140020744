import BuckiaCore
import Foundation

extension ProviderConformance {
    static var roundTripScenarios: [ProviderScenario] {
        [
            ProviderScenario("round trip: empty object", contract: "An empty object reads back empty with size 0.") {
                try await roundTrip($0, Data(), name: "empty")
            },
            ProviderScenario("round trip: one byte", contract: "A one-byte object reads back identical.") {
                try await roundTrip($0, Data([0x2A]), name: "one")
            },
            ProviderScenario("round trip: every byte value", contract: "All 256 byte values survive a round trip.") {
                try await roundTrip($0, Data((0...255).map { UInt8($0) }), name: "all-bytes")
            },
            ProviderScenario("round trip: multi-MiB file", contract: "A 5 MiB + 3 byte file uploads and downloads intact.") { context in
                let data = ProviderScenarioContext.pattern(count: 5 * 1024 * 1024 + 3)
                let source = try context.localFile("source.bin", contents: data)
                let key = try context.key("big.bin")
                let stored = try await context.provider.uploadFile(localURL: source, remotePath: key, options: UploadOptions())
                try Expect.equal(stored.size, Int64(data.count), "size reported by upload")
                let target = context.scratch.appendingPathComponent("copy.bin")
                let result = try await context.provider.downloadFile(remotePath: key, localURL: target)
                try Expect.equal(result.file.size, Int64(data.count), "size reported by download")
                try Expect.sameBytes(try Data(contentsOf: target), data, "downloaded file")
            },
            ProviderScenario("overwrite replaces content", contract: "Writing an existing key replaces its bytes and size.") { context in
                let key = try context.key("overwritten.txt")
                try await context.provider.uploadData(Data("first version, longer".utf8), remotePath: key, options: UploadOptions())
                let second = Data("second".utf8)
                try await context.provider.uploadData(second, remotePath: key, options: UploadOptions())
                try Expect.sameBytes(try await context.provider.readData(remotePath: key, range: nil), second, "content after overwrite")
                try Expect.equal(try await context.provider.stat(remotePath: key)?.size, Int64(second.count), "size after overwrite")
            },
            ProviderScenario("stat of a present object", contract: "stat reports the key, the size, and a modification time: the one given at upload where the provider keeps times, else the backend's.") { context in
                let key = try context.key("present.txt")
                let keepsTimes = context.provider.capabilities.supports(.preservesModificationTime)
                let date = Date(timeIntervalSince1970: 1_200_000_000)
                try await context.provider.uploadData(Data("hello".utf8), remotePath: key, options: UploadOptions(modificationDate: keepsTimes ? date : nil))
                guard let file = try await context.provider.stat(remotePath: key) else {
                    throw ConformanceFailure("stat returned nil for an object just written")
                }
                try Expect.equal(file.path, key, "path")
                try Expect.equal(file.size, 5, "size")
                if keepsTimes {
                    try expectClose(file.modificationDate, date, within: .seconds(1), "the modification time given at upload")
                } else {
                    try Expect.that(file.modificationDate ?? file.serverModified != nil, "stat reported no modification time at all")
                }
            },
            ProviderScenario("stat of a missing object", contract: "stat of a key that does not exist returns nil.") { context in
                try Expect.that(try await context.provider.stat(remotePath: context.key("missing")) == nil, "stat of a missing key was not nil")
            },
            ProviderScenario("read of a missing object", contract: "Reading or downloading a missing key throws notFound and leaves the destination alone.") { context in
                let key = try context.key("missing")
                try await Expect.error(.notFound, "readData") { try await context.provider.readData(remotePath: key, range: nil) }
                let target = try context.localFile("keep.txt", contents: Data("keep me".utf8))
                try await Expect.error(.notFound, "downloadFile") { try await context.provider.downloadFile(remotePath: key, localURL: target) }
                try Expect.sameBytes(try Data(contentsOf: target), Data("keep me".utf8), "destination after a failed download")
            },
            ProviderScenario("delete removes an object", contract: "After delete, stat is nil and the key is not listed.") { context in
                let key = try context.key("doomed.txt")
                try await context.provider.uploadData(Data("x".utf8), remotePath: key, options: UploadOptions())
                try await context.provider.deleteFile(remotePath: key)
                try Expect.that(try await context.provider.stat(remotePath: key) == nil, "stat after delete was not nil")
                try Expect.equal(try await context.listedPaths(), [], "listing after delete")
            },
            ProviderScenario("delete of a missing object", contract: "Deleting a key that does not exist succeeds.") { context in
                try await context.provider.deleteFile(remotePath: context.key("never-written"))
            },
            ProviderScenario("batch delete", contract: "deleteFiles removes every listed key, and missing keys in the list succeed.") { context in
                try await put(context, ["a", "b", "c/d", "keep"])
                try await context.provider.deleteFiles([try context.key("a"), try context.key("c/d"), try context.key("never"), try context.key("b")])
                try Expect.equal(try await context.listedPaths(), ["keep"], "keys left after the batch delete")
            },
            ProviderScenario(
                "server-side copy", contract: "copyFile duplicates the bytes and the modification time, and leaves the source.",
                requires: [.serverSideCopy]
            ) { context in
                let date = Date(timeIntervalSince1970: 1_000_000_000)
                let data = ProviderScenarioContext.pattern(count: 10_000)
                try await context.provider.uploadData(data, remotePath: context.key("original"), options: UploadOptions(modificationDate: date))
                try await context.provider.copyFile(from: context.key("original"), to: context.key("copies/duplicate"))
                try Expect.sameBytes(try await context.provider.readData(remotePath: context.key("copies/duplicate"), range: nil), data, "copied bytes")
                let copied = try await context.provider.stat(remotePath: context.key("copies/duplicate"))?.modificationDate
                try Expect.that(abs((copied ?? .distantPast).timeIntervalSince(date)) < 1, "the copy's modification time is \(String(describing: copied))")
                try Expect.that(try await context.provider.stat(remotePath: context.key("original")) != nil, "the source is gone after the copy")
                try await Expect.error(.notFound, "copy of a missing object") {
                    try await context.provider.copyFile(from: context.key("missing"), to: context.key("never"))
                }
            },
            ProviderScenario(
                "no server-side copy without the capability", contract: "A provider without server-side copy throws unsupported.",
                excludedBy: [.serverSideCopy]
            ) { context in
                try await Expect.error(.unsupported, "copyFile") { try await context.provider.copyFile(from: context.key("a"), to: context.key("b")) }
            },
            ProviderScenario("connection test", contract: "testConnection reports a working provider as connected.") { context in
                let status = try await context.provider.testConnection()
                try Expect.that(status.isConnected, "testConnection said: \(status.message)")
            },
        ]
    }

    static func roundTrip(_ context: ProviderScenarioContext, _ data: Data, name: String) async throws {
        let key = try context.key(name)
        let stored = try await context.provider.uploadData(data, remotePath: key, options: UploadOptions())
        try Expect.equal(stored.size, Int64(data.count), "size reported by upload")
        try Expect.sameBytes(try await context.provider.readData(remotePath: key, range: nil), data, "readData")
        try Expect.equal(try await context.provider.stat(remotePath: key)?.size, Int64(data.count), "size reported by stat")
        let target = context.scratch.appendingPathComponent("\(name).download")
        _ = try await context.provider.downloadFile(remotePath: key, localURL: target)
        try Expect.sameBytes(try Data(contentsOf: target), data, "downloaded file")
    }
}
