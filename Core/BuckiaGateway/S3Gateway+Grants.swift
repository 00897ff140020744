import BuckiaCore
import BuckiaSecurity
import Foundation

extension S3Gateway {
    // MARK: - Keys and grants

    /// The remote's key for `key` in `bucket`, checked against the principal's grants for
    /// `operation` first, then against the key rules.
    func remoteKey(_ context: RequestContext, bucket: String? = nil, key: String? = nil, for operation: StorageOperation) throws -> ObjectKey {
        let bucket = bucket ?? context.bucket
        let key = key ?? context.key
        let granted = bucket + "/" + key
        try authorize(context, operation, granted)
        do {
            return try ObjectKey(options.root + granted)
        } catch {
            throw S3Failure("InvalidArgument", "The key cannot be stored by this gateway's backend: \(BuckiaError.wrapping(error, operation: "key").message)")
        }
    }

    /// The remote key a PUT writes, and whether it is a delivery: `write` on the key makes it
    /// an ordinary write; without it, `deliver` on the key's folder makes it a delivery, once
    /// its name is a delivery's (``DeliveryRules``). Otherwise `write`'s refusal.
    func writeTarget(_ context: RequestContext) throws -> (key: ObjectKey, delivery: Bool) {
        let granted = context.bucket + "/" + context.key
        guard let principal = context.principal, !principal.grants.permits(.write, key: granted), principal.grants.permits(.deliver, key: granted) else {
            return (try remoteKey(context, for: .write), false)
        }
        try options.delivery.checkName(granted[(granted.lastIndex(of: "/").map { granted.index(after: $0) } ?? granted.startIndex)...])
        return (try remoteKey(context, for: .deliver), true)
    }

    /// Throws `AccessDenied` unless the grants allow `operation` on `key` (relative to the root).
    ///
    /// A key the grants' screen calls unsafe (a segment ending in a space, `%25`, a control
    /// character: spellings a backend might read as another key) is unsafe only beside a
    /// grant's edge. Under a grant on the whole bucket every spelling stays inside what is
    /// granted, so there it is checked only as a key (``ObjectKey``: no `..`, no empty
    /// segment, which keep it inside the bucket), as S3 accepts it.
    func authorize(_ context: RequestContext, _ operation: StorageOperation, _ key: String) throws {
        guard let principal = context.principal else { throw S3Failure("AccessDenied", "Access Denied") }
        if case .refused(let refusal) = principal.grants.decide(operation, key: key) {
            if refusal.kind == .unsafeKey, let slash = key.firstIndex(of: "/"),
               coversBucket(principal, String(key[..<slash]), operation: operation)
            {
                return
            }
            // A bucket that does not exist is NoSuchBucket whatever the grants, as S3 answers.
            if let slash = key.firstIndex(of: "/") { try requireBucket(String(key[..<slash])) }
            throw S3Failure("AccessDenied", "Access Denied: \(refusal.reason).", status: 403)
        }
    }

    /// Whether any of the principal's grants reaches into `bucket`.
    func bucketVisible(_ principal: GatewayPrincipal?, _ bucket: String) -> Bool {
        guard let principal else { return false }
        return principal.grants.grants.contains { grant in
            !grant.permissions.isEmpty && (grant.prefix.isEmpty || grant.prefix == bucket || grant.prefix.hasPrefix(bucket + "/"))
        }
    }

    /// Throws `AccessDenied` unless a grant reaches into the bucket; a bucket that does not
    /// exist is `NoSuchBucket` to everyone, as S3 answers.
    func requireBucketVisible(_ context: RequestContext) throws {
        guard bucketVisible(context.principal, context.bucket) else {
            try requireBucket(context.bucket)
            throw S3Failure("AccessDenied", "Access Denied: no grant reaches into this bucket.")
        }
    }

    /// Whether a grant that allows `operation` covers the whole bucket.
    func coversBucket(_ principal: GatewayPrincipal?, _ bucket: String, operation: StorageOperation) -> Bool {
        guard let principal else { return false }
        return principal.grants.grants.contains { grant in
            grant.permissions.allow(operation) && (grant.prefix.isEmpty || grant.prefix == bucket || grant.prefix == bucket + "/")
        }
    }

    /// Throws `NoSuchBucket` unless the bucket exists in the backend (a record made by
    /// CreateBucket, through any gateway, or an object under its name).
    func requireBucket(_ bucket: String) throws {
        let now = options.clock()
        if let seen = state.withLock({ $0.knownBuckets[bucket] }), now.timeIntervalSince(seen) < Self.bucketBelief, seen <= now { return }
        guard try bucketExists(bucket) else {
            _ = state.withLock { $0.knownBuckets.removeValue(forKey: bucket) }
            throw S3Failure("NoSuchBucket", "The specified bucket does not exist.", status: 404)
        }
        state.withLock { $0.knownBuckets[bucket] = now }
    }
}
