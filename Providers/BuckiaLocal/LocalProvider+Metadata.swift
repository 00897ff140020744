import BuckiaCore
import CXattr
import Foundation

/// An object's content type, content headers and user metadata, kept as extended attributes
/// of its file the way rclone's local backend keeps metadata: one attribute `user.<name>` per
/// entry, the value as written (`user.content-type`, `user.cache-control`, `user.color`). So
/// rclone (`--metadata`), `getfattr -d` and Buckia each read what the others wrote.
///
/// The attributes are set on the new file before it is put in place, so a reader sees an
/// object with its metadata or the old object, never one without. `mtime`, rclone's name for
/// the modification time, is kept as its writer's text beside the file's own time, and read
/// back only while the two agree: a file touched since has its new time, and its old
/// `mtime` and `md5chksum` are not reported.
enum ObjectAttributes {
    /// The namespace prefix rclone writes on every platform.
    static let prefix = "user."
    /// The entry names the provider keeps beside user metadata, in one namespace as rclone's.
    static let systemNames = ["content-type"] + ContentHeaders.names
    /// The most bytes read of one attribute; larger ones (no writer of Buckia's makes them) are skipped.
    static let largestValue = 64 << 10

    /// What the attributes of one file say.
    struct Stored {
        var contentType: String?
        var contentHeaders = ContentHeaders()
        var metadata: [String: String] = [:]
    }

    /// Refuses metadata whose name is one of the provider's own entries: in one namespace, a
    /// user's `content-type` would be read back as the content type.
    static func check(_ options: UploadOptions, key: ObjectKey) throws {
        for name in options.metadata.keys where systemNames.contains(name) {
            throw BuckiaError(
                .invalidConfiguration,
                "The metadata name \(name.debugDescription) is the local provider's own (it keeps the \(name) header there, as rclone does); choose another name.",
                operation: "upload", path: key.rawValue)
        }
    }

    /// The entries an upload stores: what `options` carries, with rclone's `mtime` and
    /// `md5chksum` reconciled with the file's time and MD5.
    static func entries(_ options: UploadOptions, modified: Date?, md5: String?) -> [(String, String)] {
        var entries: [(String, String)] = []
        if let type = options.contentType { entries.append(("content-type", type)) }
        entries += options.contentHeaders.fields
        let metadata = RcloneMetadata.reconciled(options.metadata, modificationDate: modified, md5: md5)
        entries += metadata.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return entries
    }

    /// Sets `entries` on the open `file`.
    ///
    /// - Throws: ``BuckiaError/Code/unsupported`` when the file system keeps no extended
    ///   attributes, ``BuckiaError/Code/invalidConfiguration`` when it has no room for these.
    static func write(_ entries: [(String, String)], to file: LocalFile, root: String) throws {
        for (name, value) in entries {
            let result = file.withDescriptor { descriptor in
                Array(value.utf8).withUnsafeBytes { buffer in buckia_fsetxattr(descriptor, prefix + name, buffer.baseAddress, buffer.count) }
            }
            guard result == 0 else { throw failure(errno, "store metadata", root: root, path: file.path) }
        }
    }

    /// Sets or replaces one entry on the open `file`, or removes it (`value` nil).
    static func update(_ name: String, to value: String?, on file: LocalFile, root: String) throws {
        let result = file.withDescriptor { descriptor in
            guard let value else { return buckia_fremovexattr(descriptor, prefix + name) }
            return Array(value.utf8).withUnsafeBytes { buffer in buckia_fsetxattr(descriptor, prefix + name, buffer.baseAddress, buffer.count) }
        }
        guard result == 0 else {
            let code = errno
            if value == nil && code == buckia_no_attribute { return }
            throw failure(code, "update metadata", root: root, path: file.path)
        }
    }

    /// Reads the entries of the open `file`, whose modification time is `modified`.
    /// Attributes of other writers (names that are not metadata names, such as
    /// `user.xdg.origin.url`, or values that are not UTF-8) are left out; so is an `mtime` that
    /// no longer names the file's time, with the `md5chksum` written beside it.
    static func read(_ file: LocalFile, modified: Date, root: String) throws -> Stored {
        var stored = Stored()
        let names = try list(file, root: root)
        guard !names.isEmpty else { return stored }
        var values: [String: String] = [:]
        for name in names {
            guard let value = try value(name, of: file, root: root) else { continue }
            values[name] = value
        }
        stored.contentType = values.removeValue(forKey: "content-type")
        for name in ContentHeaders.names { stored.contentHeaders[name] = values.removeValue(forKey: name) }
        if let text = values[RcloneMetadata.mtime] {
            guard let recorded = RcloneMetadata.parseMtime(text), abs(recorded.timeIntervalSince(modified)) < 1e-6 else {
                values[RcloneMetadata.mtime] = nil
                values[RcloneMetadata.md5] = nil
                stored.metadata = values
                return stored
            }
        }
        stored.metadata = values
        return stored
    }

