import BuckiaCore
import BuckiaSecurity
import BuckiaSQLite
import BuckiaUserFolder
import Foundation

/// The seed's database manager: backs up the app's SQLite database to the user folder's
/// `backup.sqlite`, creates diff files to send to other users, sends them to their `inbound/`
/// folders, and applies the ones others sent, each exactly once.
///
/// It owns no connection between calls: each operation opens the database, works off the
/// cooperative thread pool, and closes it, so the app keeps its own connections and SQLite's
/// locks arbitrate. Applying a diff runs in one `BEGIN IMMEDIATE` transaction.
///
/// As the ``InboundChangeApplier`` of `BuckiaClient.syncUserFolder`, it tells sync which
/// changes are settled and applies what sync downloaded.
public final class DatabaseManager: InboundChangeApplier {
    /// How the manager works.
    public struct Options: Sendable {
        /// How backups copy the database.
        public var backupMethod: BackupMethod
        /// How diffs are applied: conflict policies and limits.
        public var apply: ApplyOptions
        /// How long before the newest applied change a late one may be named and still be
        /// fetched (KSUIDs order only to the second, and uploads finish out of order). One day
        /// by default.
        public var lateArrivalWindow: Duration
        /// Whether applied (and refused) files stay in `inbound/`. Applied ones are removed by
        /// default, as the seed says ("drop applied files as needed to save space"); refused
        /// ones are renamed to `<name>.refused`.
        public var keepAppliedFiles: Bool
        /// Where ``DatabaseManager/createDatabaseDiff(for:)`` writes diffs; nil: the system's
        /// temporary folder.
        public var outbox: URL?
        /// This user's Ed25519 key, which signs every diff ``DatabaseManager/createDatabaseDiff(for:)``
        /// makes (``DiffSignature``), so recipients that check senders accept it; nil: unsigned.
        public var signingKey: UserTokenSigningKey?

        /// Creates options.
        public init(
            backupMethod: BackupMethod = .onlineBackup, apply: ApplyOptions = ApplyOptions(), lateArrivalWindow: Duration = .seconds(86_400),
            keepAppliedFiles: Bool = false, outbox: URL? = nil, signingKey: UserTokenSigningKey? = nil
        ) {
            self.signingKey = signingKey
            self.backupMethod = backupMethod
            self.apply = apply
            self.lateArrivalWindow = lateArrivalWindow
            self.keepAppliedFiles = keepAppliedFiles
            self.outbox = outbox
        }
    }

    /// The user folder's configuration.
    public let folderStructure: FolderStructureConfiguration
    /// The app's primary database.
    public let database: URL
    /// How it works.
    public let options: Options
    let bases: UserFolder.Bases
    let clock: @Sendable () -> Date

    static let refusedTable = "buckia_refused_changes"
    static let refusedSchema = """
        CREATE TABLE IF NOT EXISTS buckia_refused_changes (ksuid TEXT PRIMARY KEY NOT NULL, reason TEXT NOT NULL, refused_at INTEGER NOT NULL, \
        retryable INTEGER NOT NULL)
        """

