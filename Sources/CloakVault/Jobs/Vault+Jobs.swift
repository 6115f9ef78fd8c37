import CloakCore
import CloakCrypto

/// Bulk jobs (issue 60) through the vault's executor: the job's row, its input chunks, and an
/// import's batches, each of which aliases its rows exactly as `POST /aliases` does (the same
/// fingerprints, deduplication, formats and records) in the transaction that moves the job on.
extension Vault {
    /// A key for a new job, under the ring's current data key, bound to what it is and whose
    /// (``StoredJob/sealBinding``).
    package func newJobSeal(_ id: JobID, binding: [UInt8]) throws(VaultError) -> JobSeal {
        do { return try JobSeal(newJob: id.text, binding: binding, ring: keys) } catch {
            throw .unavailable("the job could not be sealed: \(error)")
        }
    }

    /// The key of a stored job.
    package func jobSeal(_ job: StoredJob) throws(VaultError) -> JobSeal {
        do {
            return try JobSeal(
                job: job.id.text, binding: job.sealBinding,
                wrappedKey: FileSeal.WrappedKey(keyID: job.keyID, sealed: job.wrappedKey), ring: keys)
        } catch {
            throw .unavailable("the job's key does not open with the key ring: \(error)")
        }
    }

    /// The caller an import's rows are aliased for: deterministic and deduplicated like any
    /// token holder's, and told nothing of what was stored before (the mapping holds the
    /// alias asked for, the same whether the value was new; ``AliasCaller/mayReveal``).
    static let importer = AliasCaller(mayReveal: false, anonymous: false)

    /// Makes a batch of `rows`: their values sealed, fingerprinted and given their first
    /// candidates here, on the calling thread, as a create's are.
    package func prepareImport(_ rows: [ImportRow], isLast: Bool) throws(VaultError) -> ImportBatch {
        var requests: [AliasRequest] = []
        for row in rows {
            if case let .success(values) = row.outcome { requests += values.map(\.request) }
        }
        return ImportBatch(rows: rows, isLast: isLast, prepared: try prepare(requests, caller: Self.importer))
    }

    /// Aliases a batch's rows and moves the job on, in one job of the executor: each row in a
    /// savepoint of its own (a row the vault refuses is one refusal), then the batch's output
    /// chunks and the new cursor, only while the job is still the holder's at `step.from`
    /// (``VaultError/notFound`` otherwise, and nothing of the batch is kept).
    package func importBatch(
        _ batch: ImportBatch, step: ImportStep, now: @escaping @Sendable () -> Int64,
        completion: @escaping @Sendable (Result<JobProgress, VaultError>) -> Void
    ) {
        executor.submit(
            { [self] store in try runImport(batch, step: step, now: now(), in: store) },
            completion: { result in
                if case .failure(let error) = result, error is ImportBatchLost {
                    return completion(.failure(.notFound))
                }
                completion(Self.map(result))
            })
    }

    private func runImport(_ batch: ImportBatch, step: ImportStep, now: Int64, in store: any AliasStore)
        throws -> JobProgress
    {
        var progress = step.from
        var mapping = JSONWriter(reservingCapacity: batch.rows.count * 96)
        var advice = JSONWriter(reservingCapacity: batch.rows.count * 64)
        // Every row at once first, in one savepoint (a savepoint a row costs two statements a
        // row, two round trips on a server); when the vault refuses any row, again with a
        // savepoint a row, so that row alone is refused.
        try store.savepoint()
        do {
            // On a database server, the batch's new records and first aliases in one statement
            // (as a create batch's, but in this transaction), then only what is left row by row.
            var stored: [Int: StoredRecord] = [:]
            if store.batchesNewRecords, let writes = newRecordWrites(batch.prepared) {
                stored = importedRecords(writes, try store.insertNewRecords(writes, durable: false))
            }
            // The rows' groups, written together after their values (one statement on a server).
            var groups: [StoredGroup] = []
            try aliasRows(
                batch, perRow: false, stored: stored, groups: &groups, progress: &progress, mapping: &mapping,
                advice: &advice, in: store)
            try store.insertGroups(groups)
            try store.releaseSavepoint()
        } catch is VaultError {
            store.rollbackToSavepoint()
            (progress, mapping, advice) = (step.from, JSONWriter(), JSONWriter())
            var groups: [StoredGroup] = []
            try aliasRows(
                batch, perRow: true, stored: [:], groups: &groups, progress: &progress, mapping: &mapping,
                advice: &advice, in: store)
        }
        let index = step.from.outputChunks
        progress.outputChunks = index + 1
        let (mappingLines, adviceLines) = (mapping.takeBytes(), advice.takeBytes())
        progress.mappingBytes += Int64(mappingLines.count)
        progress.adviceBytes += Int64(adviceLines.count)
        let outputs = [
            JobOutputChunk(
                part: .mapping, index: index,
                sealed: try step.seal.seal(
                    mappingLines, part: JobPart.mapping.rawValue, index: index, isLast: batch.isLast)),
            JobOutputChunk(
                part: .advice, index: index,
                sealed: try step.seal.seal(
                    adviceLines, part: JobPart.advice.rawValue, index: index, isLast: batch.isLast)),
        ]
        guard
            try store.advanceJob(
                step.job, holder: step.holder, from: step.from.cursor, to: progress, leaseUntil: step.leaseUntil,
                outputs: outputs, now: now)
        else { throw ImportBatchLost() }
        if batch.isLast {
            guard
                try store.setJobState(
                    step.job, from: [.running], to: .done, holder: step.holder, now: now, expiresAt: step.expiresAt,
                    failure: nil)
            else { throw ImportBatchLost() }
            // Its input is dropped after, a slice a transaction (``JobStore/deleteJobChunks(_:part:limit:)``).
        }
        return progress
    }

