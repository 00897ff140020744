import Buckia
/// A command-line option a command accepts.
struct OptionSpec: Sendable {
    /// Long name without dashes, e.g. `json`.
    let name: String
    /// Optional one-letter alias, e.g. `r`.
    let short: Character?
    /// Whether it takes a value (`--config PATH`) or is a flag (`--json`).
    let takesValue: Bool
    /// One line of help.
    let help: String

    static func flag(_ name: String, short: Character? = nil, _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, takesValue: false, help: help)
    }

    static func value(_ name: String, short: Character? = nil, _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, takesValue: true, help: help)
    }
}

/// The parsed form of one command's arguments.
struct ParsedArguments: Sendable {
    var positionals: [String] = []
    var flags: Set<String> = []
    var values: [String: String] = [:]
    /// Every value of each option, in order, for options that may repeat (`--include`).
    var lists: [String: [String]] = [:]

    func flag(_ name: String) -> Bool { flags.contains(name) }
    /// The option's value; the last one when it was given more than once.
    func value(_ name: String) -> String? { values[name] }
    /// Every value the option was given.
    func all(_ name: String) -> [String] { lists[name] ?? [] }
}

/// A mistake in how the command was called; exits with ``ExitCode/usage``.
struct UsageError: Error, CustomStringConvertible {
    let description: String

    /// Runs the library's own check of a value given on the command line (a key id, a secret's
    /// context, a JWK): its refusal is how the command was called, exit 2 in the library's words,
    /// not a broken configuration (exit 5).
    static func checking<T>(_ check: () throws -> T) throws -> T {
        do {
            return try check()
        } catch let error as BuckiaError where error.code == .invalidConfiguration || error.code == .invalidPath {
            throw UsageError(description: error.message)
        }
    }
}

enum ArgumentParser {
    /// Parses `arguments` against `options`. `--` ends option parsing; `-rv` bundles flags.
    static func parse(_ arguments: [String], options: [OptionSpec]) throws -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        func spec(long: String) throws -> OptionSpec {
            guard let spec = options.first(where: { $0.name == long }) else {
                throw UsageError(description: "Unknown option --\(long).")
            }
            return spec
        }
        func spec(short: Character) throws -> OptionSpec {
            guard let spec = options.first(where: { $0.short == short }) else {
                throw UsageError(description: "Unknown option -\(short).")
            }
            return spec
        }
        func take(_ spec: OptionSpec, inline: String?) throws {
            guard spec.takesValue else {
                if inline != nil { throw UsageError(description: "The flag --\(spec.name) takes no value.") }
                parsed.flags.insert(spec.name)
                return
            }
            let value: String
            if let inline {
                value = inline
            } else {
                index += 1
                guard index < arguments.count else { throw UsageError(description: "The option --\(spec.name) needs a value.") }
                value = arguments[index]
            }
            parsed.values[spec.name] = value
            parsed.lists[spec.name, default: []].append(value)
        }
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                parsed.positionals += arguments[(index + 1)...]
                break
            } else if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                if let equals = body.firstIndex(of: "=") {
                    try take(spec(long: String(body[..<equals])), inline: String(body[body.index(after: equals)...]))
                } else {
                    try take(spec(long: String(body)), inline: nil)
                }
            } else if argument.hasPrefix("-"), argument.count > 1 {
                for letter in argument.dropFirst() {
                    try take(spec(short: letter), inline: nil)
                }
            } else {
                parsed.positionals.append(argument)
            }
            index += 1
        }
        return parsed
    }
}
