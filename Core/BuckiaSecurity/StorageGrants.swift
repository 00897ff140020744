import BuckiaCore
import Foundation

/// One operation on one key, the unit ``StorageGrants/permits(_:key:)`` decides.
public enum StorageOperation: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Reading an object (GET, HEAD, download).
    case read
    /// Creating or replacing an object (PUT, upload, copy into).
    case write
    /// Removing an object.
    case delete
    /// Listing keys under a prefix.
    case list
    /// Creating a new object, never replacing one (``StoragePermissions/deliver``): permitted
    /// by a `write` grant covering the key, or by a `deliver` grant on the folder the key is
    /// directly in.
    case deliver

    /// The permission bit this operation needs (for ``deliver``, `write` also does).
    public var permission: StoragePermissions {
        switch self {
        case .read: .read
        case .write: .write
        case .delete: .delete
        case .list: .list
        case .deliver: .deliver
        }
    }

    public var description: String { rawValue }
}

extension StoragePermissions {
    /// The seed's `restrictToPath`: these permissions, on keys under `prefix` only.
    ///
    /// A prefix is compared segment by segment: `"u1/"` covers `u1/a` and `u1/x/y`, never
    /// `u10/a`. `"u1"` and `"u1/"` differ only in whether an object named exactly `u1` is
    /// covered (by the first) — both are a folder to everything below. An empty prefix covers the
    /// whole bucket. A prefix the key rules refuse (``StorageGrants/validate()`` says why) grants
    /// nothing.
    public func restrictToPath(_ prefix: String) -> StorageGrant {
        StorageGrant(self, prefix: prefix)
    }

    /// The permission named `name` (`read`, `write`, `delete`, `list`, `deliver`), or nil.
    public init?(name: String) {
        guard let operation = StorageOperation(rawValue: name) else { return nil }
        self = operation.permission
    }

    /// Whether these permissions allow `operation`: its own permission, or `write` for a
    /// ``StorageOperation/deliver``.
    package func allow(_ operation: StorageOperation) -> Bool {
        contains(operation.permission) || (operation == .deliver && contains(.write))
    }
}

/// Some permissions on every key under one prefix.
///
/// A segment of the prefix that is exactly `*` stands for any one segment: `home/*/inbound/`
/// covers `home/u1/inbound/x` and `home/u2/inbound/x`, never `home/inbound/x` or
/// `home/u1/a/inbound/x`. (So a grant cannot name a folder literally called `*` alone.)
public struct StorageGrant: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What the grant allows.
    public var permissions: StoragePermissions
    /// The key prefix it covers, compared by whole segments; empty for the whole bucket.
    public var prefix: String

    /// Creates a grant. Nothing is checked here: ``StorageGrants/validate()`` says what is wrong
    /// with a prefix, and a grant with a bad prefix permits nothing.
    public init(_ permissions: StoragePermissions, prefix: String) {
        self.permissions = permissions
        self.prefix = prefix
    }

    public var description: String {
        "\(permissions.names.joined(separator: ",")):\(prefix.isEmpty ? "<all>" : prefix)"
    }

    // Tokens carry grants as {"prefix": "u1/", "allow": ["read", "list"]}.
    private enum CodingKeys: String, CodingKey { case prefix, allow }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        prefix = try container.decode(String.self, forKey: .prefix)
        var permissions: StoragePermissions = []
        for name in try container.decode([String].self, forKey: .allow) {
            guard let permission = StoragePermissions(name: name) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .allow, in: container, debugDescription: "\(name.debugDescription) is not a permission (read, write, delete, list, deliver)")
            }
            permissions.insert(permission)
        }
        self.permissions = permissions
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(prefix, forKey: .prefix)
        try container.encode(permissions.names, forKey: .allow)
    }
}

