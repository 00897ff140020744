import Buckia
import BuckiaHTTP
import BuckiaResourceCache
import Foundation

extension CLI {
    /// The resource cache's folder: `--cache DIR`, or `$XDG_CACHE_HOME/buckia/resources`
    /// (`~/.cache/buckia/resources`).
    static func resourceCacheFolder(_ invocation: Invocation) throws -> URL {
        if let folder = invocation.arguments.value("cache") {
            guard !folder.isEmpty else { throw UsageError(description: "--cache takes a folder.") }
            return URL(fileURLWithPath: folder, isDirectory: true)
        }
        if let base = invocation.environment["XDG_CACHE_HOME"], base.hasPrefix("/") {
            return URL(fileURLWithPath: base, isDirectory: true).appendingPathComponent("buckia/resources", isDirectory: true)
        }
        guard let home = invocation.environment["HOME"], home.hasPrefix("/") else {
            throw UsageError(description: "Neither XDG_CACHE_HOME nor HOME is set to an absolute path: give --cache DIR.")
        }
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".cache/buckia/resources", isDirectory: true)
    }

    static let fetchCommand = Command(
        name: "fetch", summary: "Fetch a URL or REMOTE:PATH through the resource cache and print the cached file.",
        usage: "fetch URL|REMOTE:PATH [--cache DIR] [--json] [--connect-timeout S] [--stall-timeout S] [--max-attempts N]", positionals: 1...1,
        options: [
            .value("cache", "The cache folder (default: $XDG_CACHE_HOME/buckia/resources)."),
            .flag("json", "Print one JSON object: path, outcome, bytes, etag, freshUntil."),
            .value("max-resource-bytes", "The most bytes one resource may take (default: the cache's 512 MiB); a download that crosses it is stopped."),
        ] + httpOptionHelp,
        details: """
            Prints the outcome and the cached file's path: hit (fresh in the cache), revalidated
            (the origin answered 304), downloaded, or stale (served within stale-while-revalidate
            or stale-if-error). HTTP caching follows the response's Cache-Control, Expires and
            validators. Processes sharing a cache folder download a resource once between them.
            A response marked no-store is not cached, and no path is printed for it.
            """
    ) { invocation in
        let text = invocation.positionals[0]
        let location: ResourceLocation
        var provider: (any StorageProvider)?
        if let scheme = text.range(of: "://").map({ text[..<$0.lowerBound].lowercased() }), scheme != "http", scheme != "https" {
            throw UsageError(description: "fetch takes http(s) URLs, not \(scheme): \(text.debugDescription).")
        }
        let lowered = text.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            // The scheme in lower case (RFC 3986 compares it so): HTTP://h/x and http://h/x are one entry.
            let colon = text.firstIndex(of: ":") ?? text.endIndex
            guard let url = URL(string: text[..<colon].lowercased() + text[colon...]), url.host != nil else {
                throw UsageError(description: "\(text.debugDescription) is not a URL.")
            }
            location = .url(url)
            guard !location.holdsCredentials else {
                throw UsageError(
                    description: "\(location.text) was given with a user name or password, which the resource cache never fetches with or keeps; fetch a URL without them (Docs/ResourceCache.md).")
            }
        } else if case .remote(let name, let path) = Location(text), !path.isEmpty {
            provider = try invocation.provider(named: name).0
            location = .remote(name: name, path: path)
        } else {
            throw UsageError(description: "fetch takes an http(s) URL or REMOTE:PATH, not \(text.debugDescription).")
        }
        let client = try httpClient(invocation)
        var configuration = ResourceCacheConfiguration()
        if let text = invocation.arguments.value("max-resource-bytes") {
            guard let value = Int64(text), value > 0 else { throw UsageError(description: "--max-resource-bytes takes a whole number of bytes above 0, not \(text.debugDescription).") }
            configuration.maxResourceBytes = value
        }
        let cache = try ResourceCache(folder: try resourceCacheFolder(invocation), configuration: configuration)
        let remote = provider
        let downloader = ResourceDownloader(
            cache: cache, client: client,
            remote: { name in
                guard let remote else { throw BuckiaError(.invalidConfiguration, "No remote \(name.debugDescription) was opened.", operation: "fetch") }
                return remote
            })
        let fetched: ResourceDownloader.Fetched
        do {
            fetched = try await downloader.fetch(location)
        } catch {
            // The fetch's failure is what the user hears; a failure to record reads under it
            // (recency only) would hide it.
            do { try cache.close() } catch {}
            if case .url = location, let error = error as? BuckiaError, let failure = error.cause as? HTTPFailure {
                throw Self.plainURLFailure(error, failure)
            }
            throw error
        }
        // Now, not when the last task lets the cache go: the process may exit first.
        try cache.close()
        if invocation.arguments.flag("json") {
            var object: [String: Any] = ["outcome": fetched.outcome.rawValue, "bytes": fetched.data.count, "path": fetched.file?.path ?? NSNull()]
            object["etag"] = fetched.response.etag ?? NSNull()
            object["freshUntil"] = fetched.response.freshUntil.map { Date.ISO8601FormatStyle().format($0) } ?? NSNull()
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            Console.out(String(decoding: data, as: UTF8.self))
        } else if let file = fetched.file {
            Console.out("\(fetched.outcome.rawValue)  \(file.path)")
        } else {
            Console.out("\(fetched.outcome.rawValue)  (not cached: the response said no-store)")
        }
        return .success
    }

    static let cacheCommand = Command(
        name: "cache", summary: "Show, trim or clear the resource cache.",
        usage: "cache stats|trim|clear [--cache DIR] [--json] [--max-bytes N] [--max-count N]", positionals: 1...1,
        options: [
            .value("cache", "The cache folder (default: $XDG_CACHE_HOME/buckia/resources)."),
            .flag("json", "stats: print one JSON object."),
            .value("max-bytes", "trim: the limit in bytes (default 536870912, 512 MiB)."),
            .value("max-count", "trim: the limit in entries (default: none)."),
        ],
        details: """
            stats prints the entries, their bytes and the pinned ones. trim evicts least recently
            used entries, pinned ones never, until the cache is within --max-bytes and
            --max-count (a folder does not record the limits an app opened it with, so the
            defaults are the library's). clear removes every entry.
            """
    ) { invocation in
        let folder = try resourceCacheFolder(invocation)
        var limits = ResourceCacheConfiguration()
        for (option, isCount) in [("max-bytes", false), ("max-count", true)] {
            guard let text = invocation.arguments.value(option) else { continue }
            guard invocation.positionals[0] == "trim" else { throw UsageError(description: "--\(option) is an option of cache trim.") }
            guard let value = Int64(text), value >= 0 else { throw UsageError(description: "--\(option) takes a whole number, not \(text.debugDescription).") }
            if isCount {
                limits.maxCount = Int(value)
            } else {
                limits.maxBytes = value
            }
        }
        let mode = try LocalFile.existingMode(folder.path)
        if let mode, (mode & S_IFMT) != S_IFDIR {
            throw UsageError(description: "--cache \(folder.path) is \(LocalFile.kind(of: mode)), not a folder; give the cache's folder.")
        }
        // A read-only look, or a trim or clear of a cache that is not there, creates nothing:
        // neither a missing folder nor, in a folder without a cache's index, the cache's files.
        let index = folder.appendingPathComponent(ResourceCache.indexName)
        guard mode != nil, try LocalFile.existingMode(index.path) != nil else {
            switch invocation.positionals[0] {
            case "stats":
                if invocation.arguments.flag("json") {
                    Console.out(#"{"bytes":0,"entries":0,"pinned":0}"#)
                } else {
                    Console.out("0 entries, 0 bytes, 0 pinned: there is no cache at \(folder.path)")
                }
            case "trim": Console.out("Evicted 0 entries (0 bytes): there is no cache at \(folder.path).")
            case "clear": Console.out("Removed 0 entries: there is no cache at \(folder.path).")
            default: throw UsageError(description: "cache has stats, trim and clear, not \(invocation.positionals[0].debugDescription).")
            }
            return .success
        }
        switch invocation.positionals[0] {
        case "stats":
            let statistics = try ResourceCache(folder: folder).statistics()
            if invocation.arguments.flag("json") {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                Console.out(String(decoding: try encoder.encode(statistics), as: UTF8.self))
            } else {
                Console.out("\(statistics.entries) entr\(statistics.entries == 1 ? "y" : "ies"), \(statistics.bytes) bytes, \(statistics.pinned) pinned, in \(folder.path)")
            }
        case "trim":
            let evicted = try ResourceCache(folder: folder, configuration: limits).trim()
            Console.out("Evicted \(evicted.count) entr\(evicted.count == 1 ? "y" : "ies") (\(evicted.reduce(Int64(0)) { $0 + $1.size }) bytes).")
        case "clear":
            let cache = try ResourceCache(folder: folder)
            let count = try cache.statistics().entries
            try cache.clear()
            Console.out("Removed \(count) entr\(count == 1 ? "y" : "ies").")
        default:
            throw UsageError(description: "cache has stats, trim and clear, not \(invocation.positionals[0].debugDescription).")
        }
        return .success
    }
}

