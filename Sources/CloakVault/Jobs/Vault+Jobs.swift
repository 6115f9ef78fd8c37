import CloakCore
import CloakCrypto

/// Bulk jobs (issue 60) through the vault's executor: the job's row, its input chunks, and an
/// import's batches, each of which aliases its rows exactly as `POST /aliases` does (the same
/// fingerprints, deduplication, formats and records) in the transaction that moves the job on.
extension Vault {
    /// A key for a new job, under the ring's current data key.
    package func newJobSeal(_ id: JobID) throws(VaultError) -> JobSeal {
        do { return try JobSeal(newJob: id.text, ring: keys) } catch {
            throw .unavailable("the job could not be sealed: \(error)")
        }
    }

    /// The key of a stored job.
    package func jobSeal(_ job: StoredJob) throws(VaultError) -> JobSeal {
        do {
            return try JobSeal(
                job: job.id.text, wrappedKey: FileSeal.WrappedKey(keyID: job.keyID, sealed: job.wrappedKey), ring: keys)
        } catch {
            throw .unavailable("the job's key does not open with the key ring: \(error)")
        }
    }

    /// The caller an import's rows are aliased for: deterministic and deduplicated like any
    /// token holder's, and told nothing of what was stored before (the mapping holds the
    /// alias asked for, the same whether the value was new; ``AliasCaller/mayReveal``).
    static let importer = AliasCaller(mayReveal: false, anonymous: false)

    /// Aliases a batch's rows and moves the job on, in one job of the executor: each row in a
    /// savepoint of its own (a row the vault refuses is one refusal), then the batch's output
    /// chunks and the new cursor, only while the job is still the holder's at `from`
    /// (``ImportBatchLost`` otherwise, and nothing of the batch is kept). The values are sealed
    /// and fingerprinted on the calling thread first, as a create's are.
    package func importBatch(
        _ batch: ImportBatch, now: @escaping @Sendable () -> Int64,
        completion: @escaping @Sendable (Result<JobProgress, VaultError>) -> Void
    ) {
        var requests: [AliasRequest] = []
        for row in batch.rows {
            if case let .success(values) = row.outcome { requests += values.map(\.request) }
        }
        let prepared: [PreparedAlias]
        do { prepared = try prepare(requests, caller: Self.importer) } catch { return completion(.failure(error)) }
        executor.submit(
            { [self] store in try runImport(batch, prepared: prepared, now: now(), in: store) },
            completion: { result in
                if case .failure(let error) = result, error is ImportBatchLost {
                    return completion(.failure(.notFound))
                }
                completion(Self.map(result))
            })
    }

    private func runImport(_ batch: ImportBatch, prepared: [PreparedAlias], now: Int64, in store: any AliasStore)
        throws -> JobProgress
    {
        var mapping = JSONWriter(reservingCapacity: batch.rows.count * 96)
        var advice = JSONWriter(reservingCapacity: batch.rows.count * 64)
        var progress = batch.from
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
            let mine = Array(prepared[next..<(next + values.count)])
            next += values.count
            try store.savepoint()
            do {
                let created = try create(mine, caller: Self.importer, in: store)
                try store.releaseSavepoint()
                let aliases = zip(values, created.answers).map { value, answer in
                    (key: value.key, alias: answer.aliases.first?.alias ?? "")
                }
                progress.imported += 1
                ImportLines.mapping(line: row.line, id: row.id, aliases: aliases, into: &mapping)
                ImportLines.advice(line: row.line, id: row.id, refusal: nil, into: &advice)
            } catch let error as VaultError {
                // This row only: what it wrote goes, the batch goes on.
                store.rollbackToSavepoint()
                progress.refused += 1
                ImportLines.advice(line: row.line, id: row.id, refusal: Self.refusal(error), into: &advice)
            }
        }
        let index = batch.from.outputChunks
        progress.outputChunks = index + 1
        let (mappingLines, adviceLines) = (mapping.takeBytes(), advice.takeBytes())
        progress.mappingBytes += Int64(mappingLines.count)
        progress.adviceBytes += Int64(adviceLines.count)
        let outputs = [
            JobOutputChunk(
                part: .mapping, index: index,
                sealed: try batch.seal.seal(
                    mappingLines, part: JobPart.mapping.rawValue, index: index, isLast: batch.isLast)),
            JobOutputChunk(
                part: .advice, index: index,
                sealed: try batch.seal.seal(
                    adviceLines, part: JobPart.advice.rawValue, index: index, isLast: batch.isLast)),
        ]
        guard
            try store.advanceJob(
                batch.job, holder: batch.holder, from: batch.from.cursor, to: progress, leaseUntil: batch.leaseUntil,
                outputs: outputs, now: now)
        else { throw ImportBatchLost() }
        if batch.isLast {
            guard
                try store.setJobState(
                    batch.job, from: [.running], to: .done, holder: batch.holder, now: now, expiresAt: batch.expiresAt,
                    failure: nil)
            else { throw ImportBatchLost() }
            try store.deleteJobInput(batch.job)
        }
        return progress
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
