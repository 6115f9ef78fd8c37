/// A bulk job's row in the store (issue 60): what it is (``spec``, written and read by the
/// service, opaque here), where it is (``progress``), and who runs it (``lease``). Everything a
/// node needs to go on with a job is here and in its chunks (``JobPart``), so a job survives
/// the node that ran it: another node takes it over once the lease has lapsed.
package struct StoredJob: Sendable, Equatable {
    package var id: JobID
    package var kind: JobKind
    package var state: JobState
    /// The job's description (form or format, column map, file name), JSON the service writes.
    package var spec: [UInt8]
    /// The token that created the job: its limits apply to every row, and only it (or a token
    /// allowed to read jobs) sees it.
    package var owner: String
    /// The key the job's chunks are sealed under (``JobSeal``), itself sealed under data key
    /// ``keyID``.
    package var keyID: String
    package var wrappedKey: [UInt8]
    /// Chunks of input stored so far (all of them once the job is queued).
    package var inputChunks: Int
    package var progress: JobProgress
    package var lease: JobLease?
    package var createdAt: Int64
    package var updatedAt: Int64
    /// When the job and its outputs are deleted (set when it ends; nil while it can still run).
    package var expiresAt: Int64?
    /// Why a failed job failed: words of Cloak's, never a value.
    package var failure: String?

    /// What the job's key is bound to (``JobSeal``): its kind, its owner and its description, so
    /// a row altered to hand a job to another token, or to read its input another way, no
    /// longer opens.
    package var sealBinding: [UInt8] {
        StoredJob.sealBinding(kind: kind, owner: owner, spec: spec)
    }

    package static func sealBinding(kind: JobKind, owner: String, spec: [UInt8]) -> [UInt8] {
        var out = Array(kind.rawValue.utf8) + [0]
        out += Array(owner.utf8) + [0]
        return out + spec
    }

    package init(
        id: JobID, kind: JobKind, state: JobState, spec: [UInt8], owner: String, keyID: String,
        wrappedKey: [UInt8], inputChunks: Int = 0, progress: JobProgress = JobProgress(), lease: JobLease? = nil,
        createdAt: Int64, updatedAt: Int64? = nil, expiresAt: Int64? = nil, failure: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.state = state
        self.spec = spec
        self.owner = owner
        self.keyID = keyID
        self.wrappedKey = wrappedKey
        self.inputChunks = inputChunks
        self.progress = progress
        self.lease = lease
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.expiresAt = expiresAt
        self.failure = failure
    }
}

/// A job's id: `job_` and the time-ordered id records get (``RecordID``).
package struct JobID: Hashable, Sendable, Comparable, CustomStringConvertible {
    package let text: String

    /// A well-formed id, else nil (what a client sends is checked before it reaches a store).
    package init?(_ text: String) {
        guard text.hasPrefix("job_"), (5...64).contains(text.utf8.count),
            text.utf8.allSatisfy({
                $0 == 0x5F || $0 == 0x2D || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
                    || (0x61...0x7A).contains($0)
            })
        else { return nil }
        self.text = text
    }

    package static func make(now: Int64) -> JobID {
        let record = RecordID.make(now: now)
        return JobID("job_" + (record.hasPrefix("rec_") ? String(record.dropFirst(4)) : record))!
    }

    package var description: String { text }
    package static func < (a: JobID, b: JobID) -> Bool { a.text < b.text }
}

package enum JobKind: String, Sendable, CaseIterable {
    case `import`
    /// Records revealed into a file encrypted to a recipient's OpenPGP key, once another
    /// person approved it.
    case export
}

