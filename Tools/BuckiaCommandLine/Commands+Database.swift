import Buckia
import BuckiaSQLite
import Foundation

extension CLI {
    static let dbCommand = Command(
        name: "db", summary: "Back up an SQLite database, and make, inspect, apply and send diff files between users.",
        usage: "db backup DB [DEST] | restore BACKUP DB | diff OLD NEW --sender ID [--sign-key KEY_ID] [-o DIR] | apply DB DIFF... [--keys USER.jwk]... [--accept ID,...] | inspect DIFF | status DB | send DIFF REMOTE:USERPATH",
        positionals: 2...1000,
        options: [
            .value("method", "backup: online (SQLite's backup API, the default) or vacuum (VACUUM INTO)."),
            .value("sender", "diff: the user id the diff is sent by."),
            .value("output", short: "o", "diff: the folder to write the diff into (default the current one); it is named <KSUID>.sqlite."),
            .value("conflict", "apply: incoming (the default: incoming rows replace local ones) or local (local rows are kept)."),
            .value("sign-key", "diff: sign the diff with this saved Ed25519 key (made by buckia token keygen; buckia token jwks prints the key set to publish at keys/<user>.jwk), so recipients know it is from --sender."),
            .value(
                "keys",
                "apply: a sender's published key set (JSON Web Keys, named <user>.jwk as at keys/<user>.jwk); give it once per sender. With it, only diffs signed by a published key of their sender apply."
            ),
            .value("accept", "apply: the senders accepted, comma-separated (default: every sender --keys names)."),
            .flag("json", "Print one JSON object per diff (apply, inspect) or for the status."),
        ],
        details: """
            backup copies DB consistently while other programs keep writing, checks the copy, and
            renames it over DEST (default DB's name with .backup.sqlite); restore puts BACKUP back
            into DB atomically, refusing a backup that fails quick_check. diff writes the diff
            that turns OLD into NEW, signed with --sign-key. apply applies each DIFF in KSUID order, each exactly once:
            one already applied is reported and skipped; one refused changes nothing and the rest
            still apply (exit 9 at the end). With --keys, only diffs their sender signed with a
            published key apply, from the --accept senders. inspect checks a diff and prints its manifest and
            tables without applying it. send uploads DIFF to USERPATH/inbound/ on REMOTE, never
            over an existing file. Docs/Database.md describes the format.
            """
    ) { invocation in
        let arguments = invocation.positionals
        let json = invocation.arguments.flag("json")
        func needs(_ count: Int) throws {
            guard arguments.count == count else {
                throw UsageError(description: "db \(arguments[0]) takes \(count - 1) argument\(count == 2 ? "" : "s"); see buckia db --help.")
            }
        }
        func local(_ argument: String) throws -> URL {
            guard case .local(let url) = Location(argument) else {
                throw UsageError(description: "\(argument.debugDescription) is a remote path; db \(arguments[0]) works on local files.")
            }
            return url
        }
        switch arguments[0] {
        case "backup":
            guard (2...3).contains(arguments.count) else { throw UsageError(description: "db backup takes DB and an optional DEST.") }
            let database = try local(arguments[1])
            let destination = arguments.count == 3 ? try local(arguments[2]) : database.deletingPathExtension().appendingPathExtension("backup.sqlite")
            let method: BackupMethod
            switch invocation.arguments.value("method") ?? "online" {
            case "online": method = .onlineBackup
            case "vacuum": method = .vacuumInto
            case let other: throw UsageError(description: "Unknown --method \(other.debugDescription); use online or vacuum.")
            }
            let result = try await BlockingWork.run("backup") { try DatabaseBackup.write(from: database, to: destination, method: method) }
            Console.out("backed up \(database.path.terminalSafe) to \(result.url.path.terminalSafe): \(result.size) bytes, \(method == .onlineBackup ? "online backup" : "VACUUM INTO")")
        case "restore":
            try needs(3)
            let backup = try local(arguments[1]), database = try local(arguments[2])
            try await BlockingWork.run("restore") { try DatabaseBackup.restore(from: backup, to: database) }
            Console.out("restored \(database.path.terminalSafe) from \(backup.path.terminalSafe)")
        case "diff":
            try needs(3)
            guard let sender = invocation.arguments.value("sender") else { throw UsageError(description: "db diff needs --sender ID: the user the diff is from.") }
            try UsageError.checking { try DiffWriter.check(sender: sender) }
            let old = try local(arguments[1]), new = try local(arguments[2])
            let folder = URL(fileURLWithPath: invocation.arguments.value("output") ?? FileManager.default.currentDirectoryPath, isDirectory: true)
            var signingKey: UserTokenSigningKey?
            if let keyId = invocation.arguments.value("sign-key") {
                let tokens = TokenManager(store: FileSecretStore.standard(environment: invocation.environment))
                guard let key = try tokens.signingKey(keyId: keyId) else {
                    throw BuckiaError(.notFound, "No signing key \(keyId.debugDescription) is saved; make one with buckia token keygen --key-id \(keyId), and publish buckia token jwks at keys/<user>.jwk.", operation: "db diff")
                }
                signingKey = key
            }
            let file = try await BlockingWork.run("diff databases") { [signingKey] in
                try DatabaseComparison.diff(from: old, to: new, sender: sender, in: folder, signingKey: signingKey)
            }
            guard let file else {
                Console.out("no differences: no diff written")
                return .success
            }
            Console.out(file.path.terminalSafe)
        case "apply":
            guard arguments.count >= 3 else { throw UsageError(description: "db apply takes DB and at least one DIFF.") }
            let database = try local(arguments[1])
            try DatabaseFile.check(database, as: "database", for: "db apply")
            let policy: RowConflictPolicy
            switch invocation.arguments.value("conflict") ?? "incoming" {
            case "incoming": policy = .incomingWins
            case "local": policy = .keepLocal
            case let other: throw UsageError(description: "Unknown --conflict \(other.debugDescription); use incoming or local.")
            }
            let files = try arguments.dropFirst(2).map(local)
            for file in files { try DatabaseFile.checkDistinct(file, database, for: "db apply") }
            var senders = SenderVerification.unverified
            let keyFiles = invocation.arguments.all("keys")
            if !keyFiles.isEmpty {
                var keys = SenderKeys()
                for path in keyFiles {
                    let url = try local(path)
                    guard url.pathExtension == "jwk", !url.deletingPathExtension().lastPathComponent.isEmpty else {
                        throw UsageError(description: "--keys \(path.debugDescription): name a sender's key set <user>.jwk, as it is published at keys/<user>.jwk.")
                    }
                    let file = try LocalFile.openForReading(url)
                    defer { file.closeAfterReading() }
                    let size = try file.status().size
                    guard size <= 64 << 10 else {
                        throw BuckiaError(.invalidConfiguration, "--keys \(path.debugDescription) is \(size) bytes; a key set is at most 64 KiB.", operation: "db apply", path: url.path)
                    }
                    try keys.add(jwkSet: try file.read(count: Int(size), at: 0), for: url.deletingPathExtension().lastPathComponent)
                }
                let accepted = invocation.arguments.value("accept").map { Set($0.split(separator: ",").map(String.init)) }
                senders = .signed(by: keys, accepting: accepted)
            } else if invocation.arguments.value("accept") != nil {
                throw UsageError(description: "--accept names senders whose signatures are checked; give their key sets with --keys USER.jwk.")
            }
            // Every DIFF opens as a file before any is applied: a mistyped second name, a folder
            // or a FIFO must not leave the first applied under a failed command.
            for file in files {
                do {
                    try LocalFile.openForReading(file).closeAfterReading()
                } catch let error as BuckiaError where error.code == .notFound {
                    throw BuckiaError(
                        .notFound, "There is no diff file at \(file.path.debugDescription); check the path. No diff was applied.", operation: "db apply", path: file.path)
                } catch let error as BuckiaError {
                    var refusal = error
                    refusal.message = (error.code == .invalidPath ? "The diff file " : "") + error.message + " No diff was applied."
                    throw refusal
                }
            }
            // In KSUID order (names that are not KSUIDs last, where the reader refuses them).
            let ordered = files.sorted { a, b in
                let (x, y) = (KSUID(a.deletingPathExtension().lastPathComponent), KSUID(b.deletingPathExtension().lastPathComponent))
                switch (x, y) {
                case let (x?, y?): return x < y
                case (.some, nil): return true
                default: return false
                }
            }
            let verification = senders
            var refused = 0
            for file in ordered {
                do {
                    let change = try await BlockingWork.run("apply diff") {
                        let connection = try SQLiteConnection(path: database.path, mode: .readWrite(create: false))
                        return try DiffApplier.apply(file, to: connection, options: ApplyOptions(defaultPolicy: policy, senders: verification), now: Date())
                    }
                    if json {
                        emitJSON([
                            "file": file.path, "ksuid": change.id.description, "sender": change.sender, "status": change.wasAlreadyApplied ? "already-applied" : "applied",
                            "upserted": change.upserted, "deleted": change.deleted, "tablesCreated": change.tablesCreated, "columnsAdded": change.columnsAdded,
                            "newerApplied": change.newerApplied.map(\.description), "overwrittenCount": change.overwrittenCount,
                            "overwritten": change.overwritten.map { ["table": $0.table, "key": $0.key.map(\.jsonValue)] as [String: Any] },
                        ])
                    } else if change.wasAlreadyApplied {
                        Console.out("already applied \(change.id) (\(file.lastPathComponent.terminalSafe)): nothing changed")
                    } else {
                        Console.out("applied \(change.id) from \(change.sender.terminalSafe): \(change.upserted) upserted, \(change.deleted) deleted")
                        if let newest = change.newerApplied.last {
                            let rows = change.overwritten.map { "\($0.table)(\($0.key.map(\.displayed).joined(separator: ", ")))".terminalSafe }
                            let more = change.overwrittenCount > rows.count ? ", and \(change.overwrittenCount - rows.count) more" : ""
                            Console.out(
                                "  out of order: \(change.newerApplied.count) newer diff\(change.newerApplied.count == 1 ? " was" : "s were") applied before it (the newest \(newest)); "
                                    + (change.overwrittenCount == 0
                                        ? "it replaced no row the database held."
                                        : "it replaced or deleted \(change.overwrittenCount) row\(change.overwrittenCount == 1 ? "" : "s") the database held, whose newer values it may have overwritten: \(rows.joined(separator: ", "))\(more)."))
                        }
                    }
                } catch let error as BuckiaError where error.cause is DiffProblem {
                    refused += 1
                    if json {
                        emitJSON(["file": file.path, "status": "refused", "reason": (error.cause as? DiffProblem)?.kind ?? "", "message": error.message])
                    } else {
                        Console.report(error)
                    }
                }
            }
            return refused == 0 ? .success : .refused
        case "inspect":
            try needs(2)
            let file = try local(arguments[1])
            let summary = try await BlockingWork.run("inspect diff") { try DiffSummary(contentsOf: file) }
            let manifest = summary.manifest
            if json {
                emitJSON([
                    "ksuid": manifest.id.description, "sender": manifest.sender, "createdAt": manifest.createdAtSeconds,
                    "formatVersion": manifest.formatVersion, "payloadSHA256": manifest.payloadSHA256, "size": summary.fileSize,
                    "signedWith": summary.signature?.keyId ?? NSNull(),
                    "tables": summary.tables.map { table in
                        [
                            "name": table.definition.name, "upserts": table.upserts, "deletes": table.deletes,
                            "columns": table.definition.columns.map { ["name": $0.name, "type": $0.declaredType, "notNull": $0.notNull, "primaryKey": $0.primaryKeyPosition] },
                        ] as [String: Any]
                    },
                ])
            } else {
                Console.out("\(manifest.id) from \(manifest.sender.terminalSafe), made \(manifest.createdAt.ISO8601Format()), format \(manifest.formatVersion), \(summary.fileSize) bytes")
                Console.out("  SHA-256 \(manifest.payloadSHA256) (checked)")
                // Who signed is checked by apply, against the sender's published keys.
                Console.out(summary.signature.map { "  signed with the key \($0.keyId.terminalSafe) (not checked here: apply --keys checks it)" } ?? "  unsigned")
                for table in summary.tables {
                    let columns = table.definition.columns.map { column in
                        column.name + (column.declaredType.isEmpty ? "" : " \(column.declaredType)") + (column.primaryKeyPosition > 0 ? " key \(column.primaryKeyPosition)" : "")
                    }
                    Console.out("  \(table.definition.name): \(table.upserts) upserts, \(table.deletes) deletes; columns \(columns.joined(separator: ", "))")
                }
            }
        case "status":
            try needs(2)
            let database = try local(arguments[1])
            try DatabaseFile.check(database, as: "database", for: "db status")
            let status = try await BlockingWork.run("database status") { try DatabaseStatus(database: database) }
            if json {
                emitJSON([
                    "database": database.path, "size": status.databaseSize ?? 0, "applied": status.appliedCount, "newestApplied": status.newestApplied?.description ?? NSNull(),
                    "refused": status.refused.map { ["ksuid": $0.id.description, "reason": $0.reason] },
                ])
            } else {
                Console.out("\(database.path.terminalSafe): \(status.databaseSize ?? 0) bytes")
                Console.out("  \(status.appliedCount) diff\(status.appliedCount == 1 ? "" : "s") applied" + (status.newestApplied.map { ", the newest \($0)" } ?? ""))
                for refused in status.refused { Console.out("  refused \(refused.id): \(refused.reason.terminalSafe)") }
            }
        case "send":
            try needs(3)
            let file = try local(arguments[1])
            guard case .remote(let name, let path) = Location(arguments[2]), !path.trimmedSlashes.isEmpty else {
                throw UsageError(description: "db send needs REMOTE:USERPATH, the user's folder in the bucket (its inbound/ receives the diff).")
            }
            let (provider, _) = try invocation.provider(named: name)
            let key = try await DatabaseManager.send(file, toUserFolder: path.trimmedSlashes, through: provider)
            Console.out("sent \(file.lastPathComponent.terminalSafe) to \(name):\(key.rawValue.terminalSafe)")
        default:
            throw UsageError(description: "Unknown db action \(arguments[0].debugDescription); use backup, restore, diff, apply, inspect, status or send.")
        }
        return .success
    }
}

extension SQLiteValue {
    /// The value as JSON: a number, text, null, or a blob's bytes in base64.
    var jsonValue: Any {
        switch self {
        case .null: NSNull()
        case .integer(let value): value
        case .real(let value): value
        case .text(let value): value
        case .blob(let value): value.base64EncodedString()
        }
    }

    /// The value as a message shows it: text quoted, a blob in hex.
    var displayed: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let value): "x'" + value.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}