    /// The metadata names among the file's attributes (`user.<name>`, name in metadata's
    /// alphabet).
    private static func list(_ file: LocalFile, root: String) throws -> [String] {
        var buffer = [CChar](repeating: 0, count: 1024)
        while true {
            let count = file.withDescriptor { descriptor in buffer.withUnsafeMutableBufferPointer { buckia_flistxattr(descriptor, $0.baseAddress, $0.count) } }
            if count >= 0 {
                let bytes = buffer.prefix(count).map { UInt8(bitPattern: $0) }
                return bytes.split(separator: 0).compactMap { raw -> String? in
                    let name = raw.dropFirst(0)
                    guard name.starts(with: prefix.utf8) else { return nil }
                    let short = name.dropFirst(prefix.utf8.count)
                    guard !short.isEmpty, short.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 }) else { return nil }
                    return String(decoding: short, as: UTF8.self)
                }
            }
            let code = errno
            if code == ENOTSUP || code == EOPNOTSUPP { return [] }
            guard code == ERANGE, buffer.count < 1 << 20 else { throw failure(code, "read metadata", root: root, path: file.path) }
            buffer = [CChar](repeating: 0, count: buffer.count * 4)
        }
    }

    /// One attribute's value; nil when it went away meanwhile, is too large, or is not UTF-8.
    static func value(_ name: String, of file: LocalFile, root: String) throws -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = file.withDescriptor { descriptor in
                buffer.withUnsafeMutableBytes { buckia_fgetxattr(descriptor, prefix + name, $0.baseAddress, $0.count) }
            }
            if count >= 0 { return String(validating: buffer.prefix(count), as: UTF8.self) }
            let code = errno
            if code == buckia_no_attribute { return nil }
            guard code == ERANGE else { throw failure(code, "read metadata", root: root, path: file.path) }
            guard buffer.count < largestValue else { return nil }
            buffer = [UInt8](repeating: 0, count: largestValue)
        }
    }

    static func failure(_ code: Int32, _ action: String, root: String, path: String) -> BuckiaError {
        let reason = String(cString: strerror(code))
        switch code {
        case ENOTSUP, EOPNOTSUPP:
            return BuckiaError(
                .unsupported,
                "The file system of \(root) keeps no extended attributes (\(reason)), where the local provider stores content types and metadata; set the remote's option metadata to false to store objects without them.",
                operation: action, path: path)
        case E2BIG, ENOSPC, ERANGE:
            return BuckiaError(
                .invalidConfiguration, "The file system of \(root) has no room for this object's metadata (\(reason)); send less of it.",
                operation: action, path: path)
        default:
            return BuckiaError.posix(code, operation: action, path: path)
        }
    }
}

extension LocalProvider {
    /// A new object as its write left it: the file's status, and what the upload stored of `options`.
    func remoteFile(_ key: ObjectKey, _ info: FileStatus, storing options: UploadOptions) -> RemoteFile {
        remoteFile(key, info).storing(options, provider: self)
    }

    /// The object whose file is open as `file`, with the metadata its attributes hold.
    func describe(_ key: ObjectKey, _ file: LocalFile) throws -> RemoteFile {
        let info = try file.statRecord()
        var described = remoteFile(key, info)
        let stored = try ObjectAttributes.read(file, modified: LocalFile.modificationDate(of: info), root: rootPath)
        described.contentType = stored.contentType
        described.contentHeaders = stored.contentHeaders
        described.metadata = stored.metadata
        return described
    }

    /// Checks an upload's options before anything is written.
    func check(_ options: UploadOptions, key: ObjectKey) throws {
        try options.validate()
        try options.checkSupported(by: self)
        try ObjectAttributes.check(options, key: key)
    }
}

extension RemoteFile {
    /// This new object with what its upload stored of `options` (see
    /// ``LocalProvider/remoteFile(_:_:storing:)``).
    func storing(_ options: UploadOptions, provider: LocalProvider) -> RemoteFile {
        var file = self
        guard provider.keepsMetadata else { return file }
        file.contentType = options.contentType
        file.contentHeaders = options.contentHeaders
        file.metadata = RcloneMetadata.reconciled(options.metadata, modificationDate: modificationDate, md5: options.knownChecksums[.md5])
        return file
    }
}
