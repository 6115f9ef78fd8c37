import CloakCrypto
import Dispatch

/// How a vault keeps its audit events (issue 59): the node's name for its chains, how long
/// events are kept, and where each chain's head is told (the service logs it: `audit head`).
package struct AuditSettings: Sendable {
    /// The node (`host:port`): each vault thread's chain is named `node/boot/n`.
    package var node: String
    /// `audit.retention_days`: older events are swept, a trim event recording what went.
    package var retentionDays: Int
    /// Told each chain's head each second it moved, and at stop (on the vault thread).
    package var reportHead: @Sendable (AuditVerifier.Head) -> Void
    /// Told what the start found in a read segment (``AuditSegment``): blocks copied, bytes cut.
    package var log: @Sendable (String) -> Void = { _ in }
    /// The segment's system calls (tests fail and order them).
    var segmentCalls = AuditSegment.FileCalls()

    package init(node: String, retentionDays: Int, reportHead: @escaping @Sendable (AuditVerifier.Head) -> Void) {
        self.node = node
        self.retentionDays = retentionDays
        self.reportHead = reportHead
    }

    /// This process's start, in a chain's name: a restarted node begins new chains, so two
    /// processes never append to one.
    static let boot: String = {
        SecureRandom.bytes(4).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }()

    /// The chain of vault thread `index`.
    func chainID(_ index: Int) -> String { "\(node)/\(Self.boot)/\(index)" }

    /// Tells the head of each of this node's chains that `store` holds (those of its earlier
    /// starts), as the node starts (review V, item 6): a crash can have cut off the newest
    /// blocks of a chain whose last head was never logged; the head found is logged now, so a
    /// later cut is seen against it. A block that is not authentic is not told (verify names it).
    package func reportFoundHeads(in store: any AliasStore, key: HMACKey) {
        guard let found = try? store.newestAuditBlocks(chainPrefix: node + "/") else { return }
        for stored in found where AuditChain.isAuthentic(stored.block, key: key) {
            guard let last = stored.block.summary?.last else { continue }
            reportHead(AuditVerifier.Head(chain: stored.block.chain, seq: last, mac: stored.block.mac))
        }
    }
}

/// Chain names by prefix: the first name past every name that starts with a prefix.
enum AuditChainNames {
    static func end(of prefix: String) -> String {
        guard let last = prefix.unicodeScalars.last, let next = Unicode.Scalar(last.value + 1) else {
            return prefix + "\u{10FFFF}"
        }
        return String(prefix.unicodeScalars.dropLast()) + String(next)
    }
}

/// One vault thread's audit chain and its upkeep: the head told each second it moved and at
/// stop, and (the first thread only) the retention sweep. Touched on that thread only.
final class AuditTrail {
    var chain: AuditChain
    /// Where the events of a batch that only reads go (issue 74): a read must not pay for a
    /// writing transaction of its own.
    enum ReadEvents {
        /// In a writing transaction of the batch, as a change's events (an in-memory store).
        case transaction
        /// Appended to a file beside an embedded store and flushed (``AuditSegment``).
        case segment(AuditSegment)
        /// One statement of their own after the batch's reads, committed by itself (a database
        /// server: every event lives in the database, durable under its `synchronous_commit`).
        case statement
    }

    let readEvents: ReadEvents
    var segment: AuditSegment? {
        if case let .segment(segment) = readEvents { return segment }
        return nil
    }
    /// Whether a batch of reads keeps its events apart from a writing transaction.
    var keepsReadsApart: Bool {
        if case .transaction = readEvents { return false }
        return true
    }
    /// Where the chain stood before a write whose commit failed: a connection can break after
    /// the server committed (a failover), so what the store holds is read before the next
    /// write (``settle(_:)``), else that write would reuse a place and fail for good.
    var unsure: AuditChain.Mark?
    private let settings: AuditSettings
    private let sweeps: Bool
    private var reported: Int64 = 0
    private var lastUpkeep: UInt64 = 0

