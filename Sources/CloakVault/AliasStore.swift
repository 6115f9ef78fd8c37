import CloakCrypto

/// Where the vault keeps its records. Every backend passes the same compatibility suite.
///
/// A store is used from one thread at a time (the vault's executor), so it need not be
/// thread-safe. All writes of one executor batch happen between ``begin()`` and ``commit()``;
/// each request's writes between a savepoint and its release, so one failing request leaves
/// the others intact and nothing half-written.
package protocol AliasStore: FileStore, JobStore, GroupStore {
    /// Whether this process is the store's only writer (an embedded file): only then may a vault
    /// keep what it read in memory (``DedupeCache``), since no one else can delete behind it.
    /// False for a server other nodes share.
    var isSoleWriter: Bool { get }
    /// The database file beside which serving vaults append their reads' audit events before
    /// they are copied in (``AuditSegment``: an embedded store's); nil: reads' events are
    /// written into the store itself.
    var auditSegmentBase: String? { get }

    func begin() throws(StoreError)
    /// Opens a transaction that only reads (ended by ``commit()``): it takes no write lock, and
    /// where the backend can say so, refuses a write.
    func beginReading() throws(StoreError)
    func commit() throws(StoreError)
    func rollback()
    func savepoint() throws(StoreError)
    func releaseSavepoint() throws(StoreError)
    func rollbackToSavepoint()
    /// False once the backend has abandoned the open transaction by itself.
    var isInTransaction: Bool { get }

    /// The PERSISTENT record with this value fingerprint, with its aliases.
    func record(fingerprint: [UInt8]) throws(StoreError) -> StoredRecord?
    /// The record an alias belongs to, with all its aliases (expired records included; the vault decides).
    func record(alias: String) throws(StoreError) -> StoredRecord?
    /// The records of several aliases at once, by alias (those not found are absent): one
    /// statement where the store is a server. As ``record(alias:)`` for each.
    func records(aliases: [String]) throws(StoreError) -> [String: StoredRecord]
    /// Adds a record and its aliases. Throws ``StoreError/aliasTaken`` when an alias exists.
    func insert(_ record: StoredRecord) throws(StoreError)
    /// Adds an alias to an existing record. Throws ``StoreError/aliasTaken`` when it exists.
    func addAlias(_ alias: IssuedAlias, toRecord id: String) throws(StoreError)
    /// Removes an alias, and its record once no alias is left. False when there was no such alias.
    func deleteAlias(_ alias: String) throws(StoreError) -> Bool
    func setClassifiers(_ classifiers: [String], recordID: String) throws(StoreError)
    /// Replaces a record's metadata (empty: none).
    func setRecordMetadata(_ metadata: [String: String], recordID: String) throws(StoreError)
    /// Sets when a record expires (nil: never).
    func setExpiry(_ expiresAt: Int64?, recordID: String) throws(StoreError)
    /// Removes records (and aliases) that expired at or before `now`; returns how many.
    func deleteExpired(now: Int64, limit: Int) throws(StoreError) -> Int
    /// Takes one of `limit` places for an intent in `bucket` (``StoredRecord/bucket``): false
    /// when all are taken. Atomic against other writers (other nodes); a record's place is given
    /// back when the record is deleted, however (sweep, delete, store trigger).
    func reserveBucketSlot(_ bucket: [UInt8], limit: Int) throws(StoreError) -> Bool
    /// When the earliest-expiring intent of `bucket` expires (nil: none holds a place). Asked on
    /// every refusal: an index on (bucket, expiry) answers it without reading the bucket's rows
    /// (a full 16-digit bucket holds 25,000).
    func oldestIntentExpiry(bucket: [UInt8]) throws(StoreError) -> Int64?
    /// Whether ``commitNewRecords(_:durable:)`` saves round trips here (a database server): the
    /// vault then sends each batch's new values through it first.
    var batchesNewRecords: Bool { get }
    /// Stores each new record with its first alias, in a transaction of its own that commits
    /// before this returns (the store's own round trips: one for a server), and says what became
    /// of each. Called outside a transaction. Writes stand on their own: one that cannot be made
    /// is skipped (see ``NewRecordOutcome``) and the others are still stored. A thrown error
    /// means nothing was committed, or that the commit's outcome is unknown (the connection
    /// broke after COMMIT was sent). `durable`: as ``forceDurableCommit()``.
    func commitNewRecords(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError) -> [NewRecordOutcome]
    /// The same writes and outcomes as ``commitNewRecords(_:durable:)``, in the transaction
    /// under way (an import's batch: its records commit with its cursor; an audited create's,
    /// with its events). `durable`: as ``forceDurableCommit()``, in the same round trip.
    func insertNewRecords(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError) -> [NewRecordOutcome]
    /// Checks that the store answers.
    func ping() throws(StoreError)
    /// Statements sent and rows read or changed since the store opened (a batch's span reports
    /// the difference over the batch). Zero for a store that does not count.
    var counters: StoreCounters { get }
    /// Makes the open transaction's commit a durable write even when nothing else changes it: a
    /// request answered from a record already stored then waits for the same kind of commit as
    /// one that stored it, so its timing does not tell which it was.
    func forceDurableCommit() throws(StoreError)

    /// A small named value kept beside the records (the key-check value); nil when never set.
    func metadata(_ name: String) throws(StoreError) -> [UInt8]?
    func setMetadata(_ name: String, _ value: [UInt8]) throws(StoreError)
    /// Removes a named value; false when there was none.
    func deleteMetadata(_ name: String) throws(StoreError) -> Bool
    /// The names of the named values that start with `prefix` (in no set order).
    func metadataNames(prefix: String) throws(StoreError) -> [String]
    /// Whether any record is stored.
    func hasRecords() throws(StoreError) -> Bool
    /// Gives every alias written before aliases were signed its MAC (`sign(alias, recordID)`), and
    /// records the Luhn variant of those card aliases from their digits
    /// (``IssuedAlias/fromStore(alias:storedFormat:mac:)``); returns how many were signed. The
    /// vault runs it once per store.
    func signUnsignedAliases(_ sign: (IssuedAlias, String) -> [UInt8]) throws(StoreError) -> Int

    /// Up to `limit` records (with their aliases) whose ids sort after `id` (nil: from the start),
    /// in id order: pages for `cloak store migrate`, sealed as they are.
    func records(after id: String?, limit: Int) throws(StoreError) -> [StoredRecord]
    /// The same pages as ``records(after:limit:)``, as an export's count reads them: each
    /// record's listing (what a selection looks at, its aliases), never its value.
    func recordListings(after id: String?, limit: Int) throws(StoreError) -> [RecordListing]
    /// How many records are stored.
    func recordCount() throws(StoreError) -> Int

    // MARK: Keys (`cloak keys`: rotation, re-encryption, retirement)

    /// How many stored records, files' keys and jobs' keys each key version sealed (versions
    /// sealing none are absent): a version is in use while any is.
    func recordCounts() throws(StoreError) -> [String: Int]
    /// ``recordCounts()`` by what each version seals: records' values, files' keys, jobs' keys.
    func keyUseCounts() throws(StoreError) -> [String: [KeyUse: Int]]
    /// Up to `limit` records sealed with `keyID` whose ids sort after `id` (nil: from the start),
    /// in id order: their ids and sealed values only.
    func sealedRecords(keyID: String, after id: String?, limit: Int) throws(StoreError) -> [SealedRecord]
    /// Replaces each record's sealed value and key version (`new`), only while it is still as
    /// read (`old`: the same version and nonce; nobody re-sealed or replaced it since); returns
    /// the ids replaced. A record changed or deleted meanwhile is left alone.
    func reseal(_ records: [(old: SealedRecord, new: SealedRecord)]) throws(StoreError) -> Set<String>
    /// Sets a named value only while it is still `expected` (nil: not set); false otherwise.
    /// Atomic against other writers: two operators rotating at once cannot lose a version.
    func replaceMetadata(_ name: String, expected: [UInt8]?, with value: [UInt8]) throws(StoreError) -> Bool
    /// Appends one line to the store's key audit trail (what `cloak keys` did, by whom).
    func appendKeyAudit(_ line: String, at time: Int64) throws(StoreError)
    /// The last `limit` lines of the key audit trail, oldest first.
    func keyAudit(limit: Int) throws(StoreError) -> [String]
    /// Up to `limit` lines of the key audit trail after its `offset` first, oldest first, with
    /// their times (store migration).
    func keyAuditEntries(offset: Int, limit: Int) throws(StoreError) -> [(at: Int64, line: String)]

    // MARK: Audit events (issue 59: ``AuditBlock``, ``AuditChain``, ``AuditSearch``)

    /// Appends sealed blocks, in the transaction under way (a change's, or a batch's).
    func appendAuditBlocks(_ blocks: [AuditBlock]) throws(StoreError)
    /// Up to `limit` blocks, newest first (latest event time, then row key): those ordered after
    /// `before` (nil: from the newest) whose latest event is at or after `from` (nil: any).
    /// With `aliasReference`: only blocks indexed as naming it, and every block not indexed yet
    /// (``indexAuditAliases(limit:)``; the caller reads their events). One statement: a block
    /// indexed meanwhile is read once, either way.
    func auditBlocks(before: AuditBlockPosition?, from: Int64?, aliasReference: String?, limit: Int)
        throws(StoreError) -> [StoredAuditBlock]
    /// Every chain that has a block, by name.
    func auditChains() throws(StoreError) -> [String]
    /// The newest block of each chain whose name starts with `prefix` (a node's chains: `node/`),
    /// by name: one index look a chain, never a read of a chain's history (a node's start).
    func newestAuditBlocks(chainPrefix prefix: String) throws(StoreError) -> [StoredAuditBlock]
    /// Up to `limit` rows of `chain` whose stored first place is after `seq`, in that order:
    /// every row, whatever its other columns say (verify reads them all from `Int64.min`).
    func auditChain(_ chain: String, after seq: Int64, limit: Int) throws(StoreError) -> [StoredAuditBlock]
    /// Deletes up to `limit` whole blocks whose latest event is before `at` (milliseconds),
    /// each chain's from its start and never past its first block with an event from `at` on,
    /// nor past one that is not `authentic` (a chain keeps no hole, and a row someone altered is
    /// kept for verify to name: the times come from the sealed events, not the row's column),
    /// with their alias index rows; answers, for each chain it deleted from, where it starts
    /// now. A store that several nodes share lets one sweeper at a time do it (the others
    /// answer none).
    func deleteAuditBlocks(before at: Int64, limit: Int, authentic: (AuditBlock) -> Bool) throws(StoreError)
        -> [String: AuditTrim.Start]
    /// Indexes the alias references of up to `limit` blocks not indexed yet, oldest first, off
    /// the requests' path (the audit trail's upkeep); answers how many blocks it took.
    func indexAuditAliases(limit: Int) throws(StoreError) -> Int
    /// Whether ``appendAuditBlocks(_:)`` writes the blocks' alias index with them: the trail then
    /// indexes nothing between batches, only, on its upkeep, blocks an older node wrote without.
    var indexesAuditBlocksAsWritten: Bool { get }
    /// Whether an alias search finds `stored` by each of its references' `keys`: it is not
    /// indexed yet (read whole), or the index holds every one (verify: someone who can write
    /// the database could otherwise hide a block from alias searches by marking it indexed).
    func auditAliasIndexHolds(_ stored: StoredAuditBlock, keys: [Int64]) throws(StoreError) -> Bool
    /// What is wrong with the alias index as a whole, seen once every chain was read (nil:
    /// nothing): a mark past the last block (SQLite), which hides the blocks written next.
    func auditIndexProblem() throws(StoreError) -> String?
}

