/// Include and exclude rules, as sync and copy apply them.
///
/// A path is selected when it matches at least one include pattern (or there are none) and
/// no exclude pattern. Excludes win.
public struct PathFilter: Hashable, Sendable {
    /// Patterns that select paths; empty selects everything.
    public let includes: [GlobPattern]
    /// Patterns that reject paths, even included ones.
    public let excludes: [GlobPattern]

    /// Compiles the rules.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the first bad pattern.
    public init(include: [String] = [], exclude: [String] = []) throws {
        includes = try include.map(GlobPattern.init)
        excludes = try exclude.map(GlobPattern.init)
    }

    /// A filter that selects everything.
    public static let all = PathFilter(includes: [], excludes: [])

    private init(includes: [GlobPattern], excludes: [GlobPattern]) {
        self.includes = includes
        self.excludes = excludes
    }

    /// Whether `path` is selected.
    public func selects(_ path: String) -> Bool {
        if excludes.contains(where: { $0.matches(path) }) { return false }
        return includes.isEmpty || includes.contains { $0.matches(path) }
    }
}
