import BuckiaCore

/// What a resource cache's configuration does beyond what every configuration does: the
/// vocabulary the resource-cache conformance scenarios are selected by, so a configuration
/// without a feature (no metadata provider, no processor) skips the scenarios that need it,
/// reported as skipped, never as passed.
///
/// A third party names its own with a reverse-DNS prefix (`com.example.cache.thumbnails`).
public struct ResourceCacheCapability: CapabilityVocabulary {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A ``ResourceMetadataProvider`` keeps metadata with each entry.
    public static let metadata: ResourceCacheCapability = "metadata"
    /// A ``ResourceProcessor`` changes bytes before they are stored.
    public static let processing: ResourceCacheCapability = "processing"
    /// The identifier provider names a signed URL by what it points at: two URLs that differ
    /// only in the signature parameters S3, CloudFront and the like rotate are one entry.
    public static let stableSignedURLs: ResourceCacheCapability = "stableSignedURLs"

    public static let subject = "resource cache"

    /// Every resource-cache capability Buckia defines.
    public static let known: Set<ResourceCacheCapability> = [.metadata, .processing, .stableSignedURLs]
}

extension ResourceCacheConfiguration {
    /// What this configuration can be seen to do: ``ResourceCacheCapability/metadata`` with a
    /// metadata provider, ``ResourceCacheCapability/processing`` with a processor, and
    /// ``ResourceCacheCapability/stableSignedURLs`` with a ``NormalizingIdentifierProvider``
    /// that drops the rotating parameters. A third party's identifier provider that does the
    /// same declares it itself.
    public var capabilities: Set<ResourceCacheCapability> {
        var found: Set<ResourceCacheCapability> = []
        if metadataProvider != nil { found.insert(.metadata) }
        if processor != nil { found.insert(.processing) }
        if let normalizing = identifierProvider as? NormalizingIdentifierProvider, normalizing.dropsSignatures { found.insert(.stableSignedURLs) }
        return found
    }
}
