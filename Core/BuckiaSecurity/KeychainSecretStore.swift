import BuckiaCore
import Foundation

/// When the Keychain lets a secret be read (the `kSecAttrAccessible…` classes): the app
/// chooses, by when it must read its tokens.
public enum KeychainAccessibility: String, Sendable, CaseIterable {
    /// While the device is unlocked.
    case whenUnlocked
    /// After the first unlock since the device started, until it restarts: what a background
    /// sync needs, and the default.
    case afterFirstUnlock
    /// ``whenUnlocked``, and never restored to another device.
    case whenUnlockedThisDeviceOnly
    /// ``afterFirstUnlock``, and never restored to another device.
    case afterFirstUnlockThisDeviceOnly
    /// While unlocked, only on a device with a passcode; removed when the passcode is.
    case whenPasscodeSetThisDeviceOnly
}

/// One generic-password item as ``KeychainSecretStore`` keeps it: the context is the account,
/// the secret's value the item's data, and its dates and metadata (not secret) the item's
/// `kSecAttrGeneric` attribute, so a listing never reads a value.
package struct KeychainItem: Sendable, Hashable {
    /// The context (`kSecAttrAccount`).
    package var account: String
    /// The secret's value, UTF-8 (`kSecValueData`).
    package var data: Data
    /// The dates and metadata, JSON (`kSecAttrGeneric`).
    package var generic: Data

    package init(account: String, data: Data, generic: Data) {
        self.account = account
        self.data = data
        self.generic = generic
    }
}

/// The four Keychain calls the store makes, over the items of one service (and access group).
/// The Security framework's implementation is `Apple/KeychainItems+Security.swift`, compiled
/// only where that framework exists; everything else of the store is compiled and tested on
/// every platform.
package protocol KeychainItems: Sendable {
    /// Adds `item`; false, changing nothing, when its account already has one (`SecItemAdd`,
    /// `errSecDuplicateItem`): the atomic step ``SecretStore/saveIfAbsent(_:for:)`` needs.
    func add(_ item: KeychainItem) throws -> Bool
    /// Replaces the data and attributes of `item`'s account; false when there is none
    /// (`SecItemUpdate`, `errSecItemNotFound`).
    func update(_ item: KeychainItem) throws -> Bool
    /// The item of `account`, value included, or nil (`SecItemCopyMatching`).
    func item(account: String) throws -> KeychainItem?
    /// Removes the item of `account`; whether there was one (`SecItemDelete`).
    func delete(account: String) throws -> Bool
    /// Every item's account and attributes, without values (`kSecMatchLimitAll`).
    func list() throws -> [(account: String, generic: Data)]
}

/// Secrets in the Keychain (Apple platforms): a generic password per context, under the app's
/// service name and, to share them with its extensions, an access group, readable when the
/// ``KeychainAccessibility`` the app chose allows. Create one with
/// `KeychainSecretStore(service:accessGroup:accessibility:)`, which exists where the Security
/// framework does; a store never puts a value in an error or a description.
public final class KeychainSecretStore: SecretStore {
    private let items: any KeychainItems

    /// A store over `items`: the Security framework's, or a table in tests.
    package init(items: any KeychainItems) {
        self.items = items
    }

    public func save(_ secret: StoredSecret, for context: String) throws {
        try SecretContext.check(context)
        let item = try Self.item(secret, context)
        if try items.update(item) { return }
        if try items.add(item) { return }
        // Added by another writer between the two calls: replace it, as a save does.
        guard try items.update(item) else {
            throw BuckiaError(.transient, "The Keychain item \(context) was added and removed while being saved; save it again.", operation: "keychain save")
        }
    }

    public func saveIfAbsent(_ secret: StoredSecret, for context: String) throws -> Bool {
        try SecretContext.check(context)
        return try items.add(Self.item(secret, context))
    }

    public func load(_ context: String) throws -> StoredSecret? {
        try SecretContext.check(context)
        guard let item = try items.item(account: context) else { return nil }
        guard let value = String(data: item.data, encoding: .utf8) else {
            throw BuckiaError(.corrupt, "The Keychain item \(context) does not hold UTF-8 text; delete it and save the secret again.", operation: "keychain load")
        }
        let facts = try Self.facts(item.generic, context)
        return StoredSecret(value: Secret(value), expiresAt: facts.expiresAt, savedAt: facts.savedAt, metadata: facts.metadata ?? [:])
    }

    @discardableResult
    public func delete(_ context: String) throws -> Bool {
        try SecretContext.check(context)
        return try items.delete(account: context)
    }

    /// Every context of the service with its dates, sorted by name; an item another program
    /// put under the service without Buckia's attributes is listed with no dates known
    /// (saved at the start of 1970).
    public func entries() throws -> [SecretEntry] {
        try items.list().map { account, generic in
            let facts: Facts
            do {
                facts = try Self.facts(generic, account)
            } catch {
                facts = Facts(savedAt: Date(timeIntervalSince1970: 0))
            }
            return SecretEntry(context: account, expiresAt: facts.expiresAt, savedAt: facts.savedAt)
        }.sorted { $0.context < $1.context }
    }

    /// What `kSecAttrGeneric` holds: JSON, dates as seconds since 1970.
    struct Facts: Codable {
        var version = 1
        var savedAt: Date
        var expiresAt: Date?
        var metadata: [String: String]?
    }

    /// The format number alone, read first so a newer format is named as such.
    private struct Format: Decodable {
        var version: Int
    }

    static func item(_ secret: StoredSecret, _ context: String) throws -> KeychainItem {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = .sortedKeys
        let facts = Facts(savedAt: secret.savedAt, expiresAt: secret.expiresAt, metadata: secret.metadata)
        return KeychainItem(account: context, data: Data(secret.value.exposedValue.utf8), generic: try encoder.encode(facts))
    }

    static func facts(_ generic: Data, _ context: String) throws -> Facts {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {
            let version = try decoder.decode(Format.self, from: generic).version
            guard version == 1 else {
                throw BuckiaError(.unsupported, "The Keychain item \(context) was saved by a newer Buckia (format \(version)); update Buckia to read it.", operation: "keychain load")
            }
            return try decoder.decode(Facts.self, from: generic)
        } catch let error as BuckiaError {
            throw error
        } catch {
            throw BuckiaError(.corrupt, "The Keychain item \(context) has no readable Buckia attributes (kSecAttrGeneric); delete it and save the secret again.", operation: "keychain load")
        }
    }
}
