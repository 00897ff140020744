import BuckiaCore
import Foundation

extension LocalProvider {
    /// The entity tag of a file: its inode, modification time, status-change time and size.
    /// Every write renames a new file into place, so every write makes a new tag, even of the
    /// same bytes; and the status-change time, which no tool can set back, changes with any
    /// write in place, even one that restores the modification time and keeps the size
    /// (`touch -r`, `rsync --inplace -t`).
    static func etag(_ info: FileStatus) -> String {
        let modified = LocalFile.modificationDate(of: info)
        let nanoseconds = Int64(clamping: Int((modified.timeIntervalSince1970 * 1_000_000_000).rounded(.toNearestOrEven).clampedToInt))
        #if canImport(Darwin)
        let changed = Int64(info.st_ctimespec.tv_sec) &* 1_000_000_000 &+ Int64(info.st_ctimespec.tv_nsec)
        #else
        let changed = Int64(info.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_ctim.tv_nsec)
        #endif
        return etag(inode: UInt64(info.st_ino), modified: nanoseconds, changed: changed, size: Int64(info.st_size))
    }

    /// `"inode-modified-changed-size"`, each in lowercase hexadecimal as `String(_:radix: 16)`
    /// writes it (a negative time with a `-` before its magnitude), written into one string:
    /// formatting the four numbers apart and joining them was 2 % of a no-op resync.
    static func etag(inode: UInt64, modified: Int64, changed: Int64, size: Int64) -> String {
        // Quotes, three dashes, and per number a sign and 16 digits.
        String(unsafeUninitializedCapacity: 2 + 3 + 4 * 17) { buffer in
            var count = 0
            func put(_ byte: UInt8) {
                buffer[count] = byte
                count += 1
            }
            func hex(_ magnitude: UInt64, negative: Bool = false) {
                if negative { put(UInt8(ascii: "-")) }
                var shift = 60
                while shift > 0 && magnitude >> UInt64(shift) == 0 { shift -= 4 }
                while shift >= 0 {
                    let digit = UInt8(truncatingIfNeeded: (magnitude >> UInt64(shift)) & 0xF)
                    put(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
                    shift -= 4
                }
            }
            put(UInt8(ascii: "\""))
            hex(inode)
            put(UInt8(ascii: "-"))
            hex(modified.magnitude, negative: modified < 0)
            put(UInt8(ascii: "-"))
            hex(changed.magnitude, negative: changed < 0)
            put(UInt8(ascii: "-"))
            hex(size.magnitude, negative: size < 0)
            put(UInt8(ascii: "\""))
            return count
        }
    }
}

extension Double {
    /// The value as an `Int`, saturating instead of trapping outside `Int`'s range.
    fileprivate var clampedToInt: Int {
        guard isFinite else { return 0 }
        if self >= Double(Int.max) { return Int.max }
        if self <= Double(Int.min) { return Int.min }
        return Int(self)
    }
}