    /// A manager for the user folder `folderStructure` describes and the database at
    /// `database` (by default `<application support>/<user-id>.sqlite`, beside the user folders:
    /// the seed keeps the primary database in the app support folder).
    ///
    /// - Parameter clock: The time applied changes are recorded with and diffs are dated by.
    public init(
        folderStructure: FolderStructureConfiguration, database: URL? = nil, bases: UserFolder.Bases = .system, options: Options = Options(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.folderStructure = folderStructure
        self.database = database ?? bases.applicationSupport.appendingPathComponent("\(folderStructure.userId ?? "database").sqlite", isDirectory: false)
        self.options = options
        self.bases = bases
        self.clock = clock
    }

    /// The user's folder, made if missing.
    public func userFolder() throws -> UserFolder { try UserFolder.prepare(folderStructure, bases: bases) }

    // MARK: Backups

    /// Backs up the database to the user folder's `backup.sqlite`: a consistent snapshot taken
    /// while the app may keep writing, checked, synced, and renamed over the previous backup.
    @discardableResult
    public func backupDatabase() async throws -> BackupResult {
        let folder = try userFolder()
        let (database, method) = (self.database, options.backupMethod)
        return try await BlockingWork.run("backup") { try DatabaseBackup.write(from: database, to: folder.backup, method: method) }
    }

    /// Restores the database from `backup.sqlite`, atomically; a backup that fails
    /// `quick_check` is refused and the database left as it was.
    public func restoreDatabase() async throws {
        let folder = try userFolder()
        let database = self.database
        try await BlockingWork.run("restore") { try DatabaseBackup.restore(from: folder.backup, to: database) }
    }

    // MARK: Diffs out

    /// Creates a diff file of `changes` to send to other users, named by a new KSUID, sent by
    /// this user. Column definitions come from this user's database.
    public func createDatabaseDiff(for changes: DatabaseChanges) async throws -> URL {
        guard let sender = folderStructure.userId, !sender.isEmpty else {
            throw BuckiaError(.invalidConfiguration, "A diff names its sender: set folderStructure.userId.", operation: "create diff")
        }
        guard !changes.isEmpty else { throw BuckiaError(.invalidConfiguration, "There are no changes to put in a diff.", operation: "create diff") }
        let (database, now, signingKey) = (self.database, clock(), options.signingKey)
        let outbox = options.outbox ?? FileManager.default.temporaryDirectory.appendingPathComponent("buckia-outbox", isDirectory: true)
        return try await BlockingWork.run("create diff") {
            let id = try KSUID(date: now)
            let connection = FileManager.default.fileExists(atPath: database.path) ? try SQLiteConnection(path: database.path, mode: .readOnly) : nil
            return try changes.write(to: outbox, sender: sender, id: id, createdAt: now, database: connection, signingKey: signingKey)
        }
    }

    /// Sends the diff file `diff` to `userId`'s `inbound/` folder through `provider`: checked
    /// first, then created only if nothing is there (a conditional write where the provider
    /// has one, else a check before the write).
    ///
    /// - Returns: The key it was stored under.
    /// - Throws: ``BuckiaCore/BuckiaError/Code/alreadyExists`` when that name is taken.
    @discardableResult
    public func send(_ diff: URL, to userId: String, through provider: any StorageProvider, sealedFor recipient: DiffRecipientKey? = nil) async throws -> ObjectKey {
        guard !userId.isEmpty, userId != ".", userId != "..", !userId.contains("/") else {
            throw BuckiaError(.invalidConfiguration, "A user id is one folder name (no '/', not '.' or '..').", operation: "send diff", path: userId)
        }
        return try await Self.send(diff, toUserFolder: userId, through: provider, limits: options.apply.limits, sealedFor: recipient)
    }

    /// Sends `diff` to `<userFolder>/inbound/` through `provider` (see
    /// ``send(_:to:through:)``); `userFolder` is the user's folder's path in the bucket.
    @discardableResult
    ///
    /// With `recipient`, the diff is sealed to that key first (``SealedDiff``) and sent as
    /// `<KSUID>.sealed`: the bucket's operator cannot read it.
    public static func send(
        _ diff: URL, toUserFolder userFolder: String, through provider: any StorageProvider, limits: DiffLimits = DiffLimits(),
        sealedFor recipient: DiffRecipientKey? = nil
    ) async throws -> ObjectKey {
        if let recipient {
            return try await TemporaryFile.with { place in
                let sealed = try await BlockingWork.run("seal diff") {
                    try SealedDiff.seal(diff, to: recipient, in: place.deletingLastPathComponent(), limits: limits)
                }
                // Named <KSUID>.sealed by the seal, which checked the diff: not read a second time.
                guard let id = KSUID(sealed.deletingPathExtension().lastPathComponent) else {
                    throw BuckiaError(.io, "The sealed diff \(sealed.lastPathComponent) is not named by its KSUID.", operation: "send diff", path: sealed.path)
                }
                return try await upload(sealed, id: id, extension: SealedDiff.fileExtension, toUserFolder: userFolder, through: provider)
            }
        }
        let summary = try await BlockingWork.run("check diff") { try DiffSummary(contentsOf: diff, limits: limits) }
        return try await upload(diff, id: summary.manifest.id, extension: DiffFormat.fileExtension, toUserFolder: userFolder, through: provider)
    }

    /// Uploads `file` to `<userFolder>/inbound/<id>.<extension>`, never over anything there.
    private static func upload(_ file: URL, id: KSUID, extension fileExtension: String, toUserFolder userFolder: String, through provider: any StorageProvider) async throws -> ObjectKey {
        let diff = file
        let key = try ObjectKey("\(userFolder)/inbound/\(id).\(fileExtension)")
        func taken(_ cause: BuckiaError?) -> BuckiaError {
            BuckiaError(.alreadyExists, "\(key) is already in the bucket; a diff is never overwritten.", operation: "send diff", path: key.description, cause: cause)
        }
        var upload = UploadOptions(contentType: fileExtension == DiffFormat.fileExtension ? "application/vnd.sqlite3" : "application/octet-stream")
        if provider.capabilities.supports(.conditionalWrite) {
            upload.condition = .ifNoneMatch
        } else {
            // Without a conditional write, a check first: a window remains between the two,
            // which the KSUID's 128 random bits make a collision in all but theory.
            if try await provider.stat(remotePath: key) != nil { throw taken(nil) }
        }
        do {
            _ = try await provider.uploadFile(localURL: diff, remotePath: key, options: upload)
        } catch let error as BuckiaError where error.code == .conditionNotMatch || error.code == .alreadyExists {
            throw taken(error)
        }
        return key
    }

    // MARK: Diffs in

    /// Applies the diff files in the user folder's `inbound/`, oldest first, each exactly once.
    ///
    /// A file already applied is skipped. A refused one is recorded with its reason and does
    /// not stop the others: one refused for what it holds (hostile, damaged) is renamed to
    /// `<name>.refused` and settled; one refused for this database's state (a schema conflict,
    /// a row a constraint refuses, a date ahead of this clock) stays, and is tried again on
    /// every run until it applies. I/O and locking failures stop the run and are thrown; what was applied
    /// stays applied.
    ///
    /// - Returns: One entry per file applied (or found already applied), in order.
    public func processInboundChanges() async throws -> [AppliedChange] {
        let folder = try userFolder()
        let (database, options, now) = (self.database, self.options, clock())
        return try await BlockingWork.run("apply inbound changes") {
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.inbound.path)
            // Diffs as they are, and sealed ones (opened with options.apply.recipientKeys).
            let files = names.compactMap { name -> (KSUID, String)? in
                for suffix in [DiffFormat.fileExtension, SealedDiff.fileExtension] where name.hasSuffix(".\(suffix)") {
                    if let id = KSUID(String(name.dropLast(suffix.count + 1))) { return (id, name) }
                }
                return nil
            }.sorted { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }
            guard !files.isEmpty else { return [] }
            let connection = try SQLiteConnection(path: database.path, mode: .readWrite(create: true))
            var applied: [AppliedChange] = []
            for (id, name) in files {
                try BlockingWork.checkCancellation("apply inbound changes")
                let url = folder.inbound.appendingPathComponent(name, isDirectory: false)
                do {
                    var change = try DiffApplier.apply(url, to: connection, options: options.apply, now: now)
                    change.file = url
                    applied.append(change)
                    // Refused before for a local reason, applied now: no longer refused.
                    if try LocalTable.object(named: Self.refusedTable, in: connection) != nil {
                        try connection.run("DELETE FROM buckia_refused_changes WHERE ksuid = ?", [.text(id.description)])
                    }
                    if !options.keepAppliedFiles { try Self.remove(url) }
                } catch let error as BuckiaError where error.cause is DiffProblem {
                    // A refusal the file earned is settled: recorded, set aside, never fetched
                    // again. One that depends on this database (its schema, its rows, the clock)
                    // is recorded as retryable and the file stays, to be tried on every run.
                    let retryable = (error.cause as? DiffProblem)?.dependsOnLocalState ?? false
                    try connection.transaction {
                        try connection.execute(Self.refusedSchema)
                        try connection.run(
                            "INSERT OR REPLACE INTO buckia_refused_changes VALUES (?, ?, ?, ?)",
                            [.text(id.description), .text(error.message), .integer(DiffRules.seconds(now)), .integer(retryable ? 1 : 0)])
                    }
                    if !retryable, !options.keepAppliedFiles {
                        guard rename(url.path, url.path + ".refused") == 0 else { throw BuckiaError.posix(errno, operation: "set aside refused diff", path: url.path) }
                    }
                }
            }
            return applied
        }
    }

