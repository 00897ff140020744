import BuckiaCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file system that makes copy-on-write clones, for the tests of Buckia's clones: a sparse
/// 320 MiB XFS image (reflink on, xfsprogs' default) in a folder the test made, mounted
/// through a loop device there and unmounted (and removed) by ``remove()``.
///
/// The machine's own file system (ext4) cannot clone, so without this only the byte-copy
/// fallback would ever run here. Mounting needs root, a loop device and `mkfs.xfs`; where any is
/// missing ``unavailable`` says which, and the tests that need a volume are disabled by it
/// (reported as skipped, never as passed).
public final class ReflinkVolume: Sendable {
    /// The mounted file system's root.
    public let root: URL
    private let folder: URL

    private init(root: URL, folder: URL) {
        self.root = root
        self.folder = folder
    }

    /// Why no volume can be mounted here, or nil when one can: found by making one and
    /// removing it, once per process.
    public static let unavailable: String? = {
        do {
            let volume = try mount()
            volume.remove()
            return nil
        } catch {
            return "\(error)"
        }
    }()

    /// Makes, formats and mounts a new volume.
    ///
    /// - Throws: ``BuckiaCore/BuckiaError/Code/unsupported`` naming the step that failed.
    public static func mount() throws -> ReflinkVolume {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("buckia-xfs-\(UUID().uuidString)", isDirectory: true)
        let root = folder.appendingPathComponent("mnt", isDirectory: true)
        let image = folder.appendingPathComponent("xfs.img")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        func fail(_ step: String, _ result: ToolRun.Result?) -> BuckiaError {
            try? FileManager.default.removeItem(at: folder)
            let said = result.map { ($0.errors + $0.output).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
            return BuckiaError(.unsupported, "No XFS volume can be mounted here: \(step) failed\(said.isEmpty ? "" : ": \(said)").")
        }
        guard FileManager.default.createFile(atPath: image.path, contents: nil), truncate(image.path, 320 << 20) == 0 else {
            throw fail("making the sparse image", nil)
        }
        let format = try tool("mkfs.xfs", ["-q", "-f", "-m", "reflink=1", image.path])
        guard format.status == 0 else { throw fail("mkfs.xfs (apt install xfsprogs)", format) }
        let mounted = try tool("mount", ["-o", "loop", image.path, root.path])
        guard mounted.status == 0 else { throw fail("mount -o loop (root and a loop device are needed)", mounted) }
        return ReflinkVolume(root: root, folder: folder)
    }

    /// Runs a system tool from the folders root's tools live in (`PATH` may lack the sbin ones).
    private static func tool(_ name: String, _ arguments: [String]) throws -> ToolRun.Result {
        let folders = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        guard let folder = folders.first(where: { FileManager.default.isExecutableFile(atPath: "\($0)/\(name)") }) else {
            return ToolRun.Result(status: 127, output: "", errors: "\(name) is not installed")
        }
        return try ToolRun.run(path: URL(fileURLWithPath: "\(folder)/\(name)"), arguments, exactEnvironment: ["PATH": folders.joined(separator: ":")])
    }

    /// Free bytes on the volume, after flushing what was written to it.
    public func freeBytes() throws -> Int64 {
        let fd = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw BuckiaError.posix(errno, operation: "open", path: root.path) }
        defer { close(fd) }
        _ = fsync(fd)
        sync()
        var info = statvfs()
        guard fstatvfs(fd, &info) == 0 else { throw BuckiaError.posix(errno, operation: "statvfs", path: root.path) }
        return Int64(info.f_bfree) * Int64(info.f_frsize)
    }

    /// Unmounts the volume and removes its folder and image.
    public func remove() {
        // A volume still busy (a test that failed with a file open) is detached lazily.
        if (try? Self.tool("umount", [root.path]))?.status != 0 { _ = try? Self.tool("umount", ["-l", root.path]) }
        try? FileManager.default.removeItem(at: folder)
    }
}
