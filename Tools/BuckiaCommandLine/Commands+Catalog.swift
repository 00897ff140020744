import Buckia
import Foundation

extension CLI {
    static let catalogCommand = Command(
        name: "catalog", summary: "Keep a file catalog (SQLite) of a remote's files, for apps and scripts.",
        usage:
            "catalog refresh REMOTE:[PREFIX] --db FILE [--remove-missing] | import FILE|- --db FILE [--batch N] | ls --db FILE [--search WORDS] [--json] | rm FILE_ID... --db FILE | truncate --db FILE",
        positionals: 1...100_000,
        options: [
            .value("db", "The catalog's SQLite file (refresh and import create it when missing)."),
            .value("media", "The folder downloaded media is kept in: rm, truncate and import remove files there, and only there."),
            .flag("remove-missing", "refresh: delete records under the prefix that the listing no longer has."),
            .value("batch", "import: records per transaction (1000 by default)."),
            .value("search", "ls: only records with each of these words at the start of a word of their title, author or key."),
            .flag("json", "ls: print the records as one JSON array."),
        ],
        details: """
            refresh lists the remote under PREFIX and caches one record per object (fileId and key
            the object's key, title its name, publish date its modification time, its size), in one
            transaction. import caches the records of a file (or standard input, -): one JSON
            record a line, or the array ls --json prints; it commits every --batch records and
            says so, so a run stopped part way keeps every batch it reported. ls prints the records
            newest first. rm deletes each record named, then its media file. truncate deletes every
            record, then the media folder's audio and video files.
            A damaged catalog is reported as such: remove the file and refresh into a new one.
            """
    ) { invocation in
        let arguments = invocation.positionals
        guard let database = invocation.arguments.value("db"), !database.isEmpty else {
            throw UsageError(description: "catalog \(arguments[0]) needs --db FILE.")
        }
        var configuration = FileCatalogConfiguration()
        if let media = invocation.arguments.value("media") {
            configuration.mediaRoot = URL(fileURLWithPath: media, isDirectory: true)
        }
        // The catalog file is checked before SQLite opens it: a device, FIFO or folder is refused
        // at once (exit 2), a file that is not SQLite is named as such (exit 1). refresh and
        // import create a missing catalog; ls, rm and truncate read one, and create nothing.
        func openCatalog(creating: Bool) throws -> FileCatalogClient {
            let url = URL(fileURLWithPath: database)
            let operation = "catalog \(arguments[0])"
            if try !CLI.catalogFileIsPresent(url, for: operation), !creating {
                throw BuckiaError(
                    .notFound, "There is no catalog at \(database.debugDescription); fill one with buckia catalog refresh or import.",
                    operation: operation, path: database)
            }
            return try FileCatalogClient.live(path: database, configuration: configuration)
        }
        func only(_ count: Int) throws {
            guard arguments.count == count else {
                throw UsageError(description: "catalog \(arguments[0]) takes \(count == 1 ? "no argument" : "one argument").")
            }
        }
        switch arguments[0] {
        case "refresh":
            try only(2)
            guard case .remote(let name, let path) = Location(arguments[1]) else {
                throw UsageError(description: "catalog refresh reads a configured remote: give REMOTE:[PREFIX].")
            }
            let (provider, _) = try invocation.provider(named: name)
            let catalog = try openCatalog(creating: true)
            let result = try await catalog.refresh(from: provider, prefix: path, removingMissing: invocation.arguments.flag("remove-missing"))
            Console.out("Cached \(result.cached) record\(result.cached == 1 ? "" : "s")\(result.removed > 0 ? "; removed \(result.removed) no longer listed" : "").")
        case "import":
            try only(2)
            var batch = 1000
            if let text = invocation.arguments.value("batch") {
                guard let value = Int(text), (1...100_000).contains(value) else {
                    throw UsageError(description: "--batch takes a number of records from 1 to 100000, not \(text.debugDescription).")
                }
                batch = value
            }
            let input = arguments[1] == "-" ? Console.standardInput() : try ByteStream.file(CLI.checkImportFile(arguments[1], for: "catalog import"))
            let catalog = try openCatalog(creating: true)
            try await CatalogImport(catalog: catalog, batch: batch, source: arguments[1] == "-" ? "standard input" : arguments[1]).run(input)
        case "ls":
            try only(1)
            let files = try await openCatalog(creating: false)
                .fetchFiles(FileQuery(search: invocation.arguments.value("search")))
            if invocation.arguments.flag("json") {
                Console.out(String(decoding: try CatalogJSON.encoder().encode(files), as: UTF8.self))
            } else {
                let style = Date.ISO8601FormatStyle()
                for file in files {
                    let date = file.publishDate.map { style.format($0) } ?? "-"
                    Console.out("\(date)  \(file.size.map(String.init) ?? "-")  \(file.key)  \(file.title ?? "")")
                }
            }
        case "rm":
            guard arguments.count >= 2 else { throw UsageError(description: "catalog rm takes the fileId of each record to remove.") }
            let catalog = try openCatalog(creating: false)
            // Every record is looked up before any is removed: a typo removes nothing.
            var found: [FileRecord] = []
            var missing: [String] = []
            for id in arguments.dropFirst() {
                if let file = try await catalog.getFile(id) { found.append(file) } else { missing.append(id) }
            }
            guard missing.isEmpty else {
                throw BuckiaError(
                    .notFound,
                    "No record in \(database) has the fileId \(missing.prefix(3).map(\.debugDescription).joined(separator: ", "))\(missing.count > 3 ? " (and \(missing.count - 3) more)" : ""); nothing was removed.",
                    operation: "catalog rm")
            }
            for file in found {
                try await catalog.deleteFile(file)
                Console.out("Removed \(file.fileId).")
            }
        case "truncate":
            try only(1)
            try await openCatalog(creating: false).truncateFiles()
            Console.out("Removed every record.")
        default:
            throw UsageError(description: "catalog has refresh, import, ls, rm and truncate, not \(arguments[0].debugDescription).")
        }
        return .success
    }
}

