import CloakCore
import CloakCrypto
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// The fingerprint → record map that answers stored values without the store (issue 10).
@Suite struct VaultDedupeCacheTests {
    static let cached = Vault.Settings(volatileTTLSeconds: 60, dedupeCacheEntries: 100)
    static let card = AliasRequest(
        value: "4111111111111111", format: .FPE_SIX_T_FOUR, storage: .persistent, classifiers: ["pci"])

    @Test func aStoredValueIsAnsweredWithoutTheStore() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Self.cached)
            let first = try vault.createSync([Self.card]).get()[0]
            // The store can no longer answer: only the cache can.
            try harness.execute("DROP TABLE aliases")
            let again = try vault.createSync([Self.card]).get()[0]
            #expect(again.aliases == first.aliases)
            #expect(again.classifiers == ["pci"])
            #expect(again.createdAt == first.createdAt)
            #expect(again.value == Self.card.value)
            // Another format of the same value is not remembered: it goes to the store (and fails).
            var other = Self.card
            other.format = .UUID
            #expect(try vault.createSync([other]).failure != nil)
        }
    }

    /// A cached answer comes back without waiting for a commit; for a caller who may not reveal,
    /// that speed would say "stored before". Its stored values go through the store like new ones.
    @Test func callersWhoMayNotRevealAreNeverAnsweredFromTheCache() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Self.cached)
            _ = try vault.createSync([Self.card]).get()  // remembered
            try harness.execute("DROP TABLE aliases")
            #expect(
                try vault.createSync([Self.card], caller: AliasCaller(mayReveal: false, anonymous: false)).failure
                    != nil)
            #expect(try vault.createSync([Self.card], caller: .trusted).get().count == 1)
        }
    }

    /// Through the store, a value found as stored writes nothing: its commit would skip the sync a
    /// new value's waits for. For a caller who may not reveal, the commit is made to write.
    @Test func aStoredValueAnsweredToACallerWhoMayNotRevealStillCommitsAWrite() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let createOnly = AliasCaller(mayReveal: false, anonymous: false)
            _ = try vault.createSync([Self.card], caller: createOnly).get()
            let inspector = try harness.inspector()
            let before = try inspector.metadata(SQLiteAliasStore.durableCommitName)
            _ = try vault.createSync([Self.card], caller: createOnly).get()  // found as stored
            let after = try inspector.metadata(SQLiteAliasStore.durableCommitName)
            #expect(after != nil && after != before)
            // A caller who may reveal learns nothing from timing: nothing is forced for it.
            _ = try vault.createSync([Self.card], caller: .trusted).get()
            #expect(try inspector.metadata(SQLiteAliasStore.durableCommitName) == after)
        }
    }

    @Test func callersWhoMayNotRevealGetTheSameAnswerFromTheCacheAsFromTheStore() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Self.cached)
            let caller = AliasCaller(mayReveal: false, anonymous: false)
            _ = try vault.createSync([Self.card]).get()  // stored long before
            harness.clock.advance(by: 500)
            var asked = Self.card
            asked.classifiers = ["other"]
            // Answered through the store, not the cache: a cached answer would come back sooner.
            let cachedAnswer = try vault.createSync([asked], caller: caller).get()[0]
            #expect(cachedAnswer.createdAt == harness.clock.now)
            #expect(cachedAnswer.classifiers == ["other"])
            #expect(cachedAnswer.aliases.count == 1)
            // The same request answered by the store (a vault without a cache) is identical.
            let uncached = try harness.openVault()
            let stored = try uncached.createSync([asked], caller: caller).get()[0]
            #expect(stored.aliases == cachedAnswer.aliases)
            #expect(stored.createdAt == cachedAnswer.createdAt)
            #expect(stored.classifiers == cachedAnswer.classifiers)
        }
    }

    @Test func aDeletedAliasIsNeverHandedOutAgain() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Self.cached)
            let alias = try vault.alias(Self.card.value, .FPE_SIX_T_FOUR)
            let fingerprint = try #require(vault.fingerprint(Self.card, caller: .trusted))
            #expect(vault.cache?.entry(fingerprint) != nil)
            try vault.deleteSync(alias).get()
            #expect(vault.cache?.entry(fingerprint) == nil)
            let again = try vault.alias(Self.card.value, .FPE_SIX_T_FOUR)
            #expect(try vault.revealOne(again)?.value == Self.card.value)
        }
    }

    @Test func aRequestMixingRememberedAndNewValuesKeepsItsOrder() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Self.cached)
            let card = try vault.alias(Self.card.value, .FPE_SIX_T_FOUR)
            let cvc = AliasRequest(value: "123", format: .NUM_LENGTH_PRESERVING, storage: .volatile)
            let ssn = AliasRequest(value: "123-45-6789", format: .UUID, storage: .persistent)
            let answers = try vault.createSync([cvc, Self.card, ssn]).get()
            #expect(answers.map(\.value) == ["123", Self.card.value, "123-45-6789"])
            #expect(answers[1].aliases.first?.alias == card)
            #expect(try vault.revealOne(try #require(answers[0].aliases.first?.alias))?.value == "123")
            #expect(try vault.revealOne(try #require(answers[2].aliases.first?.alias))?.value == "123-45-6789")
        }
    }

    @Test func newClassifiersAreSeenAtOnce() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Self.cached)
            let alias = try vault.alias(Self.card.value, .FPE_SIX_T_FOUR, classifiers: ["pci"])
            try vault.setClassifiersSync(["gold"], alias: alias).get()
            #expect(try vault.createSync([Self.card]).get()[0].classifiers == ["gold"])
        }
    }

    @Test func volatileAndAnonymousValuesAreNeverRemembered() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Self.cached)
            _ = try vault.createSync([AliasRequest(value: "123", format: .NUM_LENGTH_PRESERVING, storage: .volatile)])
                .get()
            _ = try vault.createSync(
                [AliasRequest(value: "4111111111111111", format: .UUID, storage: .persistent)],
                caller: .anonymous
            ).get()
            #expect(vault.cache?.count == 0)
        }
    }

    @Test func theCacheStaysWithinItsCapacity() {
        let cache = DedupeCache(capacity: 10)
        for i in 0..<100 {
            let fingerprint = Digest.sha256(Array("value \(i)".utf8))
            cache.remember(
                StoredRecord(
                    id: "rec_\(i)", fingerprint: fingerprint, keyID: "k",
                    sealed: AESGCM.SealedBox(nonce: [], ciphertext: [], tag: []),
                    storage: .persistent, classifiers: [], createdAt: 0, expiresAt: nil,
                    aliases: [IssuedAlias(alias: "a\(i)", format: .UUID)]))
            #expect(cache.count <= 10)
        }
        #expect(cache.entry(Digest.sha256(Array("value 99".utf8)))?.aliases.first?.alias == "a99")
        #expect(cache.entry(Digest.sha256(Array("value 0".utf8))) == nil)
    }

    @Test func aVaultSharingItsStoreWithOtherWritersKeepsNoCache() throws {
        try withVaultHarness { harness in
            let stores: [any AliasStore] = [
                try SQLiteAliasStore(path: harness.storePath), try SQLiteAliasStore(path: harness.storePath),
            ]
            let vault = try Vault(stores: stores, keys: harness.keys, settings: Self.cached)
            defer { vault.close() }
            #expect(vault.cache == nil)
        }
    }
}

