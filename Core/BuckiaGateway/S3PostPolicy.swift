import BuckiaCore
import Foundation

/// The signed policy of a browser's form upload (POST Object, AWS's "browser-based uploads
/// using POST"): when it expires, and the conditions every field of the form, and the file's
/// length, must meet. Every field the form sends (but `policy`, `x-amz-signature`, `file` and
/// `x-ignore-*`) must be named by a condition, as S3 requires, so a form cannot carry a field its
/// signer did not allow.
struct S3PostPolicy {
    enum Condition: Equatable {
        /// The field (lowercase, without `$`) is exactly the value.
        case equals(String, String)
        /// The field starts with the value (`""`: any value).
        case startsWith(String, String)
        /// The file's length in bytes lies in this range.
        case lengthRange(ClosedRange<Int64>)
    }

    let expiration: Date
    let conditions: [Condition]

    /// The fields a form sends that no condition needs to name.
    static let exempt: Set<String> = ["policy", "x-amz-signature", "file", "signature", "awsaccesskeyid"]

    /// Reads the policy from the form's `policy` field: base64 of a JSON document.
    ///
    /// - Throws: ``S3Failure`` (`InvalidPolicyDocument`) naming what is wrong.
    init(base64 text: String) throws {
        func invalid(_ why: String) -> S3Failure { S3Failure("InvalidPolicyDocument", "Invalid Policy: \(why).") }
        guard text.utf8.count <= 20 * 1024, let data = Data(base64Encoded: text) else { throw invalid("the policy is not base64") }
        let document: Any
        do {
            document = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw invalid("the policy is not JSON")
        }
        guard let object = document as? [String: Any] else { throw invalid("the policy is not a JSON object") }
        guard let expires = object["expiration"] as? String, let expiration = Self.parseExpiration(expires) else {
            throw invalid("Policy missing expiration, or it is not an ISO 8601 time such as 2026-12-06T12:00:00.000Z")
        }
        guard let list = object["conditions"] as? [Any] else { throw invalid("Policy missing conditions") }
        var conditions: [Condition] = []
        for item in list {
            if let pair = item as? [String: Any] {
                guard pair.count == 1, let entry = pair.first, let text = entry.value as? String else {
                    throw invalid("a condition object must name one field and a string")
                }
                conditions.append(.equals(Self.fieldName(entry.key), text))
            } else if let array = item as? [Any], let operation = (array.first as? String)?.lowercased() {
                switch operation {
                case "eq", "starts-with":
                    guard array.count == 3, let field = array[1] as? String, field.hasPrefix("$"), let value = array[2] as? String else {
                        throw invalid("\(operation) takes a $field and a string")
                    }
                    let name = Self.fieldName(String(field.dropFirst()))
                    conditions.append(operation == "eq" ? .equals(name, value) : .startsWith(name, value))
                case "content-length-range":
                    guard array.count == 3, let low = Self.integer(array[1]), let high = Self.integer(array[2]), low >= 0, low <= high else {
                        throw invalid("content-length-range takes two lengths, the first not above the second")
                    }
                    conditions.append(.lengthRange(low...high))
                default:
                    throw invalid("the condition \(operation.debugDescription) is not one S3 defines")
                }
            } else {
                throw invalid("a condition is neither an object nor a list")
            }
        }
        self.expiration = expiration
        self.conditions = conditions
    }

    /// The lengths the file may have: the intersection of every range (S3 takes them all).
    var lengthRange: ClosedRange<Int64> {
        conditions.reduce(0...Int64.max) { range, condition in
            guard case .lengthRange(let other) = condition else { return range }
            let low = max(range.lowerBound, other.lowerBound)
            return low...max(low, min(range.upperBound, other.upperBound))
        }
    }

    /// Checks the form's fields (names lowercase; `bucket` is the request's) at `now`.
    ///
    /// - Throws: ``S3Failure`` `AccessDenied` with S3's "Invalid according to Policy" words.
    func check(_ fields: [String: String], now: Date) throws {
        func refuse(_ why: String) -> S3Failure { S3Failure("AccessDenied", "Invalid according to Policy: \(why)", status: 403) }
        guard now < expiration else { throw refuse("Policy expired.") }
        var named: Set<String> = []
        for condition in conditions {
            switch condition {
            case .equals(let name, let value):
                named.insert(name)
                guard fields[name] == value else { throw refuse("Policy Condition failed: [\"eq\", \"$\(name)\", \"\(value)\"]") }
            case .startsWith(let name, let prefix):
                named.insert(name)
                let value = fields[name] ?? ""
                // Content-Type may list types; each must start so (S3's rule for that field).
                let values = name == "content-type" ? value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } : [value]
                guard values.allSatisfy({ $0.utf8.starts(with: prefix.utf8) }) else {
                    throw refuse("Policy Condition failed: [\"starts-with\", \"$\(name)\", \"\(prefix)\"]")
                }
            case .lengthRange:
                continue
            }
        }
        for name in fields.keys.sorted() where !Self.exempt.contains(name) && !name.hasPrefix("x-ignore-") && name != "bucket" && !named.contains(name) {
            throw refuse("Extra input fields: \(name)")
        }
    }

    /// A field's name as conditions compare it: lowercase.
    static func fieldName(_ name: String) -> String { name.lowercased() }

    static func integer(_ value: Any) -> Int64? {
        if let number = value as? NSNumber {
            let double = number.doubleValue
            guard double.isFinite, double == double.rounded(), abs(double) < 9e15 else { return nil }
            return Int64(double)
        }
        if let text = value as? String, text.utf8.count <= 15, text.utf8.allSatisfy({ (48...57).contains($0) }) { return Int64(text) }
        return nil
    }

    /// `2026-12-06T12:00:00.000Z` or `2026-12-06T12:00:00Z`: UTC, with or without milliseconds.
    static func parseExpiration(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20 || bytes.count == 24, bytes.last == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            let slice = bytes[range]
            guard slice.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return Int(String(decoding: slice, as: UTF8.self))
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13), let minute = number(14..<16),
              let second = number(17..<19), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var milliseconds = 0
        if bytes.count == 24 {
            guard bytes[19] == UInt8(ascii: "."), let value = number(20..<23) else { return nil }
            milliseconds = value
        }
        var calendar = Calendar(identifier: .gregorian)
        guard let utc = TimeZone(identifier: "UTC") else { return nil }
        calendar.timeZone = utc
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return calendar.date(from: components).map { $0.addingTimeInterval(Double(milliseconds) / 1000) }
    }
}
