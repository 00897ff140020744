import BuckiaCore
import Foundation

/// Why a diff file was refused: the ``BuckiaCore/BuckiaError/cause`` of the error that refused
/// it, so a caller (or a test) can tell each case apart. The database is never touched when a
/// diff is refused.
public enum DiffProblem: Hashable, Sendable, Error, CustomStringConvertible {
    /// Not an SQLite database at all.
    case notSQLite
    /// Shorter than its header says: cut off in transit.
    case truncated(expected: Int64, actual: Int64)
    /// Larger than the configured limit (the file's size, or the size its header claims).
    case tooLarge(size: Int64, limit: Int64)
    /// In WAL mode: its content would depend on a `-wal` file beside it. Diffs are single files
    /// in rollback-journal mode.
    case walMode
    /// Not UTF-8 text encoding.
    case notUTF8
    /// SQLite found damage (`quick_check`, or a read that failed).
    case damaged(String)
    /// A format version this Buckia does not read.
    case unsupportedFormat(Int64)
    /// A schema object that is not part of the format: another table, an index, a trigger, a
    /// view.
    case unexpectedObject(type: String, name: String)
    /// Schema text with more than one statement in it.
    case schemaTextWithTrailingStatement(String)
    /// The manifest or the table list is missing or malformed.
    case malformedManifest(String)
    /// The file name does not match the KSUID inside.
    case nameMismatch(file: String, ksuid: String)
    /// A KSUID more than the allowed tolerance in the future.
    case fromTheFuture(String)
    /// The content does not hash to the manifest's SHA-256.
    case payloadHashMismatch
    /// A name that is not a plain identifier, or one reserved for SQLite or Buckia.
    case forbiddenName(String)
    /// A declared type that is not a plain type name.
    case forbiddenType(String)
    /// A column definition that cannot be right (no key, a gap in key positions, a duplicate
    /// column, a default that is not a literal).
    case malformedDefinition(String)
    /// The rows do not have the columns the definition declares.
    case rowShapeMismatch(String)
    /// The table's primary key differs from the local table's.
    case primaryKeyChanged(table: String)
    /// A column's type affinity differs from the local column's.
    case typeConflict(table: String, column: String, local: String, incoming: String)
    /// A new column that is NOT NULL without a literal default cannot be added.
    case notNullWithoutDefault(table: String, column: String)
    /// A local column that must be given a value is missing from the diff's rows.
    case missingRequiredColumn(table: String, column: String)
    /// The local object of that name is a view, a virtual table, or holds generated columns
    /// the diff writes.
    case notAPlainTable(String)
    /// A diff with this KSUID and other content was already applied.
    case duplicateKSUID(String)
    /// The local database refused a row (a constraint, a datatype, a NULL where one is not
    /// allowed), so nothing of the diff was applied.
    case rowRejected(String)
    /// The database applies only signed diffs, and this one carries no signature.
    case unsigned
    /// The signature table is not one row of a key id and 64 bytes of base64url.
    case malformedSignature(String)
    /// The sender the diff names is not one the database accepts diffs from.
    case senderNotAccepted(String)
    /// The sender's published keys hold no key with the id the diff was signed with (not yet
    /// published, or not yet fetched): the diff is tried again later.
    case unknownSigningKey(sender: String, keyId: String)
    /// The signature does not verify under the sender's key: the diff was changed, or another
    /// user signed it as this sender.
    case badSignature(sender: String, keyId: String)
    /// A sealed diff whose header is not the format's.
    case malformedSeal(String)
    /// A sealed diff sealed to a recipient key this database was not given (a rotated key not
    /// loaded): tried again later.
    case noRecipientKey(String)
    /// A sealed diff that does not open: changed, renamed, or sealed to another key.
    case sealNotOpened

