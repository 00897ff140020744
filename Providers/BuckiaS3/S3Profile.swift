import BuckiaCore
import Foundation

/// What one S3-compatible server does differently from another, in one place.
///
/// S3 is a protocol many servers implement, each with its own gaps: Ceph RGW 16 compares
/// `If-Match` with its stored ETag without the quotes RFC 9110 puts around it, Google Cloud
/// Storage has no DeleteObjects, moto verifies no `Content-MD5`, Backblaze refuses conditional
/// writes. rclone keeps such differences in one quirks table per provider; this is Buckia's.
/// The provider's ``S3Provider/capabilities`` follow the profile, so a scenario a server cannot
/// run is skipped by capability, and no caller or test needs to know which server it talks to.
///
/// The profile is chosen by the `vendor` option (``Vendor``), or, by default (`auto`), from
/// the endpoint's host name; a server it cannot name gets ``generic``, which assumes what
/// AWS documents and learns the one difference it can prove at run time (the ETag form, see
/// ``ETagForm/learned``). Docs/S3.md lists every row with its sources.
public struct S3Profile: Sendable, Hashable {
    /// The servers Buckia has a profile for.
    public enum Vendor: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Amazon S3.
        case aws
        /// Ceph's RADOS Gateway.
        case ceph
        /// MinIO.
        case minio
        /// Cloudflare R2.
        case r2
        /// Backblaze B2's S3-compatible API.
        case b2
        /// Wasabi.
        case wasabi
        /// Google Cloud Storage's XML API in interoperability mode.
        case gcs
        /// moto, the Python mock Buckia's tests run against.
        case moto
        /// A Buckia gateway (`buckia serve s3`): ETags are its backend's version tags, not MD5s.
        case buckia
        /// Any other S3-compatible server: AWS's documented behaviour, with the ETag form learned.
        case generic