    init(chain: AuditChain, settings: AuditSettings, sweeps: Bool, readEvents: ReadEvents = .transaction) {
        self.chain = chain
        self.settings = settings
        self.sweeps = sweeps
        self.readEvents = readEvents
    }

    /// Whether audited answers stop: the segment failed to flush (``AuditSegment/failed``).
    var hasFailed: Bool { segment?.failed ?? false }

    /// Seals a reading batch's `drafts` (its transaction over) and keeps them apart from any
    /// writing transaction (``readEvents``): durable when this returns. A failed append leaves
    /// the chain where it was (nothing of it was kept, or the segment has failed for good); a
    /// failed statement leaves it `unsure` (committed or not, the store says which).
    func appendReads(_ drafts: [AuditEvent.Draft], store: any AliasStore) throws {
        try settle(store)
        let mark = chain.mark
        let blocks = chain.seal(drafts)
        switch readEvents {
        case .transaction:
            preconditionFailure("a batch whose reads' events ride its transaction is a writing one")
        case let .segment(segment):
            do {
                try segment.append(blocks, now: DispatchTime.now().uptimeNanoseconds)
            } catch {
                chain.restore(mark)
                throw StoreError.unavailable(error.description)
            }
        case .statement:
            do {
                try store.appendAuditBlocks(blocks)
            } catch {
                unsure = mark
                throw error
            }
            wrote(blocks.count)
        }
    }

    /// Between batches and when idle: the segment's blocks into the store once a round's worth
    /// waits or the oldest is a second old (at once with `force`: before a search, at stop), in
    /// a transaction of their own; the file then starts over. A failed copy is tried again at
    /// the next call (the blocks stay in the file, durable).
    func drainIfDue(_ store: any AliasStore, force: Bool = false) {
        guard let segment, !segment.pending.isEmpty else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard force || segment.pending.count >= Self.indexRound || now - segment.pendingSince >= 1_000_000_000
        else { return }
        // None of them is stored yet: only this thread copies them, and the file is cut once
        // they are (a start copies what a crash left with the check of each).
        guard (try? store.transaction({ try store.appendAuditBlocks(segment.pending) })) != nil else { return }
        wrote(segment.pending.count)
        segment.drained()
    }

    /// Events older than this (milliseconds since the epoch) are swept.
    var cutoff: Int64 { VaultAuditing.nowMilliseconds() - Int64(settings.retentionDays) * 86_400_000 }

    /// Makes the chain agree with the store after a failed commit: it goes on after the last
    /// event of it the store holds past the mark, or from the mark when there is none.
    func settle(_ store: any AliasStore) throws {
        guard let mark = unsure else { return }
        chain.restore(mark)
        // Only this chain's own links, one after the other from the mark: a row someone wrote
        // into the table is not followed (nor a place far past the mark).
        for stored in try store.auditChain(chain.id, after: mark.seq, limit: 10_000) {
            let block = stored.block
            guard block.first == chain.seq + 1, block.previousMAC == chain.head, chain.isAuthentic(block),
                let last = block.summary?.last
            else { break }
            chain.resume(after: block, last: last)
        }
        unsure = nil
    }

    /// When the head was last looked at by ``reportHeadIfDue()`` (uptime nanoseconds).
    private var lastHeadLook: UInt64 = 0

