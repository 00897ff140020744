import Buckia
import Testing

/// The umbrella's registries hold every built-in under its own type: they are assembled without
/// a duplicate check (`init(distinct:)`), so a type two built-ins shared would lose one here.
@Suite("Built-in registries")
struct BuiltInRegistryTests {
    @Test("Every built-in provider and engine is registered, each under its own type")
    func everyBuiltIn() {
        #expect(ProviderRegistry.builtIn.registeredTypes == [.b2, .bunny, .local, .memory, .s3])
        #expect(EngineRegistry.builtIn.registeredTypes == [.chunk, .disk, .memory, .sqlite])
    }
}
