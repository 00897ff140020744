import BuckiaConformance
import BuckiaCore
import BuckiaSync
import Foundation

private let twoWay = SyncOptions(mode: .twoWay)

extension SyncConformance {
    /// Two-way runs: each kind of change on either side, made after a first sync.
    static var twoWayScenarios: [SyncScenario] {
        [
            SyncScenario("two-way: edit here", contract: "A file edited on the local side since the last sync is uploaded.") { context in
                try await seed(context)
                try await context.write(.local, "a.txt", "a edited here")
                try await context.sync(twoWay).expect(uploaded: 1, downloaded: 0, "after the local edit")
                try await context.expectBoth(["a.txt": "a edited here", "dir/b.txt": "b"], "after the local edit")
            },
            SyncScenario("two-way: edit there", contract: "A file edited on the remote side since the last sync is downloaded.") { context in
                try await seed(context)
                try await context.write(.remote, "dir/b.txt", "b edited there")
                try await context.sync(twoWay).expect(uploaded: 0, downloaded: 1, "after the remote edit")
                try await context.expectBoth(["a.txt": "a", "dir/b.txt": "b edited there"], "after the remote edit")
            },
            SyncScenario("same-size edits", contract: "An edit that keeps a file's size is an edit: uploaded in two-way and push runs, downloaded in two-way runs.") { context in
                try await seed(context)
                try await context.write(.local, "a.txt", "z")
                try await context.sync(twoWay).expect(uploaded: 1, downloaded: 0, "after a same-size local edit")
                try await context.write(.remote, "dir/b.txt", "y")
                try await context.sync(twoWay).expect(uploaded: 0, downloaded: 1, "after a same-size remote edit")
                try await context.write(.local, "a.txt", "q")
                try await context.sync(SyncOptions(mode: .push)).expect(uploaded: 1, downloaded: 0, "a push after a same-size local edit")
                try await context.expectBoth(["a.txt": "q", "dir/b.txt": "y"], "after the same-size edits")
            },
            SyncScenario("two-way: delete here", contract: "A file deleted on the local side since the last sync is deleted remotely.") { context in
                try await seed(context)
                try await context.remove(.local, "a.txt")
                try await context.sync(twoWay).expect(uploaded: 0, downloaded: 0, deletedRemote: 1, "after the local delete")
                try await context.expectBoth(["dir/b.txt": "b"], "after the local delete")
            },
            SyncScenario("two-way: delete there", contract: "A file deleted on the remote side since the last sync is deleted locally.") { context in
                try await seed(context)
                try await context.remove(.remote, "dir/b.txt")
                try await context.sync(twoWay).expect(uploaded: 0, downloaded: 0, deletedLocal: 1, "after the remote delete")
                try await context.expectBoth(["a.txt": "a"], "after the remote delete")
            },
            SyncScenario("two-way: both edited", contract: "A file edited on both sides is a conflict: by default both versions are kept on both sides, the local one under a name that says so.") { context in
                try await seed(context)
                try await context.write(.local, "a.txt", "a, local version")
                try await context.write(.remote, "a.txt", "a, remote version")
                try await context.sync(twoWay).expect(conflicts: 1, "after editing both sides")
                let local = try await context.contents(.local)
                guard local[try ObjectKey("a.txt")] == "a, remote version",
                    let copy = local.first(where: { $0.key.rawValue.hasPrefix("a.conflict-local-") && $0.key.rawValue.hasSuffix(".txt") }),
                    copy.value == "a, local version", local.count == 3
                else { throw ConformanceFailure("After a conflict the local side holds \(SyncScenarioContext.show(local)); expected the remote version as a.txt and the local one as a.conflict-local-….txt.") }
                try await context.expectBoth(local, "after the conflict")
                try await context.sync(twoWay).expect(uploaded: 0, downloaded: 0, conflicts: 0, "the run after a conflict")
            },
            SyncScenario("two-way: both deleted", contract: "A file deleted on both sides stays deleted, and the next run has nothing to do.") { context in
                try await seed(context)
                try await context.remove(.local, "a.txt")
                try await context.remove(.remote, "a.txt")
                try await context.sync(twoWay).expect(uploaded: 0, downloaded: 0, deletedLocal: 0, deletedRemote: 0, "after deleting both")
                try await context.expectBoth(["dir/b.txt": "b"], "after deleting both")
                let again = try await context.sync(twoWay)
                guard again.plan.isEmpty else { throw ConformanceFailure("The run after a double delete planned \(again.plan).") }
            },
            SyncScenario(
                "two-way: rename", contract: "A file removed and written again under another name is carried across (a create and a delete, or a move where checksums show the same bytes), and no version is lost."
            ) { context in
                try await seed(context)
                try await context.remove(.local, "a.txt")
                try await context.write(.local, "renamed/a.txt", "a")
                try await context.sync(twoWay).expectOneRename("after the rename")
                try await context.expectBoth(["renamed/a.txt": "a", "dir/b.txt": "b"], "after the rename")
            },
            SyncScenario("two-way: rename here, edit there", contract: "A file renamed on one side and edited on the other keeps the edit: the old name comes back with it.") { context in
                try await seed(context)
                try await context.remove(.local, "a.txt")
                try await context.write(.local, "renamed.txt", "a")
                try await context.write(.remote, "a.txt", "a edited there")
                try await context.sync(twoWay).expect(uploaded: 1, downloaded: 1, deletedRemote: 0, "after renaming here and editing there")
                try await context.expectBoth(["renamed.txt": "a", "a.txt": "a edited there", "dir/b.txt": "b"], "after renaming here and editing there")
            },
            SyncScenario("two-way: case-only rename", contract: "Renaming a file to a name that differs only in case carries the new name across (keys are case-sensitive).") { context in
                try await context.write(.local, "Photo.JPG", "pixels")
                try await context.sync(twoWay).expect(uploaded: 1, "the first sync")
                try await context.remove(.local, "Photo.JPG")
                try await context.write(.local, "photo.jpg", "pixels")
                try await context.sync(twoWay).expectOneRename("after the case-only rename")
                try await context.expectBoth(["photo.jpg": "pixels"], "after the case-only rename")
            },
            SyncScenario("two-way: file and folder clash", contract: "A file on one side where the other has a folder of the same name loses nothing: what cannot be copied is reported, and no file is deleted.") { context in
                try await context.write(.local, "x", "a file named x")
                try await context.write(.remote, "x/y.txt", "a file in a folder named x")
                let first = try await context.sync(twoWay)
                let second = try await context.sync(twoWay)
                for (run, result) in [("first", first), ("second", second)] {
                    guard result.deletedLocal == 0, result.deletedRemote == 0 else {
                        throw ConformanceFailure("The \(run) run deleted files over a name clash: \(result.plan).")
                    }
                }
                let local = try await context.contents(.local)
                let remote = try await context.contents(.remote)
                let everything = Set(local.values).union(remote.values)
                guard local[try ObjectKey("x")] == "a file named x", remote[try ObjectKey("x/y.txt")] == "a file in a folder named x",
                    everything == ["a file named x", "a file in a folder named x"]
                else { throw ConformanceFailure("A version was lost over the name clash: local \(SyncScenarioContext.show(local)), remote \(SyncScenarioContext.show(remote)).") }
                // Where a side holds both, both were copied; where it cannot, the failure names the path.
                let copiedBoth = local.count == 2 && remote.count == 2
                guard copiedBoth || !second.failures.isEmpty else {
                    throw ConformanceFailure("The clash was neither resolved nor reported: local \(SyncScenarioContext.show(local)), remote \(SyncScenarioContext.show(remote)).")
                }
            },
            SyncScenario("two-way: created alike", contract: "A file created on both sides with the same content is recorded, not copied.") { context in
                try await context.write(.local, "same.txt", "identical")
                try await context.write(.remote, "same.txt", "identical")
                let detection = ChangeDetection.checksum(try commonChecksum(context))
                try await context.sync(SyncOptions(mode: .twoWay, detection: detection)).expect(uploaded: 0, downloaded: 0, conflicts: 0, "the first sync of equal files")
            },
            SyncScenario("two-way: normalization", contract: "Two names that differ only in Unicode normalization are two files, synced as two.") { context in
                try await context.write(.local, "caf\u{E9}.txt", "composed")
                try await context.write(.local, "cafe\u{301}.txt", "decomposed")
                try await context.sync(twoWay).expect(uploaded: 2, "the first sync")
                try await context.expectBoth(["caf\u{E9}.txt": "composed", "cafe\u{301}.txt": "decomposed"], "after syncing both spellings")
            },
        ]
    }

