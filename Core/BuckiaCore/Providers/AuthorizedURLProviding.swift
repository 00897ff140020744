import Foundation

/// A provider that hands out URLs reading one object for a while, where making one takes a
/// request to the backend (B2's download authorizations).
///
/// Callers ask for ``Capability/authorizedURL`` and call
/// ``StorageProvider/authorizedURL(for:expires:)``, which every ``ForwardingStorageProvider``
/// forwards; adopting this protocol says so in the type.
@available(*, deprecated, message: "Declare Capability.authorizedURL and implement authorizedURL(for:expires:); this protocol adds nothing to them.")
public protocol AuthorizedURLProviding: StorageProvider {}
