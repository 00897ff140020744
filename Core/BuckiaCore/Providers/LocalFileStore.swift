import Foundation

/// A provider whose objects are files on this machine, so a transfer to or from another
/// provider moves bytes straight between those files and the other provider, with no copy in
/// between.
///
/// Callers never ask for this protocol: they ask for ``Capability/localFiles`` and call
/// ``StorageProvider/fileForReading(_:)``, ``StorageProvider/receiveFile(at:condition:_:)``,
/// ``StorageProvider/synchronize()`` and ``StorageProvider/removeWorkingFiles()``, which every
/// provider has and every ``ForwardingStorageProvider`` forwards, so a wrapped local provider
/// keeps its direct transfers and its durability. Adopting the protocol says so in the type;
/// declaring the capability is what turns it on.
///
/// ## Implementation requirements
///
/// - Keep the provider's own guarantees: `receiveFile` places the file as atomically as
///   ``StorageProvider/uploadFile(localURL:remotePath:options:)`` would, and checks the
///   condition the same way.
/// - Never hand out a path that leaves the provider's root.
public protocol LocalFileStore: StorageProvider {}
