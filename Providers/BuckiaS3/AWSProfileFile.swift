import BuckiaCore
import Foundation

/// The shared AWS configuration files: `~/.aws/credentials` and `~/.aws/config`.
///
/// Both are INI files. In `credentials` a section is the profile name (`[default]`,
/// `[work]`); in `config` it is `[default]` or `[profile work]`. Keys are case-insensitive
/// here, values are trimmed, `#` and `;` start comments.
struct AWSProfileFile {
    private(set) var sections: [String: [String: String]] = [:]

    /// Parses INI text.
    init(text: String, isConfigFile: Bool) {
        var current: String?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                var name = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                if isConfigFile, name.hasPrefix("profile ") {
                    name = String(name.dropFirst("profile ".count)).trimmingCharacters(in: .whitespaces)
                }
                current = name
                continue
            }
            guard let section = current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if let comment = value.range(of: " #") ?? value.range(of: " ;") {
                value = value[..<comment.lowerBound].trimmingCharacters(in: .whitespaces)
            }
            sections[section, default: [:]][key] = value
        }
    }

    /// Reads a file, or returns nil when it does not exist (as the AWS tools, which then look
    /// elsewhere for credentials).
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` when the file is there
    ///   but cannot be read (permissions, a folder) or is not UTF-8 text: credentials silently
    ///   taken from elsewhere, or none, would be a worse surprise than the error.
    static func load(_ path: String, isConfigFile: Bool) throws -> AWSProfileFile? {
        let what = isConfigFile ? "The AWS config file" : "The AWS credentials file"
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch CocoaError.fileReadNoSuchFile, CocoaError.fileNoSuchFile {
            return nil
        } catch {
            throw BuckiaError(
                .invalidConfiguration, "\(what) \(path) is there but could not be read; fix its permissions, or point \(isConfigFile ? "AWS_CONFIG_FILE" : "AWS_SHARED_CREDENTIALS_FILE") at another file.",
                path: path, cause: SendableErrorDescription(error))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw BuckiaError(.invalidConfiguration, "\(what) \(path) is not UTF-8 text.", path: path)
        }
        return AWSProfileFile(text: text, isConfigFile: isConfigFile)
    }

    /// A profile's settings.
    func profile(_ name: String) -> [String: String]? { sections[name] }
}
