import Foundation

/// What a token lets its holder do.
public struct StoragePermissions: OptionSet, Hashable, Sendable, Codable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let read = StoragePermissions(rawValue: 1 << 0)
    public static let write = StoragePermissions(rawValue: 1 << 1)
    public static let delete = StoragePermissions(rawValue: 1 << 2)
    public static let list = StoragePermissions(rawValue: 1 << 3)
    /// Creating a new object directly in a folder, and nothing else: no read, no list, no
    /// overwrite, no delete, no multipart upload, a bounded size. What one user needs to put a
    /// change file in another's `inbound/` without being able to touch what others put there.
    /// Implied by ``write``, which may also replace.
    public static let deliver = StoragePermissions(rawValue: 1 << 4)

    /// Read, write, delete and list (``write`` implies ``deliver``).
    public static let all: StoragePermissions = [.read, .write, .delete, .list]
    /// Read and list.
    public static let readOnly: StoragePermissions = [.read, .list]
    /// Every permission Buckia knows.
    public static let known: StoragePermissions = [.read, .write, .delete, .list, .deliver]

    /// Each permission with its name, as tokens and the command line spell it.
    public static let named: [(permission: StoragePermissions, name: String)] = [
        (.read, "read"), (.write, "write"), (.delete, "delete"), (.list, "list"), (.deliver, "deliver"),
    ]

    /// The permission names, for messages and token payloads.
    public var names: [String] { Self.named.filter { contains($0.permission) }.map(\.name) }
}

/// What to put in a generated token.
public struct AccessTokenOptions: Hashable, Sendable {
    /// The user the token is for, when it is user-specific.
    public var userId: String?
    /// What the token allows.
    public var permissions: StoragePermissions
    /// How long the token is valid.
    public var expiry: Duration
    /// Restricts the token to keys under this prefix.
    public var pathPrefix: String?
    /// Provider-specific settings (countries, IP, referrers for Bunny; bucket for B2).
    public var providerOptions: [String: String]

    /// Creates token options.
    public init(
        userId: String? = nil, permissions: StoragePermissions = .readOnly, expiry: Duration = .seconds(3600),
        pathPrefix: String? = nil, providerOptions: [String: String] = [:]
    ) {
        self.userId = userId
        self.permissions = permissions
        self.expiry = expiry
        self.pathPrefix = pathPrefix
        self.providerOptions = providerOptions
    }
}

/// A generated access token. Its value never appears in `description`.
public struct AccessToken: Hashable, Sendable, CustomStringConvertible {
    /// The token itself.
    public var value: Secret
    /// When the token stops working.
    public var expiresAt: Date
    /// What the token allows.
    public var permissions: StoragePermissions
    /// The key prefix it is limited to, if any.
    public var pathPrefix: String?

    /// Creates a token description.
    public init(value: Secret, expiresAt: Date, permissions: StoragePermissions, pathPrefix: String?) {
        self.value = value
        self.expiresAt = expiresAt
        self.permissions = permissions
        self.pathPrefix = pathPrefix
    }

    public var description: String {
        let scope = pathPrefix.map { " under \($0.debugDescription)" } ?? ""
        return "AccessToken(\(value), \(permissions.names.joined(separator: "+"))\(scope), expires \(expiresAt))"
    }
}
