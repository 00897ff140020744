import Buckia
import Foundation

extension CLI {
    static let userCommand = Command(
        name: "user", summary: "Set up, sync and share a user folder: the seed's sequence, one command each.",
        usage: "user init DIR --user ID [--publish REMOTE:BASE] | sync DIR REMOTE:BASE --user ID [--db APP.db] [--accept ID,...] [--no-originals] [--json] | share DIFF REMOTE:BASE --to ID [--seal] | status DIR --user ID [--db APP.db] [--json]",
        positionals: 2...3,
        options: [
            .value("user", "init, sync, status: the user whose folder DIR/ID is."),
            .value("db", "sync, status: the app's database, which inbound diffs are applied to and backup.sqlite is a backup of (default DIR/ID.sqlite)."),
            .value("accept", "sync: the senders whose diffs are applied, comma-separated (default: every user who published keys at BASE/keys/)."),
            .flag("no-originals", "sync: leave originals/ out of the upload."),
            .value("publish", "init: publish the user's public keys at REMOTE:BASE/keys/ID.jwk."),
            .value("to", "share: the user whose inbound/ receives the diff."),
            .flag("seal", "share: seal the diff to the recipient's published key (HPKE), so only they can read it."),
            .flag("json", "sync, status: print one JSON object."),
        ],
        details: """
            init makes DIR/ID with originals/, reworked/ and inbound/, and ID's keys in the secret
            store: ID.sign (Ed25519, signs the diffs ID sends) and ID.seal (X25519, opens the diffs
            sealed to ID); --publish puts their public halves at BASE/keys/ID.jwk, which every user
            reads and only ID may write. sync runs the seed's sequence against REMOTE:BASE/ID: the
            inbound change files after the last applied one are listed, downloaded, checked (signed by
            their sender's published key, from an accepted sender; unsigned or forged ones are refused,
            exit 9) and applied once each; the database is backed up to backup.sqlite, which is uploaded
            with new files in originals/ and reworked/ (never over files already there). share sends a
            diff made by buckia db diff --sign-key to BASE/ID/inbound/ for --to, as a new file only,
            sealed with --seal. status prints what has been applied and what waits.
            """
    ) { invocation in
        let arguments = invocation.positionals
        let json = invocation.arguments.flag("json")
        let tokens = TokenManager(store: FileSecretStore.standard(environment: invocation.environment))
        func user() throws -> String {
            guard let user = invocation.arguments.value("user") else { throw UsageError(description: "user \(arguments[0]) needs --user ID.") }
            try UsageError.checking { _ = try UserKeys.keyIds(of: user) }
            return user
        }
        func folder(_ argument: String, for user: String) throws -> FolderStructureConfiguration {
            guard case .local(let url) = Location(argument) else {
                throw UsageError(description: "\(argument.debugDescription) is a remote path; DIR is the local folder user folders live in.")
            }
            return FolderStructureConfiguration(rootPath: url.path, userId: user)
        }
        func remote(_ argument: String) throws -> (name: String, base: String, provider: any StorageProvider) {
            guard case .remote(let name, let path) = Location(argument) else {
                throw UsageError(description: "\(argument.debugDescription) is not REMOTE:BASE, the folder of the bucket user folders live in.")
            }
            let (provider, _) = try invocation.provider(named: name)
            let base = path.trimmedSlashes.isEmpty ? "" : path.trimmedSlashes + "/"
            try UsageError.checking { try ObjectKey.validatePrefix(base) }
            return (name, base, provider)
        }
        switch arguments[0] {
        case "init":
            guard arguments.count == 2 else { throw UsageError(description: "user init takes DIR; see buckia user --help.") }
            let id = try user()
            let folder = try UserFolder.prepare(try folder(arguments[1], for: id))
            for sub in [folder.originals, folder.reworked, folder.inbound] { try LocalFile.createDirectories(sub.path) }
            let keys = try UserKeys.stored(for: id, in: tokens, create: true)
            Console.out("\(id.terminalSafe): folder \(folder.url.path.terminalSafe), signing key \(keys.signing.keyId), sealing key \(keys.sealing.keyId)")
            if let target = invocation.arguments.value("publish") {
                let place = try remote(target)
                let key = try await keys.publish(for: id, to: place.provider, prefix: place.base + "keys/")
                Console.out("published \(place.name):\(key.rawValue.terminalSafe)")
            }
        case "sync":
            guard arguments.count == 3 else { throw UsageError(description: "user sync takes DIR and REMOTE:BASE; see buckia user --help.") }
            let id = try user()
            let structure = try folder(arguments[1], for: id)
            let place = try remote(arguments[2])
            let keys = try UserKeys.stored(for: id, in: tokens, create: false)
            let accepted = try await acceptedSenders(invocation, provider: place.provider, base: place.base)
            var options = DatabaseManager.Options(signingKey: keys.signing)
            options.apply.senders = .signed(by: try await SenderKeys.fetch(accepted, from: place.provider, prefix: place.base + "keys/"), accepting: Set(accepted))
            options.apply.recipientKeys = [keys.sealing]
            options.keepAppliedFiles = false
            let database = invocation.arguments.value("db").map { URL(fileURLWithPath: $0) }
            let manager = DatabaseManager(
                folderStructure: structure, database: database ?? URL(fileURLWithPath: structure.rootPath ?? ".").appendingPathComponent("\(id).sqlite"),
                options: options)
            let folder = try manager.userFolder()
            for sub in [folder.originals, folder.reworked, folder.inbound] { try LocalFile.createDirectories(sub.path) }
            if FileManager.default.fileExists(atPath: manager.database.path) { try await manager.backupDatabase() }
            let client = try await BuckiaClient(
                configuration: try invocation.remotes().configuration(named: place.name), registry: invocation.registry, environment: invocation.environment,
                resources: invocation.resources)
            let before = try await manager.status()
            let result = try await client.syncUserFolder(
                folder, remoteBase: place.base, includeOriginals: !invocation.arguments.flag("no-originals"), applier: manager)
            let after = try await manager.status()
            let applied = after.appliedCount - before.appliedCount
            let refused = after.refused.filter { entry in !before.refused.contains { $0.id == entry.id } }
            if json {
                let object: [String: Any] = [
                    "user": id, "downloaded": result.inbound.map(\.lastPathComponent), "applied": applied,
                    "refused": refused.map { ["id": $0.id.description, "reason": $0.reason] }, "uploaded": result.uploads.uploaded,
                    "accepted": accepted.sorted(),
                ]
                Console.out(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self))
            } else {
                Console.out(
                    "\(id.terminalSafe): \(result.inbound.count) change file\(result.inbound.count == 1 ? "" : "s") downloaded, \(applied) applied, \(refused.count) refused; \(result.uploads.uploaded) file\(result.uploads.uploaded == 1 ? "" : "s") uploaded")
                for entry in refused { Console.out("  refused \(entry.id): \(entry.reason.terminalSafe)") }
            }
            if !refused.isEmpty { return .refused }
        case "share":
            guard arguments.count == 3 else { throw UsageError(description: "user share takes DIFF and REMOTE:BASE; see buckia user --help.") }
            guard let recipient = invocation.arguments.value("to") else { throw UsageError(description: "user share needs --to ID, the user to send the diff to.") }
            try UsageError.checking { _ = try SenderKeys.location(of: recipient) }
            guard case .local(let file) = Location(arguments[1]) else { throw UsageError(description: "user share sends a local diff file.") }
            let place = try remote(arguments[2])
            var sealedFor: DiffRecipientKey?
            if invocation.arguments.flag("seal") {
                let published = try await SenderKeys.fetch([recipient], from: place.provider, prefix: place.base + "keys/")
                guard let key = published.recipientKeys[recipient]?.values.sorted(by: { $0.keyId < $1.keyId }).first else {
                    throw BuckiaError(
                        .notFound, "\(recipient) has published no key to seal diffs to (\(place.base)keys/\(recipient).jwk); send it unsealed, or ask them to run buckia user init --publish.",
                        operation: "user share")
                }
                sealedFor = key
            }
            let key = try await DatabaseManager.send(file, toUserFolder: place.base + recipient, through: place.provider, sealedFor: sealedFor)
            Console.out("shared \(file.lastPathComponent.terminalSafe) with \(recipient.terminalSafe)\(sealedFor == nil ? "" : ", sealed"): \(place.name):\(key.rawValue.terminalSafe)")
        case "status":
            guard arguments.count == 2 else { throw UsageError(description: "user status takes DIR; see buckia user --help.") }
            let id = try user()
            let structure = try folder(arguments[1], for: id)
            let database = invocation.arguments.value("db").map { URL(fileURLWithPath: $0) }
                ?? URL(fileURLWithPath: structure.rootPath ?? ".").appendingPathComponent("\(id).sqlite")
            let folder = try UserFolder.prepare(structure)
            let status = try DatabaseStatus(database: database, folder: folder)
            if json {
                let object: [String: Any] = [
                    "user": id, "folder": folder.url.path, "database": database.path, "applied": status.appliedCount,
                    "newestApplied": status.newestApplied?.description ?? NSNull(), "pending": status.pending.map(\.lastPathComponent),
                    "refused": status.refused.map { ["id": $0.id.description, "reason": $0.reason] },
                ]
                Console.out(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self))
            } else {
                Console.out("\(id.terminalSafe): \(folder.url.path.terminalSafe)")
                Console.out("  \(status.appliedCount) diff\(status.appliedCount == 1 ? "" : "s") applied" + (status.newestApplied.map { ", the newest \($0)" } ?? ""))
                Console.out("  \(status.pending.count) waiting in inbound/")
                for refused in status.refused { Console.out("  refused \(refused.id): \(refused.reason.terminalSafe)") }
            }
        default:
            throw UsageError(description: "Unknown user action \(arguments[0].debugDescription); use init, sync, share or status.")
        }
        return .success
    }

    /// `--accept`, or every user with a published key set under `base`keys/.
    static func acceptedSenders(_ invocation: Invocation, provider: any StorageProvider, base: String) async throws -> [String] {
        if let list = invocation.arguments.value("accept") {
            let names = list.split(separator: ",").map(String.init)
            for name in names { try UsageError.checking { _ = try SenderKeys.location(of: name) } }
            return names
        }
        var senders: [String] = []
        for try await entry in provider.list(ListOptions(prefix: base + "keys/")) {
            guard let file = entry.file, let name = file.path.dropping(prefix: base + "keys/"), name.hasSuffix(".jwk"), !name.contains("/") else { continue }
            senders.append(String(name.dropLast(4)))
        }
        return senders
    }
}
