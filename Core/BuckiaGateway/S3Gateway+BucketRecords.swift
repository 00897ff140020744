import BuckiaCore
import Foundation

/// What the gateway keeps of buckets in the backend itself, so that it outlives the process
/// and every gateway over the same backend sees it alike: one record per bucket made by
/// CreateBucket, in a folder beside the buckets that no bucket can be named
/// (``reservedFolder``). A bucket exists while it has a record or an object; its creation date
/// is its record's (the time CreateBucket stored it).
extension S3Gateway {
    /// The folder, beside the buckets, of the gateway's own records. Bucket names here are
    /// checked against it in any letter case, so no request names it.
    static let reservedFolder = ".buckia-s3"

    /// How long a bucket seen to exist is believed without asking the backend again: a bucket
    /// deleted through another gateway is gone here within this time.
    static let bucketBelief: TimeInterval = 10

    /// The record of `bucket`.
    func bucketRecordKey(_ bucket: String) throws -> ObjectKey {
        try ObjectKey(options.root + Self.reservedFolder + "/buckets/" + bucket)
    }

    /// The buckets with a record, and when each was created.
    func bucketRecords() throws -> [String: Date] {
        let prefix = options.root + Self.reservedFolder + "/buckets/"
        return try Blocking.wait { [provider] in
            var records: [String: Date] = [:]
            for try await entry in provider.list(ListOptions(prefix: prefix, recursive: true)) {
                guard let file = entry.file, let name = file.path.rawValue.utf8Dropping(prefix: prefix), !name.contains("/") else { continue }
                records[name] = file.modificationDate ?? file.serverModified ?? Date(timeIntervalSince1970: 0)
            }
            return records
        }
    }

    /// Whether `bucket` exists in the backend: it has a record, or an object under its name.
    func bucketExists(_ bucket: String) throws -> Bool {
        let record = try bucketRecordKey(bucket)
        let prefix = options.root + bucket + "/"
        return try Blocking.wait { [provider] in
            if try await provider.stat(remotePath: record) != nil { return true }
            var iterator = provider.list(ListOptions(prefix: prefix, recursive: false, pageSize: 1)).makeAsyncIterator()
            return try await iterator.next() != nil
        }
    }

    /// Stores `bucket`'s record, dated now, unless it has one: a record written by another
    /// gateway at the same moment wins where the backend writes conditionally, and the
    /// bucket's date is never moved. Returns whether this call created it.
    @discardableResult
    func storeBucketRecord(_ bucket: String) throws -> Bool {
        let key = try bucketRecordKey(bucket)
        let now = options.clock()
        var upload = UploadOptions(contentType: "application/json", modificationDate: now)
        if provider.capabilities.supports(.conditionalWrite) { upload.condition = .ifNoneMatch }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let record = try encoder.encode(["bucket": bucket, "created": Self.isoDate(now)])
        let finalOptions = upload
        return try Blocking.wait { [provider] in
            if try await provider.stat(remotePath: key) != nil { return false }
            do {
                _ = try await provider.uploadData(record, remotePath: key, options: finalOptions)
                return true
            } catch let error as BuckiaError where error.code == .conditionNotMatch {
                return false
            }
        }
    }

    /// Removes `bucket`'s record (none is not an error).
    func removeBucketRecord(_ bucket: String) throws {
        let key = try bucketRecordKey(bucket)
        try Blocking.wait { [provider] in try await provider.deleteFile(remotePath: key) }
    }
}