extension CLI {
    /// Whether a catalog file is at `url`, checked as ``DatabaseFile`` checks every database
    /// file; one that is not SQLite is refused with the way back.
    static func catalogFileIsPresent(_ url: URL, for operation: String) throws -> Bool {
        do {
            return try DatabaseFile.checkIfPresent(url, as: "catalog", for: operation) != nil
        } catch let error as BuckiaError where error.code == .corrupt {
            var advised = error
            advised.message += " If it is a damaged catalog, remove it and fill a new one (buckia catalog refresh or import); otherwise check --db."
            throw advised
        }
    }
}

/// How the catalog commands write and read records as JSON: sorted keys, dates in ISO 8601 with
/// milliseconds (read with or without them).
enum CatalogJSON {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date))
        }
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            do {
                return try Date.ISO8601FormatStyle(includingFractionalSeconds: text.contains(".")).parse(text)
            } catch {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(text.debugDescription) is not an ISO 8601 date and time")
            }
        }
        return decoder
    }
}

/// `catalog import`: records read as they arrive (one JSON object a line) and cached a batch
/// at a time, each batch its own transaction, reported once committed. The array `ls --json`
/// prints is read whole first.
struct CatalogImport {
    let catalog: FileCatalogClient
    let batch: Int
    let source: String
    /// The longest line (or array) read: a record is a few hundred bytes.
    static let lineLimit = 16 << 20
    static let arrayLimit = 1 << 30

    func run(_ input: ByteStream) async throws {
        let decoder = CatalogJSON.decoder()
        var pending: [FileRecord] = []
        var buffer = Data()
        var line = 0
        var cached = 0
        var batches = 0
        var array: Data?
        var lastRecord = 0
        func commit(through place: String) async throws {
            guard !pending.isEmpty else { return }
            do {
                try await catalog.cacheFiles(pending)
            } catch let error as BuckiaError {
                throw BuckiaError(
                    error.code, "\(error.message) The batch ending at \(place) of \(source) was not cached; the \(cached) records before it were.",
                    operation: "catalog import", path: error.path, cause: error)
            }
            cached += pending.count
            batches += 1
            Console.out("Cached \(pending.count) record\(pending.count == 1 ? "" : "s") through \(place).")
            pending.removeAll(keepingCapacity: true)
        }
        func take(_ text: Data) async throws {
            line += 1
            guard text.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
            do {
                try JSONValidation.validate(text)
                pending.append(try decoder.decode(FileRecord.self, from: text))
                lastRecord = line
            } catch {
                throw BuckiaError(
                    .corrupt,
                    "Line \(line) of \(source) is not a file record (\(Self.reason(error))); the \(cached) records before its batch were cached, the rest were not.",
                    operation: "catalog import")
            }
            if pending.count == batch { try await commit(through: "line \(line)") }
        }
        for try await chunk in input {
            if array != nil {
                array?.append(chunk)
                guard (array?.count ?? 0) <= Self.arrayLimit else {
                    throw BuckiaError(.corrupt, "\(source) holds a JSON array over 1 GiB: give one record a line instead; nothing was cached.", operation: "catalog import")
                }
                continue
            }
            buffer.append(chunk)
            if line == 0, pending.isEmpty, let first = buffer.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }), first == UInt8(ascii: "[") {
                array = buffer
                buffer = Data()
                continue
            }
            var start = buffer.startIndex
            while let newline = buffer[start...].firstIndex(of: 0x0A) {
                try await take(Data(buffer[start..<newline]))
                start = buffer.index(after: newline)
            }
            buffer.removeSubrange(buffer.startIndex..<start)
            guard buffer.count <= Self.lineLimit else {
                throw BuckiaError(.corrupt, "Line \(line + 1) of \(source) is longer than 16 MiB: it is not a file record.", operation: "catalog import")
            }
        }
        if let array {
            let records: [FileRecord]
            do {
                try JSONValidation.validate(array)
                records = try decoder.decode([FileRecord].self, from: array)
            } catch {
                throw BuckiaError(.corrupt, "\(source) is not an array of file records (\(Self.reason(error))); nothing was cached.", operation: "catalog import")
            }
            for (index, record) in records.enumerated() {
                pending.append(record)
                if pending.count == batch { try await commit(through: "record \(index + 1)") }
            }
            line = records.count
        } else if !buffer.isEmpty {
            try await take(buffer)
        }
        try await commit(through: array == nil ? "line \(lastRecord)" : "record \(line)")
        Console.out("Imported \(cached) record\(cached == 1 ? "" : "s") in \(batches) batch\(batches == 1 ? "" : "es").")
    }

    /// What a decoding error says, without the coding path's noise.
    static func reason(_ error: any Error) -> String {
        switch error {
        case let syntax as JSONSyntaxError: return "not valid JSON: \(syntax)"
        case DecodingError.dataCorrupted(let context): return context.debugDescription
        case DecodingError.keyNotFound(let key, _): return "\(key.stringValue) is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default: return "\(error)"
        }
    }
}