        public var description: String {
            switch self {
            case .aws: "Amazon S3"
            case .ceph: "Ceph RGW"
            case .minio: "MinIO"
            case .r2: "Cloudflare R2"
            case .b2: "Backblaze B2 (S3 API)"
            case .wasabi: "Wasabi"
            case .gcs: "Google Cloud Storage (XML API)"
            case .moto: "moto"
            case .buckia: "a Buckia gateway (buckia serve s3)"
            case .generic: "an S3-compatible server"
            }
        }
    }

    /// How an ETag is written in `If-Match` and `x-amz-copy-source-if-match`.
    public enum ETagForm: String, Sendable, Hashable {
        /// `"0123…"`, as RFC 9110 writes an entity tag and AWS returns it.
        case quoted
        /// `0123…`, without quotes: Ceph RGW 16 compares the header byte for byte with its
        /// stored ETag, which has none, so a quoted tag never matches there.
        case bare
        /// Quoted until the server proves it wants bare tags: when a conditional request is
        /// refused with 412 and a `stat` shows the object's ETag is the very one sent, the
        /// server misread the quotes; the provider repeats that request bare and writes bare
        /// tags from then on. A real change of the object still fails, since its ETag differs.
        case learned
    }

    /// The server this profile describes.
    public var vendor: Vendor
    /// How ETags are written in conditions.
    public var conditionETags: ETagForm
    /// Whether PutObject and CompleteMultipartUpload honour `If-None-Match: *` and
    /// `If-Match: <etag>` atomically (``BuckiaCore/Capability/conditionalWrite``).
    public var conditionalWrites: Bool
    /// Whether CompleteMultipartUpload honours those conditions too. Ceph RGW 16 ignores them
    /// there (seen: a completion with `If-None-Match: *` replaced the object), so toward it a
    /// conditional upload of a file goes as one PutObject, however large (up to S3's 5 GiB),
    /// and a conditional stream longer than one part is refused as unsupported: never a
    /// condition sent where the server drops it.
    public var conditionalCompletions: Bool
    /// Whether CompleteMultipartUpload takes any ascending selection of the uploaded parts,
    /// as AWS does (``BuckiaCore/Capability/partSelections``). Ceph RGW 16 refuses a list that
    /// skips an uploaded part (seen: parts 1 and 3 of three answered `InvalidPart`), so toward
    /// it a completion must name every part uploaded, 1…N, and another is refused before it
    /// is sent.
    public var partSelections: Bool = true
    /// Whether GetObject honours `If-Match` (``BuckiaCore/Capability/conditionalRead``).
    public var conditionalReads: Bool
    /// Whether DeleteObjects (`POST ?delete`, up to 1,000 keys) exists; without it each key is
    /// deleted on its own.
    public var deleteObjects: Bool
    /// Whether the server checks `Content-MD5` and refuses a mismatch with `BadDigest`.
    public var verifiesContentMD5: Bool
    /// Whether a single-part upload's ETag is the MD5 of its bytes (unencrypted or SSE-S3).
    public var etagIsMD5: Bool
    /// Whether virtual-hosted addressing (`bucket.host`) is the default; otherwise path style.
    public var virtualHostedByDefault: Bool
    /// Whether `x-amz-meta-*` metadata is stored and returned (``BuckiaCore/Capability/userMetadata``):
    /// a gateway in front of a backend that keeps none answers `NotImplemented` instead.
    public var userMetadata: Bool
    /// The smallest part but the last, in bytes.
    public var minimumPartSize: Int64
    /// The most parts one upload may have.
    public var maximumParts: Int

    /// The profile of `vendor`.
    public static func of(_ vendor: Vendor) -> S3Profile {
        var profile = S3Profile(
            vendor: vendor, conditionETags: .quoted, conditionalWrites: true, conditionalCompletions: true, conditionalReads: true, deleteObjects: true,
            verifiesContentMD5: true, etagIsMD5: true, virtualHostedByDefault: false, userMetadata: true, minimumPartSize: 5 << 20,
            maximumParts: 10_000)
        switch vendor {
        case .aws:
            profile.virtualHostedByDefault = true
        case .ceph:
            profile.conditionETags = .bare
            profile.conditionalCompletions = false
            profile.partSelections = false
        case .minio, .r2:
            break
        case .b2, .wasabi:
            profile.conditionalWrites = false
        case .gcs:
            profile.conditionalWrites = false
            profile.deleteObjects = false
        case .moto:
            profile.verifiesContentMD5 = false
        case .buckia:
            profile.etagIsMD5 = false
        case .generic:
            profile.conditionETags = .learned
        }
        return profile
    }

    /// The vendor an endpoint's host name names, or nil for a host of no known service
    /// (self-hosted MinIO and Ceph, moto).
    public static func vendor(forHost host: String) -> Vendor? {
        let host = host.lowercased()
        func under(_ domain: String) -> Bool { host == domain || host.hasSuffix("." + domain) }
        if under("amazonaws.com") || under("amazonaws.com.cn") { return .aws }
        if under("r2.cloudflarestorage.com") { return .r2 }
        if under("backblazeb2.com") { return .b2 }
        if under("wasabisys.com") { return .wasabi }
        if under("storage.googleapis.com") { return .gcs }
        return nil
    }

    /// The profile for the `vendor` option's value (`auto` or a ``Vendor`` name) and an endpoint.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` for an unknown name.
    public static func resolve(option: String?, endpoint: URL) throws -> S3Profile {
        guard let option, option != "auto" else {
            return .of(endpoint.host.flatMap(vendor(forHost:)) ?? .generic)
        }
        guard let vendor = Vendor(rawValue: option) else {
            let names = (["auto"] + Vendor.allCases.map(\.rawValue)).joined(separator: ", ")
            throw BuckiaError(
                .invalidConfiguration, "The S3 vendor \(option.debugDescription) is not one Buckia knows; use one of \(names).",
                path: "options.vendor")
        }
        return .of(vendor)
    }
}
