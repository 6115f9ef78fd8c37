import CloakCore
import CloakCrypto
import CloakVault
import Testing

extension AliasStoreCompatSuite {
    // MARK: Fixtures

    package static let now: Int64 = 1_700_000_000

    package static func record(
        _ id: String, fingerprint: [UInt8]? = nil, aliases: [IssuedAlias] = [], storage: StorageKind = .persistent,
        classifiers: [String] = ["pci"], expiresAt: Int64? = nil, plaintext: [UInt8]? = nil,
        intent: Bool = false, bucket: [UInt8]? = nil
    ) -> StoredRecord {
        StoredRecord(
            id: id, fingerprint: fingerprint, keyID: "k1",
            sealed: AESGCM.SealedBox(
                nonce: SecureRandom.bytes(12), ciphertext: plaintext ?? SecureRandom.bytes(16),
                tag: SecureRandom.bytes(16)),
            storage: storage, classifiers: classifiers, createdAt: now - 10, expiresAt: expiresAt, aliases: aliases,
            intent: intent, bucket: bucket)
    }

    package static func alias(_ text: String, _ format: AliasFormatName = .UUID) -> IssuedAlias {
        IssuedAlias(alias: text, format: format)
    }

    package static func fingerprint(_ seed: UInt8) -> [UInt8] { (0..<32).map { UInt8($0) ^ seed } }

    /// Runs `body` between `begin()` and `commit()`, rolling back when it throws.
    @discardableResult
    func transaction<T>(_ store: any AliasStore, _ body: () throws -> T) throws -> T {
        try store.begin()
        do {
            let result = try body()
            try store.commit()
            return result
        } catch {
            store.rollback()
            throw error
        }
    }

    /// Checks every stored field, and the aliases in the order they were issued.
    func expectSame(_ found: StoredRecord?, _ expected: StoredRecord, sourceLocation: SourceLocation = #_sourceLocation)
    {
        guard let found else {
            Issue.record("record \(expected.id) not found", sourceLocation: sourceLocation)
            return
        }
        #expect(found.id == expected.id, sourceLocation: sourceLocation)
        #expect(found.fingerprint == expected.fingerprint, sourceLocation: sourceLocation)
        #expect(found.keyID == expected.keyID, sourceLocation: sourceLocation)
        #expect(found.sealed == expected.sealed, sourceLocation: sourceLocation)
        #expect(found.storage == expected.storage, sourceLocation: sourceLocation)
        #expect(found.classifiers == expected.classifiers, sourceLocation: sourceLocation)
        #expect(found.createdAt == expected.createdAt, sourceLocation: sourceLocation)
        #expect(found.expiresAt == expected.expiresAt, sourceLocation: sourceLocation)
        #expect(found.aliases == expected.aliases, sourceLocation: sourceLocation)
        #expect(found.intent == expected.intent, sourceLocation: sourceLocation)
        #expect(found.bucket == expected.bucket, sourceLocation: sourceLocation)
        #expect(found.metadata == expected.metadata, sourceLocation: sourceLocation)
    }
}
