import BuckiaChunks
import BuckiaCore
import Foundation

/// The chunk-store scenarios. Each uses chunks of its own (a per-scenario nonce), so stores
/// shared between scenarios do not interfere.
package enum ChunkStoreScenarios {
    static var all: [ChunkStoreScenario] {
        [roundTrip, organizations, batchedExistence, decoratorOrders, corruption, wrongKey, concurrentWriters, files, packs, invalidPaths]
    }

    /// Deterministic bytes: `count` of them from `seed` (xorshift), incompressible.
    package static func noise(_ count: Int, seed: UInt64) -> Data {
        // SplitMix64's finaliser spreads nearby seeds apart; xorshift needs a non-zero state.
        var state = (seed &+ 0x9E37_79B9_7F4A_7C15)
        state = (state ^ (state >> 30)) &* 0xBF58_476D_1CE4_E5B9
        state = (state ^ (state >> 27)) &* 0x94D0_49BB_1331_11EB
        state = state ^ (state >> 31)
        if state == 0 { state = 1 }
        var bytes = [UInt8](repeating: 0, count: count)
        for index in 0..<count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            bytes[index] = UInt8(truncatingIfNeeded: state >> 24)
        }
        return Data(bytes)
    }

    /// A nonce so each run's chunks are new to a store that outlives the run.
    static func nonce() -> UInt64 { UInt64.random(in: 1...UInt64.max) }

    static let testKey = [UInt8](repeating: 7, count: 32)
    static let otherKey = [UInt8](repeating: 9, count: 32)

    enum Decorator: String, CaseIterable, Sendable {
        case compression, encryption, verification, caching

        func wrap(_ retrieval: any ChunkStorageRetrieval, organization: any ChunkStorageOrganization, key: [UInt8] = ChunkStoreScenarios.testKey) throws -> any ChunkStorageRetrieval {
            switch self {
            case .compression: try CompressedRetrieval(wrapped: retrieval)
            case .encryption: try EncryptedRetrieval(wrapped: retrieval, key: key)
            case .verification: VerifiedRetrieval(wrapped: retrieval, organization: organization)
            case .caching: CachedRetrieval(wrapped: retrieval, capacityBytes: 1 << 20)
            }
        }
    }

    /// `store` with `decorators` applied innermost first.
    static func stack(_ store: any ChunkStorageComposable, _ decorators: [Decorator], key: [UInt8] = testKey) throws -> ComposedChunkStorage {
        try store.decorated { base in
            try decorators.reduce(base) { try $1.wrap($0, organization: store.organization, key: key) }
        }
    }

    static func permutations<T>(_ items: [T]) -> [[T]] {
        guard items.count > 1 else { return [items] }
        return items.indices.flatMap { index -> [[T]] in
            var rest = items
            let first = rest.remove(at: index)
            return permutations(rest).map { [first] + $0 }
        }
    }

    /// The text is compressible; the noise is not; one chunk is empty.
    static func sampleChunks(_ seed: UInt64) -> [Data] {
        [Data(String(repeating: "chunk \(seed) ", count: 400).utf8), noise(3000, seed: seed), Data()]
    }

    static let roundTrip = ChunkStoreScenario(
        "chunks: round trip", contract: "A stored chunk reads back identical and exists; a missing one reads as nil and does not; deleting removes it, and deleting a missing one succeeds."
    ) { context in
        let store = try await context.open()
        let data = noise(5000, seed: nonce())
        let identifier = try await store.storeChunk(data)
        try Expect.equal(identifier, try ChunkIdentifier.of(data), "the identifier storeChunk returned")
        try Expect.sameBytes(try await store.readChunk(identifier) ?? Data(), data, "chunk read back")
        try Expect.that(try await store.chunkExists(identifier), "chunkExists is false for a stored chunk")
        let absent = try ChunkIdentifier.of(noise(100, seed: nonce()))
        try Expect.that(try await store.readChunk(absent) == nil, "a chunk never stored did not read as nil")
        try Expect.that(!(try await store.chunkExists(absent)), "chunkExists is true for a chunk never stored")
        try await Expect.error(.checksumMismatch, "writing bytes under another chunk's identifier") {
            try await store.writeChunk(Data("not it".utf8), identifier: absent)
        }
        try Expect.that(try await store.readChunk(absent) == nil, "a refused write stored something")
        try await store.deleteChunk(identifier)
        try Expect.that(try await store.readChunk(identifier) == nil, "a deleted chunk still reads")
        try Expect.that(!(try await store.chunkExists(identifier)), "a deleted chunk still exists")
        try await store.deleteChunk(identifier)
    }

    static let organizations = ChunkStoreScenario(
        "chunks: path and identifier round trip for every organization",
        contract: "For Git-style depths 1 to 4, flat and the store's own organization, identifier(from: storagePath(for: id)) is id, other paths are refused, and chunks written under each read back."
    ) { context in
        let store = try await context.open()
        let layouts: [any ChunkStorageOrganization] = [store.organization, FlatOrganization()] + (1...4).map { GitStyleOrganization(directoryDepth: $0) }
        let seed = nonce()
        let sha256 = try (0..<20).map { try ChunkIdentifier.of(noise(64, seed: seed &+ UInt64($0))) }
        let sha1 = try (0..<5).map { try ChunkIdentifier.of(noise(64, seed: seed &+ 100 &+ UInt64($0)), algorithm: .sha1) }
        for layout in layouts {
            for identifier in sha256 + sha1 {
                let path = layout.storagePath(for: identifier)
                try Expect.equal(layout.identifier(from: path), identifier, "\(layout.name): identifier(from: \(path.debugDescription))")
                try Expect.that(layout.isValidPath(path), "\(layout.name): isValidPath is false for \(path.debugDescription)")
                // Another identifier's name under this one's folders (only wrong where there are folders).
                let reversed = try ChunkIdentifier(id: String(identifier.id.reversed()))
                var misplaced = path.replacingOccurrences(of: identifier.id, with: reversed.id)
                if layout.storagePath(for: reversed) == misplaced { misplaced = "" }
                for bad in ["", "../" + path, "/" + path, path + "/x", path.uppercased(), String(path.dropLast()), misplaced] where bad != path {
                    try Expect.that(layout.identifier(from: bad) == nil && !layout.isValidPath(bad), "\(layout.name): accepted the path \(bad.debugDescription)")
                }
            }
            // Written through this organization, read back through it.
            let data = noise(700, seed: seed &+ 999)
            let composed = ComposedChunkStorage(organization: layout, retrieval: store.retrieval)
            let identifier = try await composed.storeChunk(data)
            try Expect.sameBytes(try await composed.readChunk(identifier) ?? Data(), data, "\(layout.name): chunk read back")
            try await composed.deleteChunk(identifier)
        }
        // The store's enumeration finds exactly what was stored through its organization.
        if let enumeration = store.enumeration {
            let stored = try await (0..<3).asyncMap { try await store.storeChunk(noise(300, seed: seed &+ 500 &+ UInt64($0))) }
            let listed = Set(try await enumeration.allChunks())
            try Expect.that(Set(stored).isSubset(of: listed), "allChunks missed stored chunks")
            for identifier in stored { try await store.deleteChunk(identifier) }
            try Expect.that(Set(stored).isDisjoint(with: try await enumeration.allChunks()), "allChunks lists deleted chunks")
        }
    }

    static let batchedExistence = ChunkStoreScenario(
        "chunks: batched existence", contract: "chunkExists over a batch answers for every identifier, present or absent, including many in one folder (where stores list instead of stat)."
    ) { context in
        let store = try await context.open()
        let seed = nonce()
        let present = try await (0..<12).asyncMap { try await store.storeChunk(noise(200, seed: seed &+ UInt64($0))) }
        var absent = try (0..<12).map { try ChunkIdentifier.of(noise(200, seed: seed &+ 1000 &+ UInt64($0))) }
        // Absent identifiers beside a present one, so its folder holds several of the batch.
        let anchor = present[0]
        for index in 0..<6 {
            let tail = Hashing.sha256Hex(Data("\(seed)-\(index)".utf8))
            let crafted = try ChunkIdentifier(id: String(anchor.id.prefix(8)) + tail.prefix(anchor.id.count - 8))
            if store.organization.folder(for: crafted) == store.organization.folder(for: anchor) { absent.append(crafted) }
        }
        let answers = try await store.chunkExists(present + absent + present.prefix(2))
        try Expect.equal(answers.count, present.count + absent.count, "answers (one per distinct identifier)")
        for identifier in present { try Expect.equal(answers[identifier], true, "exists(\(identifier.id.prefix(12))…), stored") }
        for identifier in absent { try Expect.equal(answers[identifier], false, "exists(\(identifier.id.prefix(12))…), never stored") }
        try Expect.equal(try await store.chunkExists([]), [:], "answers for an empty batch")
        for identifier in present { try await store.deleteChunk(identifier) }
    }

    static let decoratorOrders = ChunkStoreScenario(
        "chunks: every decorator order is transparent",
        contract: "Compression, encryption, verification and caching in all 24 orders read back exactly what was written, through the same stack and a fresh one."
    ) { context in
        let store = try await context.open()
        let seed = nonce()
        let chunks = sampleChunks(seed)
        for order in permutations(Decorator.allCases) {
            let label = order.map(\.rawValue).joined(separator: " → ")
            let writer = try stack(store, order)
            var identifiers: [ChunkIdentifier] = []
            for chunk in chunks { identifiers.append(try await writer.storeChunk(chunk)) }
            let reader = try stack(store, order)
            for (identifier, chunk) in zip(identifiers, chunks) {
                try Expect.sameBytes(try await writer.readChunk(identifier) ?? Data([0xFF]), chunk, "\(label): read through the writing stack")
                try Expect.sameBytes(try await reader.readChunk(identifier) ?? Data([0xFF]), chunk, "\(label): read through a fresh stack")
            }
        }
        // Compression records whether it helped.
        let compressing = try stack(store, [.compression])
        let text = try await compressing.storeChunk(chunks[0])
        let raw = try await store.retrieval.readChunk(at: store.organization.storagePath(for: text)) ?? Data()
        try Expect.that(raw.count < chunks[0].count, "compressible text was stored at \(raw.count) bytes, not smaller than \(chunks[0].count)")
        let noisy = try await compressing.storeChunk(chunks[1])
        let rawNoise = try await store.retrieval.readChunk(at: store.organization.storagePath(for: noisy)) ?? Data()
        try Expect.that(rawNoise.count <= chunks[1].count + 16, "incompressible bytes grew to \(rawNoise.count) from \(chunks[1].count): they should be stored as they are")
        for identifier in [text, noisy] + (try chunks.map { try ChunkIdentifier.of($0) }) { try await store.deleteChunk(identifier) }
    }

    /// Flips one bit in the middle of the stored bytes, through the undecorated store.
    static func damage(_ store: any ChunkStorageComposable, _ identifier: ChunkIdentifier, truncate: Bool = false) async throws {
        let path = store.organization.storagePath(for: identifier)
        guard var raw = try await store.retrieval.readChunk(at: path), !raw.isEmpty else {
            throw ConformanceFailure("the stored chunk to damage is missing or empty")
        }
        if truncate {
            raw = raw.prefix(raw.count / 2)
        } else {
            raw[raw.startIndex + raw.count / 2] ^= 0x10
        }
        try await store.retrieval.writeChunk(raw, at: path, metadata: nil)
        try Expect.sameBytes(try await store.retrieval.readChunk(at: path) ?? Data(), raw, "the damaged bytes read back raw")
    }

    static let corruption = ChunkStoreScenario(
        "chunks: corruption is detected", contract: "A flipped bit or a truncation in a stored chunk is a checksumMismatch or corrupt error through any stack with verification or encryption, never other bytes; restoring a file with a damaged chunk fails."
    ) { context in
        let store = try await context.open()
        let seed = nonce()
        let stacks: [[Decorator]] = [[.verification], [.compression, .verification], [.encryption], [.encryption, .compression, .verification], [.verification, .caching]]
        for (index, decorators) in stacks.enumerated() {
            for truncate in [false, true] {
                let label = decorators.map(\.rawValue).joined(separator: " → ") + (truncate ? ", truncated" : ", bit flipped")
                let data = Data(String(repeating: "damage \(seed) \(index) ", count: 200).utf8) + noise(1000, seed: seed &+ UInt64(index))
                let identifier = try await stack(store, decorators).storeChunk(data)
                try await damage(store, identifier, truncate: truncate)
                do {
                    let read = try await stack(store, decorators).readChunk(identifier)
                    throw ConformanceFailure("\(label): a damaged chunk read back \(read.map { "\($0.count) bytes" } ?? "nil") instead of failing")
                } catch let error as BuckiaError {
                    try Expect.that([.checksumMismatch, .corrupt].contains(error.code), "\(label): expected checksumMismatch or corrupt, got \(error)")
                }
                try await store.deleteChunk(identifier)
            }
        }
        // Restoring checks every chunk even with no decorator at all.
        let files = ChunkedFileStore(storage: store, chunker: try FastCDC(averageSize: 1024))
        let content = noise(20_000, seed: seed &+ 77)
        let stored = try await files.store(content)
        try await damage(store, stored.manifest.chunks[1].id)
        let destination = context.scratch.appendingPathComponent("restored")
        try await Expect.error(.checksumMismatch, "restoring a file with a damaged chunk") { try await files.restore(stored.manifest, to: destination) }
        try Expect.that(!FileManager.default.fileExists(atPath: destination.path), "a failed restore left a file behind")
        for identifier in stored.manifest.uniqueChunks { try await store.deleteChunk(identifier) }
    }

    static let wrongKey = ChunkStoreScenario(
        "chunks: a wrong key is refused", contract: "A chunk encrypted under one key read with another is an unauthorized error, never bytes; read unencrypted it is a corrupt error."
    ) { context in
        let store = try await context.open()
        let data = noise(4000, seed: nonce())
        let identifier = try await stack(store, [.encryption]).storeChunk(data)
        try await Expect.error(.unauthorized, "reading with another key") { try await stack(store, [.encryption], key: otherKey).readChunk(identifier) }
        try await Expect.error(.unauthorized, "reading with another key, verified") { try await stack(store, [.encryption, .verification], key: otherKey).readChunk(identifier) }
        try await Expect.error(.checksumMismatch, "reading encrypted bytes through verification alone") { try await stack(store, [.verification]).readChunk(identifier) }
        try await Expect.error(.corrupt, "reading encrypted bytes as compressed") { try await stack(store, [.compression]).readChunk(identifier) }
        try Expect.sameBytes(try await stack(store, [.encryption]).readChunk(identifier) ?? Data(), data, "read with the right key")
        try await store.deleteChunk(identifier)
    }

    static let concurrentWriters = ChunkStoreScenario(
        "chunks: concurrent writers of the same chunk are safe",
        contract: "8 tasks writing the same chunk at once, plain and encrypted, while others read it, leave one readable chunk; no read sees anything but nil or the whole chunk."
    ) { context in
        let store = try await context.open()
        for decorators in [[], [Decorator.encryption]] {
            let data = noise(50_000, seed: nonce())
            let identifier = try ChunkIdentifier.of(data)
            let writer = try stack(store, decorators)
            let torn = Locked<[String]>([])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await writer.writeChunk(data, identifier: identifier) }
                    group.addTask {
                        for _ in 0..<3 {
                            do {
                                if let read = try await writer.readChunk(identifier), read != data { torn.withLock { $0.append("\(read.count) bytes") } }
                            } catch let error as BuckiaError where error.code == .corrupt || error.code == .checksumMismatch {
                                torn.withLock { $0.append("\(error.code)") }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            try Expect.that(torn.withLock { $0.isEmpty }, "reads during concurrent writes saw partial chunks: \(torn.withLock { $0 })")
            try Expect.sameBytes(try await writer.readChunk(identifier) ?? Data(), data, "the chunk after 8 concurrent writes")
            if let enumeration = store.enumeration {
                try Expect.equal(try await enumeration.allChunks().filter { $0 == identifier }.count, 1, "copies of the chunk the store lists")
            }
            try await store.deleteChunk(identifier)
        }
    }

    static let files = ChunkStoreScenario(
        "chunks: files as chunks write only what changed",
        contract: "Storing a file, then the same file, then it with 100 bytes changed in the middle writes nothing the second time and the third time only chunks around the change; each manifest restores its version."
    ) { context in
        let store = try await context.open()
        let files = ChunkedFileStore(storage: store, chunker: try FastCDC(averageSize: 4096), batchBytes: 64 << 10)
        let seed = nonce()
        let original = noise(300_000, seed: seed)
        var changed = original
        for offset in 150_000..<150_100 { changed[offset] ^= 0x5A }
        let first = try await files.store(original)
        try Expect.equal(first.statistics.bytes, Int64(original.count), "bytes stored")
        try Expect.equal(first.statistics.chunksWritten + first.statistics.chunksReused, first.manifest.chunks.count, "chunks written + reused")
        try Expect.that(first.statistics.chunksWritten > 10, "only \(first.statistics.chunksWritten) chunks written for 300 kB at a 4 kB average")
        let again = try await files.store(original)
        try Expect.equal(again.statistics.chunksWritten, 0, "chunks written storing the same file again")
        try Expect.equal(again.statistics.reusedBytes, Int64(original.count), "bytes reused storing the same file again")
        let edited = try await files.store(changed)
        // A cut at offset n is decided with byte n already hashed (FastCDC 2020 hashes two bytes a
        // step and may cut before the second), so a chunk is the original's when it ends before
        // 150000: one ending exactly there was cut on a changed byte. After the edit the cutting falls back onto the original boundaries
        // within a few chunks, but how many is chance (the normalised masks depend on where the
        // current chunk began: 4 new chunks were seen); 64 KiB past the edit, 16 average chunks,
        // a missed resynchronisation is beyond any run's luck. Within that window, whatever
        // was cut anew is written, and nothing else.
        let known = first.manifest.uniqueChunks
        var offset = 0
        var window: Set<ChunkIdentifier> = []
        for chunk in edited.manifest.chunks {
            defer { offset += chunk.size }
            if offset + chunk.size < 150_000 || offset >= 150_100 + 65_536 {
                try Expect.that(known.contains(chunk.id), "the chunk at \(offset) (\(chunk.size) bytes), away from the 100-byte change at 150000, was cut anew")
            } else if !known.contains(chunk.id) {
                window.insert(chunk.id)
            }
        }
        try Expect.that(edited.statistics.chunksWritten >= 1, "nothing written for a 100-byte change")
        try Expect.equal(edited.statistics.chunksWritten, window.count, "chunks written for a 100-byte change (the new chunks around it)")
        try Expect.sameBytes(try await files.data(for: first.manifest), original, "the first version restored")
        try Expect.sameBytes(try await files.data(for: edited.manifest), changed, "the changed version restored")
        let target = context.scratch.appendingPathComponent("restored.bin")
        try await files.restore(edited.manifest, to: target)
        try Expect.sameBytes(try Data(contentsOf: target), changed, "the changed version restored to a file")
        try Expect.equal(try await files.missingChunks(edited.manifest), [], "chunks missing after storing")
        for identifier in first.manifest.uniqueChunks.union(edited.manifest.uniqueChunks) { try await store.deleteChunk(identifier) }
        try Expect.equal(try await files.missingChunks(edited.manifest).count, edited.manifest.uniqueChunks.count, "chunks missing after deleting them all")
    }

    static let packs = ChunkStoreScenario(
        "chunks: pack export and import", contract: "Chunks exported to a pack import back identical; a truncated or altered pack is a corrupt error and stores nothing."
    ) { context in
        let store = try await context.open()
        guard let export = store.export, let importer = store.import else { throw ConformanceSkip("the store offers no pack export or import") }
        let seed = nonce()
        let chunks = (0..<5).map { noise(1000 + $0 * 300, seed: seed &+ UInt64($0)) }
        var identifiers: [ChunkIdentifier] = []
        for chunk in chunks { identifiers.append(try await store.storeChunk(chunk)) }
        let pack = context.scratch.appendingPathComponent("chunks.pack")
        let summary = try await export.exportChunks(identifiers, to: pack)
        try Expect.equal(summary.chunkCount, chunks.count, "chunks exported")
        for identifier in identifiers { try await store.deleteChunk(identifier) }
        let bytes = try Data(contentsOf: pack)
        let truncated = context.scratch.appendingPathComponent("truncated.pack")
        try bytes.prefix(bytes.count - 40).write(to: truncated)
        try await Expect.error(.corrupt, "importing a truncated pack") { try await importer.importChunks(from: truncated) }
        var altered = bytes
        altered[altered.startIndex + 100] ^= 1
        let alteredURL = context.scratch.appendingPathComponent("altered.pack")
        try altered.write(to: alteredURL)
        try await Expect.error(.corrupt, "importing an altered pack") { try await importer.importChunks(from: alteredURL) }
        for identifier in identifiers {
            try Expect.that(!(try await store.chunkExists(identifier)), "a failed import stored chunk \(identifier.id.prefix(12))…")
        }
        let imported = try await importer.importChunks(from: pack)
        try Expect.equal(imported.chunkCount, chunks.count, "chunks imported")
        for (identifier, chunk) in zip(identifiers, chunks) {
            try Expect.sameBytes(try await store.readChunk(identifier) ?? Data(), chunk, "chunk after import")
            try await store.deleteChunk(identifier)
        }
    }

    static let invalidPaths = ChunkStoreScenario(
        "chunks: paths that leave the store are refused", contract: "The retrieval refuses empty, absolute and `..` paths with invalidPath, for reads, writes, existence and deletes."
    ) { context in
        let retrieval = try await context.open().retrieval
        for path in ["", "/etc/passwd", "../outside", "a/../../outside", "a//b", "./a"] {
            try await Expect.error(.invalidPath, "reading \(path.debugDescription)") { try await retrieval.readChunk(at: path) }
            try await Expect.error(.invalidPath, "writing \(path.debugDescription)") { try await retrieval.writeChunk(Data("x".utf8), at: path, metadata: nil) }
            try await Expect.error(.invalidPath, "checking \(path.debugDescription)") { try await retrieval.chunkExists(at: path) }
            try await Expect.error(.invalidPath, "deleting \(path.debugDescription)") { try await retrieval.deleteChunk(at: path) }
        }
    }
}

extension Sequence where Element: Sendable {
    /// Maps in order, awaiting each element.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
