import Buckia
import Foundation

extension CLI {
    static let catalogCommand = Command(
        name: "catalog", summary: "Keep a file catalog (SQLite) of a remote's files, for apps and scripts.",
        usage: "catalog refresh REMOTE:[PREFIX] --db FILE [--remove-missing] | ls --db FILE [--search WORDS] [--json] | rm FILE_ID --db FILE | truncate --db FILE",
        positionals: 1...2,
        options: [
            .value("db", "The catalog's SQLite file (created when missing)."),
            .value("media", "The folder downloaded media is kept in: rm and truncate remove files there, and only there."),
            .flag("remove-missing", "refresh: delete records under the prefix that the listing no longer has."),
            .value("search", "ls: only records with each of these words at the start of a word of their title, author or key."),
            .flag("json", "ls: print the records as one JSON array."),
        ],
        details: """
            refresh lists the remote under PREFIX and caches one record per object (fileId and key
            the object's key, title its name, publish date its modification time, its size), in one
            transaction. ls prints the records newest first. rm deletes one record, then its media
            file. truncate deletes every record, then the media folder's audio and video files.
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
            let catalog = try FileCatalogClient.live(path: database, configuration: configuration)
            let result = try await catalog.refresh(from: provider, prefix: path, removingMissing: invocation.arguments.flag("remove-missing"))
            Console.out("Cached \(result.cached) record\(result.cached == 1 ? "" : "s")\(result.removed > 0 ? "; removed \(result.removed) no longer listed" : "").")
        case "ls":
            try only(1)
            let files = try await FileCatalogClient.live(path: database, configuration: configuration)
                .fetchFiles(FileQuery(search: invocation.arguments.value("search")))
            if invocation.arguments.flag("json") {
                let encoder = JSONEncoder()
                encoder.dateEncodingStrategy = .iso8601
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                Console.out(String(decoding: try encoder.encode(files), as: UTF8.self))
            } else {
                let formatter = ISO8601DateFormatter()
                for file in files {
                    let date = file.publishDate.map { formatter.string(from: $0) } ?? "-"
                    Console.out("\(date)  \(file.size.map(String.init) ?? "-")  \(file.key)  \(file.title ?? "")")
                }
            }
        case "rm":
            try only(2)
            let catalog = try FileCatalogClient.live(path: database, configuration: configuration)
            guard let file = try await catalog.getFile(arguments[1]) else {
                throw BuckiaError(.notFound, "No record in \(database) has the fileId \(arguments[1].debugDescription).", operation: "catalog rm")
            }
            try await catalog.deleteFile(file)
            Console.out("Removed \(file.fileId).")
        case "truncate":
            try only(1)
            try await FileCatalogClient.live(path: database, configuration: configuration).truncateFiles()
            Console.out("Removed every record.")
        default:
            throw UsageError(description: "catalog has refresh, ls, rm and truncate, not \(arguments[0].debugDescription).")
        }
        return .success
    }
}
