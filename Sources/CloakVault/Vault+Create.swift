import CloakCore
import CloakCrypto

/// One value made ready for the store on the caller's thread: its fingerprint, the record that
/// would hold it (sealed), and its first alias candidate. The executor then only looks up and
/// writes, so a request of long values cannot hold the vault thread and its transaction.
struct PreparedAlias: Sendable {
    let request: AliasRequest
    /// HMAC of the value (PERSISTENT only: the deduplication key).
    let fingerprint: [UInt8]?
    /// The record to insert when the value is new, sealed under the current key.
    let newRecord: StoredRecord
    /// Attempt 0's candidate (FF1 or a random draw), or why the value cannot take the format.
    let firstCandidate: Result<String, AliasInputError>
    /// The first candidate's MAC for ``newRecord``, signed here rather than on the vault thread
    /// (used when the value is new and the candidate free, as it nearly always is).
    let firstCandidateMAC: [UInt8]?
    /// Aliases drawn at random (anonymous callers) rather than by FF1 (token holders).
    let random: Bool
    /// For an intent with a ``StoredRecord/bucket``: the places intents may hold in it.
    var bucketLimit = 0
}

extension Vault {
    /// The deduplication key of a request's value: PERSISTENT values of token holders only.
    /// VOLATILE values are never deduplicated: with a 1,000-value CVC space, anyone allowed to
    /// alias could otherwise build a table from alias to CVC, and aliasing again would keep a CVC
    /// alive past its TTL. Anonymous callers are never deduplicated (see AliasCaller.anonymous).
    func fingerprint(_ request: AliasRequest, caller: AliasCaller) -> [UInt8]? {
        guard request.storage == .persistent && caller.deterministic else { return nil }
        var message = "cloak/v1/value\0" + request.value
        return message.withUTF8 { fingerprintMAC.authenticate(UnsafeRawBufferPointer($0)) }
    }

    /// The answer for each value that is PERSISTENT and remembered with an alias in its format,
    /// nil for the others: the same answer the store path gives.
    func cachedAnswers(
        _ requests: [AliasRequest], fingerprints: [[UInt8]?], caller: AliasCaller,
        cache: DedupeCache
    ) -> [RevealedRecord?] {
        let now = clock()
        return zip(requests, fingerprints).map { request, fingerprint -> RevealedRecord? in
            guard let fingerprint, let entry = cache.entry(fingerprint),
                let alias = entry.alias(request.format, luhnValid: request.luhnValid)
            else { return nil }
            if caller.mayReveal {
                return RevealedRecord(
                    value: request.value, aliases: entry.aliases, storage: .persistent,
                    classifiers: entry.classifiers, createdAt: entry.createdAt)
            }
            return RevealedRecord(
                value: request.value, aliases: [alias],
                storage: request.storage, classifiers: request.classifiers, createdAt: now)
        }
    }

    /// The bucket an intent of `request` takes a place in, and how many places intents may hold
    /// there: only format-preserving buckets of at most ``GuessBucket/guessableSpace`` values (a
    /// larger one cannot be worn out at any rate limit). The tag is an HMAC under the fingerprint
    /// key, as in ``guessBuckets(_:)``, under its own label.
    func bucketPlace(_ request: AliasRequest) -> (tag: [UInt8], limit: Int)? {
        guard AliasFormat.of(request.format).kind.isPreserving,
            let (shape, space) = AliasGenerator.bucket(request.value, request.format, luhnValid: request.luhnValid),
            space <= GuessBucket.guessableSpace
        else { return nil }
        var text = "cloak/v1/intent-bucket\0\(request.format.rawValue)\0\(request.luhnValid)\0"
        text += String(decoding: shape, as: UTF8.self)
        let tag = text.withUTF8 { fingerprintMAC.authenticate(UnsafeRawBufferPointer($0)) }
        return (Array(tag.prefix(16)), max(1, Int(Double(space) * settings.maxBucketShare)))
    }

