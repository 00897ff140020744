import BuckiaCore
import Foundation
import Testing

/// The version is written in four places — `BuckiaVersion.current`, CHANGELOG.md's newest
/// release, the README's sentence and the manifest it shows — and these tests hold them
/// together, with the README's product table and platforms against Package.swift.
struct ReleaseTests {
    static let root = PlatformSourceTests.root

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The release headings of CHANGELOG.md, newest first: `## 0.9.0 - 2026-12-07`.
    static func releases(in changelog: String) throws -> [(version: [Int], date: String)] {
        let heading = try Regex(#"^## ([0-9]+)\.([0-9]+)\.([0-9]+) - ([0-9]{4}-[0-9]{2}-[0-9]{2})$"#)
        var found: [(version: [Int], date: String)] = []
        for line in changelog.split(separator: "\n") where line.hasPrefix("## ") && line != "## Unreleased" {
            let match = try #require(try heading.wholeMatch(in: line), "CHANGELOG.md: '\(line)' is not '## MAJOR.MINOR.PATCH - YYYY-MM-DD'")
            let parts = (1...3).compactMap { match.output[$0].substring.flatMap { Int($0) } }
            let date = try #require(match.output[4].substring, "CHANGELOG.md: '\(line)' has no date")
            try #require(parts.count == 3, "CHANGELOG.md: '\(line)' has a version part out of range")
            found.append((parts, String(date)))
        }
        return found
    }

    @Test("The CHANGELOG opens with Unreleased, then the current version, newest first")
    func changelog() throws {
        let changelog = try Self.text("CHANGELOG.md")
        let headings = changelog.split(separator: "\n").filter { $0.hasPrefix("## ") }
        #expect(headings.first == "## Unreleased")
        let releases = try Self.releases(in: changelog)
        let newest = try #require(releases.first)
        #expect(newest.version.map(String.init).joined(separator: ".") == BuckiaVersion.current)
        for (newer, older) in zip(releases, releases.dropFirst()) {
            #expect(older.version.lexicographicallyPrecedes(newer.version), "\(newer.version) is listed before \(older.version)")
            #expect(newer.date >= older.date, "\(newer) dated before \(older)")
        }
    }

    @Test("The README's manifest asks for the current version, and its sentence names it")
    func readmeVersion() throws {
        let manifest = try Self.text("Docs/Examples/UsingBuckia/Package.swift")
        #expect(manifest.contains(#"from: "\#(BuckiaVersion.current)")"#))
        #expect(try Self.text("README.md").contains("Buckia is \(BuckiaVersion.current) ("))
    }

    @Test("The README's manifest declares the platforms Package.swift does")
    func readmePlatforms() throws {
        func platforms(_ manifest: String) -> String? {
            manifest.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("platforms:") }
                .map { $0.trimmingCharacters(in: .whitespaces).prefix { $0 != "]" } }.map(String.init)
        }
        let ours = try #require(platforms(try Self.text("Package.swift")))
        #expect(platforms(try Self.text("Docs/Examples/UsingBuckia/Package.swift")) == ours)
    }

    @Test("Every product the README's table names is a library product of Package.swift")
    func readmeProducts() throws {
        let readme = try Self.text("README.md")
        let section = try #require(readme.range(of: "## Use Buckia in your package")).upperBound
        let end = readme[section...].range(of: "\n## ")?.lowerBound ?? readme.endIndex
        let rows = readme[section..<end].split(separator: "\n").filter { $0.hasPrefix("| `") }
        let named = try rows.flatMap { row in
            let cell = try #require(row.split(separator: "|").first)
            return cell.matches(of: try Regex(#"`([A-Za-z0-9]+)`"#)).compactMap { $0.output[1].substring.map(String.init) }
        }
        let manifest = try Self.text("Package.swift")
        let products = Set(manifest.matches(of: try Regex(#"\.library\(name: "([A-Za-z0-9]+)""#)).compactMap { $0.output[1].substring.map(String.init) })
        #expect(named.count >= 7, "the table names \(named)")
        for name in named {
            #expect(products.contains(name), "the README names a product '\(name)' Package.swift does not have")
        }
    }

    @Test("User-Agent is a product token with the version", arguments: [
        (nil, "Buckia/\(BuckiaVersion.current)"), ("S3", "Buckia-S3/\(BuckiaVersion.current)"),
    ] as [(String?, String)])
    func userAgent(component: String?, expected: String) {
        #expect(BuckiaVersion.userAgent(component: component) == expected)
    }
}