extension AliasStore {
    package var counters: StoreCounters { StoreCounters() }

    package var auditSegmentBase: String? { nil }

    /// Whether a statement that fails leaves the transaction unusable until a rollback (a
    /// database server: PostgreSQL). There, every job runs in a savepoint, even one that writes
    /// nothing itself (an audited reveal), so that its failure stays its own.
    package var failedStatementAbortsTransaction: Bool { false }

    /// ``records(aliases:)`` as one ``record(alias:)`` per alias: for a store whose statements
    /// cost a function call.
    package func recordsOneByOne(aliases: [String]) throws(StoreError) -> [String: StoredRecord] {
        var found: [String: StoredRecord] = [:]
        for alias in aliases where found[alias] == nil {
            if let record = try record(alias: alias) { found[alias] = record }
        }
        return found
    }
}

/// A record as re-encryption sees it: which key version sealed it, and how.
package struct SealedRecord: Sendable, Equatable {
    package var id: String
    package var keyID: String
    package var sealed: AESGCM.SealedBox

    package init(id: String, keyID: String, sealed: AESGCM.SealedBox) {
        self.id = id
        self.keyID = keyID
        self.sealed = sealed
    }
}

/// A store failure. The description names the operation, never a value.
package enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The alias is already issued (retry with another candidate).
    case aliasTaken
    /// Another writer (another node) stored a PERSISTENT record with this fingerprint first: read
    /// it and use it.
    case fingerprintTaken
    /// The disk is full: nothing was written.
    case full
    /// The server undid this request's work to break a deadlock with another writer (another
    /// vault thread or node): running the request again can succeed.
    case transient(String)
    /// Anything else: unreachable, corrupt, locked too long.
    case unavailable(String)

    package var description: String {
        switch self {
        case .aliasTaken: return "alias already issued"
        case .fingerprintTaken: return "the value was stored meanwhile by another writer"
        case .full: return "the store's disk is full"
        case let .transient(reason): return "\(Self.conflictPrefix)\(reason)"
        case let .unavailable(reason): return "\(Self.unavailablePrefix)\(reason)"
        }
    }

    static let conflictPrefix = "store conflict: "
    static let unavailablePrefix = "store unavailable: "

    /// What a client may read of a failure described by `text`: for a store's failure (a
    /// ``description``) its kind alone, never the driver's words (`FATAL: terminating
    /// connection…`, SQLSTATEs, file paths), which stay in the node's log; any other text (the
    /// vault's own) as it is.
    package static func forClients(_ text: String) -> String {
        if text.hasPrefix(unavailablePrefix) { return "the store did not answer or failed" }
        if text.hasPrefix(conflictPrefix) { return "the store's writers conflicted" }
        return text
    }

    /// Whole seconds a caller refused because the store failed should wait before trying again
    /// (the service's `Retry-After`): the longest reconnect backoff of the shared store
    /// (``PostgreSQLAliasStore`` retries 0.25 s after losing its server, doubling up to this), so by
    /// then the store has been tried again, on a promoted standby too.
    package static let retryAfterSeconds = 2
}

/// What a key version seals: records' values, files' own keys, jobs' own keys, groups' bodies
/// (`cloak keys status` names each; `rewrap` re-seals all four).
package enum KeyUse: String, Sendable, CaseIterable {
    case records, files, jobs, groups

    /// "3 records", "1 file", "2 jobs".
    package func counted(_ n: Int) -> String {
        let word = n == 1 ? String(rawValue.dropLast()) : rawValue
        return "\(n) \(word)"
    }
}
