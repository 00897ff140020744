import Foundation

/// An upload a provider started and never finished: parts stored (and billed) on the server,
/// no object yet. S3 multipart uploads are the common case.
public struct UnfinishedUpload: Sendable, Hashable {
    /// The key the upload would create, as the server spells it (it may not be addressable).
    public var key: String
    /// The server's identifier of the upload.
    public var id: String
    /// When the server says the upload began, if it says.
    public var initiated: Date?
    /// What this machine knows about it, which decides whether cleaning it up is safe.
    public var status: Status

    /// What this machine knows about an unfinished upload.
    public enum Status: Sendable, Hashable {
        /// A resume state on this machine can finish it: running the same upload again sends
        /// only the missing parts.
        case resumable
        /// This machine started it and can never finish it (its local file changed or is gone).
        case abandoned
        /// Started elsewhere, by another tool, or before resume states recorded their file: it
        /// may be in progress, so only its age says it is abandoned.
        case unknown
    }

    public init(key: String, id: String, initiated: Date?, status: Status) {
        self.key = key
        self.id = id
        self.initiated = initiated
        self.status = status
    }
}

/// A provider whose uploads can be left unfinished on the server, and which can list and
/// abort them: what `buckia cleanup` works through.
///
/// A provider aborts the unfinished uploads it started itself once they can no longer be
/// resumed (their local file changed or is gone); ``StorageProvider/unfinishedUploads(prefix:)``
/// and ``StorageProvider/abortUpload(_:)`` are for the rest: uploads started elsewhere, by
/// another tool, or by a machine that is gone. Callers ask for
/// ``Capability/unfinishedUploads``; adopting this protocol says so in the type.
@available(*, deprecated, message: "Declare Capability.unfinishedUploads and implement unfinishedUploads(prefix:) and abortUpload(_:); this protocol adds nothing to them.")
public protocol UnfinishedUploadCleaning: StorageProvider {}
