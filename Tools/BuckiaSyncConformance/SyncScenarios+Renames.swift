import BuckiaConformance
import BuckiaCore
import BuckiaSync
import Foundation

extension SyncConformance {
    /// Renames: moved on the other side where it moves or copies files itself, never at the
    /// cost of a wrong byte.
    static var renameScenarios: [SyncScenario] {
        [
            SyncScenario(
                "push: a renamed folder moves", contract: "Files renamed on the source are moved on the destination, none of their bytes sent again.",
                requires: [.serverSideCopy]
            ) { context in
                let push = SyncOptions(mode: .push, deleteExtraneous: true)
                for n in 1...5 { try await context.write(.local, "album/\(n).jpg", "photo \(n) " + String(repeating: "x", count: n * 100)) }
                try await context.write(.local, "notes.txt", "notes")
                try await context.sync(push).expect(uploaded: 6, "the first push")
                for n in 1...5 { try await context.rename(.local, "album/\(n).jpg", "photos/2026/\(n).jpg") }
                context.observer.resetCounts()
                try await context.sync(push).expect(uploaded: 0, deletedRemote: 0, movedRemote: 5, "the push after renaming the folder")
                guard context.observer.count(.upload, on: .remote) == 0 else {
                    throw ConformanceFailure("The push after a rename uploaded \(context.observer.count(.upload, on: .remote)) files: \(context.observer.summary()).")
                }
                var expected: [ObjectKey: String] = [try ObjectKey("notes.txt"): "notes"]
                for n in 1...5 { expected[try ObjectKey("photos/2026/\(n).jpg")] = "photo \(n) " + String(repeating: "x", count: n * 100) }
                try await context.expectBoth(expected, "after the push")
                try await context.sync(push).expect(uploaded: 0, deletedRemote: 0, movedRemote: 0, "the push after that")
            },
            SyncScenario(
                "two-way: renames move", contract: "A file renamed on either side is moved on the other, and the next run has nothing to do.",
                requires: [.serverSideCopy]
            ) { context in
                try await seed(context)
                let twoWay = SyncOptions(mode: .twoWay)
                try await context.rename(.local, "a.txt", "moved/a.txt")
                try await context.sync(twoWay).expect(uploaded: 0, deletedRemote: 0, movedRemote: 1, "after a rename here")
                // Each move leaves a baseline, so a delete of the moved file right after is
                // carried across, not undone by a download.
                try await context.remove(.local, "moved/a.txt")
                try await context.rename(.remote, "dir/b.txt", "other/b.txt")
                let there = try await context.sync(twoWay)
                // A rename there is seen where the remote's listings say what a file is: its
                // source time or a checksum (S3 lists an ETag that is an MD5 only on some
                // servers, and declares neither: a move or a copy and a delete both do there).
                let remote = context.remote.provider.capabilities
                let listsIdentity = remote.listedFields.contains(.modificationDate) || remote.checksums.values.contains(.listing)
                if listsIdentity || there.movedLocal == 1 {
                    try there.expect(downloaded: 0, deletedLocal: 0, deletedRemote: 1, movedLocal: 1, "after a delete here and a rename there")
                } else {
                    try there.expect(downloaded: 1, deletedLocal: 1, deletedRemote: 1, movedLocal: 0, "after a delete here and a rename there")
                }
                try await context.expectBoth(["other/b.txt": "b"], "after the rename there")
                try await context.remove(.remote, "other/b.txt")
                try await context.write(.remote, "c.txt", "c")  // a side that lists nothing has its deletes refused
                try await context.sync(twoWay).expect(uploaded: 0, downloaded: 1, deletedLocal: 1, "after deleting the file moved there")
                try await context.expectBoth(["c.txt": "c"], "after the deletes")
                try await context.sync(twoWay).expect(uploaded: 0, downloaded: 0, movedLocal: 0, movedRemote: 0, "the run after that")
            },
            SyncScenario(
                "push: a renamed file changed in place is sent, not moved",
                contract: "A file renamed and rewritten with the same size and modification time is uploaded: its size and time never stand for its bytes.",
                requires: [.serverSideCopy]
            ) { context in
                let push = SyncOptions(mode: .push, deleteExtraneous: true)
                try await context.write(.local, "a.txt", "original")
                try await context.sync(push).expect(uploaded: 1, "the first push")
                let local = context.endpoint(.local)
                guard let before = try await local.provider.stat(remotePath: ObjectKey(local.prefix + "a.txt"))?.effectiveModificationDate else {
                    throw ConformanceFailure("The local file has no modification time.")
                }
                try await context.rename(.local, "a.txt", "b.txt")
                try await context.write(.local, "b.txt", "ORIGINAL")
                _ = try await local.provider.setModificationTime(remotePath: ObjectKey(local.prefix + "b.txt"), to: before)
                try await context.sync(push).expect(uploaded: 1, deletedRemote: 1, movedRemote: 0, "the push after renaming and rewriting")
                try await context.expectBoth(["b.txt": "ORIGINAL"], "after the push")
            },
            SyncScenario(
                "push: renames over the delete limit are copies",
                contract: "A move deletes its old name, so a run over the delete limit copies the renamed files and deletes nothing.", requires: [.serverSideCopy]
            ) { context in
                try await context.write(.local, "a.txt", "a")
                try await context.write(.local, "b.txt", "b")
                try await context.sync(SyncOptions(mode: .push, deleteExtraneous: true)).expect(uploaded: 2, "the first push")
                try await context.rename(.local, "a.txt", "c.txt")
                try await context.rename(.local, "b.txt", "d.txt")
                let limited = try await context.sync(SyncOptions(mode: .push, deleteExtraneous: true, maxDelete: .count(1)))
                try limited.expect(uploaded: 2, deletedRemote: 0, movedRemote: 0, complete: false, "over the delete limit")
                try await context.expect(.remote, ["a.txt": "a", "b.txt": "b", "c.txt": "a", "d.txt": "b"], "over the delete limit")
            },
        ]
    }
}
