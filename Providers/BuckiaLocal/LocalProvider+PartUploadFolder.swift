import BuckiaCore
import BuckiaProviderKit
import Foundation

/// The folder of a multipart upload the local provider keeps (LocalProvider+PartUploads.swift):
/// finding it, telling whether the upload is under way, claiming a part's place, and reading
/// and writing its records, each checked before it is used.
extension LocalProvider {
    // MARK: The upload's folder

    static func gone(_ upload: String, operation: String, key: ObjectKey) -> BuckiaError {
        BuckiaError(.notFound, "No multipart upload \(upload) to this key is under way: it was completed, aborted or never started.", operation: operation, path: key.rawValue)
    }

    /// `<root>/.buckia/uploads`, made on the way when `create` is set.
    func uploadsFolder(create: Bool) throws -> DirectoryHandle {
        try openRoot(create: create).folder(LocalProvider.reservedName, create: create).folder(Self.uploadsName, create: create)
    }

    static func partName(_ number: Int) -> String { String(format: "%05d", number) }

    /// `error`, once `undo` has given back what the failed step took (a place, a file); when
    /// `undo` fails too, an error that names both failures, so neither is silent.
    static func failure(_ error: any Error, operation: String, undoing undo: () throws -> Void) -> any Error {
        do {
            try undo()
            return error
        } catch let undoError as BuckiaError {
            return BuckiaError(.io, "\(error) What it had taken could not be given back either: \(undoError.message)", operation: operation, cause: undoError)
        } catch {
            return BuckiaError(.io, "\(error) What it had taken could not be given back either.", operation: operation)
        }
    }

    static func damaged(_ upload: String, key: ObjectKey) -> BuckiaError {
        BuckiaError(.corrupt, "A file of upload \(upload) is not the file its record names; abort the upload and start again.", operation: "complete upload", path: key.rawValue)
    }

    /// The folder of `upload`: ``BuckiaCore/BuckiaError/Code/notFound`` when there is none.
    func uploadFolder(_ upload: String, key: ObjectKey, operation: String) throws -> DirectoryHandle {
        guard PartStagingProvider.isUploadId(upload) else { throw Self.gone(upload, operation: operation, key: key) }
        do {
            return try uploadsFolder(create: false).folder(upload, create: false)
        } catch let error as BuckiaError where error.code == .notFound {
            throw Self.gone(upload, operation: operation, key: key)
        }
    }

    /// The upload's record, when it is under way (neither completing nor completed) to `key`;
    /// `busy` is thrown while a completion runs (`notFound` without it). A `completing` whose
    /// lock nobody holds was left by a completer that died: cleared, unless that completer had
    /// linked the upload's file into place, when the upload is over (no part may be written
    /// into a stored object's bytes).
    func underWay(_ folder: DirectoryHandle, _ upload: String, key: ObjectKey, operation: String, busy: BuckiaError? = nil) throws -> PartUploadRecord {
        guard let record = try Self.read(PartUploadRecord.self, "upload", in: folder, what: "The record of upload \(upload)"), record.key == key.rawValue else {
            throw Self.gone(upload, operation: operation, key: key)
        }
        if try folder.entry("completing").kind != .missing {
            guard let stale = try folder.tryLock("completing", create: false) else { throw busy ?? Self.gone(upload, operation: operation, key: key) }
            defer { stale.release() }
            if try folder.entry("object").status.st_nlink > 1 {
                try removeUpload(upload, folder)
                throw Self.gone(upload, operation: operation, key: key)
            }
            try folder.removeFile("completing")
        }
        return record
    }

    /// Removes the upload's folder and everything in it, its record first, so a request that
    /// comes in meanwhile (or after a failure half way) finds no upload and creates nothing.
    func removeUpload(_ upload: String, _ folder: DirectoryHandle) throws {
        try folder.removeFile("upload")
        try uploadsFolder(create: false).removeTree(upload)
    }

    /// Takes part `number`'s place in `object` when a part of `length` bytes fits there, and
    /// returns its offset; nil sends the part to a file of its own: the place is taken (the part
    /// sent again), the length is not the stride (a part after a shorter one), or the place lies
    /// past the largest object S3 stores. The first part with a length sets the stride.
    func claimPlace(_ number: Int, length: Int64, in folder: DirectoryHandle) throws -> Int64? {
        guard length > 0 else { return nil }
        let places = try folder.folder("places", create: true)
        guard try places.entry(Self.partName(number)).kind == .missing else { return nil }
        let stride = try Self.stride(in: folder) ?? length
        guard length <= stride else { return nil }
        let (offset, overflow) = Int64(number - 1).multipliedReportingOverflow(by: stride)
        guard !overflow, offset <= Self.largestObject - length else { return nil }
        if try folder.entry("stride").kind == .missing { try Self.write(StrideRecord(stride: stride), as: "stride", in: folder) }
        try places.createFile(Self.partName(number)).close()
        return offset
    }

    /// Gives back what a part that failed took: its place, or its file.
    func release(_ target: Target, number: Int, in folder: DirectoryHandle) throws {
        switch target {
        case .place:
            // Only while no record holds the place (a part sent before, then again, keeps it).
            let held = try Self.partRecords(in: folder)[number]
            if held?.offset == nil, try folder.entry("places").kind == .folder {
                try folder.folder("places", create: false).removeFile(Self.partName(number))
            }
        case .file(let name, let output):
            let files = try folder.folder("files", create: false)
            try files.removeFile(name)
            Temporaries.unregister(files.child(name))
            try output.close()
        }
    }

