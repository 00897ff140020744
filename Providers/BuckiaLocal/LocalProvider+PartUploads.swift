import BuckiaCore
import BuckiaProviderKit
import Foundation

/// Multipart uploads a caller drives part by part (``BuckiaCore/Capability/partUploads``), kept
/// in the root itself, so any process over the same folder — a fleet of S3 gateways on one file
/// system — goes on with an upload another started, and nothing is lost when a process stops.
///
/// Upload `ID` (32 random hexadecimal digits) is the folder `.buckia/uploads/ID/`:
///
/// - `upload`: the key and what the object will carry (JSON), written once;
/// - `object`: the file parts are written into by position. Clients cut a file into parts of
///   one size, so part N goes at (N − 1) × `stride`, the size of the first part that arrived
///   with a known, non-zero length;
/// - `places/N`: part N's place in `object` is taken, by a part being written or held there;
/// - `parts/NNNNN`: what part N is (size, MD5, when, where), replaced by a rename when the part
///   is sent again: the part recorded last wins;
/// - `files/`: parts that break the pattern (sent again, of another size, of unknown length);
/// - `completing` while a completion hands the parts over, `completed` (the object made, for a
///   completion sent again after its answer was lost) once it has;
/// - `lock`: every change to the names above is made holding it (`flock`), so processes agree.
///
/// When the parts completed are 1…K, each in its place, `object` cut after part K is the
/// object, and completing links it into place: no byte is copied. Any other selection streams
/// the pieces in order into a new file: slower, never wrong. An upload's parts are written
/// without `fsync`; the completed object is synced as every upload is.
extension LocalProvider: LocalPartStore {
    /// The folder under `.buckia` that holds the uploads.
    static let uploadsName = "uploads"

    /// What an upload's `upload` record holds: the key and what the object will carry.
    typealias PartUploadRecord = PartStagingProvider.Record

    /// What a part's record in `parts/` holds: its bytes are at `offset` in `object`, or are the
    /// file `file` in `files/`.
    struct PartRecord: Codable {
        var size: Int64
        var md5: String
        var received: Double
        var offset: Int64?
        var file: String?
    }

    /// The upload's stride: the size of the first part that arrived with a length.
    struct StrideRecord: Codable {
        var stride: Int64
    }

    /// What a completed upload leaves: the object it made.
    struct CompletionRecord: Codable {
        var key: String
        var etag: String?
        var size: Int64
    }

    /// S3's largest object, 5 TiB: no part is placed beyond it.
    static let largestObject: Int64 = 5 << 40

    public func startPartUpload(to key: ObjectKey, options: UploadOptions) async throws -> String {
        guard options.condition == nil else {
            throw BuckiaError(.invalidConfiguration, "A condition belongs to the completion of a multipart upload, not its start.", operation: "start upload", path: key.rawValue)
        }
        try check(options, key: key)
        if key.rawValue.split(separator: "/", maxSplits: 1).first == Substring(LocalProvider.reservedName) {
            throw BuckiaError(
                .invalidPath, "The first segment \(LocalProvider.reservedName) is reserved by the local provider for its own files.",
                operation: "start upload", path: key.rawValue)
        }
        let id = Hex.encode(try SecureRandom.bytes(count: 16))
        let uploads = try uploadsFolder(create: true)
        let folder = try uploads.folder(id, create: true)
        try folder.createFile("object").close()
        let record = PartUploadRecord(
            key: key.rawValue, contentType: options.contentType, contentHeaders: options.contentHeaders, metadata: options.metadata,
            modified: options.modificationDate?.timeIntervalSince1970)
        try Self.write(record, as: "upload", in: folder)
        return id
    }

