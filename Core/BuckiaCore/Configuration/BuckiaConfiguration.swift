import Foundation

/// Everything needed to build and use one provider: which one, where, with what credentials.
///
/// Configurations come from code, from JSON files and from environment variables, and
/// select a provider by ``provider`` through a ``ProviderRegistry``. Settings that only one
/// provider understands (`root`, `endpoint`, `region`, …) go in ``options``.
///
/// ```json
/// {
///   "provider": "s3",
///   "bucketName": "photos",
///   "authConfig": { "method": "awsSignature",
///                   "credentials": { "accessKeyId": "…", "secretAccessKey": "…" } },
///   "options": { "region": "eu-west-1" }
/// }
/// ```
///
/// Printing a configuration never shows a credential.
public struct BuckiaConfiguration: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Which provider to build.
    public var provider: ProviderType
    /// The bucket, storage zone or container name.
    public var bucketName: String
    /// Credentials and how to use them.
    public var authConfig: AuthenticationConfiguration
    /// The most transfers to run at once, 1 to 1,024.
    public var maxConcurrentOperations: Int
    /// Whether sync removes remote files that no longer exist locally.
    public var deleteOrphanedFiles: Bool
    /// Glob patterns of paths sync includes; empty includes everything.
    public var includePatterns: [String]
    /// Glob patterns of paths sync leaves alone; they win over includes.
    public var excludePatterns: [String]
    /// The local folder layout.
    public var folderStructure: FolderStructureConfiguration
    /// Provider-specific settings.
    public var options: [String: String]

    /// Creates a configuration.
    public init(
        provider: ProviderType,
        bucketName: String = "",
        authConfig: AuthenticationConfiguration = .none,
        maxConcurrentOperations: Int = 4,
        deleteOrphanedFiles: Bool = false,
        includePatterns: [String] = [],
        excludePatterns: [String] = [],
        folderStructure: FolderStructureConfiguration = FolderStructureConfiguration(),
        options: [String: String] = [:]
    ) {
        self.provider = provider
        self.bucketName = bucketName
        self.authConfig = authConfig
        self.maxConcurrentOperations = maxConcurrentOperations
        self.deleteOrphanedFiles = deleteOrphanedFiles
        self.includePatterns = includePatterns
        self.excludePatterns = excludePatterns
        self.folderStructure = folderStructure
        self.options = options
    }

    /// The include and exclude patterns, compiled.
    public func pathFilter() throws -> PathFilter {
        try PathFilter(include: includePatterns, exclude: excludePatterns)
    }

    /// Checks values that decode fine but cannot work.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the field and the fix.
    public func validate() throws {
        guard (1...1024).contains(maxConcurrentOperations) else {
            throw BuckiaError(
                .invalidConfiguration,
                "maxConcurrentOperations is \(maxConcurrentOperations); use a number from 1 to 1024.",
                path: "maxConcurrentOperations")
        }
        for (name, patterns) in [("includePatterns", includePatterns), ("excludePatterns", excludePatterns)] {
            for (index, pattern) in patterns.enumerated() {
                do {
                    _ = try GlobPattern(pattern)
                } catch let error as BuckiaError {
                    let path = "\(name)[\(index)]"
                    throw BuckiaError(.invalidConfiguration, "The setting \(path.debugDescription) is wrong: \(error.message)", path: path)
                }
            }
        }
    }

    /// Fails on an option the provider does not read: a misspelt setting must not be ignored.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the option and listing the known ones.
    public func checkOptions(known: Set<String>) throws {
        for name in options.keys.sorted() where !known.contains(name) {
            let list = known.sorted().joined(separator: ", ")
            throw BuckiaError(
                .invalidConfiguration,
                "The \(provider) provider has no option \(name.debugDescription); its options are \(list.isEmpty ? "none" : list).",
                path: "options.\(name)")
        }
    }

    /// A `true` / `false` provider option, or `value` when it is absent.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the option when it is neither.
    public func flag(_ name: String, default value: Bool) throws -> Bool {
        guard let text = options[name] else { return value }
        guard let parsed = Bool(text) else {
            throw BuckiaError(.invalidConfiguration, "\(name) must be true or false; it is \(text.debugDescription).", path: "options.\(name)")
        }
        return parsed
    }

    /// A provider option, or an error saying it is required.
    public func requireOption(_ name: String) throws -> String {
        guard let value = options[name], !value.isEmpty else {
            throw BuckiaError(
                .invalidConfiguration, "The \(provider) provider needs the option \(name.debugDescription).",
                path: "options.\(name)")
        }
        return value
    }

    public var description: String {
        var parts = ["provider: \(provider)", "bucketName: \(bucketName.debugDescription)", "authConfig: \(authConfig)"]
        parts.append("maxConcurrentOperations: \(maxConcurrentOperations)")
        if deleteOrphanedFiles { parts.append("deleteOrphanedFiles: true") }
        if !includePatterns.isEmpty { parts.append("includePatterns: \(includePatterns)") }
        if !excludePatterns.isEmpty { parts.append("excludePatterns: \(excludePatterns)") }
        if !options.isEmpty {
            let rendered = options.keys.sorted().map { "\($0): \(options[$0]!.debugDescription)" }
            parts.append("options: [\(rendered.joined(separator: ", "))]")
        }
        return "BuckiaConfiguration(\(parts.joined(separator: ", ")))"
    }

    // MARK: Coding

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case provider, bucketName, authConfig, maxConcurrentOperations, deleteOrphanedFiles
        case includePatterns, excludePatterns, folderStructure, options
    }

    public init(from decoder: any Decoder) throws {
        try ConfigurationDecoding.rejectUnknownKeys(in: decoder, allowed: CodingKeys.allCases.map(\.stringValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        provider = try c.decode(ProviderType.self, forKey: .provider)
        bucketName = try c.decodeIfPresent(String.self, forKey: .bucketName) ?? ""
        authConfig = try c.decodeIfPresent(AuthenticationConfiguration.self, forKey: .authConfig) ?? .none
        maxConcurrentOperations = try c.decodeIfPresent(Int.self, forKey: .maxConcurrentOperations) ?? 4
        deleteOrphanedFiles = try c.decodeIfPresent(Bool.self, forKey: .deleteOrphanedFiles) ?? false
        includePatterns = try c.decodeIfPresent([String].self, forKey: .includePatterns) ?? []
        excludePatterns = try c.decodeIfPresent([String].self, forKey: .excludePatterns) ?? []
        folderStructure = try c.decodeIfPresent(FolderStructureConfiguration.self, forKey: .folderStructure)
            ?? FolderStructureConfiguration()
        options = try c.decodeIfPresent([String: String].self, forKey: .options) ?? [:]
    }

    /// Decodes and validates a configuration from JSON.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` with the JSON path of the problem.
    public static func decode(from json: Data) throws -> BuckiaConfiguration {
        let configuration = try ConfigurationDecoding.decode(BuckiaConfiguration.self, from: json)
        try configuration.validate()
        return configuration
    }

    /// Encodes the configuration as JSON, credentials included: write it with mode 0600.
    public func encodedJSON() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }
}

