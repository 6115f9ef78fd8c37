import CloakCore
import CloakCrypto
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// Reveal, delete, classifiers, ping and close through the real SQLite store.
@Suite struct VaultRevealDeleteTests {
    @Test func aRevealAnswersWhileAnotherProcessHoldsTheWriteLock() throws {
        // `cloak keys rewrap` beside a serving node holds SQLite's write lock for each batch it
        // re-seals: reveals (reads) must not queue behind it, nor fail after the busy timeout.
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let alias = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            let other = try harness.inspector()
            try other.begin()  // BEGIN IMMEDIATE: the write lock, held
            defer { other.rollback() }
            #expect(try vault.revealOne(alias)?.value == "4111111111111111")
            #expect(try vault.revealOne("tok_sandbox_unknown") == nil)
        }
    }

    @Test func revealReturnsTheRecordAsCreated() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let created = try vault.createSync([
                AliasRequest(
                    value: "4111 1111 1111 1111", format: .FPE_SIX_T_FOUR, storage: .persistent,
                    classifiers: ["pci", "card"]),
                AliasRequest(value: "", format: .UUID, storage: .persistent),
                AliasRequest(value: "Zoë", format: .ALPHANUMERIC_LENGTH_PRESERVING, storage: .persistent),
            ])
            // The third value is not ASCII: the whole batch is refused.
            #expect(created.failure?.isInvalidInput(at: 2) == true)

            let records = try vault.createSync([
                AliasRequest(
                    value: "4111 1111 1111 1111", format: .FPE_SIX_T_FOUR, storage: .persistent,
                    classifiers: ["pci", "card"]),
                AliasRequest(value: "", format: .UUID, storage: .persistent),
            ]).get()
            #expect(records.map(\.value) == ["4111 1111 1111 1111", ""])
            #expect(records.allSatisfy { $0.createdAt == harness.clock.now })
            let card = try #require(records[0].aliases.first?.alias)
            let empty = try #require(records[1].aliases.first?.alias)
            let revealed = try vault.revealSync([card, empty, "tok_sandbox_unknown"]).get()
            #expect(Set(revealed.keys) == [card, empty])
            #expect(revealed[card]?.value == "4111 1111 1111 1111")
            #expect(revealed[card]?.classifiers == ["pci", "card"])
            #expect(revealed[card]?.createdAt == harness.clock.now)
            #expect(revealed[empty]?.value == "")
        }
    }

    @Test func revealedRecordsHaveTheVaultAPIShape() throws {
        let record = RevealedRecord(
            value: "737", aliases: [IssuedAlias(alias: "123", format: .NUM_LENGTH_PRESERVING)],
            storage: .volatile, classifiers: ["cvc"], createdAt: 1_700_000_000)
        let expected: JSONValue = .object([
            ("value", .string("737")),
            ("aliases", .array([.object([("alias", .string("123")), ("format", .string("NUM_LENGTH_PRESERVING"))])])),
            ("storage", .string("VOLATILE")),
            ("classifiers", .array([.string("cvc")])),
            ("created_at", .string("2023-11-14T22:13:20Z")),
        ])
        #expect(record.json == expected)
        #expect(RevealedRecord.iso8601(0) == "1970-01-01T00:00:00Z")
        #expect(RevealedRecord.iso8601(951_782_400) == "2000-02-29T00:00:00Z")
    }

    @Test func anEmptyBatchSucceedsWithNothing() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            #expect(try vault.createSync([]).get().isEmpty)
            #expect(try vault.revealSync([]).get().isEmpty)
        }
    }

    /// ALPHANUMERIC_SIX_T_FOUR drops separators, so two values can share their first candidate.
    @Test func valuesWhoseCandidatesCollideStillGetDistinctAliases() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let a = try vault.alias("ABCDEF-ghij-1234", .ALPHANUMERIC_SIX_T_FOUR)
            let b = try vault.alias("ABCDEFghij1234", .ALPHANUMERIC_SIX_T_FOUR)
            let c = try vault.alias("ABCDEF ghij 1234", .ALPHANUMERIC_SIX_T_FOUR)
            #expect(Set([a, b, c]).count == 3)
            #expect(try vault.revealOne(a)?.value == "ABCDEF-ghij-1234")
            #expect(try vault.revealOne(b)?.value == "ABCDEFghij1234")
            #expect(try vault.revealOne(c)?.value == "ABCDEF ghij 1234")
        }
    }

    @Test func revealedRecordsDescribeThemselvesWithoutTheValue() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let alias = try vault.alias("4111111111111111", .UUID)
            let record = try #require(try vault.revealOne(alias))
            #expect(!"\(record)".contains("4111111111111111"))
            #expect(!String(reflecting: record).contains("4111111111111111"))
        }
    }

    @Test func deleteThenRevealFindsNothing() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let alias = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            #expect(throws: Never.self) { try vault.deleteSync(alias).get() }
            #expect(try vault.revealOne(alias) == nil)
            #expect(try vault.deleteSync(alias).failure == .notFound)
            #expect(try vault.deleteSync("tok_sandbox_never").failure == .notFound)
            // Once gone, the value is stored afresh.
            let again = try vault.alias("4111111111111111", .UUID)
            #expect(try vault.revealOne(again)?.aliases.map(\.format) == [.UUID])
            vault.close()
            #expect(try harness.rowCount("records") == 1)
        }
    }

    @Test func deletingOneOfTwoAliasesKeepsTheRecord() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let fpe = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            let uuid = try vault.alias("4111111111111111", .UUID)
            try vault.deleteSync(fpe).get()
            #expect(try vault.revealOne(fpe) == nil)
            let kept = try #require(try vault.revealOne(uuid))
            #expect(kept.value == "4111111111111111")
            #expect(kept.aliases == [IssuedAlias(alias: uuid, format: .UUID)])
            // Asking for the deleted format again adds a fresh alias to the same record.
            let newFPE = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            #expect(try vault.revealOne(newFPE)?.aliases.map(\.alias) == [uuid, newFPE])
            try vault.deleteSync(uuid).get()
            try vault.deleteSync(newFPE).get()
            vault.close()
            #expect(try harness.rowCount("records") == 0)
            #expect(try harness.rowCount("aliases") == 0)
        }
    }

    @Test func setClassifiersReplacesThemForEveryAliasOfTheRecord() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let a = try vault.alias("123-45-6789", .FPE_SSN_T_FOUR, classifiers: ["pii"])
            let b = try vault.alias("123-45-6789", .UUID)
            try vault.setClassifiersSync(["ssn", "tier:1"], alias: a).get()
            #expect(try vault.revealOne(b)?.classifiers == ["ssn", "tier:1"])
            try vault.setClassifiersSync([], alias: b).get()
            #expect(try vault.revealOne(a)?.classifiers == [])
            #expect(try vault.setClassifiersSync(["x"], alias: "tok_sandbox_never").failure == .notFound)
        }
    }

    @Test func revealWithARingLackingTheSealingKeyIsUnavailable() throws {
        try withVaultHarness { harness in
            let rotated = harness.keys.rotated()
            let writer = try harness.openVault(keys: rotated)
            let alias = try writer.alias("4111111111111111", .UUID)  // sealed with k2
            writer.close()

            let reader = try harness.openVault(keys: harness.keys)  // k1 only
            let error = try #require(try reader.revealSync([alias]).failure)
            #expect(error.isUnavailable, "\(error)")
            #expect(!error.description.contains("4111111111111111"))
        }
    }

    @Test func anotherRingUnderTheSameKeyIdCannotOpenTheStore() throws {
        try withVaultHarness { harness in
            let writer = try harness.openVault()
            _ = try writer.alias("4111111111111111", .UUID)
            writer.close()
            // Another "k1": refused when the vault opens, before it could seal or fail a reveal.
            let error = try #require(throws: VaultOpenError.self) { try harness.openVault(keys: KeyRing.generate()) }
            #expect(error.description.contains("does not match"))
        }
    }

    @Test func valuesAreStoredEncrypted() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let secret = "4929 3813 3266 4295 plain"
            _ = try vault.alias(secret, .UUID)
            _ = try vault.alias("555-12-3456", .FPE_SSN_T_FOUR)
            vault.close()
            for suffix in ["", "-wal"] {
                let bytes = (try? Data(contentsOf: URL(fileURLWithPath: harness.storePath + suffix))) ?? Data()
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "plain value in vault.db\(suffix)")
                #expect(bytes.range(of: Data("555-12-3456".utf8)) == nil, "plain SSN in vault.db\(suffix)")
            }
        }
    }

    @Test func pingAnswersAndCloseStopsTheVault() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            #expect(throws: Never.self) { try vault.pingSync().get() }
            vault.close()
            vault.close()  // idempotent
            #expect(try vault.pingSync().failure?.isUnavailable == true)
            #expect(
                try vault.createSync([AliasRequest(value: "1", format: .UUID, storage: .persistent)]).failure?
                    .isUnavailable == true)
            #expect(try vault.revealSync(["x"]).failure?.isUnavailable == true)
        }
    }

    @Test func closeFinishesQueuedWork() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let finished = Counter()
            for i in 0..<20 {
                vault.createAliases([AliasRequest(value: "v\(i)", format: .UUID, storage: .persistent)]) { result in
                    if case .success = result { finished.increment() }
                }
            }
            vault.close()
            #expect(finished.value == 20)
            #expect(try harness.rowCount("records") == 20)
        }
    }
}

extension VaultError {
    func isInvalidInput(at expected: Int) -> Bool {
        if case let .invalidInput(index, _) = self { return index == expected }
        return false
    }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