    /// Push and pull.
    static var oneWayScenarios: [SyncScenario] {
        [
            SyncScenario("push: mirror", contract: "Push copies what is new or changed to the remote and deletes extraneous remote files only with deleteExtraneous.") { context in
                try await context.write(.local, "keep.txt", "keep")
                try await context.write(.remote, "extra.txt", "only there")
                try await context.sync(SyncOptions(mode: .push)).expect(uploaded: 1, deletedRemote: 0, "a push without deletes")
                try await context.expect(.remote, ["keep.txt": "keep", "extra.txt": "only there"], "a push without deletes")
                try await context.sync(SyncOptions(mode: .push, deleteExtraneous: true)).expect(uploaded: 0, deletedRemote: 1, "a push with deletes")
                // An empty source (a missing folder?) deletes nothing unless a limit says so.
                try await context.remove(.local, "keep.txt")
                let refused = try await context.sync(SyncOptions(mode: .push, deleteExtraneous: true))
                try refused.expect(deletedRemote: 0, complete: false, "a push with deletes from an empty source")
                try await context.write(.local, "keep.txt", "keep")
                try await context.expectBoth(["keep.txt": "keep"], "after a push with deletes")
            },
            SyncScenario("pull: mirror", contract: "Pull copies what is new or changed on the remote to the local side.") { context in
                try await context.write(.remote, "dir/new.txt", "from the remote")
                try await context.write(.local, "mine.txt", "local only")
                try await context.sync(SyncOptions(mode: .pull)).expect(downloaded: 1, "a pull")
                try await context.write(.remote, "dir/new.txt", "changed on the remote")
                try await context.sync(SyncOptions(mode: .pull, deleteExtraneous: true)).expect(downloaded: 1, deletedLocal: 1, "a pull with deletes")
                try await context.expectBoth(["dir/new.txt": "changed on the remote"], "after a pull with deletes")
            },
            SyncScenario("no-op resync", contract: "A resync with nothing changed transfers nothing and asks each side for its listing only: no stat, checksum, read or write.") { context in
                try await seed(context)
                for mode in [SyncMode.push, .twoWay, .pull] {
                    context.observer.resetCounts()
                    let result = try await context.sync(SyncOptions(mode: mode))
                    try result.expect(uploaded: 0, downloaded: 0, deletedLocal: 0, deletedRemote: 0, "a \(mode) resync")
                    for side in [SyncSide.local, .remote] {
                        for call in SyncObserver.Call.allCases where call != .list && context.observer.count(call, on: side) > 0 {
                            throw ConformanceFailure("A no-op \(mode) resync asked the \(side) side more than its listing: \(context.observer.summary()).")
                        }
                    }
                }
            },
            SyncScenario("touched files", contract: "A file touched (new time, same bytes) is compared by checksum, and what the state store knows of the other side is not asked for again.") { context in
                try await seed(context)
                guard let algorithm = try? commonChecksum(context) else {
                    // Without a checksum both sides offer, a touch is a change.
                    try await context.write(.local, "a.txt", "a")
                    try await context.sync(SyncOptions(mode: .push)).expect(uploaded: 1, "a touch without a common checksum")
                    return
                }
                let options = SyncOptions(mode: .push, detection: .checksum(algorithm))
                try await context.write(.local, "a.txt", "a")
                try await context.sync(options).expect(uploaded: 0, "the first touch")
                try await context.write(.local, "a.txt", "a")
                context.observer.resetCounts()
                try await context.sync(options).expect(uploaded: 0, "the second touch")
                for call in SyncObserver.Call.allCases where call != .list && context.observer.count(call, on: .remote) > 0 {
                    throw ConformanceFailure("Comparing a touched file asked the remote again for what the state store knew: \(context.observer.summary()).")
                }
            },
            SyncScenario("lost state store", contract: "Losing the state store costs comparisons, never data: the next run copies and deletes nothing.") { context in
                try await seed(context)
                try FileManager.default.removeItem(at: context.stateURL)
                try await context.sync(SyncOptions(mode: .twoWay, detection: .checksum(try commonChecksum(context)))).expect(uploaded: 0, downloaded: 0, deletedLocal: 0, deletedRemote: 0, "after losing the state store")
                try await context.expectBoth(["a.txt": "a", "dir/b.txt": "b"], "after losing the state store")
            },
            SyncScenario("damaged state store", contract: "A damaged state store is set aside and the run goes on as with none.") { context in
                try await seed(context)
                try Data(repeating: 0x42, count: 4096).write(to: context.stateURL)
                let result = try await context.sync(SyncOptions(mode: .twoWay, detection: .checksum(try commonChecksum(context))))
                try result.expect(uploaded: 0, downloaded: 0, deletedLocal: 0, deletedRemote: 0, "after damaging the state store")
                guard result.stateStoreReset != nil else { throw ConformanceFailure("The run did not say the state store was reset.") }
            },
        ]
    }

