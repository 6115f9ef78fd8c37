/// Copies everything one store holds into another, as it is: records still sealed (never
/// decrypted) with their fingerprints, aliases and signatures; each record's file (wrapped key and
/// chunks) in the same transaction as its record, so no copy is ever a record without its content;
/// the store's named values (the key-check value, the key ring, API credentials, BIN tables: see
/// ``MetadataKind``); groups, still sealed, once their records are there; and the key audit
/// trail. The same keys open the copy.
///
/// Re-running it is safe and resumes an interrupted run: what the destination has is counted as
/// there, a record whose file did not arrive gets it, and audit lines continue where they stopped.
/// ``verify()`` compares both stores.
package struct StoreMigration {
    /// What was copied and what was there already, of one kind.
    package struct Tally: Sendable, Equatable {
        package var copied = 0
        package var already = 0

        package init(copied: Int = 0, already: Int = 0) {
            self.copied = copied
            self.already = already
        }
    }

    /// The kinds of what a store holds, in the order they are reported.
    package enum Kind: String, Sendable, CaseIterable, Comparable {
        case records, files, groups, keys, credentials, bins = "BIN tables", other = "other values"
        case audit = "key audit lines"
        /// Jobs are never copied: only ``StoreMigration/verify()`` names them (those not ended).
        case jobs = "jobs not ended"
        case auditEvents = "audit events"

        package static func < (a: Kind, b: Kind) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    package struct Report: Sendable, Equatable {
        package var tallies: [Kind: Tally] = [:]
        /// Records with no alias (a batch's leftovers nothing can read): not copied.
        package var unaliased = 0
        /// The destination has a key audit trail of its own: the source's was not copied.
        package var auditKept = false
        /// Jobs done or failed on the source: not copied (their files stay there).
        package var jobsEnded = 0
        /// Jobs cancelled on the source: not copied, so never resumable on the destination.
        package var jobsCancelled: [JobID] = []
        package var sourceRecords = 0
        package var destinationRecords = 0

        package var copied: Int { tallies[.records]?.copied ?? 0 }
        package var skipped: Int { tallies[.records]?.already ?? 0 }
        package var files: Int { tallies[.files]?.copied ?? 0 }

        /// One line per kind, e.g. `records: 21 copied, 0 already there`.
        package var lines: [String] {
            tallies.keys.sorted().map { kind in
                let t = tallies[kind]!
                return "\(kind.rawValue): \(t.copied) copied, \(t.already) already there"
            }
        }

        mutating func count(_ kind: Kind, copied: Bool) {
            if copied {
                tallies[kind, default: Tally()].copied += 1
            } else {
                tallies[kind, default: Tally()].already += 1
            }
        }
    }

    /// Which named values (``AliasStore/metadata(_:)``) are of which kind, and what a
    /// destination that holds another value under the name means.
    package struct MetadataKind: Sendable {
        package enum Difference: Sendable {
            /// Refuse the whole migration (before any record is copied).
            case refuse
            /// Keep the destination's (a hint, not a grant).
            case keepDestination
            /// Never copied, never compared: what one store's own nodes wrote of themselves.
            case skip
        }

        package var prefix: String
        package var kind: Kind
        package var difference: Difference = .refuse
        /// Copied after every other value (a pointer to what the others hold).
        package var last = false

        package init(prefix: String, kind: Kind, difference: Difference = .refuse, last: Bool = false) {
            self.prefix = prefix
            self.kind = kind
            self.difference = difference
            self.last = last
        }
    }

    package enum Error: Swift.Error, CustomStringConvertible {
        case differentKeys
        case conflict(name: String, kind: Kind)
        case countMismatch(source: Int, destination: Int)
        /// The source holds jobs that have not ended (at most the first few named): found
        /// before anything was copied, or after the copy (`copied`: a node took one meanwhile).
        case unfinishedJobs(count: Int, first: [JobID], copied: Bool)
        case store(StoreError)

        package var description: String {
            switch self {
            case .differentKeys:
                return "the destination already holds records sealed with other keys; nothing was copied"
            case let .conflict(name, kind):
                return
                    "the destination holds its own \(name) (\(kind.rawValue)), unlike the source's; nothing was copied "
                    + "(migrate into an empty store)"
            case let .countMismatch(source, destination):
                return
                    "the destination holds \(destination) records after the copy, the source \(source): check both stores"
            case let .unfinishedJobs(count, first, copied):
                let jobs = "\(count) job\(count == 1 ? "" : "s") not ended (\(StoreMigration.named(first, of: count)))"
                let end =
                    "let them end, or cancel them (cloak jobs cancel ID; a cancelled job cannot resume on the "
                    + "destination)"
                return copied
                    ? "the source took \(jobs) while it was copied: stop the nodes serving it, \(end), and run the "
                        + "migration again (it resumes)"
                    : "the source holds \(jobs): \(end), then migrate; nothing was copied"
            case let .store(error): return error.description
            }
        }
    }

    package let source: any AliasStore
    package let destination: any AliasStore
    /// Records per page (each page one destination transaction, or more when its files are large).
    package var batch = 500
    /// Jobs per page when the source's jobs are listed.
    package var jobPage = 500
    /// Sealed file bytes after which a destination transaction is committed (between records).
    package var transactionBytes = 64 << 20
    /// The named values' kinds beyond the vault's own (the service adds credentials and BIN tables).
    package var metadataKinds: [MetadataKind] = []
    /// Tests: stop (as a crash would) after this many committed transactions of records.
    package var interruptAfterTransactions: Int?

    /// Named values that belong to one store and never move: SQLite's durable-commit counter.
    static let storeOwnNames: Set<String> = ["durable_commit"]

    package init(from source: any AliasStore, to destination: any AliasStore) {
        self.source = source
        self.destination = destination
    }

    /// Copies, then checks that the destination holds at least every source record.
    package func run(progress: (Report) -> Void = { _ in }) throws(Error) -> Report {
        var report = Report()
        let jobs = try endedJobs(copied: false)
        (report.jobsEnded, report.jobsCancelled) = (jobs.ended, jobs.cancelled)
        try copyMetadata(&report)
        do throws(StoreError) {
            try copyRecords(&report, progress: progress)
            try copyGroups(&report)
            try copyAudit(&report)
            try copyAuditEvents(&report)
            report.sourceRecords = try source.recordCount()
            report.destinationRecords = try destination.recordCount()
        } catch {
            throw .store(error)
        }
        _ = try endedJobs(copied: true)
        guard report.destinationRecords >= report.sourceRecords - report.unaliased else {
            throw .countMismatch(source: report.sourceRecords, destination: report.destinationRecords)
        }
        return report
    }

    /// Records page by page; each record's file goes in the same destination transaction as the
    /// record (a transaction is committed early, between records, past ``transactionBytes``).
    private func copyRecords(_ report: inout Report, progress: (Report) -> Void) throws(StoreError) {
        var after: String?
        var committed = 0
        while true {
            let page = try source.records(after: after, limit: batch)
            guard let last = page.last else { break }
            try destination.begin()
            var bytes = 0
            do throws(StoreError) {
                for record in page {
                    guard let first = record.aliases.first else {
                        report.unaliased += 1
                        continue
                    }
                    if try destination.record(alias: first.alias)?.id == record.id {
                        report.count(.records, copied: false)
                    } else {
                        // Intents' places are the source store's count: copied as they are,
                        // they would be given back by the destination's trigger without ever
                        // having been taken there. They hold no place there (for at most a
                        // day: they expire).
                        var record = record
                        record.bucket = nil
                        try destination.insert(record)
                        report.count(.records, copied: true)
                    }
                    guard let file = try source.file(recordID: record.id) else { continue }
                    if try destination.file(recordID: record.id) != nil {
                        report.count(.files, copied: false)
                        continue
                    }
                    bytes += try copyFile(file, recordID: record.id)
                    report.count(.files, copied: true)
                    if bytes >= transactionBytes {
                        try destination.commit()
                        try destination.begin()
                        bytes = 0
                    }
                }
                try destination.commit()
            } catch {
                destination.rollback()
                throw error
            }
            committed += 1
            after = last.id
            progress(report)
            if let stop = interruptAfterTransactions, committed >= stop {
                throw StoreError.unavailable("interrupted (run it again to resume)")
            }
        }
    }

    /// Groups page by page, sealed as they are, after every record they name is there (a group
    /// names only records, and a member's row needs its record).
    private func copyGroups(_ report: inout Report) throws(StoreError) {
        var after: String?
        while true {
            let page = try source.groups(after: after, limit: batch)
            guard let last = page.last else { break }
            try destination.transaction { () throws(StoreError) in
                for group in page {
                    let there = try destination.group(id: group.id) != nil
                    if !there { try destination.insertGroup(group) }
                    report.count(.groups, copied: !there)
                }
            }
            after = last.id
        }
    }

    /// One file, in the destination's open transaction: its row, every chunk, finished into
    /// `recordID`. Returns its sealed bytes.
    private func copyFile(_ file: StoredFile, recordID: String) throws(StoreError) -> Int {
        var started = file
        started.chunkCount = 0
        started.recordID = nil
        // A file started before and never finished (an earlier copy's, rolled back with its
        // record, leaves none; a crashed writer's could): begin again.
        _ = try destination.deleteUnfinishedFile(uploadID: file.uploadID)
        // Kept since an earlier copy (POST /aliases/keep moved it from the intent's record to
        // this one): the destination's finished copy moves the same way.
        if try destination.moveFile(uploadID: file.uploadID, from: nil, to: recordID) { return 0 }
        try destination.startFile(started)
        var index = 0
        var bytes = 0
        while index < file.chunkCount {
            let chunks = try source.fileChunks(uploadID: file.uploadID, from: index, limit: 64)
            guard !chunks.isEmpty else { break }
            for chunk in chunks {
                try destination.appendFileChunk(uploadID: file.uploadID, index: index, sealed: chunk)
                bytes += chunk.count
                index += 1
            }
        }
        guard try destination.finishFile(uploadID: file.uploadID, chunkCount: file.chunkCount, recordID: recordID)
        else { throw StoreError.unavailable("a file's chunks did not all reach the destination") }
        return bytes
    }

    /// The key audit trail: the lines the destination does not have yet, when what it has is
    /// the source's beginning (a resumed run); a destination with a trail of its own keeps it.
    private func copyAudit(_ report: inout Report) throws(StoreError) {
        let page = 1_000
        var offset = 0
        var have = try destination.keyAuditEntries(offset: 0, limit: page)
        var mine = try source.keyAuditEntries(offset: 0, limit: page)
        // How far the destination's trail is the source's.
        while !have.isEmpty {
            guard mine.count >= have.count, zip(have, mine).allSatisfy({ $0.line == $1.line && $0.at == $1.at })
            else {
                report.auditKept = true
                return
            }
            offset += have.count
            report.tallies[.audit, default: Tally()].already += have.count
            have = try destination.keyAuditEntries(offset: offset, limit: page)
            mine = try source.keyAuditEntries(offset: offset, limit: page)
        }
        while !mine.isEmpty {
            try destination.transaction { () throws(StoreError) in
                for entry in mine { try destination.appendKeyAudit(entry.line, at: entry.at) }
            }
            report.tallies[.audit, default: Tally()].copied += mine.count
            offset += mine.count
            mine = try source.keyAuditEntries(offset: offset, limit: page)
        }
    }

    /// Every chain's audit blocks, as they are (their MACs verify on the destination under the
    /// same ring; the destination indexes their alias references itself): after the last the
    /// destination already holds of each chain, 1,000 a transaction. Tallied in events.
    private func copyAuditEvents(_ report: inout Report) throws(StoreError) {
        let page = 1000
        func events(_ blocks: [StoredAuditBlock]) -> Int {
            blocks.reduce(0) { $0 + Int(($1.block.summary?.last ?? $1.block.first) - $1.block.first + 1) }
        }
        for chain in try source.auditChains() {
            var last = Int64.min
            while let held = try destination.auditChain(chain, after: last, limit: page).last {
                report.tallies[.auditEvents, default: Tally()].already += events([held])
                last = held.block.first
            }
            var blocks = try source.auditChain(chain, after: last, limit: page)
            while let end = blocks.last?.block.first {
                // A block that does not read is evidence: stop rather than copy around it.
                if let broken = blocks.first(where: { $0.block.summary == nil }) {
                    throw StoreError.unavailable(
                        "the audit block of chain \(chain) at \(broken.block.first) does not read (cloak audit verify names it); nothing of it or after it was copied"
                    )
                }
                try destination.transaction { () throws(StoreError) in
                    try destination.appendAuditBlocks(blocks.map(\.block))
                }
                report.tallies[.auditEvents, default: Tally()].copied += events(blocks)
                blocks = try source.auditChain(chain, after: end, limit: page)
            }
        }
        // Reads' blocks nodes left in the source's segments (they stopped before copying them in:
        // AuditSegment), those the destination does not hold yet.
        var pending: [AuditBlock] = []
        for path in source.auditSegmentBase.map(AuditSegment.paths(beside:)) ?? [] {
            pending += try AuditSegment.read(path: path).blocks
        }
        guard !pending.isEmpty else { return }
        try destination.transaction { () throws(StoreError) in try destination.appendAuditBlocksNotStored(pending) }
        report.tallies[.auditEvents, default: Tally()].copied += pending.reduce(0) {
            $0 + Int(($1.summary?.last ?? $1.first) - $1.first + 1)
        }
    }
}
