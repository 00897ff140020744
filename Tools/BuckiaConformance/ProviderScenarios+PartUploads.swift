import BuckiaCore
import Foundation

extension ProviderConformance {
    /// Starts an upload to `key` and sends `contents` as its parts 1, 2, …, each from a file of
    /// its own named after `name`.
    static func sendParts(_ context: ProviderScenarioContext, to key: ObjectKey, _ contents: [Data], name: String) async throws -> (upload: String, parts: [UploadedPart]) {
        let upload = try await context.provider.startPartUpload(to: key, options: UploadOptions())
        var parts: [UploadedPart] = []
        for (index, bytes) in contents.enumerated() {
            let file = try context.localFile("\(name)-part-\(index)", contents: bytes)
            parts.append(try await context.provider.uploadPart(index + 1, of: upload, to: key, file: file, md5: try Hashing.digest(bytes, .md5)))
        }
        return (upload, parts)
    }


    /// Multipart uploads a caller drives part by part (``Capability/partUploads``).
    static var partUploadScenarios: [ProviderScenario] {
        [
            ProviderScenario(
                "part uploads: sent, listed, replaced and completed into the object",
                contract: "Parts sent to an upload are listed with their MD5 as ETag and their size; a part sent again replaces it; completing stores the parts in order, with the upload's content type and metadata.",
                requires: [.partUploads]
            ) { context in
                let key = try context.key("parted/object.bin")
                let first = ProviderScenarioContext.pattern(count: 5 << 20, seed: 1)
                let second = ProviderScenarioContext.pattern(count: 1_000, seed: 2)
                let replacement = ProviderScenarioContext.pattern(count: 777, seed: 3)
                var options = UploadOptions(contentType: "application/x-parted")
                if context.provider.capabilities.supports(.userMetadata) { options.metadata["origin"] = "parts" }
                let upload = try await context.provider.startPartUpload(to: key, options: options)
                try Expect.that(try await context.provider.stat(remotePath: key) == nil, "an unfinished upload is no object yet")
                let files = try [first, second, replacement].enumerated().map { try context.localFile("part-\($0.offset)", contents: $0.element) }
                let sent = try await context.provider.uploadPart(1, of: upload, to: key, file: files[0], md5: try Hashing.digest(first, .md5))
                try Expect.that(sent.number == 1 && sent.size == Int64(first.count), "uploadPart describes the part it sent")
                _ = try await context.provider.uploadPart(2, of: upload, to: key, file: files[1], md5: try Hashing.digest(second, .md5))
                _ = try await context.provider.uploadPart(2, of: upload, to: key, file: files[2], md5: try Hashing.digest(replacement, .md5))
                let parts = try await context.provider.uploadedParts(of: upload, to: key)
                try Expect.that(parts.map(\.number) == [1, 2], "the parts listed are 1 and 2, once each (got \(parts.map(\.number)))")
                try Expect.that(parts.map(\.size) == [Int64(first.count), Int64(replacement.count)], "the listed sizes are the parts' (the second replaced)")
                try Expect.that(
                    parts.map(\.etag) == [try Hashing.digest(first, .md5).hex, try Hashing.digest(replacement, .md5).hex],
                    "each listed ETag is its part's MD5")
                let stored = try await context.provider.completePartUpload(upload, to: key, parts: parts, condition: nil)
                try Expect.that(stored.size == Int64(first.count + replacement.count), "the object's size is the parts' sum")
                let back = try await context.provider.readData(remotePath: key, range: nil)
                try Expect.that(back == first + replacement, "the object holds the parts in order")
                let described = try await context.provider.stat(remotePath: key)
                try Expect.that(described?.contentType == "application/x-parted", "the upload's content type is the object's")
                if context.provider.capabilities.supports(.userMetadata) {
                    try Expect.that(described?.metadata["origin"] == "parts", "the upload's metadata is the object's")
                }
            },
            ProviderScenario(
                "part uploads: a part whose MD5 is not its bytes' is refused",
                contract: "uploadPart with an MD5 other than the file's throws checksumMismatch and keeps no part under that number.",
                requires: [.partUploads]
            ) { context in
                let key = try context.key("parted/digest.bin")
                let bytes = ProviderScenarioContext.pattern(count: 4_096, seed: 13)
                let file = try context.localFile("digest-part", contents: bytes)
                let upload = try await context.provider.startPartUpload(to: key, options: UploadOptions())
                try await Expect.error(.checksumMismatch, "uploadPart with another content's MD5") {
                    try await context.provider.uploadPart(1, of: upload, to: key, file: file, md5: try Hashing.digest(Data("other".utf8), .md5))
                }
                let held = try await context.provider.uploadedParts(of: upload, to: key)
                try Expect.that(held.isEmpty, "no part is kept for a refused one (got \(held.map(\.number)))")
                try await context.provider.abortPartUpload(upload, to: key)
            },
            ProviderScenario(
                "part uploads: a completion sent again finds the object it made",
                contract: "completePartUpload sent again for an upload it completed (its answer lost) returns the object it made, and the object is unchanged.",
                requires: [.partUploads]
            ) { context in
                let key = try context.key("parted/again.bin")
                let contents = [ProviderScenarioContext.pattern(count: 5 << 20, seed: 14), ProviderScenarioContext.pattern(count: 1_234, seed: 15)]
                let (upload, parts) = try await sendParts(context, to: key, contents, name: "again")
                let first = try await context.provider.completePartUpload(upload, to: key, parts: parts, condition: nil)
                let again = try await context.provider.completePartUpload(upload, to: key, parts: parts, condition: nil)
                try Expect.that(again.size == first.size && again.etag == first.etag, "the second answer describes the object the first made")
                try Expect.that(try await context.provider.readData(remotePath: key, range: nil) == contents[0] + contents[1], "the object is unchanged")
                try await context.provider.abortPartUpload(upload, to: key)
            },
            ProviderScenario(
                "part uploads: an aborted upload is gone",
                contract: "abortPartUpload ends an upload: listing its parts then throws notFound, no object appears, and aborting again is not an error.",
                requires: [.partUploads]
            ) { context in
                let key = try context.key("parted/aborted.bin")
                let bytes = ProviderScenarioContext.pattern(count: 4_096, seed: 4)
                let file = try context.localFile("aborted-part", contents: bytes)
                let upload = try await context.provider.startPartUpload(to: key, options: UploadOptions())
                _ = try await context.provider.uploadPart(1, of: upload, to: key, file: file, md5: try Hashing.digest(bytes, .md5))
                try await context.provider.abortPartUpload(upload, to: key)
                try await Expect.error(.notFound, "uploadedParts of an aborted upload") { try await context.provider.uploadedParts(of: upload, to: key) }
                try Expect.that(try await context.provider.stat(remotePath: key) == nil, "an aborted upload stores no object")
                try await context.provider.abortPartUpload(upload, to: key)
            },
            ProviderScenario(
                "part uploads: the completion's condition holds",
                contract: "completePartUpload with ifNoneMatch over an existing object throws conditionNotMatch and leaves the object as it was.",
                requires: [.partUploads, .conditionalCompletion]
            ) { context in
                let key = try context.key("parted/conditional.bin")
                try await context.provider.uploadData(Data("first".utf8), remotePath: key, options: UploadOptions())
                let bytes = ProviderScenarioContext.pattern(count: 2_048, seed: 5)
                let file = try context.localFile("conditional-part", contents: bytes)
                let upload = try await context.provider.startPartUpload(to: key, options: UploadOptions())
                let part = try await context.provider.uploadPart(1, of: upload, to: key, file: file, md5: try Hashing.digest(bytes, .md5))
                try await Expect.error(.conditionNotMatch, "completing over an object with ifNoneMatch") {
                    try await context.provider.completePartUpload(upload, to: key, parts: [part], condition: .ifNoneMatch)
                }
                try Expect.that(try await context.provider.readData(remotePath: key, range: nil) == Data("first".utf8), "the object is unchanged")
                try await context.provider.abortPartUpload(upload, to: key)
            },
            ProviderScenario(
                "part uploads: a condition the completion cannot hold is refused",
                contract: "Without conditionalCompletion, completePartUpload with a condition throws unsupported and stores nothing; the upload can still be completed without one.",
                requires: [.partUploads], excludedBy: [.conditionalCompletion]
            ) { context in
                let key = try context.key("parted/unconditional.bin")
                try await context.provider.uploadData(Data("first".utf8), remotePath: key, options: UploadOptions())
                // Two parts, the first of the smallest size S3 takes: what every backend with parts can finish.
                let contents = [ProviderScenarioContext.pattern(count: 5 << 20, seed: 6), ProviderScenarioContext.pattern(count: 2_048, seed: 7)]
                let (upload, parts) = try await sendParts(context, to: key, contents, name: "unconditional")
                let chosen = parts
                try await Expect.error(.unsupported, "completing with ifNoneMatch where completions drop conditions") {
                    try await context.provider.completePartUpload(upload, to: key, parts: chosen, condition: .ifNoneMatch)
                }
                try Expect.that(try await context.provider.readData(remotePath: key, range: nil) == Data("first".utf8), "the object is unchanged")
                try await context.provider.completePartUpload(upload, to: key, parts: chosen, condition: nil)
                try Expect.that(
                    try await context.provider.readData(remotePath: key, range: nil) == contents[0] + contents[1], "the completion without a condition stored the parts")
            },
            ProviderScenario(
                "part uploads: any selection of the parts completes, one part included",
                contract: "With partSelections, completePartUpload stores any ascending selection of the held parts (here parts 1 and 3 of three) and a single part alone, as S3 does.",
                requires: [.partUploads, .partSelections]
            ) { context in
                let contents = [
                    ProviderScenarioContext.pattern(count: 5 << 20, seed: 8), ProviderScenarioContext.pattern(count: 3_000, seed: 9),
                    ProviderScenarioContext.pattern(count: 1_500, seed: 10),
                ]
                let key = try context.key("parted/selection.bin")
                let (upload, parts) = try await sendParts(context, to: key, contents, name: "selection")
                let stored = try await context.provider.completePartUpload(upload, to: key, parts: [parts[0], parts[2]], condition: nil)
                try Expect.that(stored.size == Int64(contents[0].count + contents[2].count), "the object's size is the chosen parts' sum")
                try Expect.that(try await context.provider.readData(remotePath: key, range: nil) == contents[0] + contents[2], "the object holds parts 1 and 3 in order")

                let single = try context.key("parted/single.bin")
                let alone = try await context.provider.startPartUpload(to: single, options: UploadOptions())
                let file = try context.localFile("single-part", contents: contents[1])
                let part = try await context.provider.uploadPart(1, of: alone, to: single, file: file, md5: try Hashing.digest(contents[1], .md5))
                try await context.provider.completePartUpload(alone, to: single, parts: [part], condition: nil)
                try Expect.that(try await context.provider.readData(remotePath: single, range: nil) == contents[1], "an upload of one part stores it")
            },
            ProviderScenario(
                "part uploads: a selection the backend cannot finish is refused",
                contract: "Without partSelections, completing with a part left out or a single part throws unsupported, stores nothing and keeps the parts; all of them, 1…N, complete.",
                requires: [.partUploads], excludedBy: [.partSelections]
            ) { context in
                let contents = [ProviderScenarioContext.pattern(count: 5 << 20, seed: 11), ProviderScenarioContext.pattern(count: 3_000, seed: 12)]
                let key = try context.key("parted/whole.bin")
                let (upload, parts) = try await sendParts(context, to: key, contents, name: "whole")
                let first = parts[0]
                try await Expect.error(.unsupported, "completing with part 2 left out") {
                    try await context.provider.completePartUpload(upload, to: key, parts: [first], condition: nil)
                }
                try Expect.that(try await context.provider.stat(remotePath: key) == nil, "a refused completion stores nothing")
                let held = try await context.provider.uploadedParts(of: upload, to: key)
                try Expect.that(held.map(\.number) == [1, 2], "the refused completion kept both parts (got \(held.map(\.number)))")
                try await context.provider.completePartUpload(upload, to: key, parts: held, condition: nil)
                try Expect.that(try await context.provider.readData(remotePath: key, range: nil) == contents[0] + contents[1], "all the parts complete")
            },
            ProviderScenario(
                "part uploads: none without the capability", contract: "A provider without part uploads throws unsupported for each part-upload call.",
                excludedBy: [.partUploads]
            ) { context in
                let key = try context.key("parted/none.bin")
                let file = try context.localFile("none-part", contents: Data("x".utf8))
                try await Expect.error(.unsupported, "startPartUpload") { try await context.provider.startPartUpload(to: key, options: UploadOptions()) }
                try await Expect.error(.unsupported, "uploadPart") {
                    try await context.provider.uploadPart(1, of: "id", to: key, file: file, md5: try Hashing.digest(Data("x".utf8), .md5))
                }
                try await Expect.error(.unsupported, "uploadedParts") { try await context.provider.uploadedParts(of: "id", to: key) }
                try await Expect.error(.unsupported, "completePartUpload") {
                    try await context.provider.completePartUpload("id", to: key, parts: [], condition: nil)
                }
                try await Expect.error(.unsupported, "abortPartUpload") { try await context.provider.abortPartUpload("id", to: key) }
            },
        ]
    }
}
