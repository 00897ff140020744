import BuckiaCore
import Foundation

/// A command-line path: `REMOTE:PATH` on a configured remote, or a local file path.
enum Location: CustomStringConvertible {
    case remote(name: String, path: String)
    case local(URL)

    /// `name:path` is a remote when `name` is a valid remote name (letters, digits, `-`, `_`);
    /// anything else, including `./a:b` and `/x:y`, is a local path.
    init(_ argument: String) {
        if let colon = argument.firstIndex(of: ":") {
            let name = argument[..<colon]
            if !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
                self = .remote(name: name.lowercased(), path: String(argument[argument.index(after: colon)...]))
                return
            }
        }
        self = .local(URL(fileURLWithPath: argument))
    }

    var description: String {
        switch self {
        case .remote(let name, let path): "\(name):\(path)"
        case .local(let url): url.path
        }
    }
}

extension String {
    /// A remote path without trailing slashes: the form keys are built from. A leading `/`
    /// stays, so `remote:/etc/x` fails as an absolute key instead of quietly becoming
    /// `etc/x`; `remote:/` alone is the root.
    var trimmedSlashes: String {
        var text = Substring(self)
        while text.hasSuffix("/") { text = text.dropLast() }
        return String(text)
    }

    /// A folder prefix: empty, or ending in exactly one `/`.
    var folderPrefix: String {
        let trimmed = trimmedSlashes
        return trimmed.isEmpty ? "" : trimmed + "/"
    }
}