    static func stride(in folder: DirectoryHandle) throws -> Int64? {
        guard let stride = try read(StrideRecord.self, "stride", in: folder, what: "The upload's part size")?.stride else { return nil }
        guard (1...largestObject).contains(stride) else {
            throw BuckiaError(.corrupt, "The part size recorded at \(folder.child("stride")) is \(stride) bytes, which no part is; abort the upload and start again.", operation: "read record", path: folder.child("stride"))
        }
        return stride
    }

    /// Every part's record, by number.
    static func partRecords(in folder: DirectoryHandle) throws -> [Int: PartRecord] {
        guard try folder.entry("parts").kind == .folder else { return [:] }
        let parts = try folder.folder("parts", create: false)
        var records: [Int: PartRecord] = [:]
        for (name, kind) in try parts.names() where kind == .file {
            guard name.utf8.count == 5, let number = Int(name), (1...10_000).contains(number) else { continue }  // a temporary being renamed
            guard let record = try partRecord(number, in: parts) else { continue }
            records[number] = record
        }
        return records
    }

    /// The record of part `number`, nil when there is none. Only this provider writes records,
    /// but one is still checked before it is used: a place inside S3's largest object, or a
    /// file name in `files/` and nowhere else.
    static func partRecord(_ number: Int, in parts: DirectoryHandle) throws -> PartRecord? {
        guard let record = try read(PartRecord.self, partName(number), in: parts, what: "The record of part \(number)") else { return nil }
        let placed = record.offset.map { $0 >= 0 && $0 <= largestObject && record.size <= largestObject - $0 } ?? false
        let named = record.file.map { !$0.isEmpty && $0 != "." && $0 != ".." && !$0.utf8.contains(UInt8(ascii: "/")) } ?? false
        guard record.size >= 0, (record.offset == nil) != (record.file == nil), placed || named else {
            throw BuckiaError(
                .corrupt, "The record of part \(number) at \(parts.child(partName(number))) names no place and no file of the upload; abort the upload and start again.",
                operation: "read record", path: parts.child(partName(number)))
        }
        return record
    }

    /// The object's size when `object` already is the object: the parts listed are 1…K, each
    /// in its place, every one but the last as long as the stride, and no other place is taken
    /// (no part past K, none being written), so cutting the file after part K loses no part.
    static func wholeObjectSize(_ numbers: [Int], held: [Int: PartRecord], places: Set<Int>, stride: Int64?) -> Int64? {
        guard let stride, !numbers.isEmpty, numbers == Array(1...numbers.count), places == Set(numbers) else { return nil }
        var size: Int64 = 0
        for (index, number) in numbers.enumerated() {
            let (offset, overflow) = Int64(index).multipliedReportingOverflow(by: stride)
            guard !overflow, let part = held[number], part.offset == offset, index == numbers.count - 1 || part.size == stride else { return nil }
            size = offset + part.size  // a record's place and size were checked to end inside 5 TiB
        }
        return size
    }

    /// Puts the upload's file at `url` (a temporary of ``receiveFile(at:options:_:)``): a hard
    /// link, or a copy across file systems; then its modification time and `fsync`, as an upload
    /// would leave it.
    static func place(_ object: URL, size: Int64, at url: URL, modified: Date?) throws {
        let placed: LocalFile
        if link(object.path, url.path) == 0 {
            placed = try LocalFile.openForReading(url)
        } else {
            let code = errno
            guard code == EXDEV || code == EPERM || code == EMLINK else { throw BuckiaError.posix(code, operation: "link", path: url.path) }
            placed = try LocalFile.createExclusive(url)
            let assembly = try LocalFile.openForReading(object)
            defer { assembly.closeAfterReading() }
            try assembly.copy(0..<size, to: placed)
        }
        if let modified { try placed.setModificationDate(modified) }
        try placed.sync()
        try placed.close()
    }

    // MARK: Records

    /// The record `name` in `folder`, nil when there is none.
    static func read<T: Decodable>(_ type: T.Type, _ name: String, in folder: DirectoryHandle, what: String) throws -> T? {
        let file: LocalFile
        do {
            file = try folder.openFile(name)
        } catch let error as BuckiaError where error.code == .notFound {
            return nil
        }
        defer { file.closeAfterReading() }
        let size = try file.statRecord().st_size
        guard size <= 1 << 16 else {
            throw BuckiaError(.corrupt, "\(what) at \(folder.child(name)) is \(size) bytes, larger than any record; abort the upload and start again.", operation: "read record", path: folder.child(name))
        }
        do {
            return try JSONValidation.decode(T.self, from: try file.read(count: Int(size), at: 0), what: what)
        } catch let error as BuckiaError where error.code == .io {
            throw error
        } catch {
            throw BuckiaError(.corrupt, "\(what) at \(folder.child(name)) is damaged; abort the upload and start again.", operation: "read record", path: folder.child(name), cause: error)
        }
    }

    /// Writes `value` as the record `name` in `folder`: a temporary renamed over it, so a
    /// reader sees the old record or the new, never part of one.
    static func write<T: Encodable>(_ value: T, as name: String, in folder: DirectoryHandle) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(value)
        let (temporary, file) = try folder.createTemporaryFile(permissions: 0o600)
        defer { Temporaries.unregister(folder.child(temporary)) }
        do {
            try file.write(data)
            try file.close()
            try folder.move(temporary, to: folder, as: name)
        } catch {
            throw failure(error, operation: "write record") { try folder.removeFile(temporary) }
        }
    }
}
