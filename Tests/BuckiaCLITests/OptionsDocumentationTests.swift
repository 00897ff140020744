import Buckia
import BuckiaHTTP
@testable import BuckiaCommandLine
@testable import BuckiaLocal
import BuckiaTestSupport
import Foundation
import Testing

/// Docs/Configuration.md's table of provider options, row by row against the code: each
/// option is one its provider reads, its `BUCKIA_REMOTE_<NAME>_<KEY>` variable sets it, its
/// documented default is the code's, and every option the code reads has a row.
@Suite("Docs/Configuration.md's provider options against the code")
struct OptionsDocumentationTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let provider: String
        let option: String
        /// The documented variable, `BUCKIA_REMOTE_<NAME>_…`.
        let variable: String
        /// The documented default when it is one literal value (not prose, not "required").
        let defaultValue: String?
        var testDescription: String { "\(provider) \(option)" }
    }

    static var documentation: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/Configuration.md")
    }

    /// The rows of the table under "## Provider options" (empty when it cannot be read; a test
    /// checks there are rows).
    static var rows: [Row] {
        guard let text = try? String(contentsOf: documentation, encoding: .utf8), let section = text.range(of: "## Provider options") else {
            return []
        }
        let body = text[section.upperBound...].components(separatedBy: "\n## ").first ?? ""
        return body.split(separator: "\n").compactMap { line -> [Row]? in
            guard line.hasPrefix("| `") else { return nil }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 6, let option = firstCode(cells[2]), let variable = firstCode(cells[3]) else { return nil }
            // A row may name several providers (the HTTP options every HTTP provider reads).
            return codes(cells[1]).map { Row(provider: $0, option: option, variable: variable, defaultValue: literal(cells[4])) }
        }.flatMap { $0 }
    }

    /// The text of every `code span` in `cell`.
    static func codes(_ cell: String) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// The text of the first `code span` in `cell`.
    static func firstCode(_ cell: String) -> String? {
        let parts = cell.split(separator: "`", omittingEmptySubsequences: false)
        return parts.count >= 3 ? String(parts[1]) : nil
    }

    /// The value of a cell that is exactly one code span holding a literal (no `$VAR`, no `<…>`).
    static func literal(_ cell: String) -> String? {
        guard cell.hasPrefix("`"), cell.hasSuffix("`"), cell.count >= 2 else { return nil }
        let value = String(cell.dropFirst().dropLast())
        return value.contains("`") || value.contains("$") || value.contains("<") ? nil : value
    }

    @Test("Every option a built-in provider reads has a row, and every row is an option its provider reads")
    func complete() throws {
        let rows = Self.rows
        #expect(rows.count >= 15, "parsed \(rows.count) rows from \(Self.documentation.path)")
        let registry = ProviderRegistry.builtIn
        for type in registry.registeredTypes {
            let known = try #require(registry.knownOptions(for: type), "\(type.rawValue) declares no option list")
            let documented = Set(rows.filter { $0.provider == type.rawValue }.map(\.option))
            #expect(known.subtracting(documented).isEmpty, "\(type.rawValue) reads undocumented options \(known.subtracting(documented).sorted())")
            #expect(documented.subtracting(known).isEmpty, "\(type.rawValue) does not read documented options \(documented.subtracting(known).sorted())")
        }
        let providers = Set(registry.registeredTypes.map(\.rawValue))
        #expect(Set(rows.map(\.provider)).isSubset(of: providers), "rows name unknown providers")
        #expect(Set(rows.map { "\($0.provider) \($0.option)" }).count == rows.count, "an option has two rows")
    }

    @Test("The documented variable sets the option", arguments: rows)
    func variable(_ row: Row) throws {
        let variable = row.variable.replacingOccurrences(of: "<NAME>", with: "DOCS")
        #expect(variable.hasPrefix("BUCKIA_REMOTE_DOCS_") && variable == variable.uppercased(), "\(row.variable) is not BUCKIA_REMOTE_<NAME>_<KEY>")
        let environment = [
            "HOME": TestHome.empty, "BUCKIA_REMOTE_DOCS_PROVIDER": row.provider, variable: "documented-value",
        ]
        let remotes = try RemoteConfiguration.load(explicitPath: nil, environment: environment, registry: .builtIn)
        #expect(try remotes.configuration(named: "docs").options == [row.option: "documented-value"])
    }

    @Test("The documented default is the code's: the value it reports, and setting it explicitly changes nothing", arguments: rows)
    func documentedDefault(_ row: Row) throws {
        guard let value = row.defaultValue else { return }
        let defaults = try Self.effective(row.provider, options: [:])
        if let reported = defaults[row.option] {
            #expect(reported == value, "the code's default is \(reported), the documentation's \(value)")
        }
        #expect(try Self.effective(row.provider, options: [row.option: value]) == defaults, "setting \(row.option) to \(value) changes the settings")
    }

    /// What a provider made with `options` (and whatever else it requires) ends up using, by
    /// option name where the code reports the value, plus derived settings in parentheses.
    static func effective(_ provider: String, options: [String: String]) throws -> [String: String] {
        switch provider {
        case "local":
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-docs-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            let local = try LocalProvider(configuration: BuckiaConfiguration(provider: .local, options: ["root": root.path].merging(options) { $1 }))
            return ["fsync": String(local.durable)]
        case "memory":
            let memory = try MemoryProvider(configuration: BuckiaConfiguration(provider: .memory, options: options))
            return ["pageSize": String(memory.capabilities.maxListPageSize)]
        case "s3":
            var configuration = BuckiaConfiguration(provider: .s3, options: options)
            configuration.bucketName = "docs-bucket"
            let settings = try S3Settings.resolve(
                configuration, environment: ["AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "docs-secret"],
                home: TestHome.empty)
            return httpFacts(settings.http).merging([
                "region": settings.region, "(endpoint)": settings.endpoint.absoluteString, "(usesPathStyle)": String(settings.usesPathStyle),
                "multipartThresholdMiB": String(settings.multipartThreshold >> 20), "partSizeMiB": String(settings.partSize >> 20),
                "publicBucket": String(settings.isPublic), "(stateDirectory)": settings.stateDirectory.path,
                "etagIsMD5": String(settings.etagIsMD5), "verifiesContentMD5": String(settings.verifiesContentMD5),
                "(profile)": String(describing: settings.profile),
            ]) { $1 }
        case "b2":
            var configuration = BuckiaConfiguration(provider: .b2, options: options)
            configuration.bucketName = "docs-bucket"
            let settings = try B2Settings.resolve(configuration, environment: ["B2_APPLICATION_KEY_ID": "000docs", "B2_APPLICATION_KEY": "docs-key"])
            return httpFacts(settings.http).merging([
                "endpoint": settings.endpoint.absoluteString, "(largeFileThreshold)": String(settings.largeFileThreshold),
                "(partSize)": String(settings.partSize), "publicBucket": String(settings.isPublic),
                "(downloadURL)": settings.downloadURL?.absoluteString ?? "",
            ]) { $1 }
        case "bunny":
            let configuration = BuckiaConfiguration(
                provider: .bunny, bucketName: "docs-zone", authConfig: .providerSpecific(type: .bunny, credentials: ["accessKey": "docs"]), options: options)
            let settings = try BunnySettings.resolve(configuration, environment: [:])
            return httpFacts(settings.http).merging([
                "(endpoint)": settings.endpoint.absoluteString, "(pullZoneURL)": settings.pullZone?.absoluteString ?? "",
                "tokenScheme": settings.tokenScheme.rawValue, "publicURLExpirySeconds": String(settings.publicURLLifetime.components.seconds),
            ]) { $1 }
        default:
            throw OptionsFailure(description: "no way to build a \(provider) provider here")
        }
    }

    /// What every HTTP provider's options set in the client it configures.
    static func httpFacts(_ options: HTTPRemoteOptions) -> [String: String] {
        var http = HTTPClient.Configuration()
        options.apply(to: &http)
        return [
            "stallTimeoutSeconds": seconds(http.timeout), "connectTimeoutSeconds": seconds(http.connectTimeout),
            "maxAttempts": String(http.retryPolicy.maxAttempts), "(caFile)": http.caFile ?? "",
        ]
    }

    static func seconds(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        return fraction == 0 ? String(whole) : String(Double(whole) + Double(fraction) / 1e18)
    }

    struct OptionsFailure: Error, CustomStringConvertible {
        let description: String
    }
}
