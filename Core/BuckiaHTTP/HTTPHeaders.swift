import BuckiaCore
import Foundation

/// An ordered list of HTTP header fields, looked up case-insensitively.
///
/// HTTP field names are case-insensitive and FoundationNetworking re-cases them on the wire
/// (`x-amz-date` leaves as `X-Amz-Date`), so every lookup here ignores case. Fields set from a
/// ``BuckiaCore/Secret`` are remembered as sensitive and print as `<REDACTED>` whatever their
/// name; fields whose names ``HTTPRedaction`` knows as credentials are redacted too.
///
/// ```swift
/// var headers = HTTPHeaders()
/// headers["Content-Type"] = "application/xml"
/// headers.set("Authorization", secret: Secret("AWS4-HMAC-SHA256 ..."))
/// ```
public struct HTTPHeaders: Sendable, Hashable, Sequence, CustomStringConvertible, CustomReflectable {
    /// One header field.
    public struct Field: Sendable, Hashable {
        /// The name as it was given.
        public var name: String
        /// The value, exactly as sent or received.
        public var value: String
        /// Whether the value is a credential that must never be printed.
        public var isSensitive: Bool

        /// Creates a field.
        public init(name: String, value: String, isSensitive: Bool = false) {
            self.name = name
            self.value = value
            self.isSensitive = isSensitive
        }
    }

    /// The fields in the order they were added.
    public private(set) var fields: [Field]

    /// Creates an empty header list.
    public init() { fields = [] }

    /// Creates a header list from name-value pairs (none marked sensitive).
    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// Creates a header list from a `URLResponse`'s `allHeaderFields`.
    init(responseFields: [AnyHashable: Any]) {
        fields = responseFields.compactMap { key, value in
            guard let name = key as? String else { return nil }
            return Field(name: name, value: "\(value)")
        }
        .sorted { $0.name.lowercased() < $1.name.lowercased() }
    }

    /// The value of the first field named `name` (any case), or nil; setting replaces every
    /// field of that name, and setting nil removes them.
    public subscript(name: String) -> String? {
        get { first(name) }
        set {
            if let newValue { set(name, newValue) } else { remove(name) }
        }
    }

    /// The value of the first field named `name`, compared case-insensitively.
    public func first(_ name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Every value of the fields named `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool { first(name) != nil }

    /// Replaces every field named `name` with one field holding `value`.
    public mutating func set(_ name: String, _ value: String, sensitive: Bool = false) {
        remove(name)
        fields.append(Field(name: name, value: value, isSensitive: sensitive))
    }

    /// Replaces every field named `name` with a credential, which always prints redacted.
    public mutating func set(_ name: String, secret: Secret) {
        set(name, secret.exposedValue, sensitive: true)
    }

    /// Appends a field, keeping any others of the same name.
    public mutating func add(_ name: String, _ value: String, sensitive: Bool = false) {
        fields.append(Field(name: name, value: value, isSensitive: sensitive))
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// The values of every field marked sensitive or named as a credential by `redaction`:
    /// the strings that must not appear in any message.
    public func sensitiveValues(_ redaction: HTTPRedaction = .default) -> [String] {
        fields.filter { $0.isSensitive || redaction.isSensitiveHeader($0.name) }.map(\.value)
    }

    /// The fields as `name: value` pairs with every credential replaced by `<REDACTED>`.
    public func redacted(_ redaction: HTTPRedaction = .default) -> [(name: String, value: String)] {
        fields.map { field in
            let hidden = field.isSensitive || redaction.isSensitiveHeader(field.name)
            return (field.name, hidden ? HTTPRedaction.placeholder : field.value)
        }
    }

    /// Iterates the fields in order (values unredacted: this is for code, not for printing).
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The fields on one line, credentials redacted.
    public var description: String {
        "[" + redacted().map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]"
    }

    /// The redacted fields, so `dump` never prints a credential.
    public var customMirror: Mirror {
        Mirror(self, children: redacted().map { (label: $0.name, value: $0.value as Any) }, displayStyle: .dictionary)
    }
}

extension String {
    /// Whether two header names are equal ignoring ASCII case, as HTTP compares them: byte by
    /// byte, without Foundation's locale-aware comparison (which dominated header lookups).
    func equalsIgnoringASCIICase(_ other: String) -> Bool {
        var left = utf8.makeIterator()
        var right = other.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case let (a?, b?):
                if a != b, a | 0x20 != b | 0x20 || !((a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A) { return false }
            default: return false
            }
        }
    }
}