    /// Guard rails: filters, create-only, the delete limit, failures, dry runs.
    static var safetyScenarios: [SyncScenario] {
        [
            SyncScenario("no deletes after a failure", contract: "When any file fails, the run deletes nothing, and a rerun after the failure converges.") { context in
                try await seed(context)
                try await context.remove(.local, "a.txt")
                try await context.write(.local, "will-fail.txt", "x")
                context.observer.failUploads(endingWith: "will-fail.txt")
                let failed = try await context.sync(twoWay)
                guard failed.failures.map(\.path.rawValue) == ["will-fail.txt"], failed.deletedRemote == 0, failed.deletesSkipped != nil else {
                    throw ConformanceFailure("With a failed upload the run reported failures \(failed.failures) and deleted \(failed.deletedRemote) files.")
                }
                guard try await context.contents(.remote)[try ObjectKey("a.txt")] == "a" else { throw ConformanceFailure("A delete ran despite a failure.") }
                context.observer.failUploads(endingWith: nil)
                try await context.sync(twoWay).expect(uploaded: 1, deletedRemote: 1, "the rerun")
                try await context.expectBoth(["dir/b.txt": "b", "will-fail.txt": "x"], "after the rerun")
            },
            SyncScenario("delete limit", contract: "A run whose deletes exceed the limit makes none of them, says so, and does everything else.") { context in
                try await seed(context)
                try await context.write(.local, "c.txt", "c")
                try await context.sync(twoWay).expect(uploaded: 1, "adding c")
                try await context.remove(.local, "a.txt")
                try await context.remove(.local, "c.txt")
                try await context.write(.local, "d.txt", "d")
                let limited = try await context.sync(SyncOptions(mode: .twoWay, maxDelete: .count(1)))
                try limited.expect(uploaded: 1, deletedRemote: 0, complete: false, "over the delete limit")
                guard limited.deletesSkipped != nil else { throw ConformanceFailure("The run over the delete limit did not say why it deleted nothing.") }
                try await context.sync(SyncOptions(mode: .twoWay, maxDelete: .percent(100))).expect(deletedRemote: 2, "within the limit")
                try await context.expectBoth(["dir/b.txt": "b", "d.txt": "d"], "after the deletes")
            },
            SyncScenario("emptied side", contract: "A side that lists nothing where the last run left files (a missing disk, a wrong path) has its deletes refused unless a delete limit is given.") { context in
                try await seed(context)
                try await context.remove(.local, "a.txt")
                try await context.remove(.local, "dir/b.txt")
                let refused = try await context.sync(twoWay)
                try refused.expect(deletedRemote: 0, complete: false, "with the local side emptied")
                guard refused.deletesSkipped != nil else { throw ConformanceFailure("Emptying a side deleted the other without a word.") }
                try await context.sync(SyncOptions(mode: .twoWay, maxDelete: .percent(100))).expect(deletedRemote: 2, "with an explicit limit")
                try await context.expectBoth([:], "after emptying on purpose")
            },
            SyncScenario("dry run", contract: "A dry run returns the plan and changes nothing, the state store included.") { context in
                try await context.write(.local, "a.txt", "a")
                try await context.write(.remote, "b.txt", "b")
                let plan = try await context.sync(SyncOptions(mode: .twoWay, dryRun: true))
                guard plan.plan.map(\.description) == ["upload a.txt", "download b.txt"], plan.uploaded == 0, plan.downloaded == 0 else {
                    throw ConformanceFailure("The dry run planned \(plan.plan) and did \(plan.uploaded) uploads, \(plan.downloaded) downloads.")
                }
                try await context.expect(.local, ["a.txt": "a"], "after a dry run")
                try await context.expect(.remote, ["b.txt": "b"], "after a dry run")
                guard try SyncStateStore(url: context.stateURL).count() == 0 else { throw ConformanceFailure("The dry run wrote the state store.") }
            },
            SyncScenario("filters", contract: "Paths the include and exclude patterns leave out are neither copied nor deleted, on either side.") { context in
                try await context.write(.local, "doc/a.txt", "a")
                try await context.write(.local, "doc/a.tmp", "scratch")
                try await context.write(.local, "other/b.txt", "b")
                try await context.write(.remote, "doc/old.tmp", "remote scratch")
                let filter = try PathFilter(include: ["doc/**"], exclude: ["**/*.tmp"])
                try await context.sync(SyncOptions(mode: .push, deleteExtraneous: true, filter: filter)).expect(uploaded: 1, deletedRemote: 0, "a filtered push")
                try await context.expect(.remote, ["doc/a.txt": "a", "doc/old.tmp": "remote scratch"], "a filtered push")
            },
            SyncScenario("filter change", contract: "A run with a narrower filter leaves the baselines of what it leaves out alone: the next full run moves nothing.") { context in
                try await seed(context)
                try await context.sync(SyncOptions(mode: .twoWay, filter: try PathFilter(exclude: ["dir/**"]))).expect(uploaded: 0, downloaded: 0, "a narrower run")
                try await context.remove(.local, "dir/b.txt")
                let full = try await context.sync(twoWay)
                try full.expect(uploaded: 0, downloaded: 0, deletedRemote: 1, "the full run after it")
                try await context.expectBoth(["a.txt": "a"], "after the full run")
            },
            SyncScenario("create-only", contract: "Create-only paths are uploaded when the remote lacks them, and never overwritten, downloaded or deleted.") { context in
                try await context.write(.local, "inbox/new.db", "new")
                try await context.write(.local, "inbox/both.db", "local")
                try await context.write(.remote, "inbox/both.db", "remote, longer")
                try await context.write(.remote, "inbox/theirs.db", "theirs")
                let options = SyncOptions(mode: .twoWay, createOnly: [try GlobPattern("inbox/**")])
                try await context.sync(options).expect(uploaded: 1, downloaded: 0, conflicts: 0, "a create-only run")
                try await context.expect(.remote, ["inbox/new.db": "new", "inbox/both.db": "remote, longer", "inbox/theirs.db": "theirs"], "create-only, remote side")
                try await context.expect(.local, ["inbox/new.db": "new", "inbox/both.db": "local"], "create-only, local side")
            },
        ]
    }

    /// The checksum both sides offer (the first by name), for scenarios that compare by
    /// checksum; without one, such a scenario cannot tell equal files apart and is skipped.
    static func commonChecksum(_ context: SyncScenarioContext) throws -> ChecksumAlgorithm {
        let common = Set(context.local.provider.capabilities.checksums.keys).intersection(context.remote.provider.capabilities.checksums.keys)
        guard let algorithm = common.sorted(by: { $0.rawValue < $1.rawValue }).first else {
            throw ConformanceSkip("the two sides offer no checksum in common, so equal files cannot be told by content")
        }
        return algorithm
    }

    /// The starting point of the edit scenarios: two files synced both ways.
    static func seed(_ context: SyncScenarioContext) async throws {
        try await context.write(.local, "a.txt", "a")
        try await context.write(.local, "dir/b.txt", "b")
        try await context.sync(twoWay).expect(uploaded: 2, downloaded: 0, "the first sync")
        try await context.expectBoth(["a.txt": "a", "dir/b.txt": "b"], "after the first sync")
    }
}
