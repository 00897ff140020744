/// Where a user's local folder lives, and its layout (seed: "Buckia folder structure").
///
///     <root>/<user-id>/
///         backup.sqlite   originals/   reworked/   inbound/
public struct FolderStructureConfiguration: Hashable, Sendable, Codable {
    /// The base directory the user folder goes under.
    public enum Location: String, Hashable, Sendable, Codable, CaseIterable {
        /// The application-support directory (XDG data home on Linux).
        case applicationSupport
        /// The documents directory.
        case documents
    }

    /// The base directory to use.
    public var location: Location
    /// An explicit root directory that overrides ``location``.
    public var rootPath: String?
    /// The user whose folder this is.
    public var userId: String?

    /// Creates a folder structure configuration.
    public init(location: Location = .applicationSupport, rootPath: String? = nil, userId: String? = nil) {
        self.location = location
        self.rootPath = rootPath
        self.userId = userId
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case location, rootPath, userId }

    public init(from decoder: any Decoder) throws {
        try ConfigurationDecoding.rejectUnknownKeys(in: decoder, allowed: CodingKeys.allCases.map(\.stringValue))
        let container = try decoder.container(keyedBy: CodingKeys.self)
        location = try container.decodeIfPresent(Location.self, forKey: .location) ?? .applicationSupport
        rootPath = try container.decodeIfPresent(String.self, forKey: .rootPath)
        userId = try container.decodeIfPresent(String.self, forKey: .userId)
    }
}
