import Foundation

extension HTTPRedaction {
    /// Server text (an error body, a message) with credentials removed.
    ///
    /// Redacts the content of XML elements and JSON string fields whose names match
    /// ``sensitiveBodyMarkers``, then every occurrence of each string in `secrets` and of each
    /// long (16+ character) piece of them, so a signature echoed back on its own is caught too.
    public func redact(text: String, secrets: [String]) -> String {
        var text = redactElements(in: text)
        var pieces = Set<String>()
        for secret in secrets where !secret.isEmpty {
            pieces.insert(secret)
            for piece in secret.split(whereSeparator: { " ,;=&\"'".contains($0) }) where piece.count >= 16 {
                pieces.insert(String(piece))
            }
        }
        // Longest first, so a whole value is replaced before the pieces inside it.
        for piece in pieces.sorted(by: { $0.count > $1.count }) {
            text = text.replacingOccurrences(of: piece, with: Self.placeholder)
        }
        return text
    }

    private func redactElements(in text: String) -> String {
        let patterns = [
            #"<([A-Za-z_][\w.:-]*)(?:\s[^>]*)?>([^<]*)</\1>"#,
            #""([^"\\]+)"\s*:\s*"((?:[^"\\]|\\.)*)""#,
        ]
        var result = text
        for pattern in patterns {
            guard let expression = try? NSRegularExpression(pattern: pattern) else { continue }
            let whole = NSRange(result.startIndex..., in: result)
            for match in expression.matches(in: result, range: whole).reversed() {
                guard let nameRange = Range(match.range(at: 1), in: result),
                      let valueRange = Range(match.range(at: 2), in: result)
                else { continue }
                let name = result[nameRange].lowercased()
                if !result[valueRange].isEmpty, sensitiveBodyMarkers.contains(where: { name.contains($0) }) {
                    result.replaceSubrange(valueRange, with: Self.placeholder)
                }
            }
        }
        return result
    }
}