    /// Seals and makes each value's first candidate. Runs on the caller's thread.
    func prepare(_ requests: [AliasRequest], fingerprints: [[UInt8]?]? = nil, caller: AliasCaller = .trusted)
        throws(VaultError) -> [PreparedAlias]
    {
        let key = currentKey
        let now = clock()
        var out: [PreparedAlias] = []
        out.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            let value = Array(request.value.utf8)
            let fingerprint = fingerprints.map { $0[index] } ?? self.fingerprint(request, caller: caller)
            let id = RecordID.make(now: now)
            let sealed: AESGCM.SealedBox
            do {
                sealed = try AESGCM.seal(value, key: key.encryptionKey, associatedData: Self.associatedData(id, key.id))
            } catch {
                throw .unavailable("cannot seal a value")
            }
            // An anonymous caller's record is an intent: it expires `intentTTLSeconds` from now
            // (a VOLATILE one at the earlier of its two expiries) unless a backend keeps it.
            // A VOLATILE value never outlives vault.volatile_ttl_s, whatever ttl_s asks.
            let volatileEnd = now + Int64(settings.volatileTTLSeconds)
            var expiresAt: Int64? = request.ttlSeconds.map { now + Int64($0) }
            if request.storage == .volatile { expiresAt = min(expiresAt ?? volatileEnd, volatileEnd) }
            let intent = caller.anonymous && settings.intentTTLSeconds > 0
            if intent { expiresAt = min(expiresAt ?? Int64.max, now + Int64(settings.intentTTLSeconds)) }
            let place = intent ? bucketPlace(request) : nil
            let record = StoredRecord(
                id: id, fingerprint: fingerprint, keyID: key.id, sealed: sealed, storage: request.storage,
                classifiers: request.classifiers, createdAt: now, expiresAt: expiresAt, aliases: [], intent: intent,
                bucket: place?.tag, metadata: request.metadata)
            let first = Result<String, AliasInputError> { () throws(AliasInputError) -> String in
                try generator.alias(
                    for: request.value, format: request.format, luhnValid: request.luhnValid, attempt: 0,
                    random: caller.anonymous)
            }
            let firstMAC = (try? first.get()).map { text in
                Self.sign(
                    IssuedAlias(alias: text, format: request.format, luhnValid: request.luhnValid), recordID: id,
                    key: aliasMAC)
            }
            out.append(
                PreparedAlias(
                    request: request, fingerprint: fingerprint, newRecord: record, firstCandidate: first,
                    firstCandidateMAC: firstMAC, random: caller.anonymous, bucketLimit: place?.limit ?? 0))
        }
        return out
    }

    /// What a create job gives back: the answers, and the records as stored (for the cache).
    struct Created: Sendable {
        var answers: [RevealedRecord] = []
        var records: [StoredRecord] = []
        /// Each value's record and the alias it answered with (what a group names).
        var stored: [(recordID: String, alias: IssuedAlias)] = []
    }

    /// On the executor thread: finds or inserts each record and gives it the alias asked for.
    /// `stored`: records already committed for some items (by ``AliasStore/commitNewRecords(_:durable:)``),
    /// by index, with the aliases they got. `writes`: the transaction writes whatever is found
    /// (a group's row, an import's progress), so its commit is already durable.
    func create(
        _ prepared: [PreparedAlias], caller: AliasCaller, in store: any AliasStore, stored: [Int: StoredRecord] = [:],
        writes: Bool = false
    ) throws -> Created {
        var out: [RevealedRecord] = []
        out.reserveCapacity(prepared.count)
        var records: [StoredRecord] = []
        var members: [(recordID: String, alias: IssuedAlias)] = []
        members.reserveCapacity(prepared.count)
        for (index, item) in prepared.enumerated() {
            var record: StoredRecord
            var alias: IssuedAlias
            var round = 0
            var committed = stored[index]
            while true {
                // A shared store can lose a race to another node (the same value, or the same
                // value's alias in this format, committed first): read what won and use it.
                do {
                    let wrote: Bool
                    (record, alias, wrote) = try findOrCreate(item, index: index, stored: committed, in: store)
                    // Found as it was: for a caller who may not reveal, the commit must still
                    // cost what storing it would have (an existence oracle by timing otherwise).
                    if !wrote && !writes && !caller.mayReveal { try store.forceDurableCommit() }
                    break
                } catch StoreError.fingerprintTaken where round < 2 {
                    round += 1
                    // The record this request's batch committed is public from its commit on:
                    // another node creating the same value finds it by fingerprint and may give
                    // it an alias in this format first. What `stored` says of it is then stale
                    // (issue 44): read it again by fingerprint, and answer with that alias. (A
                    // record without a fingerprint is found by nobody: nothing to read again.)
                    if item.fingerprint != nil { committed = nil }
                }
            }
            if cache != nil { records.append(record) }
            members.append((record.id, alias))
            // Audited with the write, in its transaction; the same word whether the value was
            // new or already stored.
            VaultAuditing.note(auditReference(alias.alias), .ok, .create)
            out.append(answer(item, record: record, alias: alias, caller: caller))
        }
        return Created(answers: out, records: records, stored: members)
    }

    /// What the caller is told of `item`, now in `record` under `alias`.
    func answer(_ item: PreparedAlias, record: StoredRecord, alias: IssuedAlias, caller: AliasCaller)
        -> RevealedRecord
    {
        if caller.mayReveal {
            return RevealedRecord(
                value: item.request.value, aliases: record.aliases, storage: record.storage,
                classifiers: record.classifiers, createdAt: record.createdAt,
                expiresAt: record.expiresAt, intent: record.intent, metadata: record.metadata)
        }
        // The same answer whether the value was stored before or not.
        return RevealedRecord(
            value: item.request.value, aliases: [alias], storage: item.request.storage,
            classifiers: item.request.classifiers, createdAt: item.newRecord.createdAt,
            expiresAt: item.newRecord.expiresAt, intent: item.newRecord.intent)
    }

    /// The value's record (found by fingerprint, else inserted) and its alias in the asked format,
    /// and whether anything was written to give them.
    private func findOrCreate(_ item: PreparedAlias, index: Int, stored: StoredRecord?, in store: any AliasStore)
        throws -> (StoredRecord, IssuedAlias, wrote: Bool)
    {
        let request = item.request
        var record: StoredRecord
        if var stored {
            // Committed for this request just before: its alias, or a new one (its first was taken).
            if let issued = stored.aliases.first(where: { $0.matches(request.format, luhnValid: request.luhnValid) }) {
                return (stored, issued, true)
            }
            let alias = try issue(item, index: index, recordID: stored.id, in: store)
            stored.aliases.append(alias)
            return (stored, alias, true)
        }
        var found = try item.fingerprint.flatMap { try store.record(fingerprint: $0) }
        if let expired = found, let expires = expired.expiresAt, expires <= clock() {
            // Expired and not swept yet: it goes now, and the value gets a new record.
            for alias in expired.aliases { _ = try store.deleteAlias(alias.alias) }
            found = nil
        }
        if var existing = found {
            existing.aliases.removeAll { !isAuthentic($0, recordID: existing.id) }
            record = existing
        } else {
            record = item.newRecord
            if let bucket = record.bucket, try !store.reserveBucketSlot(bucket, limit: item.bucketLimit) {
                // Nothing written: the request's savepoint is rolled back with this. Expired intents
                // give their places back at the next sweep (every few seconds).
                let oldest = try store.oldestIntentExpiry(bucket: bucket) ?? clock()
                throw VaultError.bucketFull(
                    format: request.format, retryAfter: Int(max(oldest - clock(), Self.sweepSeconds)))
            }
            try store.insert(record)
        }
        if let issued = record.aliases.first(where: { $0.matches(request.format, luhnValid: request.luhnValid) }) {
            return (record, issued, false)  // a new record has no alias yet: this one was stored before
        }
        let alias = try issue(item, index: index, recordID: record.id, in: store)
        record.aliases.append(alias)
        return (record, alias, true)
    }

    private func issue(_ item: PreparedAlias, index: Int, recordID: String, in store: any AliasStore) throws
        -> IssuedAlias
    {
        let request = item.request
        // Random candidates first; in a small space (random-drawn aliases, at most 100,000 of
        // them) every candidate is then tried in turn, so a free alias is always found.
        let scan = AliasGenerator.randomSpace(request.value, request.format).map { $0 <= Self.scanLimit ? $0 : 0 } ?? 0
        let macKey = aliasMAC
        for attempt in 0..<(Self.maxAttempts + scan) {
            let candidate: Result<String, AliasInputError> =
                attempt == 0
                ? item.firstCandidate
                : Result { () throws(AliasInputError) -> String in
                    try generator.alias(
                        for: request.value, format: request.format, luhnValid: request.luhnValid,
                        attempt: attempt, random: item.random)
                }
            let text: String
            switch candidate {
            case let .success(value): text = value
            case let .failure(error) where error.isSpaceExhausted: throw exhausted(request)
            case let .failure(error) where error.isRetryable: continue
            case let .failure(error): throw VaultError.invalidInput(index: index, reason: error.description)
            }
            var issued = IssuedAlias(alias: text, format: request.format, luhnValid: request.luhnValid)
            if attempt == 0, recordID == item.newRecord.id, let mac = item.firstCandidateMAC {
                issued.mac = mac
            } else {
                issued.mac = Self.sign(issued, recordID: recordID, key: macKey)
            }
            do {
                try store.addAlias(issued, toRecord: recordID)
                return issued
            } catch {
                guard error == .aliasTaken else { throw error }
                // another value holds this candidate: try the next one
            }
        }
        throw exhausted(request)
    }

    private func exhausted(_ request: AliasRequest) -> VaultError {
        .unavailable("no free \(request.format.rawValue) alias for a value of this shape")
    }
}