    public func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) async throws -> UploadedPart {
        try await BlockingWork.run("upload part", on: pool) { [self] in try uploadPart(number, of: upload, to: key, file: file, md5: md5) }
    }

    /// ``uploadPart(_:of:to:file:md5:)`` on the calling thread.
    private func uploadPart(_ number: Int, of upload: String, to key: ObjectKey, file: URL, md5: Digest) throws -> UploadedPart {
        let source = try LocalFile.openForReading(file)
        defer { source.closeAfterReading() }
        let length = Int64(try source.statRecord().st_size)
        return try receivePart(number, of: upload, to: key, length: length) { write in
            let hasher = try DigestHasher(.md5)
            var offset: Int64 = 0
            while offset < length {
                let chunk = try source.read(count: Int(min(Int64(AtomicFile.copyBufferSize), length - offset)), at: offset)
                guard !chunk.isEmpty else { break }
                hasher.update(chunk)
                try write(chunk)
                offset += Int64(chunk.count)
            }
            let digest = hasher.finalize()
            guard digest == md5 else {
                throw BuckiaError(
                    .checksumMismatch, "The part's MD5 is \(digest.hex), not the \(md5.hex) it was sent with; nothing was stored.", operation: "upload part",
                    path: key.rawValue)
            }
            return digest
        }
    }

    /// Where a part's bytes go while they arrive.
    enum Target {
        case place(offset: Int64, object: LocalFile)
        case file(name: String, output: LocalFile)
    }

    package func receivePart(_ number: Int, of upload: String, to key: ObjectKey, length: Int64?, _ fill: ((Data) throws -> Void) throws -> Digest) throws -> UploadedPart {
        guard (1...10_000).contains(number) else {
            throw BuckiaError(.invalidConfiguration, "Part numbers run from 1 to 10000; \(number) is not one.", operation: "upload part", path: key.rawValue)
        }
        let folder = try uploadFolder(upload, key: key, operation: "upload part")
        let target: Target = try folder.withExclusiveLock(on: "lock") {
            _ = try underWay(folder, upload, key: key, operation: "upload part")
            if let length, length > 0 {
                // Opened before the place is claimed, so no claim is left behind by a failed open.
                let object = try folder.openFileForUpdate("object")
                if let offset = try claimPlace(number, length: length, in: folder) { return .place(offset: offset, object: object) }
                object.closeAfterReading()  // nothing was written through it
            }
            let (name, output) = try folder.folder("files", create: true).createTemporaryFile(permissions: 0o600)
            return .file(name: name, output: output)
        }
        let start: Int64
        switch target {
        case .place(let offset, _): start = offset
        case .file: start = 0
        }
        var position = start
        let md5: Digest
        do {
            md5 = try fill { chunk in
                if let length, position - start + Int64(chunk.count) > length {
                    throw BuckiaError(.io, "Part \(number) is longer than the \(length) bytes it was sent as; nothing was stored.", operation: "upload part", path: key.rawValue)
                }
                switch target {
                case .place(_, let object): try object.write(chunk, at: position)
                case .file(_, let output): try output.write(chunk)
                }
                position += Int64(chunk.count)
            }
            if let length, position - start != length {
                throw BuckiaError(.io, "Part \(number) ended after \(position - start) of its \(length) bytes; nothing was stored.", operation: "upload part", path: key.rawValue)
            }
            switch target {
            // The completion's fsync then finds the part on its way to the disk already.
            case .place(_, let object):
                _ = object.startWriteback(start..<position)
                try object.close()
            case .file(_, let output): try output.close()
            }
        } catch {
            throw Self.failure(error, operation: "upload part") { try folder.withExclusiveLock(on: "lock") { try release(target, number: number, in: folder) } }
        }
        let size = position - start
        let received = Date()
        var record = PartRecord(size: size, md5: md5.hex, received: received.timeIntervalSince1970)
        switch target {
        case .place: record.offset = start
        case .file(let name, _): record.file = name
        }
        try folder.withExclusiveLock(on: "lock") {
            // An upload completed or aborted while the part was on its way takes no part after it.
            do {
                _ = try underWay(folder, upload, key: key, operation: "upload part")
            } catch {
                try release(target, number: number, in: folder)
                throw error
            }
            let parts = try folder.folder("parts", create: true)
            let previous = try Self.partRecord(number, in: parts)
            // The part's file is the upload's from now on: an interrupted process must not
            // remove it once a record may name it.
            if case .file(let name, _) = target { Temporaries.unregister(try folder.folder("files", create: false).child(name)) }
            try Self.write(record, as: Self.partName(number), in: parts)
            if let old = previous?.file, old != record.file { try folder.folder("files", create: false).removeFile(old) }
            if previous?.offset != nil, record.file != nil {
                try folder.folder("places", create: true).removeFile(Self.partName(number))  // the place is free again
            } else if record.offset != nil, try folder.folder("places", create: true).entry(Self.partName(number)).kind == .missing {
                try folder.folder("places", create: false).createFile(Self.partName(number)).close()  // taken again by the part it holds
            }
        }
        return UploadedPart(number: number, etag: md5.hex, size: size, modified: received)
    }

    public func uploadedParts(of upload: String, to key: ObjectKey) async throws -> [UploadedPart] {
        try await BlockingWork.run("list parts", on: pool) { [self] in
            let folder = try uploadFolder(upload, key: key, operation: "list parts")
            return try folder.withExclusiveLock(on: "lock") {
                _ = try underWay(folder, upload, key: key, operation: "list parts")
                return try Self.partRecords(in: folder).map { number, record in
                    UploadedPart(number: number, etag: record.md5, size: record.size, modified: Date(timeIntervalSince1970: record.received))
                }.sorted { $0.number < $1.number }
            }
        }
    }

    /// What a completion found when it took the upload.
    private enum Claim {
        case done(CompletionRecord)
        case claimed(record: PartUploadRecord, parts: [Int: PartRecord], places: Set<Int>, stride: Int64?, completing: HeldLock)
    }

    @discardableResult
    public func completePartUpload(_ upload: String, to key: ObjectKey, parts: [UploadedPart], condition: WriteCondition?) async throws -> RemoteFile {
        guard !parts.isEmpty, zip(parts, parts.dropFirst()).allSatisfy({ $0.number < $1.number }) else {
            throw BuckiaError(.invalidConfiguration, "A multipart upload is completed with its parts in ascending order, at least one.", operation: "complete upload", path: key.rawValue)
        }
        let folder = try uploadFolder(upload, key: key, operation: "complete upload")
        let claim: Claim = try folder.withExclusiveLock(on: "lock") {
            if let done = try Self.read(CompletionRecord.self, "completed", in: folder, what: "The upload's completion"), done.key == key.rawValue {
                return .done(done)
            }
            let busy = BuckiaError(.transient, "The upload is being completed by another request; send the completion again shortly for its answer.", operation: "complete upload", path: key.rawValue)
            let record = try underWay(folder, upload, key: key, operation: "complete upload", busy: busy)
            // Held for as long as this completion runs: a completion that finds the file and
            // can take its lock knows its completer died, and clears it.
            guard let completing = try folder.tryLock("completing", create: true) else { throw busy }
            let places = try folder.entry("places").kind == .folder ? try folder.folder("places", create: false).names().compactMap { Int($0.name) } : []
            return .claimed(record: record, parts: try Self.partRecords(in: folder), places: Set(places), stride: try Self.stride(in: folder), completing: completing)
        }
        guard case .claimed(let record, let held, let places, let stride, let completing) = claim else {
            // Completed already, and the answer lost on the way: the object the marker names.
            if case .done(let done) = claim, let stored = try await stat(remotePath: key), stored.etag == done.etag, stored.size == done.size { return stored }
            throw Self.gone(upload, operation: "complete upload", key: key)
        }
        var options = record.options
        options.condition = condition
        let base = rootPath + "/" + LocalProvider.reservedName + "/" + Self.uploadsName + "/" + upload + "/"
        let object = URL(fileURLWithPath: base + "object", isDirectory: false)
        let stored: RemoteFile
        do {
            var pieces: [(url: URL, range: Range<Int64>)] = []
            for listed in parts {
                guard let part = held[listed.number], part.md5 == listed.etag else {
                    throw BuckiaError(.notFound, "Part \(listed.number) is not the one the upload holds under that number.", operation: "complete upload", path: key.rawValue)
                }
                // Read by path below: each file is checked to be one, not a link, first.
                if let offset = part.offset {
                    guard try folder.entry("object").kind == .file else { throw Self.damaged(upload, key: key) }
                    pieces.append((object, offset..<(offset + part.size)))
                } else if let name = part.file {
                    guard try folder.folder("files", create: false).entry(name).kind == .file else { throw Self.damaged(upload, key: key) }
                    pieces.append((URL(fileURLWithPath: base + "files/" + name, isDirectory: false), 0..<part.size))
                }
            }
            if let size = Self.wholeObjectSize(parts.map(\.number), held: held, places: places, stride: stride) {
                let assembly = try folder.openFileForUpdate("object")
                try assembly.truncate(to: size)
                try assembly.close()
                let modified = options.modificationDate
                stored = try await receiveFile(at: key, options: options) { url in
                    try await BlockingWork.run("complete upload", on: pool) { try Self.place(object, size: size, at: url, modified: modified) }
                }
            } else {
                let chosen = pieces
                stored = try await self.upload(
                    from: ByteStream.concatenating(chosen.count) { try ByteStream.file(chosen[$0].url, range: chosen[$0].range) }, remotePath: key,
                    options: options)
            }
        } catch {
            do {
                try folder.withExclusiveLock(on: "lock") {
                    if try folder.entry("object").status.st_nlink > 1 {
                        // Placed, and failed after (syncing its folder): the object shares the
                        // upload's bytes, so no part may be written there again.
                        try removeUpload(upload, folder)
                    } else {
                        try folder.removeFile("completing")
                    }
                }
            } catch {
                // The completion's own failure is the one to report; a `completing` left behind
                // is no longer locked, so the next request finds it stale and clears it.
            }
            completing.release()
            throw error
        }
        // The upload's name for the file goes first: it changes the file's status-change
        // time, so its entity tag, which the answer and the marker then give as a stat will.
        try folder.removeFile("object")
        let described = try await stat(remotePath: key) ?? stored
        try await BlockingWork.run("complete upload", on: pool) { [self] in
            let folder = try uploadFolder(upload, key: key, operation: "complete upload")
            try folder.withExclusiveLock(on: "lock") {
                try Self.write(CompletionRecord(key: key.rawValue, etag: described.etag, size: described.size), as: "completed", in: folder)
                for name in ["stride", "upload", "completing"] { try folder.removeFile(name) }
                for name in ["parts", "places", "files"] {
                    if try folder.entry(name).kind == .folder { try folder.removeTree(name) }
                }
            }
        }
        completing.release()
        return described
    }

    public func abortPartUpload(_ upload: String, to key: ObjectKey) async throws {
        guard PartStagingProvider.isUploadId(upload) else { return }
        // Removing a large object frees its blocks: on the blocking-work threads.
        try await BlockingWork.run("abort upload", on: pool) { [self] in
            let folder: DirectoryHandle
            do {
                folder = try uploadFolder(upload, key: key, operation: "abort upload")
            } catch let error as BuckiaError where error.code == .notFound {
                return
            }
            try folder.withExclusiveLock(on: "lock") {
                // Another key's upload by this id is not this call's to end; a damaged one is ended.
                struct Keyed: Decodable { var key: String }
                for name in ["upload", "completed"] {
                    let owner: Keyed?
                    do {
                        owner = try Self.read(Keyed.self, name, in: folder, what: "The upload's record")
                    } catch let error as BuckiaError where error.code == .corrupt {
                        owner = nil
                    }
                    if let owner, owner.key != key.rawValue { return }
                }
                if try folder.entry("completing").kind != .missing, try folder.tryLock("completing", create: false) == nil {
                    throw BuckiaError(.transient, "The upload is being completed; abort it again once that has finished.", operation: "abort upload", path: key.rawValue)
                }
                try removeUpload(upload, folder)
            }
        }
    }
}
