import CloakCore
import CloakCrypto
import Foundation
import Testing

@testable import CloakVault

/// A batch is all or nothing; a full alias space fails cleanly.
@Suite struct VaultAtomicityTests {
    @Test func aBatchWithOneInvalidItemWritesNothing() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let result = try vault.createSync([
                AliasRequest(value: "4111111111111111", format: .FPE_SIX_T_FOUR, storage: .persistent),
                AliasRequest(value: "alice", format: .UUID, storage: .persistent),
                AliasRequest(value: "737", format: .NUM_LENGTH_PRESERVING, storage: .volatile),
                AliasRequest(value: "12345", format: .FPE_SSN_T_FOUR, storage: .persistent),
            ])
            #expect(result.failure?.isInvalidInput(at: 3) == true, "\(result)")
            vault.close()
            #expect(try harness.rowCount("records") == 0)
            #expect(try harness.rowCount("aliases") == 0)
        }
    }

    /// What filling the one-digit NUM_LENGTH_PRESERVING space left behind.
    struct Exhaustion {
        var issued: [(value: String, alias: String)] = []
        /// Requests that found no free alias.
        var refused: [AliasRequest] = []
        var otherErrors: [String] = []
    }

    /// NUM_LENGTH_PRESERVING on one digit has ten aliases, "0" to "9". Twenty records compete for
    /// them: each digit once PERSISTENT and once VOLATILE (separate records however VOLATILE
    /// values are deduplicated).
    static func exhaustOneDigitSpace(_ vault: Vault) throws -> Exhaustion {
        var outcome = Exhaustion()
        for storage in [StorageKind.persistent, .volatile] {
            for digit in 0..<10 {
                let request = AliasRequest(value: "\(digit)", format: .NUM_LENGTH_PRESERVING, storage: storage)
                switch try vault.createSync([request]) {
                case let .success(records):
                    outcome.issued.append((request.value, records.first?.aliases.first?.alias ?? "<none>"))
                case .failure(.unavailable):
                    outcome.refused.append(request)
                case let .failure(error):
                    outcome.otherErrors.append("\(error)")
                }
            }
        }
        return outcome
    }

    @Test func aTinyAliasSpaceIsExhaustedIntoUnavailable() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let started = Date()
            let outcome = try Self.exhaustOneDigitSpace(vault)
            #expect(Date().timeIntervalSince(started) < 10, "retrying took too long")
            #expect(outcome.otherErrors == [])
            let aliases = outcome.issued.map(\.alias)
            #expect(Set(aliases).count == aliases.count, "an alias was issued twice: \(aliases.sorted())")
            #expect(Set(aliases).isSubset(of: (0..<10).map { "\($0)" }))
            #expect(outcome.issued.allSatisfy { $0.value != $0.alias }, "an alias equal to its value")
            #expect(aliases.count >= 5 && aliases.count <= 10, "\(aliases.count) aliases issued")
            #expect(outcome.refused.count == 20 - aliases.count)

            // Once refused, refused again, with a reason naming the format.
            let refused = try #require(outcome.refused.last)
            let error = try #require(try vault.createSync([refused]).failure)
            #expect(error.isUnavailable, "\(error)")
            #expect(error.description.contains("NUM_LENGTH_PRESERVING"))
            vault.close()
            #expect(try harness.rowCount("aliases") == aliases.count)
            #expect(try harness.rowCount("records") == aliases.count, "a refused request left a record behind")
        }
    }

    @Test func aBatchWhoseLastItemFindsNoAliasWritesNothing() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let outcome = try Self.exhaustOneDigitSpace(vault)
            let refused = try #require(outcome.refused.first)
            let records = try harness.rowCount("records")
            let batch = try vault.createSync([
                AliasRequest(value: "kept out", format: .UUID, storage: .persistent),
                AliasRequest(value: "4111111111111111", format: .FPE_SIX_T_FOUR, storage: .persistent),
                refused,
            ])
            #expect(batch.failure?.isUnavailable == true, "\(batch)")
            vault.close()
            #expect(try harness.rowCount("records") == records)
            #expect(try harness.rowCount("aliases") == outcome.issued.count)
        }
    }

    /// Failed requests in a group commit do not take the others down.
    @Test func aFailingRequestLeavesConcurrentRequestsIntact() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let outcome = try Self.exhaustOneDigitSpace(vault)
            let refused = try #require(outcome.refused.first)
            let before = try harness.rowCount("records")
            // Queue failing and succeeding requests together so they share executor batches.
            let successes = Counter()
            let unavailable = Counter()
            let group = DispatchGroup()
            for i in 0..<40 {
                group.enter()
                let request = i % 2 == 0 ? refused : AliasRequest(value: "ok-\(i)", format: .UUID, storage: .persistent)
                vault.createAliases([request]) { result in
                    switch result {
                    case .success: successes.increment()
                    case .failure(.unavailable): unavailable.increment()
                    case .failure: break
                    }
                    group.leave()
                }
            }
            #expect(group.wait(timeout: .now() + 20) == .success)
            #expect(successes.value == 20)
            #expect(unavailable.value == 20)
            vault.close()
            #expect(try harness.rowCount("records") == before + 20)
        }
    }
}
