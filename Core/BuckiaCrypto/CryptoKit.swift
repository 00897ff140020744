// BuckiaCrypto on Apple platforms is CryptoKit itself: every call site in Buckia is written
// against CryptoKit's names, and this line is all that platform needs.
//
// Never compiled on the Linux machine that builds and tests Buckia (Docs/Platforms.md lists it).
#if canImport(CryptoKit)
@_exported import CryptoKit
#endif
