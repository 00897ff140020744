// The program Tools/check/check-consumer builds from the README's manifest: it links the `Buckia`
// product, says which version it got, and lists the provider types a configuration can name.
import Buckia

print("Buckia \(BuckiaVersion.current)")
print(ProviderRegistry.builtIn.registeredTypes.map(\.rawValue).joined(separator: " "))
