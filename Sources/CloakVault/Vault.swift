import CloakCore
import CloakCrypto
import Foundation
import Synchronization

/// The vault: issues aliases, keeps values encrypted, reveals and deletes them.
///
/// Format work (HMAC fingerprints, AES-GCM sealing, FF1) runs on the caller's thread before a job
/// is queued; the executor thread only reads and writes the store, and calls each completion
/// there once its writes are committed.
package final class Vault: Sendable {
    package let settings: Settings
    /// The ring in use: replaced whole when a node picks up a rotation (``Vault+KeyRefresh``);
    /// the fingerprint and alias MAC keys never change with it.
    let ring: Mutex<KeyRing>
    var keys: KeyRing { ring.withLock { $0 } }
    /// The ring's keys that no rotation changes (``adoptKeys(_:)`` takes only a ring with the same
    /// fingerprint key), read without the lock on every request.
    let fingerprintKey: SymmetricKey
    let fingerprintMAC: HMACKey
    let aliasMAC: HMACKey
    /// The current data key, swapped with the ring.
    var currentKey: KeyRing.DataKey { ring.withLock { $0.current } }
    /// The data key `id`, when the ring holds it.
    func dataKey(_ id: String) -> KeyRing.DataKey? { ring.withLock { $0.key(id: id) } }
    let generator: AliasGenerator
    /// One executor per store connection: SQLite has one (one writer); a PostgreSQL vault has
    /// several, each a thread with its own connection, racing one another exactly as separate
    /// nodes do (unique constraints decide).
    let executors: [VaultExecutor]

    /// When a store connection last said the disk is full (`DispatchTime` uptime nanoseconds;
    /// 0: never): what the service keeps its disk reserve by where it cannot see the disk.
    package var storeReportedFullAt: UInt64 {
        executors.map { $0.reportedFull.load(ordering: .relaxed) }.max() ?? 0
    }
    /// A connection of its own for the audit search (`GET /admin/audit`): a search that reads a
    /// month of events never holds up the threads that reveal and store. Nil: the searches
    /// share the executors (tests, commands).
    let auditReader: VaultExecutor?
    /// Reads' audit events go to a segment beside the store first (``AuditSegment``).
    let hasAuditSegment: Bool
    private let nextExecutor = Atomic<Int>(0)
    /// Set when the vault is its store's one writer (one connection) and the settings ask for it.
    let cache: DedupeCache?
    /// The store takes a batch's new records in one commit (``Vault+NewRecords``).
    let batchesNewRecords: Bool
    /// The store is an embedded file (``AliasStore/isSoleWriter``): its work runs on this
    /// process's threads, at their priorities. False for a database server, whose backends
    /// work at the server's priority, not Cloak's (``JobRunner``'s batches overlap only here).
    package let storeIsEmbedded: Bool
    /// Reads the store's ring when a record names a version this node has not picked up yet.
    let missingKey = MissingKeyRead()
    let clock: @Sendable () -> Int64

    /// Alias candidates tried before giving up on a format whose space is nearly full.
    static let maxAttempts = 32
    /// Spaces up to this size are scanned candidate by candidate once random draws fail (a
    /// 4-digit CVC); larger ones would stall the vault thread, and 32 random draws suffice.
    static let scanLimit = 10_000
    /// How often (at most) the sweep removes expired records: the executor's maintenance interval.
    static let sweepSeconds: Int64 = 5
    /// The store's name for ``KeyRing/checkValue``.
    static let keyCheckName = "key_check"
    /// Set once every alias row is signed.
    static let aliasesSignedName = "aliases_signed"

    /// Opens the vault on `store`. The first ring to open a store leaves its check value there;
    /// any other ring is refused (records it sealed could not be read back, and new ones would be
    /// lost when the right key file returns).
    /// - Throws: ``VaultOpenError`` when the ring does not match the store, or the store fails.
    package convenience init(
        store: any AliasStore, keys: KeyRing, settings: Settings,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) throws {
        try self.init(stores: [store], keys: keys, settings: settings, clock: clock)
    }

    /// Opens the vault on several connections to one shared store (PostgreSQL): one executor
    /// thread each; requests are spread over them.
    package init(
        stores: [any AliasStore], keys: KeyRing, settings: Settings,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        auditReader: (any AliasStore)? = nil
    ) throws {
        precondition(!stores.isEmpty, "a vault needs a store")
        self.settings = settings
        self.ring = Mutex(keys)
        self.fingerprintKey = keys.fingerprintKey
        self.fingerprintMAC = keys.fingerprintMAC
        self.aliasMAC = keys.aliasMAC
        self.clock = clock
        self.generator = try AliasGenerator(environment: settings.environment, ff1Key: keys.current.ff1Key)
        try Self.adopt(stores[0], keys: keys)
        // An embedded store's reads keep their events in a segment beside it (AuditSegment):
        // what stopped nodes left there goes into the store first, so the heads told below are
        // the newest.
        let segment: AuditSegment?
        do {
            segment = try settings.audit.flatMap { audit throws(StoreError) in
                try stores[0].auditSegmentBase.map { base throws(StoreError) in
                    try AuditSegment.recoverAbandoned(beside: base, into: stores[0], log: audit.log)
                    return try AuditSegment(
                        path: AuditSegment.path(beside: base, chain: audit.chainID(0)), calls: audit.segmentCalls)
                }
            }
        } catch {
            throw VaultOpenError(description: error.description)
        }
        self.hasAuditSegment = segment != nil
        // The heads this node's earlier chains left, logged before its new chains begin.
        settings.audit?.reportFoundHeads(in: stores[0], key: keys.derivedMAC(purpose: AuditChain.keyPurpose))
        // Only a vault that is its store's one writer may remember (see DedupeCache).
        self.cache =
            stores.count == 1 && stores[0].isSoleWriter && settings.dedupeCacheEntries > 0
            ? DedupeCache(capacity: settings.dedupeCacheEntries) : nil
        self.batchesNewRecords = stores[0].batchesNewRecords
        self.storeIsEmbedded = stores.allSatisfy(\.isSoleWriter)
        self.auditReader = auditReader.map { reader in
            VaultExecutor(store: reader, timeoutMilliseconds: settings.storeTimeoutMilliseconds, maintenance: { _ in })
        }
        // One executor sweeps: the others share its store.
        self.executors = stores.enumerated().map { index, store in
            VaultExecutor(
                store: store, timeoutMilliseconds: settings.storeTimeoutMilliseconds,
                trail: settings.audit.map { audit in
                    AuditTrail(
                        chain: AuditChain(
                            id: audit.chainID(index), key: keys.derivedMAC(purpose: AuditChain.keyPurpose)),
                        settings: audit, sweeps: index == 0,
                        // Reads' events: the segment beside an embedded file; a statement of
                        // their own on a server; in memory (tests), the batch's transaction.
                        readEvents: Self.readEvents(index == 0 ? segment : nil, store))
                },
                maintenance: index == 0 ? { Self.sweep($0, now: clock()) } : { _ in })
        }
    }

    /// Where a vault thread keeps its reads' audit events (``AuditTrail/ReadEvents``): the
    /// segment beside an embedded file; a statement of their own on a database server; in the
    /// batch's transaction for an embedded store in memory (tests).
    private static func readEvents(_ segment: AuditSegment?, _ store: any AliasStore) -> AuditTrail.ReadEvents {
        if let segment { return .segment(segment) }
        return store.isSoleWriter ? .transaction : .statement
    }

    /// What the first executor runs every ``sweepSeconds``: expired records (VOLATILE values,
    /// `ttl_s`, intents), 1,000 per transaction, until none is left (at most 50,000 a run, so a
    /// large backlog cannot hold up requests for long); then uploads never finished (the client
    /// left, the process was killed) an hour after their last chunk, 10 per transaction (each
    /// with up to 1,024 chunks), at most 200 a run. Each statement reaches its rows through an
    /// index (`SweepPlanTests`), so a run costs what it removes, not what the store holds.
    package static func sweep(_ store: any AliasStore, now: Int64) {
        // `>=`: a store may remove more than `limit` in a round (PostgreSQL adds the records a
        // batch left without an alias), and more may be left.
        sweepInBatches(store, rounds: 50) { try $0.deleteExpired(now: now, limit: 1000) >= 1000 }
        sweepInBatches(store, rounds: 20) {
            try $0.deleteAbandonedFiles(idleBefore: now - Self.abandonedUploadSeconds, limit: 10) >= 10
        }
    }

    /// How long an upload may stay unfinished after its last chunk before the sweep deletes it.
    static let abandonedUploadSeconds: Int64 = 3600

    /// Runs `batch` in transactions of its own while it says more is left, at most `rounds` times.
    static func sweepInBatches(_ store: any AliasStore, rounds: Int, _ batch: (any AliasStore) throws -> Bool) {
        for _ in 0..<rounds {
            guard (try? store.transaction({ try batch(store) })) == true else { return }
        }
    }

    /// The executor for the next job (round robin).
    var executor: VaultExecutor {
        executors.count == 1
            ? executors[0]
            : executors[nextExecutor.wrappingAdd(1, ordering: .relaxed).oldValue % executors.count]
    }

    /// Checks the ring against the store's check value (writing it on first use) and signs alias
    /// rows written before aliases were signed. Runs before the executor thread exists.
    private static func adopt(_ store: any AliasStore, keys: KeyRing) throws {
        do {
            try store.transaction { try adopting(store, keys: keys) }
        } catch let error as StoreError {
            throw VaultOpenError(description: error.description)
        }
    }

    /// ``adopt(_:keys:)``'s transaction.
    private static func adopting(_ store: any AliasStore, keys: KeyRing) throws {
        do {
            if let stored = try store.metadata(keyCheckName) {
                guard constantTimeEquals(stored, keys.checkValue) else {
                    throw VaultOpenError(
                        description:
                            "the key ring does not match the store: its records were sealed with other keys "
                            + "(restore the key file or master key this store was created with)")
                }
            } else {
                try store.setMetadata(keyCheckName, keys.checkValue)
            }
            // Rows written before aliases were signed are signed once, by the first version that
            // signs; after that an unsigned row is a tampered one and is never signed.
            if try store.metadata(aliasesSignedName) == nil {
                let macKey = keys.aliasMAC
                _ = try store.signUnsignedAliases { alias, recordID in sign(alias, recordID: recordID, key: macKey) }
                try store.setMetadata(aliasesSignedName, [1])
            }
        }
    }

    /// Finishes queued work and stops the executor.
    package func close() {
        for executor in executors { executor.close() }
        auditReader?.close()
    }

    /// Checks every request can be represented, before anything is queued.
    /// The largest value a caller without `aliases:create` may store. The open endpoints'
    /// request rate bounds records a day per address; this bounds their size, so an anonymous
    /// caller at the rate limit cannot fill the disk with 32 KiB records (about 20 MB a minute).
    package static let anonymousValueBytes = 1_024

    /// Whether `format` can alias a value of `digits` digits (a card number or an SSN of that
    /// length) for `caller`: `nil` when it can, else why not. Configuration checks ask it for
    /// every length a form's brands accept, so a form never refuses a card it says it takes.
    package static func refusal(_ format: AliasFormatName, digits: Int, caller: AliasCaller) -> String? {
        let value = String(repeating: "4", count: digits)
        do { try AliasGenerator.validate(value, format: format) } catch { return error.description }
        guard caller.anonymous, let space = AliasGenerator.randomSpace(value, format) else { return nil }
        return "its alias space (\(space) values) is too small to open to callers without a token"
    }

    package static func check(_ requests: [AliasRequest], caller: AliasCaller = .trusted) throws(VaultError) {
        for (i, r) in requests.enumerated() {
            do { try AliasGenerator.validate(r.value, format: r.format) } catch {
                throw .invalidInput(index: i, reason: error.description)
            }
            if caller.anonymous, r.value.utf8.count > anonymousValueBytes {
                throw .invalidInput(
                    index: i,
                    reason:
                        "a value of more than \(anonymousValueBytes) bytes needs a token with aliases:create "
                        + "(what anyone may store is kept small: a card, a CVC, an SSN, a name)")
            }
            if caller.anonymous, AliasGenerator.randomSpace(r.value, r.format) != nil {
                throw .invalidInput(
                    index: i,
                    reason:
                        "a \(r.format.rawValue) alias of a value this short needs a token with aliases:create "
                        + "(its alias space is too small to open to anonymous callers)")
            }
        }
    }

    /// Aliases every value (all or none), deduplicating PERSISTENT ones. What the answer shows
    /// of a value already stored depends on `caller` (see ``AliasCaller/mayReveal``).
    ///
    /// Values the ``DedupeCache`` knows are answered from it; the rest go to the vault thread.
    /// When every value is known, `completion` runs at once on the calling thread; otherwise on
    /// the vault thread after the commit.
    ///
    /// The values with a ``AliasRequest/groupField`` form a group (``RecordGroup``) written in the
    /// same commit, when there are at least ``minimumGroupMembers`` of them and the caller has a
    /// token; such a create is never answered from the cache, since the group is a write of its own.
    package func createAliases(
        _ requests: [AliasRequest], caller: AliasCaller = .trusted,
        completion: @escaping @Sendable (Result<[RevealedRecord], VaultError>) -> Void
    ) {
        // (A loop, not a lazy filter: a single value's create, the commonest, pays nothing here.)
        var named = 0
        if !caller.anonymous && requests.count >= Self.minimumGroupMembers {
            for request in requests where request.groupField != nil { named += 1 }
        }
        let grouped = named >= Self.minimumGroupMembers
        let names = grouped ? requests.map(\.groupField) : nil
        let answers: [RevealedRecord?]
        let missing: [Int]
        let prepared: [PreparedAlias]
        do {
            try Self.check(requests, caller: caller)
            let fingerprints = requests.map { fingerprint($0, caller: caller) }
            // Only callers who may reveal are answered from the cache: an answer on the loop, without
            // the commit a new value waits for, would tell anyone else by its timing that the value
            // was stored.
            answers =
                (caller.mayReveal && !grouped ? cache : nil).map {
                    cachedAnswers(requests, fingerprints: fingerprints, caller: caller, cache: $0)
                }
                ?? Array(repeating: nil, count: requests.count)
            missing = answers.indices.filter { answers[$0] == nil }
            noteCached(answers, requests)
            if missing.isEmpty { return completion(.success(answers.map { $0! })) }
            prepared = try prepare(
                missing.map { requests[$0] }, fingerprints: missing.map { fingerprints[$0] }, caller: caller)
        } catch { return completion(.failure(error)) }
        let finished: @Sendable (Result<Created, any Error>) -> Void = { [cache] result in
            // After the commit, on the vault thread: what was read or written is remembered.
            if let cache, case let .success(created) = result {
                for record in created.records { cache.remember(record) }
            }
            switch Self.map(result) {
            case let .success(created):
                var merged = answers
                for (position, index) in missing.enumerated() { merged[index] = created.answers[position] }
                completion(.success(merged.map { $0! }))
            case let .failure(.invalidInput(position, reason)):
                completion(.failure(.invalidInput(index: missing[position], reason: reason)))
            case let .failure(error):
                completion(.failure(error))
            }
        }
        // A group goes with its values in the batch's transaction: not through a commit of new
        // records of their own first.
        guard !grouped, batchesNewRecords, let writes = newRecordWrites(prepared) else {
            return executor.submit(
                { [self] store in
                    // A group's row is a write: a found value's commit is durable with it.
                    var created = try create(prepared, caller: caller, in: store, writes: grouped)
                    try group(&created, names: names, caller: caller, in: store)
                    return created
                }, completion: finished)
        }
        executor.submit(
            newRecords: writes, durable: !caller.mayReveal,
            finish: { [self] outcomes in created(prepared, writes: writes, outcomes: outcomes, caller: caller) },
            { [self] store, outcomes in
                try create(
                    prepared, caller: caller, in: store,
                    stored: outcomes.map { Self.storedRecords(writes, $0) } ?? [:])
            }, completion: finished)
    }

    /// The audit events of values answered from the dedupe cache (no job, so none written with
    /// one): handed to the call's subject to store before its answer leaves.
    private func noteCached(_ answers: [RevealedRecord?], _ requests: [AliasRequest]) {
        guard let subject = VaultAuditing.current.get() else { return }
        let now = VaultAuditing.nowMilliseconds()
        let drafts = answers.indices.compactMap { index -> AuditEvent.Draft? in
            guard let alias = answers[index]?.aliases.first(where: { $0.format == requests[index].format })?.alias
            else { return nil }
            return subject.draft(aliasReference: auditReference(alias), result: .ok, at: now, operation: .create)
        }
        if !drafts.isEmpty { subject.noted(drafts, stored: false) }
    }

    /// Answers when the store does.
    package func ping(completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        if executors.contains(where: { $0.auditFailed.load(ordering: .relaxed) }) {
            return completion(.failure(.unavailable(AuditSegment.Failure.failedBefore.description)))
        }
        executor.submit(reads: true, { store in try store.ping() }, completion: { completion(Self.map($0)) })
    }

    static func map<T>(_ result: Result<T, any Error>) -> Result<T, VaultError> {
        switch result {
        case let .success(value): return .success(value)
        case let .failure(error as VaultError): return .failure(error)
        case let .failure(error as StoreError): return .failure(.unavailable(error.description))
        case let .failure(error): return .failure(.unavailable("\(error)"))
        }
    }
}
