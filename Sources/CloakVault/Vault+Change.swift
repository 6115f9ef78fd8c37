import CloakCore
import CloakCrypto
import Foundation
import Synchronization

extension Vault {
    /// Deletes an alias (and its value once no alias is left).
    package func delete(_ alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        changeRecord(
            of: alias,
            { store, record in
                guard try store.deleteAlias(alias) else { throw VaultError.notFound }
            }, completion: completion)
    }

    /// Changes the record an alias belongs to: its classifiers, metadata and lifetime (from now),
    /// each when given. A token holder's record only: an intent's life is `keep`'s business.
    package func update(
        _ alias: String, classifiers: [String]?, metadata: [String: String]?, ttlSeconds: Int?,
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        let now = clock(), volatileTTL = Int64(settings.volatileTTLSeconds)
        changeRecord(
            of: alias,
            { store, record in
                if let classifiers { try store.setClassifiers(classifiers, recordID: record.id) }
                if var metadata {
                    // A caller's metadata replaces its own, never Cloak's (a card's attributes).
                    metadata[RevealedRecord.attributesKey] = record.metadata[RevealedRecord.attributesKey]
                    try store.setRecordMetadata(metadata, recordID: record.id)
                }
                if let ttlSeconds {
                    // An intent never outlives its intent lifetime, nor a VOLATILE value vault.volatile_ttl_s.
                    var wanted = now + Int64(ttlSeconds)
                    if record.intent { wanted = min(wanted, record.expiresAt ?? wanted) }
                    if record.storage == .volatile { wanted = min(wanted, record.createdAt + volatileTTL) }
                    try store.setExpiry(wanted, recordID: record.id)
                }
            }, completion: completion)
    }

    /// Replaces the classifiers of the record an alias belongs to.
    package func setClassifiers(
        _ classifiers: [String], alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        changeRecord(
            of: alias,
            { store, record in
                try store.setClassifiers(classifiers, recordID: record.id)
            }, completion: completion)
    }

    /// Runs `change` on the live record of `alias`. The dedupe cache drops the record before the
    /// change is written and keeps it out until the job's outcome is known (after the commit,
    /// before the caller hears of it), so no loop answers from what the change removed.
    private func changeRecord(
        of alias: String, _ change: @escaping @Sendable (any AliasStore, StoredRecord) throws -> Void,
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        let changing = ChangingRecord()
        executor.submit(
            { [self, cache] store in
                guard let record = try liveRecord(alias, in: store) else { throw VaultError.notFound }
                if let cache, changing.mark(record.fingerprint) { cache.changing(record.fingerprint) }
                try change(store, record)
                VaultAuditing.note(auditReference(alias), .ok, .change)
            },
            completion: { [cache] result in
                cache?.changed(changing.fingerprint)
                completion(Self.map(result))
            })
    }
}

/// The fingerprint a change job keeps out of the dedupe cache, shared by the job and its
/// completion. Marked once: a retried batch runs the job again.
private final class ChangingRecord: Sendable {
    private let state = Mutex<(marked: Bool, fingerprint: [UInt8]?)>((false, nil))

    /// Records `fingerprint`; false when the job had already marked one.
    func mark(_ fingerprint: [UInt8]?) -> Bool {
        state.withLock { s in
            guard !s.marked else { return false }
            s = (true, fingerprint)
            return true
        }
    }

    var fingerprint: [UInt8]? { state.withLock { $0.fingerprint } }
}