/// Several grants as one value: the seed's sync token, read + list on `user/` and write on
/// `user/inbound/`, is
///
/// ```swift
/// let sync: StorageGrants = [
///     StoragePermissions.readOnly.restrictToPath("user/"),
///     StoragePermissions.write.restrictToPath("user/inbound/"),
/// ]
/// ```
///
/// An operation is permitted when one grant holding its permission covers the key. There are
/// no denials: what no grant covers is refused.
public struct StorageGrants: Sendable, Hashable, Codable, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// The grants, in the order given.
    public var grants: [StorageGrant]

    /// Creates a set of grants.
    public init(_ grants: [StorageGrant]) { self.grants = grants }

    public init(arrayLiteral elements: StorageGrant...) { self.grants = elements }

    /// Full access to everything.
    public static let everything: StorageGrants = [StorageGrant(.all, prefix: "")]

    public init(from decoder: any Decoder) throws {
        grants = try decoder.singleValueContainer().decode([StorageGrant].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(grants)
    }

    public var description: String { grants.map(\.description).joined(separator: " ") }

    /// Whether `operation` on `key` is allowed. For ``StorageOperation/list``, `key` is the
    /// listing prefix, and it is allowed only when every key the listing could return is covered
    /// (`u1/` and `u1/ph` under a grant on `u1/`, never `u1` or the empty prefix, which would
    /// show `u10/`).
    ///
    /// ``decide(_:key:)`` says why a refusal is one.
    public func permits(_ operation: StorageOperation, key: String) -> Bool {
        decide(operation, key: key) == .permitted
    }

    /// Throws the refusal when `operation` on `key` is not allowed.
    ///
    /// - Throws: ``AccessRefusal``, whose message names the key, the operation and the reason.
    public func check(_ operation: StorageOperation, key: String) throws {
        if case .refused(let refusal) = decide(operation, key: key) { throw refusal }
    }

    /// The decision for `operation` on `key`, with its reason when it is a refusal.
    ///
    /// The key is first held to the rules every Buckia key follows (``ObjectKey``) and to
    /// stricter ones a gateway needs, because the backend behind it may read the key differently
    /// from the bytes checked here: no backslash, no percent-encoded `/`, `\`, `.`, `%` or
    /// control character, no control character, no segment ending in a dot or a space (which
    /// Windows and SMB strip). Then the key's bytes must fall under a grant, whole segment by
    /// whole segment — and so must each of its Unicode normal forms (NFC, NFD, NFKC, NFKD)
    /// under the same form of that grant, so a backend that normalises cannot read `a/‥／b` as
    /// `a/../b` or fold a look-alike spelling into a prefix that was never granted.
    public func decide(_ operation: StorageOperation, key: String) -> AccessDecision {
        if let reason = KeyScreen.unsafety(of: key, asPrefix: operation == .list) {
            return .refused(AccessRefusal(.unsafeKey, operation: operation, key: key, reason: reason))
        }
        let candidates = grants.filter { $0.permissions.allow(operation) && KeyScreen.unsafetyOfGrant($0.prefix) == nil }
        // A delivery by a grant without `write` is only into the grant's own folder, never below it.
        func reaches(_ grant: StorageGrant) -> Bool {
            guard operation == .deliver, !grant.permissions.contains(.write) else { return true }
            return KeyScreen.isDirectlyIn(grant.prefix, key)
        }
        guard let grant = candidates.first(where: { KeyScreen.covers($0.prefix, key, listing: operation == .list) && reaches($0) }) else {
            if operation == .deliver, candidates.contains(where: { KeyScreen.covers($0.prefix, key, listing: false) }) {
                return .refused(
                    AccessRefusal(.notGranted, operation: operation, key: key, reason: "a deliver grant covers only names directly in its folder, not in folders below it"))
            }
            let spelledAlike = candidates.contains { grant in
                KeyScreen.foldings.contains { fold in KeyScreen.covers(fold(grant.prefix), fold(key), listing: operation == .list) }
            }
            if spelledAlike {
                return .refused(
                    AccessRefusal(
                        .lookAlike, operation: operation, key: key,
                        reason: "it is spelt differently from a granted prefix (Unicode normalisation or letter case) and only the grant's exact bytes are granted"))
            }
            let reason = candidates.isEmpty
                ? "no grant allows \(operation)"
                : "no grant that allows \(operation) covers it (granted: \(candidates.map { $0.prefix.isEmpty ? "<all>" : $0.prefix }.joined(separator: ", ")))"
            return .refused(AccessRefusal(.notGranted, operation: operation, key: key, reason: reason))
        }
        // ASCII is its own normal form under all four, so for an ASCII key under an ASCII
        // grant each check below is one already made above.
        if key.utf8.allSatisfy({ $0 < 0x80 }), grant.prefix.utf8.allSatisfy({ $0 < 0x80 }) { return .permitted }
        for (name, form) in KeyScreen.normalForms {
            let formKey = form(key)
            if let reason = KeyScreen.unsafety(of: formKey, asPrefix: operation == .list) {
                return .refused(
                    AccessRefusal(.unsafeKey, operation: operation, key: key, reason: "a backend that normalises to \(name) would read it as \(formKey.debugDescription), and \(reason)"))
            }
            let direct = operation != .deliver || grant.permissions.contains(.write) || KeyScreen.isDirectlyIn(form(grant.prefix), formKey)
            guard KeyScreen.covers(form(grant.prefix), formKey, listing: operation == .list), direct else {
                return .refused(
                    AccessRefusal(
                        .lookAlike, operation: operation, key: key,
                        reason: "under \(name) normalisation it is \(formKey.debugDescription), outside the grant \(grant.prefix.debugDescription)"))
            }
        }
        return .permitted
    }

    /// Checks every grant's prefix against the key rules.
    ///
    /// - Throws: ``BuckiaError/Code/invalidPath`` naming the first prefix that grants nothing.
    public func validate() throws {
        for grant in grants {
            if let reason = KeyScreen.unsafetyOfGrant(grant.prefix) {
                throw BuckiaError(.invalidPath, "The grant \(grant) is not valid: its prefix \(grant.prefix.debugDescription) is refused, as \(reason).", path: grant.prefix)
            }
            if grant.permissions.isEmpty || !StoragePermissions.known.isSuperset(of: grant.permissions) {
                throw BuckiaError(.invalidConfiguration, "The grant on \(grant.prefix.debugDescription) allows nothing Buckia knows; give read, write, delete, list or deliver.")
            }
            if grant.permissions.contains(.deliver), !grant.permissions.contains(.write), !grant.prefix.isEmpty, !grant.prefix.hasSuffix("/") {
                throw BuckiaError(
                    .invalidConfiguration,
                    "The grant \(grant) delivers into \(grant.prefix.debugDescription), which is not a folder; a deliver grant names the folder new objects go in (ending in /).",
                    path: grant.prefix)
            }
        }
    }

    /// The grants with the folder `prefix` in front of each one's prefix: a token scoped to one
    /// user's folder. A `/` is added to a prefix that lacks one, so `users/u1` never makes
    /// `users/u1docs/`.
    public func nested(under prefix: String) -> StorageGrants {
        let folder = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
        return StorageGrants(grants.map { StorageGrant($0.permissions, prefix: folder + $0.prefix) })
    }
}

