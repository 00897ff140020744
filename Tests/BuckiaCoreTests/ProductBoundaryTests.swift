import BuckiaCore
import BuckiaTestSupport
import Foundation
import Testing

/// What each library product may bring with it, read from the manifest as SwiftPM resolves it
/// (`swift package dump-package`): a third party writing a provider or an engine links the
/// contracts and the conformance suite without SQLite, libcurl, the catalog or the cache.
struct ProductBoundaryTests {
    /// The manifest's targets, each with the targets it depends on (on any platform).
    static func targetGraph() throws -> (products: [String: [String]], dependencies: [String: [String]]) {
        // A scratch folder of its own: the running `swift test` holds the package's .build.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-dump-\(UUID().uuidString)")
        let run = try ToolRun.run("swift", ["package", "--package-path", PlatformSourceTests.root.path, "--scratch-path", scratch.path, "dump-package"])
        if FileManager.default.fileExists(atPath: scratch.path) { try FileManager.default.removeItem(at: scratch) }
        try #require(run.status == 0, "swift package dump-package: \(run.errors)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        var products: [String: [String]] = [:]
        for product in manifest["products"] as? [[String: Any]] ?? [] {
            if let name = product["name"] as? String { products[name] = product["targets"] as? [String] ?? [] }
        }
        var dependencies: [String: [String]] = [:]
        for target in manifest["targets"] as? [[String: Any]] ?? [] {
            guard let name = target["name"] as? String else { continue }
            // Each dependency is {"byName": [NAME, condition]} or {"target": [NAME, condition]}.
            dependencies[name] = (target["dependencies"] as? [[String: Any]] ?? []).compactMap { entry in
                (entry["byName"] as? [Any] ?? entry["target"] as? [Any])?.first as? String
            }
        }
        return (products, dependencies)
    }

