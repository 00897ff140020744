import BuckiaCore
import Foundation

extension ProviderConformance {
    /// Scenarios for conditional writes and reads, and for checksums the caller already knows.
    static var conditionScenarios: [ProviderScenario] {
        [
            ProviderScenario(
                "write: if-none-match creates once", contract: "An ifNoneMatch upload succeeds when the key is free and fails with conditionNotMatch, changing nothing, when it is taken.",
                requires: [.conditionalWrite]
            ) { context in
                let key = try context.key("once.txt")
                try await context.provider.uploadData(Data("first".utf8), remotePath: key, options: UploadOptions(condition: .ifNoneMatch))
                try await Expect.error(.conditionNotMatch, "a second ifNoneMatch upload") {
                    try await context.provider.uploadData(Data("second".utf8), remotePath: key, options: UploadOptions(condition: .ifNoneMatch))
                }
                let source = try context.localFile("third.txt", contents: Data("third".utf8))
                try await Expect.error(.conditionNotMatch, "an ifNoneMatch file upload") {
                    try await context.provider.uploadFile(localURL: source, remotePath: key, options: UploadOptions(condition: .ifNoneMatch))
                }
                try Expect.sameBytes(try await context.provider.readData(remotePath: key, range: nil), Data("first".utf8), "content after refused writes")
            },
            ProviderScenario(
                "write: if-match replaces only the version read", contract: "An ifMatch upload replaces the object only while its entity tag is the one given.",
                requires: [.conditionalWrite]
            ) { context in
                let key = try context.key("versioned.txt")
                let first = try await context.provider.uploadData(Data("v1".utf8), remotePath: key, options: UploadOptions())
                guard let tag1 = try await context.provider.stat(remotePath: key)?.etag ?? first.etag else {
                    throw ConformanceFailure("a provider with conditional writes reported no entity tag")
                }
                try await context.provider.uploadData(Data("v2".utf8), remotePath: key, options: UploadOptions(condition: .ifMatch(tag1)))
                let tag2 = try await context.provider.stat(remotePath: key)?.etag
                try Expect.that(tag2 != nil && tag2 != tag1, "the entity tag did not change with the content: \(String(describing: tag2))")
                try await Expect.error(.conditionNotMatch, "an ifMatch upload with a stale tag") {
                    try await context.provider.uploadData(Data("v3".utf8), remotePath: key, options: UploadOptions(condition: .ifMatch(tag1)))
                }
                try Expect.sameBytes(try await context.provider.readData(remotePath: key, range: nil), Data("v2".utf8), "content after the refused write")
                try await Expect.error(.conditionNotMatch, "an ifMatch upload to a missing key") {
                    try await context.provider.uploadData(Data("x".utf8), remotePath: context.key("absent"), options: UploadOptions(condition: .ifMatch(tag1)))
                }
                try Expect.that(try await context.provider.stat(remotePath: context.key("absent")) == nil, "a refused ifMatch upload created the key")
            },
            ProviderScenario(
                "read: if-match reads only the version given", contract: "A read or download with ifMatch fails with conditionNotMatch once the object has changed, and leaves the destination alone.",
                requires: [.conditionalRead]
            ) { context in
                let key = try context.key("read-once.bin")
                let data = ProviderScenarioContext.pattern(count: 5000)
                try await context.provider.uploadData(data, remotePath: key, options: UploadOptions())
                guard let tag = try await context.provider.stat(remotePath: key)?.etag else {
                    throw ConformanceFailure("a provider with conditional reads reported no entity tag")
                }
                try Expect.sameBytes(
                    try await context.provider.readData(remotePath: key, options: ReadOptions(range: 100..<200, ifMatch: tag)),
                    data.subdata(in: 100..<200), "a ranged read with the current tag")
                try await context.provider.uploadData(Data("changed".utf8), remotePath: key, options: UploadOptions())
                try await Expect.error(.conditionNotMatch, "a read with a stale tag") {
                    try await context.provider.readData(remotePath: key, options: ReadOptions(range: 200..<300, ifMatch: tag))
                }
                let target = try context.localFile("keep.bin", contents: Data("keep".utf8))
                try await Expect.error(.conditionNotMatch, "a download with a stale tag") {
                    try await context.provider.downloadFile(remotePath: key, localURL: target, options: ReadOptions(ifMatch: tag))
                }
                try Expect.sameBytes(try Data(contentsOf: target), Data("keep".utf8), "the destination after a refused download")
            },
            ProviderScenario(
                "write: known checksums are verified", contract: "An upload whose known MD5 is right stores the object; one whose known MD5 is wrong fails with checksumMismatch and stores nothing.",
                requires: [.verifiesKnownChecksums]
            ) { context in
                let data = ProviderScenarioContext.pattern(count: 9000)
                let md5 = try Hashing.digest(data, .md5).hex
                let source = try context.localFile("known.bin", contents: data)
                let key = try context.key("known.bin")
                try await context.provider.uploadFile(localURL: source, remotePath: key, options: UploadOptions(knownChecksums: [.md5: md5]))
                try Expect.sameBytes(try await context.provider.readData(remotePath: key, range: nil), data, "bytes uploaded with a known MD5")
                let wrong = String(repeating: "0", count: 32)
                let options = UploadOptions(knownChecksums: [.md5: wrong])
                try await Expect.error(.checksumMismatch, "a file upload with a wrong known MD5") {
                    try await context.provider.uploadFile(localURL: source, remotePath: try context.key("wrong-file.bin"), options: options)
                }
                try await Expect.error(.checksumMismatch, "a data upload with a wrong known MD5") {
                    try await context.provider.uploadData(data, remotePath: try context.key("wrong-data.bin"), options: options)
                }
                for name in ["wrong-file.bin", "wrong-data.bin"] {
                    try Expect.that(try await context.provider.stat(remotePath: context.key(name)) == nil, "an upload with a wrong known MD5 stored \(name)")
                }
            },
        ]
    }
}
