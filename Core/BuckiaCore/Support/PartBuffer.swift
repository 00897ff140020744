import Foundation

/// The memory of one upload part: mapped pages of its own, returned to the system the moment
/// the last `Data` that shares them is gone.
///
/// Why not `Data(capacity:)`: glibc serves an allocation above its mmap threshold with pages of
/// its own, but on the first such free it raises the threshold past that size (up to 32 MiB),
/// so every later 5 MiB part comes from an arena — one per thread that frees it — and freed
/// parts stay resident there. A streamed upload then holds ~25 MiB more than the parts in
/// flight, varying with which threads freed what (an rcat of 256 MiB peaked at 79–97 MiB for
/// ~30 MiB of live parts). Mapping each part directly makes the resident size the live parts.
package struct PartBuffer: ~Copyable {
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private let mapped: Bool
    /// The shortest part worth pages of its own: below it, the allocator serves a part
    /// without the retention described above, and a mapping would cost two system calls.
    package static let smallest = 1 << 20

    /// The bytes written so far.
    package private(set) var count = 0

    /// Room for `capacity` bytes (at least one).
    package init(capacity: Int) {
        let capacity = max(1, capacity)
        self.capacity = capacity
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        let pages = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if let pages, pages != MAP_FAILED {
            base = pages
            mapped = true
            return
        }
        #endif
        // No mapping to be had (address space exhausted, or a platform without mmap): the
        // allocator's memory does the same job, only with the retention described above.
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        mapped = false
    }

    /// Room left.
    package var remaining: Int { capacity - count }

    /// Appends the first `remaining` bytes of `bytes` at most; returns how many it took.
    package mutating func append(_ bytes: some DataProtocol) -> Int {
        let take = min(remaining, bytes.count)
        guard take > 0 else { return 0 }
        let target = UnsafeMutableRawBufferPointer(start: base + count, count: take)
        _ = bytes.prefix(take).copyBytes(to: target)
        count += take
        return take
    }

    /// The bytes written, as `Data` that owns the pages: they are unmapped when it and every
    /// copy of it are gone.
    package consuming func data() -> Data {
        let capacity = self.capacity
        let mapped = self.mapped
        let base = self.base
        let count = self.count
        discard self
        guard count > 0 else {
            PartBuffer.release(base, capacity: capacity, mapped: mapped)
            return Data()
        }
        return Data(bytesNoCopy: base, count: count, deallocator: .custom { pointer, _ in
            PartBuffer.release(pointer, capacity: capacity, mapped: mapped)
        })
    }

    deinit { PartBuffer.release(base, capacity: capacity, mapped: mapped) }

    private static func release(_ pointer: UnsafeMutableRawPointer, capacity: Int, mapped: Bool) {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        if mapped {
            munmap(pointer, capacity)
            return
        }
        #endif
        pointer.deallocate()
    }
}