/// What a store does with jobs (every ``AliasStore`` does it; the compatibility suite holds each
/// to it). Each call runs in the transaction under way.
package protocol JobStore: ChunkStore {
    /// Adds a job (state `receiving` or `queued`). Throws ``StoreError/aliasTaken`` for an id
    /// in use.
    func createJob(_ job: StoredJob) throws(StoreError)
    /// Stores input chunk `index` of a `receiving` job and counts it; false when the job is not
    /// receiving any more (cancelled, swept) or the index is not the next one.
    func appendJobInput(_ id: JobID, index: Int, sealed: [UInt8], now: Int64) throws(StoreError) -> Bool
    /// The input chunks `owner`'s imports hold, but `except`'s: all of those receiving,
    /// queued, running or cancelled (kept to resume), and what is still stored of those done or
    /// failed (a failed upload's input is deleted a slice at a time, by the sweep: a token that
    /// broke off uploads one after another must not leave their input uncounted). Each is
    /// ``FileSeal/chunkSize`` bytes but a job's last: what a token's inputs take in all
    /// (`jobs.max_input_mib`, review V, item 9).
    func jobInputChunks(owner: String, except: JobID) throws(StoreError) -> Int
    func job(_ id: JobID) throws(StoreError) -> StoredJob?
    /// Up to `limit` jobs, newest first, created before `before` (nil: from the newest); only
    /// `owner`'s when given.
    func jobs(before: JobID?, owner: String?, limit: Int) throws(StoreError) -> [StoredJob]
    /// Gives `holder` the oldest job that is queued, or running under a lease that lapsed before
    /// `now`, leased until `until`: nil when there is none. Atomic against other nodes: one job,
    /// one holder.
    func claimJob(holder: String, now: Int64, until: Int64) throws(StoreError) -> StoredJob?
    /// One batch's step: the job moves from cursor `from` to `progress`, its lease is renewed,
    /// and `outputs` are stored, only while it is still `running`, held by `holder`, at `from`.
    /// False (nothing written) otherwise: the batch's records must then be rolled back with it.
    func advanceJob(
        _ id: JobID, holder: String, from cursor: Int64, to progress: JobProgress, leaseUntil: Int64,
        outputs: [JobOutputChunk], now: Int64
    ) throws(StoreError) -> Bool
    /// Moves a job in one of `from` to `to` (dropping its lease), with its expiry and failure;
    /// false when it was in none of them. A holder ending its own job passes `holder` too.
    func setJobState(
        _ id: JobID, from: Set<JobState>, to: JobState, holder: String?, now: Int64, expiresAt: Int64?,
        failure: String?
    ) throws(StoreError) -> Bool
    /// Drops up to `limit` of a job's `part` chunks, first ones first: an ended job's input
    /// (never needed again), a failed export's partial file (never handed out): how many it
    /// dropped. Callers drop a large input a slice at a time,
    /// each slice a transaction of its own (``jobChunksPerDelete``): SQLite held memory in
    /// proportion to the chunks one transaction deleted (30 MiB for a 34 MiB input), and a writer
    /// waited as long.
    func deleteJobChunks(_ id: JobID, part: JobPart, limit: Int) throws(StoreError) -> Int
    /// An export's approval: the job moves from `awaiting_approval` to `queued`, no longer
    /// expiring, with `sealed` as its ``JobPart/approval`` chunk; false (nothing written) when it
    /// was not awaiting approval or had expired by `now`.
    func approveJob(_ id: JobID, approval sealed: [UInt8], now: Int64) throws(StoreError) -> Bool
    /// Deletes jobs that expired at or before `now`, and `receiving` jobs idle since before
    /// `idleBefore` (a client that never finished sending): up to `limit` of their chunks and of
    /// the inputs of jobs done or failed and the files of exports failed (left by a node stopped
    /// before it dropped them), then up
    /// to `limit` of those jobs left without chunks. How many rows it deleted, chunks and jobs:
    /// under `limit`, nothing is left (as ``deleteJobChunks(_:part:limit:)``, a slice a transaction).
    func deleteExpiredJobs(now: Int64, idleBefore: Int64, limit: Int) throws(StoreError) -> Int
    /// Up to `limit` jobs whose key is sealed with `keyID`, after job `after` (nil: from the
    /// first), in id order (``KeyRewrap/jobBatch(version:after:limit:)``).
    func wrappedJobKeys(keyID: String, after: JobID?, limit: Int) throws(StoreError) -> [StoredJob]
    /// Writes each job's key sealed again (`new`'s `keyID` and `wrappedKey`), only where the row
    /// still holds `old`'s: the ids it changed.
    func rewrapJobKeys(_ changes: [(old: StoredJob, new: StoredJob)]) throws(StoreError) -> Set<String>
}

/// The chunks one transaction deletes (1 MiB of 64 KiB chunks).
package let jobChunksPerDelete = 16

extension JobStore {
    /// Adds `job` unless its owner already has `limit` jobs that have not ended (receiving,
    /// queued, running or awaiting approval): false then, nothing written. In the transaction
    /// under way, so two requests at once cannot both pass the count on a store that serialises
    /// writers (SQLite); on a server, the count is a bound to within a few concurrent requests.
    package func createJob(_ job: StoredJob, openLimit limit: Int) throws(StoreError) -> Bool {
        let open = try jobs(before: nil, owner: job.owner, limit: 10_000).filter { !$0.state.isFinal }.count
        guard open < limit else { return false }
        try createJob(job)
        return true
    }

    /// Cancels a job: one still receiving its input fails and its input goes at once (it could
    /// only ever import a prefix); a queued, running or unapproved one is cancelled after the batch under way,
    /// its input kept so that it can resume. Nil when the job was in neither case, else its new
    /// state.
    package func cancelJob(_ id: JobID, now: Int64, expiresAt: Int64) throws(StoreError) -> JobState? {
        if try setJobState(
            id, from: [.receiving], to: .failed, holder: nil, now: now, expiresAt: expiresAt,
            failure: "cancelled while its input arrived")
        {
            // The first slice here; the rest by the runners' sweep (a job failed keeps no input).
            _ = try deleteJobChunks(id, part: .input, limit: jobChunksPerDelete)
            return .failed
        }
        guard
            try setJobState(
                id, from: [.queued, .running, .awaitingApproval], to: .cancelled, holder: nil, now: now,
                expiresAt: expiresAt, failure: nil
            )
        else { return nil }
        return .cancelled
    }
}