/// What ``StorageGrants/decide(_:key:)`` concluded.
public enum AccessDecision: Sendable, Hashable {
    /// A grant covers the operation on the key.
    case permitted
    /// Nothing permits it, and why.
    case refused(AccessRefusal)
}

/// Why an operation on a key is not allowed.
public struct AccessRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of refusal.
    public enum Kind: String, Sendable, Hashable {
        /// The key is refused whatever the grants: it could escape or be read differently downstream.
        case unsafeKey
        /// The key looks like a granted one (another Unicode spelling, another letter case) but is not.
        case lookAlike
        /// No grant covers it.
        case notGranted
    }

    /// The kind of refusal.
    public var kind: Kind
    /// The operation refused.
    public var operation: StorageOperation
    /// The key (or listing prefix) refused.
    public var key: String
    /// Why, in words.
    public var reason: String

    /// Creates a refusal.
    public init(_ kind: Kind, operation: StorageOperation, key: String, reason: String) {
        self.kind = kind
        self.operation = operation
        self.key = key
        self.reason = reason
    }

    public var description: String {
        "\(operation) on \(key.debugDescription) is not permitted: \(reason)."
    }

    /// The refusal as a ``BuckiaError/Code/permissionDenied`` error, or
    /// ``BuckiaError/Code/invalidPath`` for an unsafe key.
    public var error: BuckiaError {
        BuckiaError(kind == .unsafeKey ? .invalidPath : .permissionDenied, description, operation: operation.rawValue, path: key)
    }
}