    static func remove(_ url: URL) throws {
        guard unlink(url.path) == 0 || errno == ENOENT else { throw BuckiaError.posix(errno, operation: "remove applied diff", path: url.path) }
    }

    /// The settled changes sync needs (``InboundChangeApplier``).
    public func inboundHistory() async throws -> InboundHistory {
        let (database, window) = (self.database, options.lateArrivalWindow)
        return try await BlockingWork.run("read applied changes") {
            guard FileManager.default.fileExists(atPath: database.path) else { return InboundHistory(newest: nil, lateArrivalWindow: window, settled: []) }
            let connection = try SQLiteConnection(path: database.path, mode: .readOnly)
            let hasApplied = try LocalTable.object(named: DiffApplier.appliedTable, in: connection) != nil
            let hasRefused = try LocalTable.object(named: Self.refusedTable, in: connection) != nil
            // The newest *applied* change: a refused file's name is the sender's to choose, and
            // one dated 2150 must not move the listing past every real change.
            let newest = hasApplied ? try connection.query("SELECT max(ksuid) FROM buckia_applied_changes") { $0.string(0).flatMap(KSUID.init) }.first ?? nil : nil
            var history = InboundHistory(newest: newest, lateArrivalWindow: window, settled: [])
            let from = history.startAfter?.description ?? ""
            if hasApplied {
                history.settled.formUnion(try connection.query("SELECT ksuid FROM buckia_applied_changes WHERE ksuid > ?", [.text(from)]) { $0.string(0).flatMap(KSUID.init) }.compactMap { $0 })
            }
            if hasRefused {
                history.settled.formUnion(
                    try connection.query("SELECT ksuid FROM buckia_refused_changes WHERE ksuid > ? AND retryable = 0", [.text(from)]) { $0.string(0).flatMap(KSUID.init) }.compactMap { $0 })
            }
            return history
        }
    }