    /// Every target a product's targets reach.
    static func closure(of product: String, in graph: (products: [String: [String]], dependencies: [String: [String]])) throws -> Set<String> {
        reach(try #require(graph.products[product], "Package.swift has no product \(product)"), in: graph.dependencies)
    }

    /// Every target reached from `start` (`start` included) along `dependencies`.
    static func reach(_ start: [String], in dependencies: [String: [String]]) -> Set<String> {
        var reached = Set<String>()
        var pending = start
        while let next = pending.popLast() {
            guard reached.insert(next).inserted else { continue }
            pending += dependencies[next] ?? []
        }
        return reached
    }

    static let sqliteAndCurl: Set<String> = ["CSQLite", "CCurl", "BuckiaSQLite", "BuckiaHTTP"]

    @Test("A product reaches none of what it must not bring", arguments: [
        ("BuckiaCore", sqliteAndCurl),
        ("BuckiaProviderKit", sqliteAndCurl),
        ("BuckiaUserFolder", sqliteAndCurl),
        ("BuckiaConformance", sqliteAndCurl.union(["BuckiaSync", "BuckiaCatalog", "BuckiaResourceCache", "BuckiaMemory"])),
    ])
    func boundaries(product: String, forbidden: Set<String>) throws {
        let reached = try Self.closure(of: product, in: try Self.targetGraph())
        #expect(reached.contains("BuckiaCore"), "the walk found \(reached.sorted())")
        #expect(reached.intersection(forbidden).isEmpty, "\(product) brings \(reached.intersection(forbidden).sorted())")
    }

    /// The plugins: the targets under Providers/ and Engines/, each folder named as its target.
    static func plugins() throws -> Set<String> {
        var names = Set<String>()
        for folder in ["Providers", "Engines"] {
            let url = PlatformSourceTests.root.appendingPathComponent(folder, isDirectory: true)
            for name in try FileManager.default.contentsOfDirectory(atPath: url.path) {
                var isFolder: ObjCBool = false
                if FileManager.default.fileExists(atPath: url.appendingPathComponent(name).path, isDirectory: &isFolder), isFolder.boolValue {
                    names.insert(name)
                }
            }
        }
        return names
    }

    @Test("No plugin reaches another plugin: the umbrella assembles them")
    func pluginsStandApart() throws {
        let graph = try Self.targetGraph()
        let plugins = try Self.plugins()
        #expect(plugins.isSuperset(of: ["BuckiaS3", "BuckiaLocal", "BuckiaDiskEngine", "BuckiaChunkEngine"]), "found \(plugins.sorted())")
        for plugin in plugins.sorted() {
            let reached = Self.reach(try #require(graph.dependencies[plugin], "Package.swift has no target \(plugin)"), in: graph.dependencies)
            #expect(reached.isDisjoint(with: plugins), "\(plugin) reaches \(reached.intersection(plugins).sorted())")
        }
    }

    @Test("No code outside a plugin casts to one of its types: a layer around it would defeat the cast")
    func noCastsToPlugins() throws {
        let root = PlatformSourceTests.root
        let files = { (folder: URL) throws -> [URL] in
            (FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "swift" }
        }
        var owners: [String: String] = [:]
        for plugin in try Self.plugins() {
            let folder = root.appendingPathComponent(FileManager.default.fileExists(atPath: root.appendingPathComponent("Providers/\(plugin)").path) ? "Providers" : "Engines")
                .appendingPathComponent(plugin)
            for file in try files(folder) {
                let text = try String(contentsOf: file, encoding: .utf8)
                for match in text.matches(of: /(?:public|open) (?:final )?(?:class|actor|struct|enum|protocol) (\w+)/) { owners[String(match.1)] = plugin }
            }
        }
        #expect(owners["LocalProvider"] == "BuckiaLocal" && owners["BunnyProvider"] == "BuckiaBunny", "read \(owners.count) types")
        var casts: [String] = []
        for top in ["Core", "Providers", "Engines", "Tools"] {
            for file in try files(root.appendingPathComponent(top)) {
                // Code lines only, each without its `catch let x as Type` clause: catching a
                // plugin's error type is no cast to a plugin.
                let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").filter { !$0.drop { $0 == " " }.hasPrefix("//") }
                for line in lines {
                    let code = line.replacing(/catch (?:let|var) \w+ as \w+/, with: "catch")
                    for match in code.matches(of: /\b(?:as[?!]?|is) (\w+)\b/) {
                        if let owner = owners[String(match.1)], !file.path.contains("/\(owner)/") {
                            casts.append("\(file.lastPathComponent): \(match.0)")
                        }
                    }
                }
            }
        }
        #expect(casts.isEmpty, "\(casts)")
    }

    /// The walk itself: the scenario lists built on SQLite reach it, so an empty answer above is
    /// not a walk that found nothing.
    @Test("The catalog's and the resource cache's scenario lists reach SQLite, and the cache's libcurl")
    func walkFindsWhatIsThere() throws {
        let graph = try Self.targetGraph()
        #expect(try Self.closure(of: "BuckiaCatalogConformance", in: graph).isSuperset(of: ["CSQLite", "BuckiaCatalog", "BuckiaConformance"]))
        #expect(try Self.closure(of: "BuckiaResourceCacheConformance", in: graph).isSuperset(of: ["CSQLite", "CCurl", "BuckiaResourceCache"]))
        #expect(try Self.closure(of: "BuckiaSyncConformance", in: graph).contains("CSQLite"))
    }

    /// The module table in Docs/Architecture.md, row by row: each module and what it depends on.
    static func documentedModules() throws -> [String: [String]] {
        let page = try String(contentsOf: PlatformSourceTests.root.appendingPathComponent("Docs/Architecture.md"), encoding: .utf8)
        let begin = try #require(page.range(of: "<!-- modules: begin -->"), "Architecture.md has no module table")
        let end = try #require(page.range(of: "<!-- modules: end -->"), "Architecture.md's module table has no end")
        var rows: [String: [String]] = [:]
        for line in page[begin.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 2 else { continue }
            let names = { (cell: String) in cell.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) } }
            let module = names(cells[0])[0]
            // A second row for a module would hide the first: that is a mistake in the page.
            guard rows[module] == nil else { throw BuckiaError(.corrupt, "Architecture.md's module table has two rows for \(module).") }
            rows[module] = names(cells[1])
        }
        return rows
    }

    /// The architecture page draws the modules and lists every arrow; this keeps the list true:
    /// every library and executable of the package has its row, and each row names exactly the
    /// targets the manifest says it depends on.
    @Test("Docs/Architecture.md lists every module with exactly its dependencies")
    func architectureTable() throws {
        let graph = try Self.targetGraph()
        let documented = try Self.documentedModules()
        // The tools' and tests' own targets, and the system libraries, are not the library's modules.
        let notModules: Set<String> = ["BuckiaFuzzTargets", "BuckiaFuzz", "BuckiaBench", "BuckiaTestSupport"]
        let modules = graph.dependencies.keys.filter { name in
            name.hasPrefix("Buckia") && !name.hasSuffix("Tests") && !notModules.contains(name)
        }
        #expect(modules.count > 30, "the manifest walk found \(modules.sorted())")
        #expect(Set(documented.keys) == Set(modules), "rows missing: \(Set(modules).subtracting(documented.keys).sorted()); rows for no module: \(Set(documented.keys).subtracting(modules).sorted())")
        // The page draws the Linux build; the portable one (BUCKIA_PORTABLE=1) has no libcurl
        // and no Linux fast paths.
        let absent: Set<String> = ProcessInfo.processInfo.environment["BUCKIA_PORTABLE"] == "1" ? ["CCurl", "CLinux"] : []
        for module in modules.sorted() {
            guard let row = documented[module] else { continue }
            #expect(
                Set(row).subtracting(absent) == Set(graph.dependencies[module] ?? []),
                "\(module): the page says \(row.sorted()), Package.swift says \((graph.dependencies[module] ?? []).sorted())")
        }
    }
}
