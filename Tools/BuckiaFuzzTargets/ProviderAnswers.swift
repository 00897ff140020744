import BuckiaB2
import BuckiaBunny
import BuckiaCore
import BuckiaHTTP
import BuckiaProviderKit
import BuckiaS3
import Foundation

/// The `b2-answer` and `bunny-answer` targets, and the error half of `s3-xml`: a provider's
/// reading of what a server answered, past the JSON or XML, through the same functions its
/// calls use. An input's first line says which answer the rest of it is (`list [start]`,
/// `file`, `authorize`, `describe`, `error STATUS`); an input with no newline is read as a
/// listing.
///
/// Besides never trapping, each answer has laws a hostile server must not break:
/// - an error's message holds no control character, for it reaches a terminal and a log;
/// - a listing comes out in key-byte order, after the name it resumes from;
/// - a checksum is the digest's lowercase hex (a download is verified against it; one that
///   is not hex would verify nothing) and a description is of the key asked about;
/// - the URLs an authorization leads to keep the endpoint's https.
enum ProviderAnswers {
    static let b2Settings = B2Settings(
        bucket: "fuzz-bucket", keyId: "fuzz-key", applicationKey: Secret("fuzz-secret"), endpoint: URL(string: "https://api.backblazeb2.com") ?? URL(fileURLWithPath: "/"))
    static let key = Result { try ObjectKey("fuzz/object.bin") }
    /// The length of each checksum's hex.
    static let hexLength: [ChecksumAlgorithm: Int] = [.md5: 32, .sha1: 40, .sha256: 64, .crc32c: 8]

    /// The input split at its first newline: the answer's kind and argument, and its body.
    static func split(_ data: Data) -> (kind: String, argument: String?, body: Data) {
        guard let newline = data.firstIndex(of: 0x0A) else { return ("list", nil, data) }
        let words = String(decoding: data[data.startIndex..<newline], as: UTF8.self).split(separator: " ", maxSplits: 1)
        let kind = words.first.map(String.init) ?? ""
        return (kind, words.count > 1 ? String(words[1]) : nil, Data(data[(newline + 1)...]))
    }

    static func b2(_ data: Data) throws -> String? {
        let (kind, argument, body) = split(data)
        switch kind {
        case "list":
            let page: (entries: [ListEntry], next: String?)
            do {
                page = try B2Provider.listingPage(answer: body, startAfter: argument)
            } catch {
                return "\(error)"
            }
            try checkListing(page.entries, after: argument)
            for case .object(let file) in page.entries { try checkDescription(file, of: file.path.rawValue) }
            return nil
        case "file":
            let file: RemoteFile
            do {
                file = try B2Provider.describedFile(answer: body, key: key.get(), call: "b2_upload_file")
            } catch {
                return "\(error)"
            }
            try checkDescription(file, of: key.get().rawValue)
            return nil
        case "authorize":
            let urls: (api: URL, download: URL)
            do {
                urls = try B2Provider.readAuthorization(answer: body, settings: b2Settings)
            } catch {
                try checkMessage(error)
                return "\(error)"
            }
            for url in [urls.api, urls.download] where url.scheme?.lowercased() != "https" || url.host == nil {
                throw FuzzFinding("an authorization led from an https endpoint to \(url.absoluteString.debugDescription)")
            }
            return nil
        case "error":
            return try error(B2Provider.error(status: status(argument), body: body))
        default:
            return "no such B2 answer: \(kind.debugDescription)"
        }
    }

    static func bunny(_ data: Data) throws -> String? {
        let (kind, argument, body) = split(data)
        switch kind {
        case "list":
            let folder = argument.flatMap { ObjectKey.isValidPrefix($0) && $0.hasSuffix("/") ? $0 : nil } ?? ""
            let items: [FolderItem]
            do {
                items = try BunnyProvider.folderItems(answer: body, folder: folder)
            } catch {
                return "\(error)"
            }
            for item in items {
                guard case .file(let file?) = item.kind else { continue }
                try checkDescription(file, of: folder + String(decoding: item.name, as: UTF8.self))
            }
            return nil
        case "describe":
            do {
                guard let file = try BunnyProvider.described(answer: body, key: key.get()) else { return "a directory" }
                try checkDescription(file, of: key.get().rawValue)
                return nil
            } catch let finding as FuzzFinding {
                throw finding
            } catch {
                return "\(error)"
            }
        case "error":
            return try error(BunnyProvider.error(status: status(argument), body: body))
        default:
            return "no such Bunny answer: \(kind.debugDescription)"
        }
    }

    /// The S3 error a body makes when it came with a 400 (one status: each parse of a body
    /// costs the `s3-xml` target as much as the rest of its run).
    static func s3Error(_ data: Data) throws {
        try checkMessage(S3Provider.error(status: 400, method: "PUT", body: data))
    }

    /// An error status from an argument, 400 when it names none.
    static func status(_ argument: String?) -> Int {
        argument.flatMap { Int($0.prefix(3)) }.map { min(max($0, 100), 599) } ?? 400
    }

    static func error(_ error: BuckiaError) throws -> String? {
        try checkMessage(error)
        return error.cause is HTTPFailure ? nil : "no failure as its cause"
    }

    /// Server text in an error is escaped: no control character reaches a terminal or a log
    /// from its description, which holds its message and its cause's (the status, the URL and
    /// the start of the body).
    static func checkMessage(_ error: any Error) throws {
        let message = "\(error)"
        if let scalar = message.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            throw FuzzFinding("an error message holds the control character U+\(String(scalar.value, radix: 16, uppercase: true)): \(message.debugDescription)")
        }
    }

    /// Listed entries come in key-byte order, each after the name the listing resumed from.
    static func checkListing(_ entries: [ListEntry], after start: String?) throws {
        var previous: String?
        for entry in entries {
            if let previous, entry.path.utf8Precedes(previous) {
                throw FuzzFinding("a listing put \(entry.path.debugDescription) after \(previous.debugDescription)")
            }
            if let start, !start.utf8Precedes(entry.path) {
                throw FuzzFinding("a listing resumed after \(start.debugDescription) listed \(entry.path.debugDescription)")
            }
            previous = entry.path
        }
    }

    /// A description is of the key asked about, and each checksum it declares is its digest's
    /// lowercase hex.
    static func checkDescription(_ file: RemoteFile, of key: String) throws {
        guard file.path.rawValue == key else { throw FuzzFinding("a description of \(key.debugDescription) names \(file.path.rawValue.debugDescription)") }
        for (algorithm, value) in file.checksums {
            let hex = value.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
            guard hex, value.utf8.count == hexLength[algorithm] ?? value.utf8.count else {
                throw FuzzFinding("a \(algorithm) checksum of \(value.debugDescription) is not a digest's lowercase hex")
            }
        }
    }
}
