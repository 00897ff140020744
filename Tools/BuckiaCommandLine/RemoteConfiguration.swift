import BuckiaCore
import Foundation

/// Named remotes from the configuration file, the environment and the built-in `default`.
///
/// - File: `--config PATH`, else `$BUCKIA_CONFIG`, else `$XDG_CONFIG_HOME/buckia/config.json`
///   (`~/.config/buckia/config.json`): `{"remotes": {"NAME": <BuckiaConfiguration>}}`.
/// - Environment: `BUCKIA_REMOTE_<NAME>_<KEY>`; NAME has no underscores. KEY is `PROVIDER`,
///   `BUCKET`, `AUTH_METHOD`, `MAX_CONCURRENT_OPERATIONS`, `CREDENTIAL_<X>` (a credential) or
///   anything else (a provider option); `<X>` and option keys become camelCase
///   (`ACCESS_KEY_ID` → `accessKeyId`). Environment values override the file's.
/// - `default`: a local provider under `$XDG_DATA_HOME/buckia/default`, unless configured.
struct RemoteConfiguration {
    private(set) var remotes: [String: BuckiaConfiguration] = [:]
    /// Where each remote came from, for `buckia providers`.
    private(set) var sources: [String: String] = [:]

    struct File: Decodable {
        var remotes: [String: BuckiaConfiguration]

        private enum CodingKeys: String, CodingKey, CaseIterable { case remotes }

        init(from decoder: any Decoder) throws {
            try ConfigurationDecoding.rejectUnknownKeys(in: decoder, allowed: CodingKeys.allCases.map(\.stringValue))
            remotes = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent([String: BuckiaConfiguration].self, forKey: .remotes) ?? [:]
        }
    }

