// Compiled only where the Security framework exists (Apple platforms): never on the machines
// that build and test Buckia (Docs/Platforms.md lists this file). Everything the store does
// besides these calls is in KeychainSecretStore.swift, tested everywhere.
#if canImport(Security)
import BuckiaCore
import Foundation
import Security

extension KeychainSecretStore {
    /// A store of generic passwords in the data-protection Keychain under `service`, shared
    /// with the app's extensions through `accessGroup` (a Keychain group of its entitlements),
    /// readable as `accessibility` allows.
    public convenience init(service: String, accessGroup: String? = nil, accessibility: KeychainAccessibility = .afterFirstUnlock) {
        self.init(items: SecurityKeychainItems(service: service, accessGroup: accessGroup, accessibility: accessibility))
    }
}

/// ``KeychainItems`` over `SecItemAdd`, `SecItemUpdate`, `SecItemCopyMatching` and `SecItemDelete`.
struct SecurityKeychainItems: KeychainItems {
    let service: String
    let accessGroup: String?
    let accessibility: KeychainAccessibility

    func add(_ item: KeychainItem) throws -> Bool {
        var attributes = query(item.account)
        attributes[kSecValueData as String] = item.data
        attributes[kSecAttrGeneric as String] = item.generic
        attributes[kSecAttrAccessible as String] = accessible
        let status = SecItemAdd(attributes as CFDictionary, nil)
        if status == errSecDuplicateItem { return false }
        try check(status, "add", item.account)
        return true
    }

    func update(_ item: KeychainItem) throws -> Bool {
        let changes: [String: Any] = [
            kSecValueData as String: item.data, kSecAttrGeneric as String: item.generic, kSecAttrAccessible as String: accessible,
        ]
        let status = SecItemUpdate(query(item.account) as CFDictionary, changes as CFDictionary)
        if status == errSecItemNotFound { return false }
        try check(status, "update", item.account)
        return true
    }

    func item(account: String) throws -> KeychainItem? {
        var search = query(account)
        search[kSecReturnData as String] = true
        search[kSecReturnAttributes as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        try check(status, "read", account)
        guard let found = result as? [String: Any], let data = found[kSecValueData as String] as? Data else {
            throw BuckiaError(.corrupt, "The Keychain answered for \(account) without the item's data.", operation: "keychain read")
        }
        return KeychainItem(account: account, data: data, generic: found[kSecAttrGeneric as String] as? Data ?? Data())
    }

    func delete(account: String) throws -> Bool {
        let status = SecItemDelete(query(account) as CFDictionary)
        if status == errSecItemNotFound { return false }
        try check(status, "delete", account)
        return true
    }

    func list() throws -> [(account: String, generic: Data)] {
        var search = query(nil)
        search[kSecReturnAttributes as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitAll
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return [] }
        try check(status, "list", service)
        return (result as? [[String: Any]] ?? []).compactMap { found in
            (found[kSecAttrAccount as String] as? String).map { ($0, found[kSecAttrGeneric as String] as? Data ?? Data()) }
        }
    }

    /// The items of this service (and access group), or the one of `account`.
    private func query(_ account: String?) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecUseDataProtectionKeychain as String: true,
        ]
        if let account { query[kSecAttrAccount as String] = account }
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    private var accessible: CFString {
        switch accessibility {
        case .whenUnlocked: kSecAttrAccessibleWhenUnlocked
        case .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock
        case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        case .whenPasscodeSetThisDeviceOnly: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
        }
    }

    /// A typed error for a status that is not success, with the system's words for it.
    private func check(_ status: OSStatus, _ operation: String, _ name: String) throws {
        guard status != errSecSuccess else { return }
        let words = (SecCopyErrorMessageString(status, nil) as String?) ?? "no description"
        let code: BuckiaError.Code = switch status {
        case errSecInteractionNotAllowed: .permissionDenied
        case errSecMissingEntitlement: .invalidConfiguration
        default: .io
        }
        let advice = switch status {
        case errSecInteractionNotAllowed: " The device is locked and the store's accessibility (\(accessibility.rawValue)) does not allow reading now."
        case errSecMissingEntitlement: " The app lacks the Keychain entitlement for access group \(accessGroup ?? "(none)")."
        default: ""
        }
        throw BuckiaError(code, "The Keychain refused to \(operation) \(name): \(words) (OSStatus \(status)).\(advice)", operation: "keychain \(operation)")
    }
}
#endif
