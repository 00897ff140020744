import BuckiaCore
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A parsed XML element: the small tree S3's bodies need, both the responses Buckia's S3
/// provider reads and the requests its gateway reads.
package struct XMLNode: Sendable {
    package var name: String
    package var text: String = ""
    package var children: [XMLNode] = []

    /// The first child named `name`.
    package func child(_ name: String) -> XMLNode? { children.first { $0.name == name } }

    /// Every child named `name`.
    package func children(_ name: String) -> [XMLNode] { children.filter { $0.name == name } }

    /// The text of the first child named `name`.
    package func value(_ name: String) -> String? { child(name)?.text }

    /// Parses a document.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/corrupt`` for malformed, truncated or empty XML
    ///   (`XMLParser.parse()` alone returns true for some of those).
    package static func parse(_ data: Data, what: String, from sender: String = "server") throws -> XMLNode {
        if let problem = encodingProblem(data) {
            throw BuckiaError(.corrupt, "The \(sender)'s \(what) body is not valid XML: \(problem).", operation: what)
        }
        let builder = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let finished = parser.parse()
        if builder.tooDeep {
            throw BuckiaError(
                .corrupt, "The \(sender)'s \(what) body nests elements deeper than \(maximumDepth) levels; no S3 body does, so it is refused.",
                operation: what)
        }
        guard finished, parser.parserError == nil, let root = builder.root, builder.stack.isEmpty else {
            // Foundation's own text for a parser error is "NSXMLParserErrorDomain error N":
            // say where the document breaks instead.
            let reason = parser.parserError == nil
                ? "the document is empty or incomplete" : "it breaks at line \(parser.lineNumber), column \(parser.columnNumber)"
            throw BuckiaError(.corrupt, "The \(sender)'s \(what) body is not valid XML: \(reason).", operation: what)
        }
        return root
    }

    /// Why `data` is not a document Foundation's parser may be given, or nil. It must be UTF-8
    /// (what S3 writes), declare no other encoding, hold no NUL, and have nothing of XML that S3
    /// bodies never use and that trap swift-corelibs-foundation's `XMLParser`: processing
    /// instructions beyond the leading declaration, and document type declarations.
    ///
    /// Both were found by `Tools/fuzz/fuzz` (target `s3-xml`). The parser force-unwraps each element,
    /// attribute, comment and processing-instruction name as UTF-8 (`UTF8STRING(…)!`), so
    /// `<?xml\u{DC} …` trapped; and it takes a processing instruction's data as a C string
    /// that libxml2 leaves null when there is none, so `<?x?>`, all of five valid bytes, read
    /// address 0. A hostile S3 server could end a sync with one answer, and a client holding any
    /// credential could end `buckia serve s3` with one `POST ?delete` body. Declarations of a
    /// document type go for the same reason (their callbacks unwrap the same way) and because
    /// nothing S3 sends has one.
    static func encodingProblem(_ data: Data) -> String? {
        guard String(validating: data, as: UTF8.self) != nil else { return "it is not UTF-8 text" }
        let bytes = [UInt8](data)
        guard !bytes.contains(0) else { return "it holds a NUL character" }
        // The declaration, if any, is the first thing in the document (after a byte-order
        // mark): `<?xml … encoding="…"?>`.
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        if bytes[start...].starts(with: Array("<?xml".utf8)), start + 5 < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start + 5]) {
            // It ends at its first `>`, which must close it as `?>`: a later `?>` would let the
            // declaration hide a processing instruction (`Tools/fuzz/fuzz` found that too).
            guard let close = Self.find([UInt8(ascii: ">")], in: bytes, from: start), bytes[close - 1] == UInt8(ascii: "?"), close - 1 > start + 5 else {
                return "its declaration does not end with ?>"
            }
            let end = close - 1
            let declaration = String(decoding: bytes[start..<end], as: UTF8.self).lowercased()
            if let encoding = declaration.range(of: "encoding") {
                let value = declaration[encoding.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "'" }.prefix { $0 != "\"" && $0 != "'" }
                guard value == "utf-8" || value == "utf8" else { return "it declares the encoding \(String(value).debugDescription); S3 bodies are UTF-8" }
            }
            start = end + 2
        }
        if Self.find(Array("<?".utf8), in: bytes, from: start) != nil { return "it holds a processing instruction, which no S3 body has" }
        if Self.find(Array("<!DOCTYPE".utf8), in: bytes, from: start) != nil { return "it declares a document type, which no S3 body does" }
        return nil
    }

    /// Where `needle` first occurs in `bytes` at or after `start`.
    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard needle.count <= bytes.count, start <= bytes.count - needle.count else { return nil }
        for index in start...(bytes.count - needle.count) where bytes[index] == needle[0] && bytes[index..<(index + needle.count)].elementsEqual(needle) {
            return index
        }
        return nil
    }

    /// The deepest nesting of elements a response may have. S3's deepest answers nest four;
    /// a hostile one nested 70,000 deep would otherwise build (and free) a tree recursively
    /// until the stack overflows.
    package static let maximumDepth = 32

    /// Builds the tree from parser events; text arrives in pieces and CDATA separately.
    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [XMLNode] = []
        var root: XMLNode?
        var tooDeep = false

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            guard stack.count < XMLNode.maximumDepth else {
                tooDeep = true
                parser.abortParsing()
                return
            }
            stack.append(XMLNode(name: name))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if !stack.isEmpty { stack[stack.count - 1].text += string }
        }

        func parser(_ parser: XMLParser, foundCDATA data: Data) {
            if !stack.isEmpty { stack[stack.count - 1].text += String(decoding: data, as: UTF8.self) }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard let node = stack.popLast() else { return }
            if stack.isEmpty {
                root = node
            } else {
                stack[stack.count - 1].children.append(node)
            }
        }
    }
}

extension String {
    /// The text for an XML element or attribute: the five special characters escaped, and the
    /// characters XML 1.0 cannot hold as text (C0 controls but tab and line feed, CR, U+FFFE,
    /// U+FFFF) written as character references, as S3 writes them in its own bodies.
    package var xmlEscaped: String {
        var output = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&apos;"
            case "\t", "\n": output.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                output += "&#x\(String(scalar.value, radix: 16, uppercase: true));"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