/// A record being deleted or changed stays out of the cache from before the change is written
/// until its job's outcome: no loop answers from what a committed delete removed.
@Suite struct DedupeCacheChangeTests {
    static func record(_ fingerprint: [UInt8]) -> StoredRecord {
        StoredRecord(
            id: "rec_1", fingerprint: fingerprint, keyID: "k1",
            sealed: AESGCM.SealedBox(nonce: [], ciphertext: [], tag: []), storage: .persistent,
            classifiers: [], createdAt: 1, expiresAt: nil,
            aliases: [IssuedAlias(alias: "tok_x", format: .UUID, luhnValid: true)])
    }

    @Test func aRecordBeingChangedIsNotRememberedUntilTheChangeHasItsOutcome() {
        let cache = DedupeCache(capacity: 10)
        let fingerprint = [UInt8](repeating: 7, count: 32)
        cache.remember(Self.record(fingerprint))
        #expect(cache.entry(fingerprint) != nil)
        cache.changing(fingerprint)
        #expect(cache.entry(fingerprint) == nil)
        // An earlier job of the batch read the record: its completion must not bring it back.
        cache.remember(Self.record(fingerprint))
        #expect(cache.entry(fingerprint) == nil)
        // Two changes under way: the first outcome does not let it back in.
        cache.changing(fingerprint)
        cache.changed(fingerprint)
        cache.remember(Self.record(fingerprint))
        #expect(cache.entry(fingerprint) == nil)
        cache.changed(fingerprint)
        cache.remember(Self.record(fingerprint))
        #expect(cache.entry(fingerprint) != nil)
    }

    @Test func betweenADeletesCommitAndItsCompletionTheDeletedAliasIsNotAnswered() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: VaultDedupeCacheTests.cached)
            let card = VaultDedupeCacheTests.card
            let first = try vault.createSync([card]).get()[0].aliases[0].alias
            // 1. Hold the vault thread, so the next two jobs are queued into one batch.
            let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            vault.reveal([first]) { _ in
                held.signal()
                release.wait()
            }
            held.wait()
            // 2. A job ahead of the delete in the batch: its completion runs after the commit and
            //    before the delete's, and waits there.
            let committed = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
            vault.reveal([first]) { _ in
                committed.signal()
                proceed.wait()
            }
            let deleted = DispatchSemaphore(value: 0)
            vault.delete(first) { _ in deleted.signal() }
            release.signal()
            committed.wait()
            // 3. The delete is committed and its completion has not run: ask for the value again.
            let answer = Mutex<String?>(nil)
            let answered = DispatchSemaphore(value: 0)
            vault.createAliases([card]) { result in
                answer.withLock { $0 = (try? result.get())?.first?.aliases.first?.alias }
                answered.signal()
            }
            // From the cache the answer is already here (the deleted alias); from the store it
            // waits for the vault thread.
            let early = answer.withLock { $0 }
            proceed.signal()
            deleted.wait()
            answered.wait()
            #expect(early == nil, "answered \(early ?? "") from the cache after its delete committed")
            let again = try #require(answer.withLock { $0 })
            #expect(try vault.revealOne(again)?.value == card.value)
        }
    }
}
