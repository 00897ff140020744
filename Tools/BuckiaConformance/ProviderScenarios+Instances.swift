import BuckiaCore
import Foundation

extension ProviderConformance {
    /// Scenarios about the provider as a whole: what it declares, what survives a new
    /// instance, and how it is built from a configuration.
    static var instanceScenarios: [ProviderScenario] {
        [
            ProviderScenario(
                "capabilities: declared names are known",
                contract: "Every capability the provider declares is one Buckia defines or a dotted name of a third party's; a misspelt one would silently never apply."
            ) { context in
                let unknown = context.provider.capabilities.features.filter { !$0.isExtension && !Capability.known.contains($0) }
                try Expect.that(unknown.isEmpty, "the provider declares capabilities Buckia does not define: \(unknown.sorted().map(\.rawValue))")
            },
            ProviderScenario(
                "persistence: data survives a new instance",
                contract: "What one instance wrote, a new instance over the same configuration reads, stats and lists, and can delete.",
                requires: [.persistent]
            ) { context in
                let data = ProviderScenarioContext.pattern(count: 3_000, seed: 11)
                let key = try context.key("kept/across-instances.bin")
                try await context.provider.uploadData(data, remotePath: key, options: UploadOptions())
                let fresh = try await context.reopen()
                try Expect.sameBytes(try await fresh.readData(remotePath: key, range: nil), data, "bytes read by a new instance")
                try Expect.equal(try await fresh.stat(remotePath: key)?.size, Int64(data.count), "size stat reports through a new instance")
                var listed: [String] = []
                for try await entry in fresh.list(ListOptions(prefix: context.prefix)) { listed.append(entry.path) }
                try Expect.equal(listed, [key.rawValue], "keys a new instance lists")
                try await fresh.deleteFile(remotePath: key)
                try Expect.that(try await context.provider.stat(remotePath: key) == nil, "an object a new instance deleted is still there for the first")
            },
            ProviderScenario(
                "configuration: unknown options are refused",
                contract: "A configuration with an option the provider does not read fails with invalidConfiguration naming it, instead of being silently ignored."
            ) { context in
                let route = try context.pluginRoute()
                var configuration = route.configuration
                let misspelt = "buckiaConformanceMisspeltOption"
                configuration.options[misspelt] = "1"
                do {
                    let provider = try route.make(configuration)
                    throw ConformanceFailure("a configuration with the unknown option \(misspelt.debugDescription) built a \(provider.providerType) provider")
                } catch let error as BuckiaError {
                    try Expect.equal(error.code, .invalidConfiguration, "the error for an unknown option")
                    try Expect.that("\(error)".contains(misspelt), "the error does not name the unknown option: \(error)")
                }
            },
            ProviderScenario(
                "registry: built by its type name",
                contract: "The registry builds the provider from its configuration under the type name the configuration gives; the instance reports that name and the capabilities of the one under test, and shares its data."
            ) { context in
                let route = try context.pluginRoute()
                let built = try route.make(route.configuration)
                try Expect.equal(built.providerType, route.configuration.provider, "the built provider's type name")
                try Expect.equal(built.capabilities, context.provider.capabilities, "capabilities of a second provider built from the same configuration")
                let key = try context.key("registry.txt")
                try await built.uploadData(Data("through the registry".utf8), remotePath: key, options: UploadOptions())
                let seen = try await context.provider.stat(remotePath: key)
                if context.provider.capabilities.supports(.persistent) {
                    try Expect.equal(seen?.size, 20, "an object written by a provider the registry built, seen by the one under test")
                }
                try Expect.sameBytes(try await built.readData(remotePath: key, range: nil), Data("through the registry".utf8), "bytes read back through the registry's provider")
            },
        ]
    }
}