/// Strict JSON decoding with errors a person can act on.
public enum ConfigurationDecoding {
    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Fails when the object being decoded has a key outside `allowed`: a misspelt setting
    /// must not be silently ignored.
    public static func rejectUnknownKeys(in decoder: any Decoder, allowed: [String]) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        for key in container.allKeys where !allowed.contains(key.stringValue) {
            let path = (decoder.codingPath.map(\.stringValue) + [key.stringValue]).joined(separator: ".")
            throw BuckiaError(
                .invalidConfiguration,
                "Unknown setting \(path.debugDescription); the settings here are \(allowed.joined(separator: ", ")).",
                path: path)
        }
    }

    /// Decodes `type` from JSON, turning `DecodingError` into ``BuckiaError``.
    ///
    /// A key given twice in one object is an error (the decoders would keep one silently), and
    /// so is a document that is not an object.
    public static func decode<T: Decodable>(_ type: T.Type, from json: Data) throws -> T {
        // Some editors start UTF-8 files with a byte-order mark; JSON parsers refuse it.
        let json = json.starts(with: [0xEF, 0xBB, 0xBF]) ? json.dropFirst(3) : json
        // Strictly JSON, and at most 32 levels deep, before anything recursive reads it: the
        // duplicate-key scan and Foundation's decoder recurse once per level (a document
        // nested 100,000 deep overflowed the stack), and Foundation accepts trailing commas.
        do {
            try JSONValidation.validate(Data(json), maximumDepth: 32)
        } catch let error as JSONSyntaxError {
            throw BuckiaError(.invalidConfiguration, "The configuration is not valid JSON: \(error).")
        }
        let bytes = [UInt8](json)
        if let duplicate = JSONDuplicateKeys.first(in: bytes) {
            throw BuckiaError(
                .invalidConfiguration, "The setting \(duplicate.debugDescription) is given twice; keep one.", path: duplicate)
        }
        if let first = bytes.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }), first != UInt8(ascii: "{") {
            throw BuckiaError(.invalidConfiguration, "The configuration must be a JSON object ({ … }); this one is not.")
        }
        do {
            return try JSONDecoder().decode(type, from: Data(json))
        } catch let error as BuckiaError {
            throw error
        } catch let error as DecodingError {
            throw describe(error)
        } catch {
            throw BuckiaError(.invalidConfiguration, "The configuration could not be read: \(error).")
        }
    }

    static func describe(_ error: DecodingError) -> BuckiaError {
        func path(_ context: DecodingError.Context, _ extra: String? = nil) -> String {
            let parts = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue } + (extra.map { [$0] } ?? [])
            return parts.isEmpty ? "(top level)" : parts.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = path(context, key.stringValue)
            return BuckiaError(.invalidConfiguration, "The required setting \(at.debugDescription) is missing.", path: at)
        case .typeMismatch(let type, let context):
            let at = path(context)
            return BuckiaError(.invalidConfiguration, "The setting \(at.debugDescription) should be \(readable(type)).", path: at)
        case .dataCorrupted(let context) where context.debugDescription.contains("does not fit"):
            // Foundation's words for 1.5 or 1e99 where a whole number goes.
            let at = path(context)
            return BuckiaError(.invalidConfiguration, "The setting \(at.debugDescription) should be a whole number in range.", path: at)
        case .valueNotFound(let type, let context):
            let at = path(context)
            return BuckiaError(.invalidConfiguration, "The setting \(at.debugDescription) is null; it should be \(readable(type)).", path: at)
        case .dataCorrupted(let context):
            let at = path(context)
            if context.codingPath.isEmpty {
                // The syntax was checked before decoding (JSONValidation), so what Foundation
                // reports here as "not valid JSON", naming no path, is a number its decoder
                // could not convert: a fraction or an out-of-range value where a whole number goes.
                return BuckiaError(
                    .invalidConfiguration,
                    "The configuration holds a number that does not fit its setting: a fraction or an out-of-range value where a whole number goes (such as \"maxConcurrentOperations\": 1.5).")
            }
            return BuckiaError(.invalidConfiguration, "The setting \(at.debugDescription) has an invalid value: \(context.debugDescription)", path: at)
        @unknown default:
            return BuckiaError(.invalidConfiguration, "The configuration could not be read: \(error).")
        }
    }

    private static func readable(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type: "a whole number"
        case is Bool.Type: "true or false"
        case is [String].Type: "a list of strings"
        case is [String: String].Type: "an object of strings ({\"name\": \"value\", …})"
        case is Double.Type, is Float.Type: "a number"
        default:
            // Never a Swift type name ("Dictionary<String, Any>"): say which JSON shape goes here.
            String(describing: type).hasPrefix("Dictionary") ? "an object ({ … })"
                : String(describing: type).hasPrefix("Array") ? "a list ([ … ])" : "a value of another kind"
        }
    }
}