    /// Loads the remotes; `registry` names the options each provider type reads, so variables
    /// such as `BUCKIA_REMOTE_X_MULTIPART_THRESHOLD_MIB` find `multipartThresholdMiB`.
    static func load(explicitPath: String?, environment: [String: String], registry: ProviderRegistry) throws -> RemoteConfiguration {
        var configuration = RemoteConfiguration()
        let home = environment["HOME"] ?? NSHomeDirectory()
        let dataHome = Self.dataHome(environment)
        configuration.remotes["default"] = BuckiaConfiguration(provider: .local, options: ["root": "\(dataHome)/buckia/default"])
        configuration.sources["default"] = "built in"

        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.config"
        let named = explicitPath ?? environment["BUCKIA_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        let path = named ?? "\(configHome)/buckia/config.json"
        var info = stat()
        let found = stat(path, &info) == 0
        let missing = !found && (errno == ENOENT || errno == ENOTDIR)
        if !found && !missing {
            // A link loop, a folder on the way that may not be searched: not "does not exist".
            let code = errno
            let reason = String(cString: strerror(code)).lowercased()
            throw BuckiaError(
                code == EACCES ? .permissionDenied : .invalidConfiguration,
                "The configuration file \(path) cannot be reached (\(reason)); check the path and its folders' permissions.", path: path)
        }
        if found {
            let data = try Self.read(path, isFolder: (info.st_mode & S_IFMT) == S_IFDIR)
            let file: File
            do {
                file = try ConfigurationDecoding.decode(File.self, from: data)
            } catch let error as BuckiaError {
                throw BuckiaError(.invalidConfiguration, "The configuration file \(path) is invalid: \(error.message)", path: error.path)
            }
            for (name, remote) in file.remotes {
                configuration.remotes[name.lowercased()] = remote
                configuration.sources[name.lowercased()] = path
            }
        } else if named != nil {
            let source = explicitPath != nil ? "--config" : "BUCKIA_CONFIG"
            throw BuckiaError(.invalidConfiguration, "The configuration file \(path) named by \(source) does not exist.", path: path)
        }
        try configuration.applyEnvironment(environment, registry: registry)
        for (name, remote) in configuration.remotes {
            do {
                try remote.validate()
            } catch let error as BuckiaError {
                throw BuckiaError(.invalidConfiguration, "The remote \(name.debugDescription) is invalid: \(error.message)", path: error.path)
            }
        }
        return configuration
    }

    /// Reads a configuration file, which must be a regular file of reasonable size.
    private static func read(_ path: String, isFolder: Bool) throws -> Data {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard !isFolder, attributes?[.type] as? FileAttributeType == .typeRegular else {
            throw BuckiaError(.invalidConfiguration, "The configuration file \(path) is not a regular file.", path: path)
        }
        if let size = attributes?[.size] as? Int, size > 1_048_576 {
            throw BuckiaError(.invalidConfiguration, "The configuration file \(path) is over 1 MiB; it cannot be a configuration.", path: path)
        }
        do {
            let reader = try FileReader(URL(fileURLWithPath: path))
            return try reader.read(0..<min(try reader.size(), 1_048_576))
        } catch let error as BuckiaError where error.code == .permissionDenied {
            // Denied is status 4, as for any file the user may not read.
            throw BuckiaError(.permissionDenied, "The configuration file \(path) cannot be read (permission denied); check its permissions.", path: path)
        } catch let error as BuckiaError {
            throw BuckiaError(.invalidConfiguration, "The configuration file \(path) cannot be read: \(error.message)", path: path)
        }
    }

    private mutating func applyEnvironment(_ environment: [String: String], registry: ProviderRegistry) throws {
        let marker = "BUCKIA_REMOTE_"
        var seen: [String: String] = [:]
        var derived: [String: Set<String>] = [:]
        for (variable, value) in environment.sorted(by: { $0.key < $1.key }) where variable.hasPrefix(marker) {
            let rest = variable.dropFirst(marker.count)
            guard let underscore = rest.firstIndex(of: "_"), underscore != rest.startIndex else {
                throw BuckiaError(.invalidConfiguration, "The variable \(variable) should look like BUCKIA_REMOTE_<NAME>_<KEY>.", path: variable)
            }
            let name = rest[..<underscore].lowercased()
            let key = String(rest[rest.index(after: underscore)...]).uppercased()
            if let earlier = seen["\(name)_\(key)"] {
                throw BuckiaError(
                    .invalidConfiguration, "\(earlier) and \(variable) set the same thing (names are not case-sensitive); unset one.",
                    path: variable)
            }
            seen["\(name)_\(key)"] = variable
            var remote = remotes[name] ?? BuckiaConfiguration(provider: ProviderType(rawValue: ""))
            switch key {
            case "PROVIDER": remote.provider = ProviderType(rawValue: value)
            case "BUCKET": remote.bucketName = value
            case "AUTH_METHOD":
                guard let method = AuthenticationMethod(rawValue: value) else {
                    let known = AuthenticationMethod.allCases.map(\.rawValue).joined(separator: ", ")
                    throw BuckiaError(.invalidConfiguration, "\(variable) is \(value.debugDescription); use one of \(known).", path: variable)
                }
                remote.authConfig.method = method
            case "MAX_CONCURRENT_OPERATIONS":
                guard let number = Int(value) else {
                    throw BuckiaError(.invalidConfiguration, "\(variable) should be a whole number.", path: variable)
                }
                remote.maxConcurrentOperations = number
            default:
                if key.hasPrefix("CREDENTIAL_") {
                    remote.authConfig.credentials[Self.camelCase(key.dropFirst("CREDENTIAL_".count))] = Secret(value)
                } else {
                    remote.options[Self.camelCase(Substring(key))] = value
                    derived[name, default: []].insert(Self.camelCase(Substring(key)))
                }
            }
            remotes[name] = remote
            if sources[name]?.hasSuffix("environment") != true {
                sources[name] = sources[name].map { "\($0) + environment" } ?? "environment"
            }
        }
        // A derived name matches a provider's option however the words were split:
        // MULTIPART_THRESHOLD_MIB → multipartThresholdMiB.
        for (name, names) in derived {
            guard var remote = remotes[name], let known = registry.knownOptions(for: remote.provider) else { continue }
            for option in names where !known.contains(option) {
                if let match = known.first(where: { Self.squashed($0) == Self.squashed(option) }), let value = remote.options[option] {
                    remote.options[option] = nil
                    remote.options[match] = value
                }
            }
            remotes[name] = remote
        }
        for (name, remote) in remotes where remote.provider.rawValue.isEmpty {
            // Blame where the remote came from: a file's `"provider": ""`, or variables alone.
            if let source = sources[name], !source.hasPrefix("environment") {
                throw BuckiaError(
                    .invalidConfiguration,
                    "The remote \(name.debugDescription) in \(source.replacingOccurrences(of: " + environment", with: "")) has an empty provider; set \"provider\" to a provider type (buckia providers lists them).",
                    path: name)
            }
            throw BuckiaError(
                .invalidConfiguration,
                "The remote \(name.debugDescription) is set in the environment but has no provider; set BUCKIA_REMOTE_\(name.uppercased())_PROVIDER.",
                path: name)
        }
    }

    /// `$XDG_DATA_HOME`, or `~/.local/share` when it is unset or empty.
    static func dataHome(_ environment: [String: String]) -> String {
        let home = environment["HOME"] ?? NSHomeDirectory()
        return environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.local/share"
    }

    /// A name lowercased without `_`, to compare option names however they are split.
    static func squashed(_ name: String) -> String {
        name.lowercased().replacingOccurrences(of: "_", with: "")
    }

    static func camelCase(_ key: Substring) -> String {
        let words = key.lowercased().split(separator: "_")
        guard let first = words.first else { return "" }
        return String(first) + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    func configuration(named name: String) throws -> BuckiaConfiguration {
        guard let remote = remotes[name] else {
            let known = remotes.keys.sorted().joined(separator: ", ")
            throw BuckiaError(.notFound, "No remote named \(name.debugDescription) is configured; configured remotes: \(known).", path: name)
        }
        return remote
    }
}
