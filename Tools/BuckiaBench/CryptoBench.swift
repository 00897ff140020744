#if os(macOS) || os(Linux)
import Buckia
import Foundation

#if canImport(COpenSSL)
import COpenSSL
#endif

extension BenchCommand {
    /// `crypto`: Buckia's hashing, HMAC, AES-GCM and scrypt, through the APIs the rest of Buckia
    /// calls, beside libcrypto called directly in the same run (the limit: the facade's job is to
    /// cost nothing on top of it).
    static func crypto(_ arguments: [String]) throws -> Int32 {
        var total = 256 << 20
        var repeats = 5
        var index = 0
        while index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch arguments[index] {
            case "--total-mib": total = max(1, Int(value) ?? 256) << 20
            case "--repeat": repeats = max(1, Int(value) ?? 5)
            default: break
            }
            index += 2
        }
        let piece = 1 << 20
        let data = Data((0..<piece).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        func median(_ body: () throws -> Void) rethrows -> Double {
            var times: [Double] = []
            for _ in 0..<repeats {
                let start = ContinuousClock.now
                try body()
                let elapsed = ContinuousClock.now - start
                times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }
            return times.sorted()[times.count / 2]
        }
        let mib = Double(total) / Double(1 << 20)
        print("\(total >> 20) MiB in 1 MiB pieces, median of \(repeats) runs (MiB/s; higher is better)")
        print("what                                 Buckia     libcrypto directly   ratio")
        func row(_ name: String, _ buckia: Double, _ limit: Double?) {
            let buckiaRate = mib / buckia
            let label = name.padding(toLength: 32, withPad: " ", startingAt: 0)
            if let limit {
                let limitRate = mib / limit
                print(label + String(format: " %10.0f %15.0f %12.2f", buckiaRate, limitRate, buckiaRate / limitRate))
            } else {
                print(label + String(format: " %10.0f", buckiaRate) + String(repeating: " ", count: 15) + "—")
            }
        }
        for algorithm in [HashAlgorithm.sha256, .md5, .sha1] {
            let buckia = try median {
                let hasher = try DigestHasher(algorithm)
                for _ in 0..<(total / piece) { data.withUnsafeBytes { hasher.update($0) } }
                _ = hasher.finalize()
            }
            row("\(algorithm.rawValue) (DigestHasher)", buckia, rawDigest(algorithm, data, pieces: total / piece, median: { median($0) }))
        }
        let both = try median {
            let set = try DigestSet([.md5, .sha256])
            for _ in 0..<(total / piece) { data.withUnsafeBytes { set.update($0) } }
            _ = set.finalize()
        }
        row("md5 + sha256 (DigestSet)", both, nil)
        let key = [UInt8](repeating: 7, count: 32)
        let nonce = [UInt8](repeating: 9, count: 12)
        let seal = try median {
            for _ in 0..<(total / piece) { _ = try AESGCM.seal(data, key: key, nonce: nonce) }
        }
        row("AES-256-GCM seal (AESGCM)", seal, rawSeal(data, key: key, nonce: nonce, pieces: total / piece, median: { median($0) }))
        let box = try AESGCM.seal(data, key: key, nonce: nonce)
        let open = try median {
            for _ in 0..<(total / piece) { _ = try AESGCM.open(box, key: key) }
        }
        row("AES-256-GCM open (AESGCM)", open, nil)

        let messages = 200_000
        let message = Array(repeating: UInt8(ascii: "m"), count: 100)
        let hmac = median {
            for index in 0..<messages { _ = HMAC.sha256(key: key, message: message + [UInt8(truncatingIfNeeded: index)]) }
        }
        print(String(format: "HMAC-SHA256 of 101-byte messages: %.0f per second (Buckia)%@", Double(messages) / hmac, rawHMAC(key, message, messages, { median($0) })))

        let scryptRepeats = 3
        let passphrase = Secret("correct horse battery staple")
        let salt = [UInt8](repeating: 1, count: 16)
        var scryptTimes: [Double] = []
        for _ in 0..<scryptRepeats {
            let start = ContinuousClock.now
            _ = try PassphraseKey.scrypt(passphrase, salt: salt, cost: .interactive)
            let elapsed = ContinuousClock.now - start
            scryptTimes.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        print(String(format: "scrypt N=2^15, r=8, p=1 (the secret store's cost): %.3f s (Buckia, median of %d)%@",
                     scryptTimes.sorted()[scryptRepeats / 2], scryptRepeats, rawScrypt(passphrase, salt, scryptRepeats)))
        return 0
    }

    #if canImport(COpenSSL)
    private static func rawDigest(_ algorithm: HashAlgorithm, _ data: Data, pieces: Int, median: (() -> Void) -> Double) -> Double? {
        let md: OpaquePointer?
        switch algorithm {
        case .sha256: md = EVP_sha256()
        case .md5: md = EVP_md5()
        case .sha1: md = EVP_sha1()
        case .crc32c: return nil
        }
        return median {
            guard let context = EVP_MD_CTX_new() else { return }
            defer { EVP_MD_CTX_free(context) }
            EVP_DigestInit_ex(context, md, nil)
            for _ in 0..<pieces { data.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) } }
            var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            EVP_DigestFinal_ex(context, &output, &length)
        }
    }

    private static func rawSeal(_ data: Data, key: [UInt8], nonce: [UInt8], pieces: Int, median: (() -> Void) -> Double) -> Double? {
        median {
            let input = [UInt8](data)
            var output = [UInt8](repeating: 0, count: input.count)
            var tag = [UInt8](repeating: 0, count: 16)
            for _ in 0..<pieces {
                guard let context = EVP_CIPHER_CTX_new() else { return }
                var length: Int32 = 0
                EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce)
                EVP_EncryptUpdate(context, &output, &length, input, Int32(input.count))
                EVP_EncryptFinal_ex(context, &tag, &length)
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, &tag)
                EVP_CIPHER_CTX_free(context)
            }
        }
    }

    private static func rawHMAC(_ key: [UInt8], _ message: [UInt8], _ count: Int, _ median: (() -> Void) -> Double) -> String {
        let seconds = median({
            var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            for index in 0..<count {
                let bytes = message + [UInt8(truncatingIfNeeded: index)]
                _ = COpenSSL.HMAC(EVP_sha256(), key, Int32(key.count), bytes, bytes.count, &output, &length)
            }
        })
        return String(format: "; libcrypto's HMAC() directly: %.0f per second", Double(count) / seconds)
    }

    private static func rawScrypt(_ passphrase: Secret, _ salt: [UInt8], _ repeats: Int) -> String {
        var times: [Double] = []
        let password = Array(passphrase.exposedValue.utf8)
        var key = [UInt8](repeating: 0, count: 32)
        for _ in 0..<repeats {
            let start = ContinuousClock.now
            let status = password.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    EVP_PBE_scrypt($0.baseAddress, $0.count, salt, salt.count, 1 << 15, 8, 1, 64 << 20, &key, key.count)
                }
            }
            let elapsed = ContinuousClock.now - start
            guard status == 1 else { return "; libcrypto's EVP_PBE_scrypt failed" }
            times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        return String(format: "; libcrypto's EVP_PBE_scrypt: %.3f s", times.sorted()[repeats / 2])
    }
    #else
    private static func rawDigest(_: HashAlgorithm, _: Data, pieces: Int, median: (() -> Void) -> Double) -> Double? { nil }
    private static func rawSeal(_: Data, key: [UInt8], nonce: [UInt8], pieces: Int, median: (() -> Void) -> Double) -> Double? { nil }
    private static func rawHMAC(_: [UInt8], _: [UInt8], _: Int, _: (() -> Void) -> Double) -> String { "" }
    private static func rawScrypt(_: Secret, _: [UInt8], _: Int) -> String { "" }
    #endif
}
#endif