extension CLI {
    /// A refusal from the server of a plain URL, said as it is: the library's default words
    /// advise on credentials, endpoints and regions, which a plain URL has none of.
    static func plainURLFailure(_ error: BuckiaError, _ failure: HTTPFailure) -> BuckiaError {
        let request = "\(failure.method) \(failure.url)"
        let message: String
        switch failure.status {
        case 300...399:
            let target = failure.headers["Location"].map { HTTPRedaction.default.redact(urlString: $0) }
            message =
                target.map { "The server redirected \(request) (HTTP \(failure.status)) to \($0); fetch does not follow redirects, so fetch that URL instead." }
                ?? "The server answered \(request) with a redirect (HTTP \(failure.status)) that names no target; fetch does not follow redirects: check the URL."
        case 401:
            message = "The server asks for credentials for \(request) (HTTP 401); fetch sends none with a plain URL: fetch it as REMOTE:PATH through a remote that has them."
        case 403:
            message = "The server refused \(request) (HTTP 403); check that the URL is public, or fetch it as REMOTE:PATH through a remote allowed to read it."
        case 400...499 where error.code == .invalidConfiguration:
            message = "The server refused \(request) (HTTP \(failure.status)); check the URL."
        default:
            return error
        }
        let code: BuckiaError.Code = failure.status == 401 ? .unauthorized : failure.status == 403 ? .permissionDenied : .io
        return BuckiaError(code, message, operation: "fetch", cause: failure)
    }
}
