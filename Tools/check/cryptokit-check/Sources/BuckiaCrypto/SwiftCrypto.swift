// In this verification package, BuckiaCrypto is swift-crypto's `Crypto`: CryptoKit's API
// implemented independently of Buckia's libcrypto facade (over BoringSSL on Linux). Buckia's call
// sites compile against it unchanged, and the same tests check their results.
@_exported import Crypto
