import CloakCore
import CloakCrypto

extension Vault {
    /// The live, kept record of each value, or nil: "is this card already in the vault, under
    /// which aliases?" without creating one. Found by the value's fingerprint (the one token
    /// holders' PERSISTENT records carry), so intents (never fingerprinted), VOLATILE records and
    /// expired records are not found. The answers carry no value.
    package func lookup(
        _ values: [String], completion: @escaping @Sendable (Result<[RevealedRecord?], VaultError>) -> Void
    ) {
        let fingerprints = values.map { value -> [UInt8] in
            var message = "cloak/v1/value\0" + value
            return message.withUTF8 { fingerprintMAC.authenticate(UnsafeRawBufferPointer($0)) }
        }
        executor.submit(
            reads: true,
            { [self] store in
                try fingerprints.map { fingerprint -> RevealedRecord? in
                    guard var record = try store.record(fingerprint: fingerprint), !record.intent else { return nil }
                    if let expires = record.expiresAt, expires <= clock() { return nil }
                    record.aliases.removeAll { !isAuthentic($0, recordID: record.id) }
                    guard !record.aliases.isEmpty else { return nil }
                    return RevealedRecord(
                        value: "", aliases: record.aliases, storage: record.storage, classifiers: record.classifiers,
                        createdAt: record.createdAt, expiresAt: record.expiresAt, metadata: record.metadata)
                }
            }, completion: { completion(Self.map($0)) })
    }
}