    /// Applies what sync downloaded (``InboundChangeApplier``): every pending file in
    /// `inbound/`.
    public func apply(_ files: [URL]) async throws {
        _ = try await processInboundChanges()
    }

    // MARK: Status

    /// Where the database, its backup and its exchange stand.
    public func status() async throws -> DatabaseStatus {
        let folder = try userFolder()
        let database = self.database
        return try await BlockingWork.run("database status") { try DatabaseStatus(database: database, folder: folder) }
    }
}

/// Where a database, its backup and its exchange stand (`buckia db status`).
public struct DatabaseStatus: Sendable {
    /// The database file.
    public var database: URL
    /// Its size in bytes; nil when it does not exist.
    public var databaseSize: Int64?
    /// The backup's size in bytes; nil when there is none (or no user folder was given).
    public var backupSize: Int64?
    /// When the backup was last written.
    public var backupDate: Date?
    /// How many diffs were applied.
    public var appliedCount: Int
    /// The newest applied diff.
    public var newestApplied: KSUID?
    /// Diffs refused, oldest first, with the reason.
    public var refused: [(id: KSUID, reason: String)]
    /// Diff files in `inbound/` not yet processed (none without a user folder).
    public var pending: [URL]

    /// Reads the status of `database`, and of the user folder `folder` when given.
    public init(database: URL, folder: UserFolder? = nil) throws {
        self.database = database
        func size(_ url: URL) -> (Int64, Date)? {
            var info = stat()
            guard stat(url.path, &info) == 0 else { return nil }
            return (Int64(info.st_size), LocalFile.modificationDate(of: info))
        }
        // A device, FIFO or socket is refused before SQLite opens it (a FIFO would block it).
        databaseSize = try DatabaseFile.checkIfPresent(database, as: "database", for: "database status")
        backupSize = folder.flatMap { size($0.backup)?.0 }
        backupDate = folder.flatMap { size($0.backup)?.1 }
        appliedCount = 0
        refused = []
        pending = []
        if databaseSize != nil {
            let connection = try SQLiteConnection(path: database.path, mode: .readOnly)
            if try LocalTable.object(named: DiffApplier.appliedTable, in: connection) != nil {
                appliedCount = Int(try connection.query("SELECT count(*) FROM buckia_applied_changes") { $0.int64(0) }.first ?? 0)
                newestApplied = try connection.query("SELECT max(ksuid) FROM buckia_applied_changes") { $0.string(0).flatMap(KSUID.init) }.first ?? nil
            }
            if try LocalTable.object(named: DatabaseManager.refusedTable, in: connection) != nil {
                refused = try connection.query("SELECT ksuid, reason FROM buckia_refused_changes ORDER BY ksuid") { row in
                    KSUID(row.string(0) ?? "").map { ($0, row.string(1) ?? "") }
                }.compactMap { $0 }
            }
        }
        if let folder {
            pending = try FileManager.default.contentsOfDirectory(atPath: folder.inbound.path)
                .filter { $0.hasSuffix(".\(DiffFormat.fileExtension)") || $0.hasSuffix(".\(SealedDiff.fileExtension)") }.sorted()
                .map { folder.inbound.appendingPathComponent($0, isDirectory: false) }
        }
    }
}