    /// Whether the refusal comes from the local database's state rather than the file (its
    /// schema, its rows, the clock), so the same file may apply later, after the app's own
    /// migration or a clock fix: such a diff is retried, not settled for good.
    public var dependsOnLocalState: Bool {
        switch self {
        case .primaryKeyChanged, .typeConflict, .notNullWithoutDefault, .missingRequiredColumn, .notAPlainTable, .fromTheFuture, .rowRejected: true
        // The contacts and the keys fetched are the recipient's state too.
        case .senderNotAccepted, .unknownSigningKey, .noRecipientKey: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .notSQLite: "it is not an SQLite database"
        case .truncated(let expected, let actual): "it is truncated: its header says \(expected) bytes, the file has \(actual)"
        case .tooLarge(let size, let limit): "it is \(size) bytes, above the limit of \(limit)"
        case .walMode: "it is in WAL mode; a diff file is one file in rollback-journal mode (PRAGMA journal_mode = DELETE before writing it)"
        case .notUTF8: "its text encoding is not UTF-8"
        case .damaged(let detail): "SQLite found it damaged (\(detail))"
        case .unsupportedFormat(let version): "it is format version \(version); this Buckia reads version \(DiffFormat.version)"
        case .unexpectedObject(let type, let name): "it holds the \(type) \(name), which is not part of the diff format"
        case .schemaTextWithTrailingStatement(let name): "the schema text of \(name) holds more than one statement"
        case .malformedManifest(let detail): "its manifest is malformed: \(detail)"
        case .nameMismatch(let file, let ksuid): "the file is named \(file) but holds the change \(ksuid)"
        case .fromTheFuture(let id): "its KSUID \(id) is dated in the future"
        case .payloadHashMismatch: "its content does not match the SHA-256 in its manifest"
        case .forbiddenName(let name): "the name \(name.debugDescription) is not a plain identifier, or is reserved for SQLite or Buckia"
        case .forbiddenType(let type): "the declared type \(type.debugDescription) is not a plain type name"
        case .malformedDefinition(let detail): "a table definition is malformed: \(detail)"
        case .rowShapeMismatch(let detail): "its rows do not match their table's definition: \(detail)"
        case .primaryKeyChanged(let table): "the primary key of \(table) differs from the local table's"
        case .typeConflict(let table, let column, let local, let incoming): "\(table).\(column) is \(incoming) in the diff but \(local) locally"
        case .notNullWithoutDefault(let table, let column): "the new column \(table).\(column) is NOT NULL without a default, so it cannot be added"
        case .missingRequiredColumn(let table, let column): "the local column \(table).\(column) is NOT NULL without a default and the diff's rows do not give it"
        case .notAPlainTable(let name): "the local \(name) is not a plain table the diff can write"
        case .duplicateKSUID(let id): "a different diff with the KSUID \(id) was already applied"
        case .rowRejected(let detail): "the local database refused one of its rows (\(detail))"
        case .unsigned: "it is not signed, and this database applies only diffs signed by their sender"
        case .malformedSignature(let detail): "its signature is malformed: \(detail)"
        case .senderNotAccepted(let sender): "its sender \(sender.debugDescription) is not one this database accepts diffs from"
        case .unknownSigningKey(let sender, let keyId): "it is signed with the key \(keyId), which is not among \(sender.debugDescription)'s published keys"
        case .badSignature(let sender, let keyId): "its signature does not verify under \(sender.debugDescription)'s key \(keyId): it was changed, or not signed by that user"
        case .malformedSeal(let detail): "it is not a sealed diff Buckia reads: \(detail)"
        case .noRecipientKey(let keyId): "it is sealed to the key \(keyId), which this database was not given"
        case .sealNotOpened: "its seal does not open: it was changed or renamed, or sealed to another key"
        }
    }

    /// The case's name (`truncated`, `typeConflict`, …): what `buckia db` prints as the
    /// reason in JSON, and what the corpus under Tests/Fixtures/Diffs expects.
    public var kind: String {
        switch self {
        case .notSQLite: "notSQLite"
        case .truncated: "truncated"
        case .tooLarge: "tooLarge"
        case .walMode: "walMode"
        case .notUTF8: "notUTF8"
        case .damaged: "damaged"
        case .unsupportedFormat: "unsupportedFormat"
        case .unexpectedObject: "unexpectedObject"
        case .schemaTextWithTrailingStatement: "schemaTextWithTrailingStatement"
        case .malformedManifest: "malformedManifest"
        case .nameMismatch: "nameMismatch"
        case .fromTheFuture: "fromTheFuture"
        case .payloadHashMismatch: "payloadHashMismatch"
        case .forbiddenName: "forbiddenName"
        case .forbiddenType: "forbiddenType"
        case .malformedDefinition: "malformedDefinition"
        case .rowShapeMismatch: "rowShapeMismatch"
        case .primaryKeyChanged: "primaryKeyChanged"
        case .typeConflict: "typeConflict"
        case .notNullWithoutDefault: "notNullWithoutDefault"
        case .missingRequiredColumn: "missingRequiredColumn"
        case .notAPlainTable: "notAPlainTable"
        case .duplicateKSUID: "duplicateKSUID"
        case .rowRejected: "rowRejected"
        case .unsigned: "unsigned"
        case .malformedSignature: "malformedSignature"
        case .senderNotAccepted: "senderNotAccepted"
        case .unknownSigningKey: "unknownSigningKey"
        case .badSignature: "badSignature"
        case .malformedSeal: "malformedSeal"
        case .noRecipientKey: "noRecipientKey"
        case .sealNotOpened: "sealNotOpened"
        }
    }

    /// The error code this problem is reported with.
    var code: BuckiaError.Code {
        switch self {
        case .tooLarge: .invalidConfiguration
        case .duplicateKSUID: .conditionNotMatch
        case .primaryKeyChanged, .typeConflict, .notNullWithoutDefault, .missingRequiredColumn, .notAPlainTable, .rowRejected: .conditionNotMatch
        case .payloadHashMismatch: .checksumMismatch
        case .unsigned, .senderNotAccepted, .unknownSigningKey, .badSignature, .noRecipientKey, .sealNotOpened: .permissionDenied
        default: .corrupt
        }
    }

    /// The error that refuses `file` for this reason.
    func error(_ file: String) -> BuckiaError {
        BuckiaError(code, "The diff file was refused: \(description).", operation: "read diff", path: file, cause: self)
    }

    /// Runs `body`, an application of a diff in one transaction: a refusal says the database
    /// was not changed (a refusal met by inspecting or sending a diff touches no database, and
    /// its message does not say so).
    static func applying<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as BuckiaError where error.cause is DiffProblem {
            error.message += " The database was not changed."
            error.operation = "apply diff"
            throw error
        }
    }
}
