import BuckiaCore
import Foundation

/// A secret and what is known about it, as a ``SecretStore`` keeps it.
public struct StoredSecret: Sendable, Hashable, CustomStringConvertible {
    /// The secret itself.
    public var value: Secret
    /// When it stops being useful (a token's expiry), if it does.
    public var expiresAt: Date?
    /// When it was saved.
    public var savedAt: Date
    /// Facts about it that are not secret (an algorithm, a token endpoint, a scope).
    public var metadata: [String: String]

    /// Creates a stored secret.
    public init(value: Secret, expiresAt: Date? = nil, savedAt: Date, metadata: [String: String] = [:]) {
        self.value = value
        self.expiresAt = expiresAt
        self.savedAt = savedAt
        self.metadata = metadata
    }

    /// Whether it has expired at `date`.
    public func isExpired(at date: Date) -> Bool { expiresAt.map { $0 <= date } ?? false }

    public var description: String {
        "StoredSecret(<REDACTED>, saved \(savedAt.formatted(.iso8601))\(expiresAt.map { ", expires \($0.formatted(.iso8601))" } ?? ""))"
    }
}

/// What a store lists: a context's name and dates, never its value.
public struct SecretEntry: Sendable, Hashable {
    /// The context the secret is saved under.
    public var context: String
    /// When it expires, if it does.
    public var expiresAt: Date?
    /// When it was saved.
    public var savedAt: Date
}

/// Where secrets (tokens, keys, refresh tokens) are kept, by context name.
///
/// Buckia ships ``InMemorySecretStore``, ``FileSecretStore`` and, on Apple platforms, the
/// Keychain's ``KeychainSecretStore``. A server plugs in its vault by conforming its own type
/// (Docs/Security.md shows one). Implementations must never put a value in an error, a
/// description or a log line.
public protocol SecretStore: Sendable {
    /// Saves `secret` under `context`, replacing what was there.
    func save(_ secret: StoredSecret, for context: String) throws
    /// The secret saved under `context`, or nil.
    func load(_ context: String) throws -> StoredSecret?
    /// Removes the secret under `context`; returns whether there was one.
    @discardableResult
    func delete(_ context: String) throws -> Bool
    /// Every context with its dates, sorted by name.
    func entries() throws -> [SecretEntry]
    /// Saves `secret` under `context` only if nothing is there, as one step that a concurrent
    /// save cannot slip into; returns whether it saved. Stores that cannot do that atomically
    /// keep the default, which checks and then saves.
    func saveIfAbsent(_ secret: StoredSecret, for context: String) throws -> Bool
    /// Whether a call may wait on a file, a lock, a key derivation or another process, so that
    /// async code runs it on a blocking pool (``AsyncSecretStore``); true unless the store
    /// says otherwise.
    var callsBlock: Bool { get }
}

extension SecretStore {
    public var callsBlock: Bool { true }

    public func saveIfAbsent(_ secret: StoredSecret, for context: String) throws -> Bool {
        guard try load(context) == nil else { return false }
        try save(secret, for: context)
        return true
    }
}

/// The rules for context names, shared by every store.
public enum SecretContext {
    /// Checks a context name: 1–200 characters of `A–Z a–z 0–9 . _ - : @ / +`, whose `/`-separated
    /// parts are neither empty nor `.` or `..`, so that it is safe as a relative file path, a
    /// Keychain account and a log word.
    ///
    /// - Throws: ``BuckiaError/Code/invalidConfiguration`` naming the rule.
    public static func check(_ context: String) throws {
        let allowed = context.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || Array("._-:@/+".utf8).contains(byte)
        }
        let parts = context.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...200).contains(context.utf8.count), allowed, !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw BuckiaError(
                .invalidConfiguration,
                "The secret context \(context.debugDescription) is not valid: use 1–200 letters, digits or . _ - : @ / +, with no empty, '.' or '..' part between slashes.")
        }
    }
}

/// Secrets in this process's memory only: for tests, and for apps that get their tokens anew
/// at each start.
public final class InMemorySecretStore: SecretStore {
    private let secrets = Locked<[String: StoredSecret]>([:])

    /// Creates an empty store.
    public init() {}

    /// False: its calls take a lock around a dictionary.
    public var callsBlock: Bool { false }

    public func save(_ secret: StoredSecret, for context: String) throws {
        try SecretContext.check(context)
        secrets.withLock { $0[context] = secret }
    }

    public func load(_ context: String) throws -> StoredSecret? {
        try SecretContext.check(context)
        return secrets.withLock { $0[context] }
    }