/// The key rules of ``StorageGrants``: what is refused outright, and segment-wise coverage.
package enum KeyScreen {
    static let slash = UInt8(ascii: "/")

    /// The Unicode normal forms a backend might apply, by name.
    static let normalForms: [(String, @Sendable (String) -> String)] = [
        ("NFC", { $0.precomposedStringWithCanonicalMapping }),
        ("NFD", { $0.decomposedStringWithCanonicalMapping }),
        ("NFKC", { $0.precomposedStringWithCompatibilityMapping }),
        ("NFKD", { $0.decomposedStringWithCompatibilityMapping }),
    ]

    /// What a case-insensitive, normalising backend might fold a key to: used only to word a
    /// refusal, never to permit.
    static let foldings: [@Sendable (String) -> String] = [
        { $0.precomposedStringWithCompatibilityMapping },
        { $0.precomposedStringWithCompatibilityMapping.lowercased() },
    ]

    /// Why `key` is refused whatever the grants, or nil when it is acceptable.
    package static func unsafety(of key: String, asPrefix: Bool) -> String? {
        do {
            if asPrefix { try ObjectKey.validatePrefix(key) } else { _ = try ObjectKey(key) }
        } catch let error as BuckiaError {
            return error.message.replacingOccurrences(of: "The object key is not valid: ", with: "").trimmingCharacters(in: CharacterSet(charactersIn: "."))
        } catch {
            return "it is not a valid key"
        }
        for scalar in key.unicodeScalars {
            if scalar == "\\" { return "it contains a backslash, which some backends read as a separator" }
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                return "it contains the control character U+\(String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4))"
            }
        }
        if let escape = dangerousEscape(in: key) {
            return "it contains \(escape), a percent-encoded separator, dot, percent or control character that a decoding backend would turn into one"
        }
        let bytes = Array(key.utf8)
        var segments = bytes.split(separator: slash, omittingEmptySubsequences: false)
        // A listing prefix's last segment is the start of a name, not a name.
        if asPrefix { segments = segments.dropLast() }
        for segment in segments where segment.last == UInt8(ascii: ".") || segment.last == UInt8(ascii: " ") {
            return "its segment \(String(decoding: segment, as: UTF8.self).debugDescription) ends with a dot or a space, which Windows and SMB backends strip"
        }
        return nil
    }

    /// Why a grant's prefix grants nothing, or nil when it is a good prefix.
    ///
    /// A prefix must also be its own NFKC form (which is NFC too): two grants spelt differently
    /// but alike after normalisation (`ａdmin/` and `admin/`, `cafe\u{301}/` and `café/`) would
    /// be one folder on a backend that normalises, so only the one spelling is accepted.
    package static func unsafetyOfGrant(_ prefix: String) -> String? {
        if prefix.isEmpty { return nil }
        if prefix == "/" { return "it is only a slash (a grant on the whole bucket has the empty prefix; `buckia token issue` writes it *)" }
        // A grant names whole segments: check it as a key (without its trailing slash).
        let body = prefix.utf8.last == slash ? String(decoding: prefix.utf8.dropLast(), as: UTF8.self) : prefix
        if let reason = unsafety(of: body, asPrefix: false) { return reason }
        guard prefix.utf8.elementsEqual(prefix.precomposedStringWithCompatibilityMapping.utf8) else {
            return "it is not in Unicode NFKC form (\(prefix.precomposedStringWithCompatibilityMapping.debugDescription)); a normalising backend would fold it into that spelling"
        }
        return nil
    }

    /// The grant segment that stands for any one segment.
    static let wildcard: [UInt8] = [UInt8(ascii: "*")]

    /// Whether `prefix` has a `*` segment: a grant on many folders at once, which a backend's
    /// own prefix-scoped credentials cannot express.
    package static func hasWildcard(_ prefix: String) -> Bool {
        prefix.utf8.split(separator: slash, omittingEmptySubsequences: false).contains { $0.elementsEqual(wildcard) }
    }

    /// Whether `prefix` covers `key` segment by segment. For a listing, `key` is a listing
    /// prefix whose last segment may be partial, and every key it could list must be covered.
    package static func covers(_ prefix: String, _ key: String, listing: Bool) -> Bool {
        if prefix.isEmpty { return true }
        let folder = prefix.utf8.last == slash
        let granted = Array(prefix.utf8.split(separator: slash, omittingEmptySubsequences: false).dropLast(folder ? 1 : 0))
        var segments = Array(key.utf8.split(separator: slash, omittingEmptySubsequences: false))
        if listing {
            // Only the complete segments are known; the partial last one may grow into anything.
            segments.removeLast()
            guard segments.count >= granted.count else { return false }
        } else {
            guard folder ? segments.count > granted.count : segments.count >= granted.count else { return false }
        }
        // A granted segment `*` is any one segment (`home/*/inbound/`: every user's inbound).
        return zip(granted, segments).allSatisfy { ($0.elementsEqual(wildcard) && !$1.isEmpty) || $0.elementsEqual($1) }
    }

    /// Whether `key` names an object directly in the folder `prefix` (a folder prefix, or the
    /// empty one): one segment more, none of it a folder.
    package static func isDirectlyIn(_ prefix: String, _ key: String) -> Bool {
        guard prefix.isEmpty || prefix.utf8.last == slash else { return false }
        // "u2/inbound/" splits into "u2", "inbound" and an empty last piece; "" into one empty piece.
        let granted = prefix.utf8.split(separator: slash, omittingEmptySubsequences: false).count - 1
        let segments = key.utf8.split(separator: slash, omittingEmptySubsequences: false)
        return segments.count == granted + 1 && segments.last?.isEmpty == false
    }

    private static func dangerousEscape(in key: String) -> String? {
        let bytes = Array(key.utf8)
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let decoded = high << 4 | low
                if decoded == UInt8(ascii: "/") || decoded == UInt8(ascii: "\\") || decoded == UInt8(ascii: ".") || decoded == UInt8(ascii: "%")
                    || decoded < 0x20 || decoded == 0x7F
                {
                    return String(decoding: bytes[index...(index + 2)], as: UTF8.self)
                }
            }
            index += 1
        }
        return nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
