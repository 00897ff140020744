import BuckiaCore
import Foundation

/// Multipart uploads a caller drives part by part (``Capability/partUploads``) over a provider
/// that has none of its own (Bunny, a provider of your own): each part is kept as an object
/// under `prefix` in the provider itself, and completing streams the chosen parts, in order,
/// into one upload of the object. Nothing is kept on this machine, so any process over the
/// same provider and prefix can go on with an upload another started (an S3 gateway fleet
/// over Bunny relies on that).
///
/// Under `prefix`, upload `ID` (32 random hexadecimal digits) is `ID/upload` (the key and what
/// the object will carry: content type, content headers, metadata, modification date) and one
/// object per part, `ID/parts/NNNNN-STAMP-MD5`: its number, when it was sent and its MD5,
/// which is its entity tag. A part sent again under a number replaces the one sent before it;
/// of two sent at once, the one started last stays. Every ascending selection of the parts
/// can be completed (``Capability/partSelections``), with a condition where the provider
/// writes conditionally (``Capability/conditionalCompletion``).
///
/// Choose a `prefix` that the provider's other users do not list or write (the S3 gateway uses
/// its reserved `.buckia-s3/` folder). Abandoned uploads stay until ``abortPartUpload(_:to:)``;
/// a completed one leaves `ID/completed` (the object it made, for a completion sent again after
/// its answer was lost) until then too.
/// Completing reads every part back from the provider and writes the object, so it moves the
/// object's bytes twice; a provider with parts of its own should implement them instead.
public struct PartStagingProvider: ForwardingStorageProvider {
    public let base: any StorageProvider
    /// Where the uploads are kept: a key prefix ending in `/`.
    public let prefix: String
    private let now: @Sendable () -> Date

    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` when `prefix` is empty, does not end
    ///   in `/`, or is no key prefix.
    public init(base: any StorageProvider, prefix: String, clock: @escaping @Sendable () -> Date = { Date() }) throws {
        guard prefix.hasSuffix("/"), prefix.utf8.count > 1, ObjectKey.isValidPrefix(prefix) else {
            throw BuckiaError(.invalidConfiguration, "A part-staging prefix is a key prefix ending in '/'; \(prefix.debugDescription) is not one.", operation: "configure")
        }
        self.base = base
        self.prefix = prefix
        now = clock
    }

    public var capabilities: ProviderCapabilities {
        var capabilities = base.capabilities
        capabilities.features.formUnion([.partUploads, .partSelections])
        if base.capabilities.supports(.conditionalWrite) {
            capabilities.features.insert(.conditionalCompletion)
        } else {
            capabilities.features.remove(.conditionalCompletion)
        }
        return capabilities
    }

    /// What an upload's record holds: the key and what the object will carry (the local
    /// provider's uploads keep the same record).
    package struct Record: Codable {
        package var key: String
        package var contentType: String?
        package var contentHeaders: ContentHeaders
        package var metadata: [String: String]
        package var modified: Double?

        package init(key: String, contentType: String?, contentHeaders: ContentHeaders, metadata: [String: String], modified: Double?) {
            self.key = key
            self.contentType = contentType
            self.contentHeaders = contentHeaders
            self.metadata = metadata
            self.modified = modified
        }

        package var options: UploadOptions {
            UploadOptions(
                contentType: contentType, modificationDate: modified.map { Date(timeIntervalSince1970: $0) }, metadata: metadata,
                contentHeaders: contentHeaders)
        }
    }

    public func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        try options.validate()
        guard options.condition == nil else {
            throw BuckiaError(.invalidConfiguration, "A condition belongs to the completion of a multipart upload, not its start.", operation: "start upload", path: key.rawValue)
        }
        let id = Hex.encode(try SecureRandom.bytes(count: 16))
        let record = Record(
            key: key.rawValue, contentType: options.contentType, contentHeaders: options.contentHeaders, metadata: options.metadata,
            modified: (options.modificationDate ?? now()).timeIntervalSince1970)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try await base.uploadData(try encoder.encode(record), remotePath: try recordKey(id), options: UploadOptions(contentType: "application/json"))
        return id
    }

    public func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        guard (1...10_000).contains(number) else {
            throw BuckiaError(.invalidConfiguration, "Part numbers run from 1 to 10000; \(number) is not one.", operation: "upload part", path: key.rawValue)
        }
        _ = try await record(upload, key: key, operation: "upload part")
        try Hashing.checkMD5(of: file, is: md5, key: key, operation: "upload part")
        let stamp = UInt64(clamping: Int64((now().timeIntervalSince1970 * 1_000_000).rounded()))
        let name = try ObjectKey(partsPrefix(upload) + String(format: "%05d", number) + "-" + String(stamp, radix: 16) + "-" + md5.hex)
        let stored = try await base.uploadFile(localURL: file, remotePath: name, options: UploadOptions())
        // An upload completed or aborted while the part was on its way takes no part after it.
        do {
            _ = try await record(upload, key: key, operation: "upload part")
        } catch let error as BuckiaError where error.code == .notFound {
            try await base.deleteFiles([name])
            throw error
        }
        // The part sent before under this number goes; one started later stays.
        let older = try await versions(upload, number: number).filter { $0.stamp < stamp }.map(\.key)
        if !older.isEmpty { try await base.deleteFiles(older) }
        return UploadedPart(number: number, etag: md5.hex, size: stored.size, modified: Date(timeIntervalSince1970: Double(stamp) / 1_000_000))
    }

    public func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        _ = try await record(upload, key: key, operation: "list parts")
        return try await latest(upload).map(\.part)
    }

    @discardableResult
    public func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        guard !parts.isEmpty, zip(parts, parts.dropFirst()).allSatisfy({ $0.number < $1.number }) else {
            throw BuckiaError(.invalidConfiguration, "A multipart upload is completed with its parts in ascending order, at least one.", operation: "complete upload", path: key.rawValue)
        }
        if condition != nil, !base.capabilities.supports(.conditionalWrite) {
            throw BuckiaError.unsupported(.conditionalCompletion, provider: providerType, operation: "complete upload")
        }
        let record: Record
        do {
            record = try await self.record(upload, key: key, operation: "complete upload")
        } catch let error as BuckiaError where error.code == .notFound {
            // Completed already, and the answer lost on the way: the object the marker names.
            if let done = try await completion(upload, key: key), let stored = try await base.stat(remotePath: key), stored.etag == done.etag,
               stored.size == done.size
            {
                return stored
            }
            throw error
        }
        let held = Dictionary(try await latest(upload).map { ($0.part.number, $0) }, uniquingKeysWith: { $1 })
        var chosen: [ObjectKey] = []
        for listed in parts {
            guard let part = held[listed.number], part.part.etag == listed.etag else {
                throw BuckiaError(.notFound, "Part \(listed.number) is not the one the upload holds under that number.", operation: "complete upload", path: key.rawValue)
            }
            chosen.append(part.key)
        }
        var options = record.options
        options.condition = condition
        let parts = chosen
        let stream = ByteStream.concatenating(parts.count) { [base] in try await base.openRead(remotePath: parts[$0], options: ReadOptions()).bytes }
        let stored = try await base.upload(from: stream, remotePath: key, options: options)
        // What a completion sent again finds; it goes with abortPartUpload, which the caller
        // sends once no retry can come (the S3 gateway: when it forgets the answer, after an hour).
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try await base.uploadData(
            try encoder.encode(Completion(key: key.rawValue, etag: stored.etag, size: stored.size)), remotePath: try completionKey(upload),
            options: UploadOptions(contentType: "application/json"))
        var finished = try await versions(upload).map(\.key)
        finished.append(try recordKey(upload))
        try await base.deleteFiles(finished)
        return stored
    }

    /// What a completed upload leaves: the object it made.
    struct Completion: Codable {
        var key: String
        var etag: String?
        var size: Int64
    }

    private func completionKey(_ id: String) throws -> ObjectKey { try ObjectKey(prefix + id + "/completed") }

    /// The completion marker of `upload`, when it completed to `key`.
    private func completion(_ upload: String, key: ObjectKey) async throws -> Completion? {
        guard Self.isUploadId(upload) else { return nil }
        let data: Data
        do {
            data = try await base.readData(remotePath: try completionKey(upload), options: ReadOptions())
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
        do {
            let done = try JSONValidation.decode(Completion.self, from: data, what: "The upload's completion")
            return done.key == key.rawValue ? done : nil
        } catch {
            return nil  // a damaged marker finds nothing: the retry is told the upload is gone
        }
    }

    public func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        guard Self.isUploadId(upload) else { return }
        // Another key's upload by this id is not this call's to end.
        if let owner = try await owner(of: upload), owner != key.rawValue { return }
        var keys: [ObjectKey] = []
        for try await entry in base.list(ListOptions(prefix: prefix + upload + "/", recursive: true)) {
            if let file = entry.file { keys.append(file.path) }
        }
        if !keys.isEmpty { try await base.deleteFiles(keys) }
    }

    // MARK: Records

    /// Whether `id` is one this layer makes: 32 lowercase hexadecimal digits (the S3 gateway's
    /// upload ids take the same form).
    package static func isUploadId(_ id: String) -> Bool { id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } }

    private func recordKey(_ id: String) throws -> ObjectKey { try ObjectKey(prefix + id + "/upload") }

    private func partsPrefix(_ id: String) -> String { prefix + id + "/parts/" }

    /// The record of `upload`, when it is an upload to `key`.
    private func record(_ upload: String, key: ObjectKey, operation: String) async throws -> Record {
        let gone = BuckiaError(.notFound, "No multipart upload \(upload) to this key is under way: it was completed, aborted or never started.", operation: operation, path: key.rawValue)
        guard Self.isUploadId(upload) else { throw gone }
        let data: Data
        do {
            data = try await base.readData(remotePath: try recordKey(upload), options: ReadOptions())
        } catch let error as BuckiaError where error.code == .notFound {
            throw gone
        }
        let record: Record
        do {
            record = try JSONValidation.decode(Record.self, from: data, what: "The upload's record")
        } catch {
            throw BuckiaError(.corrupt, "The record of upload \(upload) is damaged; abort the upload and start again.", operation: operation, path: key.rawValue, cause: error)
        }
        guard record.key == key.rawValue else { throw gone }
        return record
    }

    /// The key `upload` is to, from its record or its completion's marker; nil when neither is
    /// there or readable (a damaged upload is aborted like any other).
    private func owner(of upload: String) async throws -> String? {
        struct Keyed: Decodable { var key: String }
        for name in [try recordKey(upload), try completionKey(upload)] {
            let data: Data
            do {
                data = try await base.readData(remotePath: name, options: ReadOptions())
            } catch let error as BuckiaError where error.code == .notFound {
                continue
            }
            do {
                return try JSONValidation.decode(Keyed.self, from: data, what: "The upload's record").key
            } catch {
                return nil
            }
        }
        return nil
    }

    /// One stored version of a part.
    struct Version {
        var key: ObjectKey
        var number: Int
        var stamp: UInt64
        var part: UploadedPart
    }

    /// Every part object of `upload` (of part `number` alone, when given); names that are not
    /// one are left alone.
    private func versions(_ upload: String, number only: Int? = nil) async throws -> [Version] {
        let parts = partsPrefix(upload)
        var found: [Version] = []
        let listed = only.map { parts + String(format: "%05d-", $0) } ?? parts
        for try await entry in base.list(ListOptions(prefix: listed, recursive: true)) {
            guard let file = entry.file, file.path.rawValue.hasPrefix(parts) else { continue }
            let fields = file.path.rawValue.dropFirst(parts.count).split(separator: "-")
            guard fields.count == 3, let number = Int(fields[0]), let stamp = UInt64(fields[1], radix: 16), fields[2].utf8.count == 32 else { continue }
            found.append(Version(
                key: file.path, number: number, stamp: stamp,
                part: UploadedPart(number: number, etag: String(fields[2]), size: file.size, modified: Date(timeIntervalSince1970: Double(stamp) / 1_000_000))))
        }
        return found
    }

    /// The part each number holds: its latest version, by number.
    private func latest(_ upload: String) async throws -> [Version] {
        var byNumber: [Int: Version] = [:]
        for version in try await versions(upload) where version.stamp >= byNumber[version.number]?.stamp ?? 0 {
            byNumber[version.number] = version
        }
        return byNumber.values.sorted { $0.number < $1.number }
    }
}