    /// Between batches and when idle: the head, at most once a second and only when it moved,
    /// so that a crash can cut off at most a second of events unseen by the log (review V,
    /// item 6: a head logged once a minute let the newest blocks of a node that crashed be
    /// deleted without a trace until its next write).
    func reportHeadIfDue() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - lastHeadLook >= 1_000_000_000 else { return }
        lastHeadLook = now
        reportHead()
    }

    /// Tells the head when it moved since last told.
    func reportHead() {
        // A head not known to be in the store is never told (verify would take it as cut off).
        guard unsure == nil, chain.seq != reported else { return }
        reported = chain.seq
        settings.reportHead(AuditVerifier.Head(chain: chain.id, seq: chain.seq, mac: chain.head))
    }

    /// Blocks this thread wrote that the alias index may not hold yet, and when it was last
    /// brought up to date (uptime nanoseconds).
    private var unindexed = 0
    private var lastIndexRound: UInt64 = 0
    /// Blocks one round of the alias index takes, in a transaction of its own: its statements'
    /// cost shared by that many blocks, and short enough not to hold up the batches behind it.
    static let indexRound = 200

    /// After a committed batch: `count` more blocks to index.
    func wrote(_ count: Int) { unindexed += count }

    /// Between batches, on the first thread: one round of the alias index once a round's worth
    /// of blocks is waiting, or a second after the first of fewer, so that the index is seconds
    /// behind at most and never costs a request its own statement.
    func indexIfDue(_ store: any AliasStore) {
        guard sweeps, unindexed > 0, !store.indexesAuditBlocksAsWritten else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard unindexed >= Self.indexRound || now - lastIndexRound >= 1_000_000_000 else { return }
        lastIndexRound = now
        let done = indexAliases(store, batch: Self.indexRound, rounds: 1)
        unindexed = done < Self.indexRound ? 0 : max(0, unindexed - done)
    }

    /// On each of the vault's upkeep rounds (every few seconds), on the first thread: the alias
    /// index of blocks still not indexed (an older node's, or, where a store does not index
    /// blocks as it writes them, this thread's, also indexed between batches by
    /// ``indexIfDue(_:)``), at most 20 rounds. Once a minute: the retention sweep on the first thread (the head is told each
    /// second it moved, ``reportHeadIfDue()``).
    func maintain(_ store: any AliasStore) {
        if sweeps { indexAliases(store) }
        let now = DispatchTime.now().uptimeNanoseconds
        guard lastUpkeep == 0 || now - lastUpkeep >= 60_000_000_000 else { return }
        lastUpkeep = now
        // Up to 20 rounds a minute (100,000 blocks), each its own transaction and trim event.
        if sweeps {
            for _ in 0..<20 { guard (try? trim(store, before: cutoff)) == true else { break } }
        }
    }

    /// Indexes the alias references of blocks not indexed yet, a transaction of `batch` at a
    /// time, at most `rounds` of them; answers how many blocks it indexed.
    @discardableResult
    func indexAliases(_ store: any AliasStore, batch: Int = AuditTrail.indexRound, rounds: Int = 20) -> Int {
        var total = 0
        for _ in 0..<rounds {
            guard let done = try? store.transaction({ try store.indexAuditAliases(limit: batch) }) else { break }
            total += done
            if done < batch { break }
        }
        return total
    }

    /// Deletes up to `limit` blocks from before `before` through the time index, and records
    /// the trim (what each chain now starts at) as an event of this chain, in one transaction.
    /// Returns whether anything was deleted.
    @discardableResult
    func trim(_ store: any AliasStore, before: Int64, limit: Int = 5000) throws -> Bool {
        var mark: AuditChain.Mark?
        do {
            return try store.transaction {
                try settle(store)
                mark = chain.mark
                return try trimmed(store, before: before, limit: limit)
            }
        } catch {
            if let mark { unsure = mark }
            throw error
        }
    }

    /// ``trim(_:before:limit:)``'s work in its transaction: whether it deleted anything.
    private func trimmed(_ store: any AliasStore, before: Int64, limit: Int) throws -> Bool {
        do {
            var starts = try store.deleteAuditBlocks(before: before, limit: limit) { [chain] in chain.isAuthentic($0) }
            guard !starts.isEmpty else { return false }
            // This chain emptied: it goes on with the trim's own event.
            if let own = starts[chain.id], own.gone {
                starts[chain.id] = AuditTrim.Start(first: chain.seq + 1, gone: false)
            }
            let draft = AuditEvent.Draft(
                at: VaultAuditing.nowMilliseconds(), action: AuditTrim.action, tokenID: "-", client: "-",
                result: .ok, facts: [AuditEvent.Fact("before", String(before))] + AuditTrim(starts: starts).facts)
            try store.appendAuditBlocks(chain.seal([draft]))
            return true
        }
    }
}
