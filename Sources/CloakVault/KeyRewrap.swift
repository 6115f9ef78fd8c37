import CloakCrypto

/// Re-seals records still under an older key version with the current one (`cloak keys
/// rewrap`), online: on a connection of its own, in bounded batches of one transaction each,
/// while every node keeps serving.
///
/// - Nothing is lost and nothing sealed twice under a stale read: each record is re-sealed with a
///   conditional update (``AliasStore/reseal(_:)``) that applies only while the row still holds
///   what was read; a row a node changed or deleted meanwhile is skipped.
/// - Resumable: every batch commits; a run killed at any point leaves each record under its old
///   version or the new one, whole, and the next run picks up what is left.
package struct KeyRewrap {
    package let store: any AliasStore
    package let keys: KeyRing

    package init(store: any AliasStore, keys: KeyRing) {
        self.store = store
        self.keys = keys
    }

    /// What one batch did.
    package struct Batch: Sendable, Equatable {
        package var resealed = 0
        /// Changed or deleted by a node between the read and the update: left as it is.
        package var skipped = 0
        /// The last record id handled: the next batch starts after it (nil: the version is done).
        package var next: String?
    }

    /// Re-seals up to `limit` records sealed with `version`, after `cursor`.
    /// - Throws: ``VaultError/unavailable(_:)`` when the ring has no key `version` (retired), or a
    ///   record fails to open (its ciphertext was altered); the batch is rolled back.
    package func batch(version: String, after cursor: String?, limit: Int) throws -> Batch {
        try resealBatch(
            "records", version: version, limit: limit,
            read: { try store.sealedRecords(keyID: version, after: cursor, limit: limit) },
            associatedData: Vault.associatedData, write: { try store.reseal($0) })
    }

    /// Re-seals up to `limit` groups' bodies sealed with `version`, after group `cursor`, as
    /// ``batch(version:after:limit:)`` does records (each bound to its id and the new version).
    package func groupBatch(version: String, after cursor: String?, limit: Int) throws -> Batch {
        try resealBatch(
            "groups", version: version, limit: limit,
            read: { try store.sealedGroups(keyID: version, after: cursor, limit: limit) },
            associatedData: RecordGroup.associatedData, write: { try store.resealGroups($0) })
    }

    /// One batch of what `read` gives (sealed under `version`, each bound by `associatedData` to
    /// its id and key version) opened and sealed again under the current version, written by
    /// `write` where the row is still as read.
    private func resealBatch(
        _ kind: String, version: String, limit: Int, read: () throws -> [SealedRecord],
        associatedData: (String, String) -> [UInt8],
        write: ([(old: SealedRecord, new: SealedRecord)]) throws -> Set<String>
    ) throws -> Batch {
        guard let old = keys.key(id: version) else {
            throw VaultError.unavailable("the key ring has no key \(version): its \(kind) cannot be opened")
        }
        let current = keys.current
        return try transaction(limit: limit) {
            let rows = try read()
            var resealed: [(old: SealedRecord, new: SealedRecord)] = []
            resealed.reserveCapacity(rows.count)
            for row in rows {
                var plain: [UInt8]
                do {
                    plain = try AESGCM.open(
                        row.sealed, key: old.encryptionKey, associatedData: associatedData(row.id, version))
                } catch {
                    throw VaultError.unavailable("a row of \(kind) sealed with \(version) failed authentication")
                }
                defer { for i in plain.indices { plain[i] = 0 } }
                let sealed = try AESGCM.seal(
                    plain, key: current.encryptionKey, associatedData: associatedData(row.id, current.id))
                resealed.append((row, SealedRecord(id: row.id, keyID: current.id, sealed: sealed)))
            }
            return (rows.count, try write(resealed).count, rows.last?.id)
        }
    }

    /// Seals again, under the current version, the keys of up to `limit` files whose key is
    /// sealed with `version`, after upload `cursor` (the chunks stay as they are: only the file's
    /// own key is sealed by the ring). A file a node changed or deleted meanwhile is skipped.
    package func fileBatch(version: String, after cursor: String?, limit: Int) throws -> Batch {
        guard keys.key(id: version) != nil else {
            throw VaultError.unavailable("the key ring has no key \(version): its files cannot be opened")
        }
        return try transaction(limit: limit) {
            let files = try store.wrappedFileKeys(keyID: version, after: cursor, limit: limit)
            var changes: [(old: StoredFile, new: StoredFile)] = []
            for file in files {
                let wrapped: FileSeal.WrappedKey
                do {
                    wrapped = try FileSeal.rewrapped(
                        FileSeal.WrappedKey(keyID: file.keyID, sealed: file.wrappedKey),
                        fileID: Array(file.uploadID.utf8),
                        ring: keys)
                } catch {
                    throw VaultError.unavailable("a file key sealed with \(version) failed authentication")
                }
                var new = file
                new.keyID = wrapped.keyID
                new.wrappedKey = wrapped.sealed
                changes.append((file, new))
            }
            return (files.count, try store.rewrapFileKeys(changes).count, files.last?.uploadID)
        }
    }

    /// Seals again, under the current version, the keys of up to `limit` jobs whose key is
    /// sealed with `version`, after job `cursor` (their chunks stay as they are). A job a node
    /// changed meanwhile (its state, its lease: the key columns are compared, not the row) is
    /// skipped only if its key changed; a job deleted meanwhile is skipped.
    package func jobBatch(version: String, after cursor: String?, limit: Int) throws -> Batch {
        guard keys.key(id: version) != nil else {
            throw VaultError.unavailable("the key ring has no key \(version): its jobs cannot be opened")
        }
        return try transaction(limit: limit) {
            let jobs = try store.wrappedJobKeys(keyID: version, after: cursor.flatMap(JobID.init), limit: limit)
            var changes: [(old: StoredJob, new: StoredJob)] = []
            for job in jobs {
                let wrapped: FileSeal.WrappedKey
                do {
                    wrapped = try JobSeal.rewrapped(
                        FileSeal.WrappedKey(keyID: job.keyID, sealed: job.wrappedKey), job: job.id.text,
                        binding: job.sealBinding, ring: keys)
                } catch {
                    throw VaultError.unavailable("a job key sealed with \(version) failed authentication")
                }
                var new = job
                new.keyID = wrapped.keyID
                new.wrappedKey = wrapped.sealed
                changes.append((job, new))
            }
            return (jobs.count, try store.rewrapJobKeys(changes).count, jobs.last?.id.text)
        }
    }

    /// One batch in a transaction of its own: `work` says how many rows it read, how many it
    /// changed, and the last one read (where the next batch starts, unless it read fewer than
    /// `limit`: the version is done). Rolled back when it throws.
    private func transaction(limit: Int, _ work: () throws -> (read: Int, done: Int, last: String?)) throws -> Batch {
        let (read, done, last) = try store.transaction(work)
        return Batch(resealed: done, skipped: read - done, next: read < limit ? nil : last)
    }

    /// The versions other than the current one that still seal records or files' keys, with their counts.
    package func pending() throws -> [(version: String, records: Int)] {
        try store.recordCounts().filter { $0.key != keys.currentID }.sorted { $0.key < $1.key }.map {
            ($0.key, $0.value)
        }
    }
}
