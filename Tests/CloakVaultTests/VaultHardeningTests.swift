import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakVault

/// The vault's answers to the security review (issue "A hostile network"): each test reproduces
/// one defect of main before the fix.
@Suite struct VaultHardeningTests {
    // MARK: Defect 1: no existence oracle for callers who may not reveal

    @Test func anAnonymousCallerCannotTellAStoredValueFromANewOne() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            // A token holder stored the card an hour ago, with classifiers and two formats.
            _ = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR, classifiers: ["secret-team"])
            _ = try vault.alias("4111111111111111", .UUID)
            harness.clock.advance(by: 3600)

            let ask = [
                AliasRequest(value: "4111111111111111", format: .UUID, storage: .persistent, classifiers: ["mine"]),
                AliasRequest(value: "5555555555554444", format: .UUID, storage: .persistent, classifiers: ["mine"]),
            ]
            let answers = try vault.createSync(ask, caller: .anonymous).get()
            for answer in answers {
                #expect(answer.aliases.count == 1 && answer.aliases[0].format == .UUID)
                #expect(answer.classifiers == ["mine"])
                #expect(answer.createdAt == harness.clock.now, "created_at must be the request's time")
                #expect(answer.storage == .persistent)
            }
            // Deduplication still works: the stored card keeps its alias.
            let trusted = try vault.createSync([ask[0]]).get()[0]
            #expect(trusted.aliases.map(\.format).contains(.FPE_SIX_T_FOUR))
            #expect(trusted.classifiers == ["secret-team"])
        }
    }

    // MARK: Defect 4: bounded format work

    @Test(arguments: [AliasFormatName.NUM_LENGTH_PRESERVING, .FPE_ACC_NUM_T_FOUR, .ALPHANUMERIC_LENGTH_PRESERVING])
    func formatPreservingValuesOver64CharactersAreRefusedWithTheirIndex(format: AliasFormatName) throws {
        let long = String(repeating: "7", count: 65)
        let requests = [
            AliasRequest(value: "123456789", format: format, storage: .persistent),
            AliasRequest(value: long, format: format, storage: .persistent),
        ]
        let error = try #require(throws: VaultError.self) { try Vault.check(requests) }
        guard case let .invalidInput(index, reason) = error else { return }
        #expect(index == 1 && reason.contains("64"))
        try Vault.check([AliasRequest(value: String(repeating: "7", count: 64), format: format, storage: .persistent)])
    }

    @Test func valuesOverTheLengthCapAreRefusedForEveryFormat() throws {
        for format in AliasFormatName.allCases {
            let huge = String(repeating: "1", count: AliasGenerator.maxValueBytes + 1)
            #expect(throws: VaultError.self) {
                try Vault.check([AliasRequest(value: huge, format: format, storage: .persistent)])
            }
        }
    }

    @Test func sealingAndFF1HappenBeforeTheJobIsQueued() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let prepared = try vault.prepare([
                AliasRequest(value: "4111111111111111", format: .FPE_SIX_T_FOUR, storage: .persistent)
            ])
            #expect(prepared[0].fingerprint?.count == 32)
            #expect(!prepared[0].newRecord.sealed.ciphertext.isEmpty)
            #expect(try prepared[0].firstCandidate.get().count == 16)
        }
    }

    // MARK: Defect 8: the Luhn setting is part of the alias identity

    @Test func luhnValidAndLuhnInvalidAliasesOfOneCardAreDistinct() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let valid = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR, luhnValid: true)
            let invalid = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR, luhnValid: false)
            #expect(passesLuhn(valid))
            #expect(!passesLuhn(invalid))
            #expect(try vault.alias("4111111111111111", .FPE_SIX_T_FOUR, luhnValid: false) == invalid)
            #expect(try vault.revealOne(invalid)?.value == "4111111111111111")
        }
    }

    // MARK: Defect 10: a cycle walk that meets only the value moves to the next attempt

    /// Under this ring, attempt 0's FF1 cycle through 4111116001701111 holds no Luhn-valid card
    /// but the value itself (found by walking every card of the BIN 411111 and last four 1111;
    /// about one card in 100,000 is like this). main answered 1002 for it.
    static let ring = { try! KeyRing.derived(fromMaster: String(repeating: "07", count: 32)) }()
    static let unluckyCard = "4111116001701111"

    @Test func aCardWhoseFirstCycleHoldsOnlyItselfGetsAnAliasFromTheNextAttempt() throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: Self.ring.current.ff1Key)
        let first = #expect(throws: AliasInputError.self) {
            try generator.alias(for: Self.unluckyCard, format: .FPE_SIX_T_FOUR, luhnValid: true, attempt: 0)
        }
        #expect(first?.isRetryable == true)
        try withVaultHarness { harness in
            let vault = try harness.openVault(keys: Self.ring)
            let alias = try vault.alias(Self.unluckyCard, .FPE_SIX_T_FOUR)
            #expect(
                alias != Self.unluckyCard && alias.hasPrefix("411111") && alias.hasSuffix("1111") && passesLuhn(alias))
            #expect(try vault.revealOne(alias)?.value == Self.unluckyCard)
        }
    }

    // MARK: Defect 16: NUL inside an alias

    @Test func anAliasWithANulAndJunkIsNotFound() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let alias = try vault.alias("4111111111111111", .UUID)
            #expect(try vault.revealOne(alias + "\0junk") == nil)
            #expect(try vault.revealOne(alias)?.value == "4111111111111111")
            #expect(try vault.deleteSync(alias + "\0junk").failure == .notFound)
        }
    }

    // MARK: Defect 17: alias rows are bound to their record

    /// The second case is a review finding: signing on every open would sign a row a database
    /// writer repointed and then unsigned. Once the store is marked signed, an unsigned row stays
    /// refused.
    @Test(arguments: [false, true])
    func anAliasRowPointedAtAnotherRecordIsRefused(erasingItsMAC: Bool) throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let victim = try vault.alias("4111111111111111", .UUID)
            let attacker = try vault.alias("5555555555554444", .GENERIC_T_FOUR)
            vault.close()
            // A database writer repoints the attacker's alias at the victim's record.
            try harness.execute(
                """
                UPDATE aliases SET record_id = (SELECT record_id FROM aliases WHERE alias = '\(victim)')
                \(erasingItsMAC ? ", mac = NULL" : "") WHERE alias = '\(attacker)'
                """)
            let reader = try harness.openVault()
            let result = try reader.revealSync([attacker])
            #expect(result.failure?.isUnavailable == true, "the repointed alias must not reveal the victim's card")
            #expect(try reader.revealOne(victim)?.value == "4111111111111111")
        }
    }

    @Test func aliasesWrittenBeforeSigningAreSignedOnOpen() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let alias = try vault.alias("4111111111111111", .UUID)
            vault.close()
            // As a store written before signing: unsigned rows and no "signed" mark.
            try harness.execute("UPDATE aliases SET mac = NULL; DELETE FROM meta WHERE name = 'aliases_signed'")
            let reader = try harness.openVault()
            #expect(try reader.revealOne(alias)?.value == "4111111111111111")
        }
    }

    /// Review finding: a deterministic alias would let whoever holds it test candidate values
    /// through the open endpoint. Anonymous callers get a new record and an alias drawn at random each time.
    @Test func anonymousAliasesAreNeitherDeterministicNorDeduplicated() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let stored = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            let ask = [AliasRequest(value: "4111111111111111", format: .FPE_SIX_T_FOUR, storage: .persistent)]
            let first = try vault.createSync(ask, caller: .anonymous).get()[0].aliases[0].alias
            let second = try vault.createSync(ask, caller: .anonymous).get()[0].aliases[0].alias
            #expect(first != stored && second != stored && first != second)
            #expect(first.hasPrefix("411111") && first.hasSuffix("1111") && passesLuhn(first))
            #expect(try vault.revealOne(first)?.value == "4111111111111111")
            // Token holders keep their deterministic, deduplicated alias.
            #expect(try vault.alias("4111111111111111", .FPE_SIX_T_FOUR) == stored)
        }
    }

    @Test func legacyLuhnInvalidCardAliasesKeepTheirVariant() {
        let legacy = IssuedAlias.fromStore(alias: "4111111111111112", storedFormat: "FPE_SIX_T_FOUR")
        #expect(legacy?.luhnValid == false)
        #expect(IssuedAlias.fromStore(alias: "4111111111111111", storedFormat: "FPE_SIX_T_FOUR")?.luhnValid == true)
        #expect(IssuedAlias.fromStore(alias: "123", storedFormat: "NUM_LENGTH_PRESERVING")?.luhnValid == true)
    }

    // MARK: Defect 7: a ring that does not match the store is refused

    @Test func aStoreRemembersItsRing() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            _ = try vault.alias("4111111111111111", .UUID)
            vault.close()
            #expect(throws: VaultOpenError.self) { try harness.openVault(keys: KeyRing.generate()) }
            // A rotation of the same ring is the same ring.
            let rotated = try harness.openVault(keys: harness.keys.rotated())
            #expect(try rotated.alias("5555555555554444", .UUID).hasPrefix("tok_"))
        }
    }

    // MARK: Defect 18: anonymous callers cannot fill a small alias space

    @Test func anonymousVolatileAliasesInSmallSpacesAreRefused() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            // A 15-digit Amex keeps six + four: five free digits, a space of 100,000 drawn at random.
            let amex = AliasRequest(value: "378282246310005", format: .FPE_SIX_T_FOUR, storage: .volatile)
            let error = try #require(try vault.createSync([amex], caller: .anonymous).failure)
            #expect(error.description.contains("token"))
            #expect(
                try vault.createSync([amex], caller: AliasCaller(mayReveal: false, anonymous: false)).failure == nil)
            // PERSISTENT ones too: anonymous aliases are never deduplicated, and Luhn-invalid
            // values of a bucket outnumber its Luhn-valid aliases.
            var persistent = amex
            persistent.storage = .persistent
            #expect(try vault.createSync([persistent], caller: .anonymous).failure != nil)
        }
    }

    // MARK: Defect 15: values never print

    @Test func requestsAndRecordsPrintRedacted() {
        let request = AliasRequest(value: "4111111111111111", format: .UUID, storage: .persistent)
        let record = RevealedRecord(
            value: "4111111111111111", aliases: [], storage: .persistent, classifiers: [], createdAt: 0)
        var dumped = ""
        dump(request, to: &dumped)
        dump(record, to: &dumped)
        for text in [
            "\(request)", String(reflecting: request), "\(record)", String(reflecting: record), dumped,
            "\(Mirror(reflecting: request).children.map { "\($0.value)" })",
        ] {
            #expect(!text.contains("4111111111111111"), "\(text)")
        }
    }
}
