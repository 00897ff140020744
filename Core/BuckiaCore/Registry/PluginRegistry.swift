/// The mechanism under ``ProviderRegistry`` and ``EngineRegistry``: type names to factories.
struct PluginRegistry<Kind: StringIdentifier, Configuration: Sendable, Product>: Sendable {
    typealias Factory = @Sendable (Configuration) throws -> Product

    private var factories: [Kind: Factory] = [:]
    let noun: String

    init(noun: String) { self.noun = noun }

    mutating func register(_ kind: Kind, factory: @escaping Factory) throws {
        guard factories[kind] == nil else {
            throw BuckiaError(
                .alreadyExists,
                "A \(noun) of type \(kind.rawValue.debugDescription) is already registered; each type registers once.",
                operation: "register", path: kind.rawValue)
        }
        set(kind, factory: factory)
    }

    /// Puts `factory` under `kind`, replacing any before it: for a set whose types are known
    /// to be distinct (the umbrella's built-ins), where a duplicate cannot arise.
    mutating func set(_ kind: Kind, factory: @escaping Factory) {
        factories[kind] = factory
    }

    var registeredTypes: [Kind] { factories.keys.sorted() }

    func contains(_ kind: Kind) -> Bool { factories[kind] != nil }

    func make(_ kind: Kind, configuration: Configuration) throws -> Product {
        guard let factory = factories[kind] else {
            let known = registeredTypes.map(\.rawValue).joined(separator: ", ")
            throw BuckiaError(
                .invalidConfiguration,
                "No \(noun) of type \(kind.rawValue.debugDescription) is registered; registered types: \(known.isEmpty ? "none" : known).",
                operation: "make \(noun)", path: kind.rawValue)
        }
        return try factory(configuration)
    }
}
