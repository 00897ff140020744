import BuckiaCore
import Foundation

/// A value behind a lock: the provider's own, since Buckia's lock is not part of its API.
/// (`Synchronization.Mutex` does the same where the deployment target allows it.)
final class Guarded<Value>: @unchecked Sendable {
    // Sound because every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// One named store of objects, shared by every ``ScratchProvider`` in the process that is
/// configured with its name.
///
/// Keyed by ``ObjectKey``, which compares and hashes bytes: NFC and NFD spellings, and keys
/// that differ only in case, are different objects.
final class ScratchSpace: Sendable {
    /// An object as stored: its bytes and what `stat` and listings report.
    struct Object: Sendable {
        var data: Data
        var file: RemoteFile

        /// The bytes of `range`, clamped to the object's end; all of them when nil.
        func bytes(in range: Range<Int64>?) -> Data {
            guard let range else { return data }
            let count = Int64(data.count)
            let lower = Int(min(max(range.lowerBound, 0), count))
            let upper = Int(min(max(range.upperBound, Int64(lower)), count))
            return data.subdata(in: lower..<upper)
        }
    }

    /// Every space this process has opened, by name. Spaces are never dropped: a provider
    /// opened later with the same name must find what an earlier one wrote.
    private static let spaces = Guarded<[String: ScratchSpace]>([:])

    /// The space called `name`, created empty the first time it is asked for.
    static func named(_ name: String) -> ScratchSpace {
        spaces.withLock { spaces in
            if let space = spaces[name] { return space }
            let space = ScratchSpace(name: name)
            spaces[name] = space
            return space
        }
    }

    let name: String
    private let objects = Guarded<[ObjectKey: Object]>([:])

    private init(name: String) { self.name = name }

    /// How many objects the space holds.
    var count: Int { objects.withLock { $0.count } }

    /// Stores `object` under its path, replacing what was there in one step.
    func put(_ object: Object) {
        objects.withLock { $0[object.file.path] = object }
    }

    /// The object at `key`, or nil.
    func object(at key: ObjectKey) -> Object? {
        objects.withLock { $0[key] }
    }

    /// Removes the object at `key`, if there is one.
    func remove(_ key: ObjectKey) {
        _ = objects.withLock { $0.removeValue(forKey: key) }
    }

    /// A snapshot of the objects whose keys start with `prefix`, byte for byte, in no order.
    func files(withPrefix prefix: String) -> [RemoteFile] {
        objects.withLock { objects in objects.values.map(\.file).filter { $0.path.hasPrefix(prefix) } }
    }
}
