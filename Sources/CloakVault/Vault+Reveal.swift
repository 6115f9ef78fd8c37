import CloakCore
import CloakCrypto
import Foundation
import Synchronization

extension Vault {
    /// Reveals each alias found (expired ones are not found). An audited reveal
    /// (``VaultAuditing/current``) notes each alias found or not, and its notes are written with
    /// its batch (``VaultExecutor/submit(notingReads:completion:)``): the values reach the
    /// caller only once their events are committed.
    ///
    /// `judge` (a caller's access policies, issue 77) says what of each record found the caller
    /// sees: one it hides is answered, noted and counted as not found, and the event it makes
    /// (what a policy changed) commits with the reveal's own. Pure and bounded by the aliases
    /// asked; the only policy work on the vault's thread.
    package func reveal(
        _ aliases: [String], judge: RevealJudge? = nil,
        completion: @escaping @Sendable (Result<[String: RevealedRecord], VaultError>) -> Void
    ) {
        executor.submit(
            notingReads: { [self] store in
                // One statement for all of them where the store is a server.
                let found = try store.records(aliases: aliases)
                var out: [String: RevealedRecord] = [:]
                for alias in aliases {
                    // The alias's keyed reference, made once when a judge needs it too.
                    var reference: String??
                    if let record = try live(found[alias], alias: alias) {
                        let opened = try open(record, in: store)
                        if let judge {
                            let made = auditReference(alias)
                            reference = .some(made)
                            let verdict = judge(alias, made, opened)
                            out[alias] = verdict.record
                            if let event = verdict.event { VaultAuditing.add(event) }
                        } else {
                            out[alias] = opened
                        }
                    }
                    VaultAuditing.note(reference ?? auditReference(alias), out[alias] == nil ? .notFound : .ok, .reveal)
                }
                return out
            }, completion: { completion(Self.map($0)) })
    }

    /// Which of `aliases` are live aliases of this vault, read without opening any record: an
    /// alias row must carry its MAC (a database writer cannot make a card pass for an alias).
    /// For an inbound route's look for cards no selector took (issue 57).
    package func liveAliases(
        _ aliases: [String], completion: @escaping @Sendable (Result<Set<String>, VaultError>) -> Void
    ) {
        executor.submit(
            reads: true,
            { [self] store in
                let found = try store.records(aliases: aliases)
                return Set(
                    aliases.filter { alias in
                        ((try? live(found[alias], alias: alias)) ?? nil) != nil
                    })
            }, completion: { completion(Self.map($0)) })
    }

    // MARK: On the executor thread

    /// The live record `alias` points to, with only its authentic aliases. An alias row whose MAC
    /// does not bind it to that record (a database writer pointed it elsewhere) is refused.
    func liveRecord(_ alias: String, in store: any AliasStore) throws -> StoredRecord? {
        try live(store.record(alias: alias), alias: alias)
    }

    /// `record`, read for `alias`, when it is live, with only its authentic aliases.
    func live(_ record: StoredRecord?, alias: String) throws -> StoredRecord? {
        guard var record else { return nil }
        if let expires = record.expiresAt, expires <= clock() { return nil }
        // Each row's MAC is checked once; the asked alias's row must be among the authentic ones.
        var asked = false
        record.aliases.removeAll { row in
            let authentic = isAuthentic(row, recordID: record.id)
            if authentic && row.alias == alias { asked = true }
            return !authentic
        }
        guard asked else { throw VaultError.unavailable("an alias row failed its integrity check") }
        return record
    }

    func open(_ record: StoredRecord, in store: any AliasStore) throws -> RevealedRecord {
        // A version this node has not picked up yet (a rotation and rewrap elsewhere): the
        // store's ring is read at once (MissingKeyRead), not at the next key_refresh_s.
        guard
            let key = missingKey.key(
                record.keyID, in: store, ringName: Self.keyRingName, lookup: { dataKey(record.keyID) })
        else {
            throw VaultError.unavailable("the key \(record.keyID) that sealed a record is not in the key ring")
        }
        let plain: [UInt8]
        do {
            plain = try AESGCM.open(
                record.sealed, key: key.encryptionKey, associatedData: Self.associatedData(record.id, record.keyID))
        } catch {
            throw VaultError.unavailable("a record failed authentication")
        }
        return RevealedRecord(
            value: String(decoding: plain, as: UTF8.self), aliases: record.aliases, storage: record.storage,
            classifiers: record.classifiers, createdAt: record.createdAt, expiresAt: record.expiresAt,
            intent: record.intent, metadata: record.metadata)
    }

    static func associatedData(_ recordID: String, _ keyID: String) -> [UInt8] { Array("\(recordID)|\(keyID)".utf8) }
}

/// What a caller's access policies make of one record a reveal found (issue 77): the record as
/// the caller may see it (nil: not at all, answered as a miss), and the audit event of what a
/// policy changed.
package struct RevealVerdict: Sendable {
    package var record: RevealedRecord?
    package var event: AuditEvent.Draft?

    package init(record: RevealedRecord?, event: AuditEvent.Draft? = nil) {
        self.record = record
        self.event = event
    }
}

/// Judges a record found for an alias (the alias, its audit reference, the opened record).
package typealias RevealJudge =
    @Sendable (_ alias: String, _ reference: String?, _ record: RevealedRecord) -> RevealVerdict