    @discardableResult
    public func delete(_ context: String) throws -> Bool {
        try SecretContext.check(context)
        return secrets.withLock { $0.removeValue(forKey: context) != nil }
    }

    public func saveIfAbsent(_ secret: StoredSecret, for context: String) throws -> Bool {
        try SecretContext.check(context)
        return secrets.withLock { secrets in
            guard secrets[context] == nil else { return false }
            secrets[context] = secret
            return true
        }
    }

    public func entries() throws -> [SecretEntry] {
        secrets.withLock { secrets in
            secrets.map { SecretEntry(context: $0.key, expiresAt: $0.value.expiresAt, savedAt: $0.value.savedAt) }
        }.sorted { $0.context < $1.context }
    }
}

/// Secrets in one file, for Linux machines and servers: `secrets.json`, mode 0600, in a folder
/// of mode 0700 (by default `$XDG_CONFIG_HOME/buckia/secrets`), replaced atomically and synced
/// on every change, under an advisory lock so that processes sharing it do not lose each
/// other's writes.
///
/// With ``Encryption/key(_:)`` or ``Encryption/passphrase(_:)`` the entries are sealed with
/// AES-256-GCM (a passphrase through scrypt); the file then shows only its format, the KDF's
/// salt and costs, and the sealed bytes. A store refuses a file or folder that others can read,
/// as ssh does, rather than use secrets that may have leaked.
public final class FileSecretStore: SecretStore {
    /// How the file is protected at rest.
    public enum Encryption: Sendable {
        /// Not encrypted: the folder's and file's modes are the protection.
        case none
        /// AES-256-GCM with this 32-byte key, as base64 (`BUCKIA_SECRETS_KEY`).
        case key(Secret)
        /// AES-256-GCM with a key derived from this passphrase by scrypt (`BUCKIA_SECRETS_PASSPHRASE`).
        case passphrase(Secret)

        /// The encryption the environment asks for: `BUCKIA_SECRETS_KEY` (a base64 32-byte key),
        /// else `BUCKIA_SECRETS_PASSPHRASE`, else none. A variable that is set but empty (what an
        /// unset shell variable gives, `BUCKIA_SECRETS_PASSPHRASE=$P`) is taken as set: the
        /// store then refuses every read and write (``check()``) instead of falling back to
        /// plain text.
        public static func fromEnvironment(_ environment: [String: String]) -> Encryption {
            if let key = environment["BUCKIA_SECRETS_KEY"] { return .key(Secret(key)) }
            if let passphrase = environment["BUCKIA_SECRETS_PASSPHRASE"] { return .passphrase(Secret(passphrase)) }
            return .none
        }

        /// Refuses an empty key or passphrase: it never means "no encryption".
        ///
        /// - Throws: ``BuckiaCore/BuckiaError/Code/invalidConfiguration`` naming the variable.
        public func check() throws {
            switch self {
            case .none: return
            case .key(let key) where key.exposedValue.isEmpty:
                throw BuckiaError(
                    .invalidConfiguration,
                    "BUCKIA_SECRETS_KEY is set but empty; an empty key never means no encryption. Set it to 32 bytes in base64 (openssl rand -base64 32), or unset it.")
            case .passphrase(let passphrase) where passphrase.exposedValue.isEmpty:
                throw BuckiaError(
                    .invalidConfiguration,
                    "BUCKIA_SECRETS_PASSPHRASE is set but empty; an empty passphrase never means no encryption. Set it to the passphrase, or unset it to keep the store unencrypted.")
            case .key(let key):
                // Checked whenever it is set, even where no store exists yet to open with it.
                _ = try FileSecretStore.rawKey(key)
            case .passphrase: return
            }
        }
    }

    /// The file's largest accepted size: 16 MiB, far beyond any set of tokens.
    static let maximumFileSize = 16 << 20

    /// The folder holding the store.
    public let folder: URL
    /// The store file.
    public var file: URL { folder.appendingPathComponent("secrets.json") }
    private let encryption: Encryption
    private let clock: @Sendable () -> Date
    /// The key derived for the file's salt, so a passphrase costs one scrypt per process.
    private let derived = Locked<(salt: [UInt8], key: [UInt8])?>(nil)

    /// A store in `folder`, created (mode 0700) on the first save.
    public init(folder: URL, encryption: Encryption = .none, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.folder = folder
        self.encryption = encryption
        self.clock = clock
    }