    /// Each row's records and aliases, and its lines; with `perRow`, each in a savepoint of its
    /// own (a row the vault refuses is one refusal), else the first refusal is thrown.
    private func aliasRows(
        _ batch: ImportBatch, perRow: Bool, stored: [Int: StoredRecord], groups: inout [StoredGroup],
        progress: inout JobProgress, mapping: inout JSONWriter, advice: inout JSONWriter, in store: any AliasStore
    ) throws {
        var next = 0
        for row in batch.rows {
            progress.cursor += 1
            let values: [ImportValue]
            switch row.outcome {
            case let .failure(refusal):
                progress.refused += 1
                ImportLines.advice(line: row.line, id: row.id, refusal: refusal, into: &advice)
                continue
            case let .success(found): values = found
            }
            let mine = Array(batch.prepared[next..<(next + values.count)])
            var committed: [Int: StoredRecord] = [:]
            for index in 0..<values.count { committed[index] = stored[next + index] }
            next += values.count
            if perRow { try store.savepoint() }
            do {
                // The batch's transaction always writes (the job's cursor, at least).
                var created = try create(mine, caller: Self.importer, in: store, stored: committed, writes: true)
                // The row's values stay together: its group, in the same commit (issue 76); in
                // the row's own savepoint when rows go one by one. On a database server the
                // batch's groups go together after its rows (a round trip a group otherwise);
                // on an embedded store each goes at once, so a later row that finds a member
                // expired and deletes it only takes it out of the group, as a create would.
                let sealed = try sealedGroup(&created, names: values.map(\.key), caller: Self.importer)
                if let sealed {
                    if perRow || !store.batchesNewRecords {
                        try store.insertGroup(sealed)
                    } else {
                        groups.append(sealed)
                    }
                }
                let group = sealed?.id
                if perRow { try store.releaseSavepoint() }
                let aliases = zip(values, created.answers).filter { $0.0.inMapping }.map { value, answer in
                    (key: value.key, alias: answer.aliases.first?.alias ?? "")
                }
                progress.imported += 1
                ImportLines.mapping(line: row.line, id: row.id, aliases: aliases, group: group, into: &mapping)
                ImportLines.advice(line: row.line, id: row.id, refusal: nil, into: &advice)
            } catch let error as VaultError where perRow {
                // This row only: what it wrote goes, the batch goes on.
                store.rollbackToSavepoint()
                progress.refused += 1
                ImportLines.advice(line: row.line, id: row.id, refusal: Self.refusal(error), into: &advice)
            }
        }
    }

    /// The records a batch's statement stored or found, by value index: a value found stored
    /// (the same expiry in many rows) is taken as found, its aliases those the vault signed,
    /// rather than read again a value at a time; an expired one goes the ordinary way.
    func importedRecords(_ writes: [NewRecordWrite], _ outcomes: [NewRecordOutcome]) -> [Int: StoredRecord] {
        var records = Self.storedRecords(writes, outcomes)
        let now = clock()
        for (index, outcome) in outcomes.enumerated() {
            guard case var .found(record) = outcome else { continue }
            if let expires = record.expiresAt, expires <= now { continue }
            record.aliases.removeAll { !isAuthentic($0, recordID: record.id) }
            records[index] = record
        }
        return records
    }

    /// A row the vault refused, in the advice file's words (the same codes `/aliases` answers).
    static func refusal(_ error: VaultError) -> ImportRefusal {
        switch error {
        case let .invalidInput(_, reason):
            ImportRefusal(code: CloakError.Code.malformedRequest.rawValue, reason: reason)
        case .refused, .bucketFull:
            ImportRefusal(code: CloakError.Code.tooManyRequests.rawValue, reason: error.description)
        default:
            ImportRefusal(code: CloakError.Code.vaultUnavailable.rawValue, reason: "the vault could not store the row")
        }
    }
}
