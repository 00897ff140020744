/// A credential: an API key, a secret key, a token, a signing key.
///
/// It encodes to its real value (configuration files must hold it), but prints as
/// `<REDACTED>` everywhere else: `description`, `debugDescription`, `dump`, string
/// interpolation, and every error and log line built from them. Read the value only
/// through ``exposedValue``, so every use is easy to find.
public struct Secret: Hashable, Sendable, Codable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable, ExpressibleByStringLiteral
{
    /// The credential itself. Never interpolate this into a message.
    public let exposedValue: String

    /// Wraps a credential.
    public init(_ value: String) { self.exposedValue = value }

    public init(stringLiteral value: String) { self.init(value) }

    public init(from decoder: any Decoder) throws {
        exposedValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(exposedValue)
    }

    /// Whether the credential is the empty string.
    public var isEmpty: Bool { exposedValue.isEmpty }

    public var description: String { "<REDACTED>" }
    public var debugDescription: String { "<REDACTED>" }
    public var customMirror: Mirror { Mirror(self, children: ["value": "<REDACTED>"]) }
}