    /// The store for this user: `$XDG_CONFIG_HOME/buckia/secrets` (else `~/.config/buckia/secrets`),
    /// encrypted as ``Encryption/fromEnvironment(_:)`` says.
    public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment) -> FileSecretStore {
        FileSecretStore(folder: defaultFolder(environment: environment), encryption: .fromEnvironment(environment))
    }

    /// `$XDG_CONFIG_HOME/buckia/secrets`, else `$HOME/.config/buckia/secrets`.
    public static func defaultFolder(environment: [String: String]) -> URL {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.config"
        return URL(fileURLWithPath: configHome).appendingPathComponent("buckia/secrets", isDirectory: true)
    }

    public func save(_ secret: StoredSecret, for context: String) throws {
        try SecretContext.check(context)
        try update { $0[context] = secret }
    }

    public func load(_ context: String) throws -> StoredSecret? {
        try SecretContext.check(context)
        return try withLock(exclusive: false) { try read()[context] }
    }

    @discardableResult
    public func delete(_ context: String) throws -> Bool {
        try SecretContext.check(context)
        var existed = false
        try update { existed = $0.removeValue(forKey: context) != nil }
        return existed
    }

    public func saveIfAbsent(_ secret: StoredSecret, for context: String) throws -> Bool {
        try SecretContext.check(context)
        var saved = false
        try update { entries in
            guard entries[context] == nil else { return }
            entries[context] = secret
            saved = true
        }
        return saved
    }

    public func entries() throws -> [SecretEntry] {
        try withLock(exclusive: false) {
            try read().map { SecretEntry(context: $0.key, expiresAt: $0.value.expiresAt, savedAt: $0.value.savedAt) }.sorted { $0.context < $1.context }
        }
    }

    // MARK: File

    private func update(_ change: (inout [String: StoredSecret]) throws -> Void) throws {
        try withLock(exclusive: true) {
            var entries = try read()
            try change(&entries)
            try write(entries)
        }
    }

    /// Runs `body` holding `secrets.lock` (shared for reading, exclusive for changing).
    private func withLock<Result>(exclusive: Bool, _ body: () throws -> Result) throws -> Result {
        try encryption.check()
        try prepareFolder()
        let lockPath = folder.appendingPathComponent("secrets.lock").path
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw BuckiaError.posix(errno, operation: "lock the secret store", path: lockPath) }
        defer { close(descriptor) }
        while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else { throw BuckiaError.posix(errno, operation: "lock the secret store", path: lockPath) }
        }
        return try body()
    }

    /// Creates the folder with mode 0700, or checks that the existing one is the user's alone.
    private func prepareFolder() throws {
        let path = folder.path
        var info = stat()
        if lstat(path, &info) != 0 {
            guard errno == ENOENT else { throw BuckiaError.posix(errno, operation: "open the secret store", path: path) }
            try LocalFile.createDirectories(folder.deletingLastPathComponent().path)
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw BuckiaError.posix(errno, operation: "create the secret store", path: path) }
            guard lstat(path, &info) == 0 else { throw BuckiaError.posix(errno, operation: "open the secret store", path: path) }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw BuckiaError(.invalidConfiguration, "The secret store's folder \(path) is not a folder (a link or a file is there).", path: path)
        }
        try Self.checkPrivate(info, path: path, what: "folder", mode: "700")
        // Whoever may rename entries of the parent could swap the folder after this check: the
        // parent must be the user's or root's, and others may write to it only if it is sticky.
        let parent = folder.deletingLastPathComponent().path
        var parentInfo = stat()
        guard stat(parent, &parentInfo) == 0 else { throw BuckiaError.posix(errno, operation: "open the secret store", path: parent) }
        let sticky = parentInfo.st_mode & S_ISVTX != 0
        guard parentInfo.st_uid == geteuid() || parentInfo.st_uid == 0, parentInfo.st_mode & 0o022 == 0 || sticky else {
            throw BuckiaError(
                .permissionDenied,
                "The folder \(parent) holding the secret store can be changed by other users, who could swap the store for their own; keep the store in a folder only you can write (chmod go-w \(parent)).",
                path: parent)
        }
    }

    private static func checkPrivate(_ info: stat, path: String, what: String, mode: String) throws {
        guard info.st_uid == geteuid() else {
            throw BuckiaError(.permissionDenied, "The secret store's \(what) \(path) belongs to another user; Buckia uses only the user's own.", path: path)
        }
        guard info.st_mode & 0o077 == 0 else {
            throw BuckiaError(
                .permissionDenied,
                "The secret store's \(what) \(path) can be read or changed by other users (mode \(String(info.st_mode & 0o777, radix: 8))); run chmod \(mode) \(path), and replace any secret in it that may have leaked.",
                path: path)
        }
    }

    private func read() throws -> [String: StoredSecret] {
        let path = file.path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if descriptor < 0 {
            if errno == ENOENT { return [:] }
            throw BuckiaError.posix(errno, operation: "read the secret store", path: path)
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            close(descriptor)
            throw BuckiaError.posix(code, operation: "read the secret store", path: path)
        }
        do {
            try Self.checkPrivate(info, path: path, what: "file", mode: "600")
        } catch {
            close(descriptor)
            throw error
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= Self.maximumFileSize else {
            close(descriptor)
            throw damaged("it is not a regular file of at most 16 MiB")
        }
        var data = Data(count: Int(info.st_size))
        var filled = 0
        let readFailure: Int32? = data.withUnsafeMutableBytes { buffer in
            while filled < buffer.count {
                let count = posixRead(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if count == 0 { break }
                filled += count
            }
            return nil
        }
        close(descriptor)
        if let readFailure { throw BuckiaError.posix(readFailure, operation: "read the secret store", path: path) }
        return try decode(data.prefix(filled))
    }

    private func damaged(_ reason: String) -> BuckiaError {
        BuckiaError(
            .corrupt, "The secret store \(file.path) cannot be used: \(reason). Move it aside and save the secrets again (log in again, reissue keys).",
            path: file.path)
    }

    private struct Envelope: Codable {
        var format: String
        var version: Int
        var entries: [String: Entry]?
        var encryption: SealInfo?
        var sealed: String?
    }

    private struct SealInfo: Codable, Equatable {
        var cipher: String
        var kdf: String
        var salt: String?
        var n: UInt64?
        var r: UInt64?
        var p: UInt64?
    }

    private struct Entry: Codable {
        var value: Secret
        var savedAt: Double
        var expiresAt: Double?
        var metadata: [String: String]?
    }

    private func decode(_ data: Data) throws -> [String: StoredSecret] {
        let envelope: Envelope
        do {
            try JSONValidation.validate(data, maximumDepth: 6)
            if let duplicate = JSONDuplicateKeys.first(in: Array(data)) { throw damaged("it names \(duplicate.debugDescription) twice") }
            envelope = try JSONDecoder().decode(Envelope.self, from: data)
        } catch let error as BuckiaError {
            throw error
        } catch {
            throw damaged("it is not a Buckia secret store (\(type(of: error)))")
        }
        guard envelope.format == "buckia-secrets", envelope.version == 1 else {
            throw damaged("its format is \(envelope.format.debugDescription) version \(envelope.version); this Buckia reads buckia-secrets version 1")
        }
        let entries: [String: Entry]
        switch (envelope.encryption, envelope.sealed, envelope.entries) {
        case (nil, nil, let plain?):
            if case .none = encryption {
                entries = plain
            } else {
                throw BuckiaError(
                    .permissionDenied,
                    "The secret store \(file.path) is not encrypted, but an encryption key or passphrase is set; Buckia will not read secrets it cannot authenticate. Remove the file and save the secrets again, or unset BUCKIA_SECRETS_KEY and BUCKIA_SECRETS_PASSPHRASE.",
                    path: file.path)
            }
        case (let info?, let sealed?, nil):
            entries = try unseal(sealed, info)
        default:
            throw damaged("it holds neither plain entries nor one sealed box")
        }
        var result: [String: StoredSecret] = [:]
        for (context, entry) in entries {
            do {
                try SecretContext.check(context)
            } catch {
                throw damaged("it holds an entry with a malformed name")
            }
            func date(_ value: Double) throws -> Date {
                guard value.isFinite, (0...253_402_300_799).contains(value) else { throw damaged("an entry's date is out of range") }
                return Date(timeIntervalSince1970: value)
            }
            result[context] = StoredSecret(
                value: entry.value, expiresAt: try entry.expiresAt.map(date), savedAt: try date(entry.savedAt), metadata: entry.metadata ?? [:])
        }
        return result
    }

    private func write(_ entries: [String: StoredSecret]) throws {
        let plain = entries.mapValues {
            Entry(value: $0.value, savedAt: $0.savedAt.timeIntervalSince1970, expiresAt: $0.expiresAt?.timeIntervalSince1970, metadata: $0.metadata.isEmpty ? nil : $0.metadata)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let envelope: Envelope
        switch encryption {
        case .none:
            envelope = Envelope(format: "buckia-secrets", version: 1, entries: plain)
        case .key, .passphrase:
            let (info, key) = try sealingKey()
            let box = try AESGCM.seal(try encoder.encode(plain), key: key, authenticating: Self.associatedData(info))
            envelope = Envelope(format: "buckia-secrets", version: 1, encryption: info, sealed: box.combined.base64EncodedString())
        }
        try AtomicFile.write(try encoder.encode(envelope), to: file, options: AtomicFile.Options(permissions: 0o600, durable: true))
    }

    /// The sealed box authenticates the KDF and its costs too: a file whose costs were lowered
    /// does not open.
    private static func associatedData(_ info: SealInfo) -> Data {
        Data("buckia-secrets/1/\(info.cipher)/\(info.kdf)/\(info.salt ?? "")/\(info.n ?? 0)/\(info.r ?? 0)/\(info.p ?? 0)".utf8)
    }

    private func sealingKey() throws -> (SealInfo, [UInt8]) {
        switch encryption {
        case .none:
            throw BuckiaError(.invalidConfiguration, "The secret store is not encrypted.")
        case .key(let secret):
            return (SealInfo(cipher: "AES-256-GCM", kdf: "none"), try Self.rawKey(secret))
        case .passphrase(let passphrase):
            if let cached = derived.withLock({ $0 }) {
                let cost = PassphraseKey.ScryptCost.interactive
                return (SealInfo(cipher: "AES-256-GCM", kdf: "scrypt", salt: Data(cached.salt).base64EncodedString(), n: cost.n, r: cost.r, p: cost.p), cached.key)
            }
            let salt = try SecureRandom.bytes(count: 16)
            let cost = PassphraseKey.ScryptCost.interactive
            let key = try PassphraseKey.scrypt(passphrase, salt: salt, cost: cost)
            derived.withLock { $0 = (salt, key) }
            return (SealInfo(cipher: "AES-256-GCM", kdf: "scrypt", salt: Data(salt).base64EncodedString(), n: cost.n, r: cost.r, p: cost.p), key)
        }
    }

    private static func rawKey(_ secret: Secret) throws -> [UInt8] {
        guard let bytes = Data(base64Encoded: secret.exposedValue), bytes.count == AESGCM.keyByteCount else {
            throw BuckiaError(
                .invalidConfiguration,
                "BUCKIA_SECRETS_KEY is not 32 bytes in base64; set it to the key the store was saved with (a new key: openssl rand -base64 32).")
        }
        return Array(bytes)
    }

    private func unseal(_ sealed: String, _ info: SealInfo) throws -> [String: Entry] {
        guard info.cipher == "AES-256-GCM" else { throw damaged("its cipher \(info.cipher.debugDescription) is not AES-256-GCM") }
        let key: [UInt8]
        switch (encryption, info.kdf) {
        case (.none, _):
            throw BuckiaError(
                .permissionDenied,
                "The secret store \(file.path) is encrypted; set BUCKIA_SECRETS_KEY or BUCKIA_SECRETS_PASSPHRASE to the key or passphrase it was saved with.",
                path: file.path)
        case (.key(let secret), "none"):
            key = try Self.rawKey(secret)
        case (.passphrase(let passphrase), "scrypt"):
            guard let saltText = info.salt, let salt = Data(base64Encoded: saltText), salt.count >= 16, let n = info.n, let r = info.r, let p = info.p
            else { throw damaged("its scrypt salt or costs are missing") }
            let cost = PassphraseKey.ScryptCost(n: n, r: r, p: p)
            do {
                try cost.check()
            } catch {
                throw damaged("its scrypt costs N=\(n), r=\(r), p=\(p) are out of the range Buckia accepts")
            }
            if let cached = derived.withLock({ $0 }), cached.salt == Array(salt) {
                key = cached.key
            } else {
                key = try PassphraseKey.scrypt(passphrase, salt: Array(salt), cost: PassphraseKey.ScryptCost(n: n, r: r, p: p))
                if PassphraseKey.ScryptCost(n: n, r: r, p: p) == .interactive { derived.withLock { $0 = (Array(salt), key) } }
            }
        default:
            throw BuckiaError(
                .permissionDenied,
                "The secret store \(file.path) was sealed with \(info.kdf == "scrypt" ? "a passphrase (BUCKIA_SECRETS_PASSPHRASE)" : "a key (BUCKIA_SECRETS_KEY)"), not with what is set now.",
                path: file.path)
        }
        guard let combined = Data(base64Encoded: sealed) else { throw damaged("its sealed box is not base64") }
        let plain: Data
        do {
            plain = try AESGCM.open(try AESGCM.SealedBox(combined: combined), key: key, authenticating: Self.associatedData(info))
        } catch {
            throw BuckiaError(
                .permissionDenied,
                "The secret store \(file.path) does not open with the key or passphrase set: it is the wrong one, or the file was altered.",
                path: file.path)
        }
        do {
            return try JSONDecoder().decode([String: Entry].self, from: plain)
        } catch {
            throw damaged("its sealed entries are not readable")
        }
    }
}

private func posixRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int { read(descriptor, buffer, count) }
