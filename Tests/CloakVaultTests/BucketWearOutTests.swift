import CloakCore
import Foundation
import Testing

@testable import CloakVault

/// Issue 22: anonymous callers wore out one card's aliases. Each anonymous tokenization of a
/// card takes a new random alias from the bucket its BIN, last four and length allow (10^5
/// Luhn-valid aliases for a 16-digit card under FPE_SIX_T_FOUR). At the vault (no HTTP, no rate
/// limit), one card tokenized again and again:
@Suite(.serialized) struct BucketWearOutTests {
    static let card = "4111111111111111"

    static func anonymousBatch(_ vault: Vault, _ count: Int = 100) throws -> Result<[RevealedRecord], VaultError> {
        try vault.createSync(
            (0..<count).map { _ in AliasRequest(value: card, format: .FPE_SIX_T_FOUR, storage: .persistent) },
            caller: .anonymous)
    }

    /// Anonymous batches of the card until one fails (or `limit` intents are stored): how many
    /// were stored, and the failure.
    static func fill(_ vault: Vault, upTo limit: Int) throws -> (stored: Int, failure: VaultError?) {
        var stored = 0
        while stored < limit {
            switch try anonymousBatch(vault) {
            case .success: stored += 100
            case let .failure(error): return (stored, error)
            }
        }
        return (stored, nil)
    }

    /// Today's behaviour (no share: `max_bucket_share` 1): the bucket fills until the vault has
    /// no free alias for the card's BIN and last four and answers 1500.
    @Test func withoutAShareOneCardWearsTheBucketOut() throws {
        try withVaultHarness { h in
            let vault = try h.openVault(
                settings: Vault.Settings(volatileTTLSeconds: 60, maxBatch: 100, maxBucketShare: 1))
            let (stored, failure) = try Self.fill(vault, upTo: 100_000)
            guard case .unavailable? = failure else {
                Issue.record("no 1500 after \(stored) intents: \(String(describing: failure))")
                return
            }
            #expect(stored > 50_000, "worn out after \(stored)")
        }
    }

    /// With the share (0.25): anonymous callers are refused with bucketFull (429) at a quarter of
    /// the bucket, nothing written; token holders still alias new cards of the bucket; once the
    /// intents expire and are swept, the bucket takes anonymous aliases again.
    @Test func withTheShareAnonymousCallersStopAtAQuarterAndTheRestStaysFree() throws {
        try withVaultHarness { h in
            let vault = try h.openVault(
                settings: Vault.Settings(volatileTTLSeconds: 60, maxBatch: 100, intentTTLSeconds: 600))
            let (stored, refusal) = try Self.fill(vault, upTo: 30_000)
            guard case let .bucketFull(format, retryAfter)? = refusal else {
                Issue.record("no refusal after \(stored) intents: \(String(describing: refusal))")
                return
            }
            #expect(stored == 25_000 && format == .FPE_SIX_T_FOUR && retryAfter >= 5, "\(stored) \(retryAfter)")
            #expect(try h.rowCount("records") == 25_000)  // the refused batch wrote nothing
            // Token holders alias new cards of the same BIN and last four.
            for middle in ["123456", "654321", "111111"] {
                let value = ViaLuhn.complete("411111" + middle + "111")
                let made = try vault.createSync(
                    [AliasRequest(value: value, format: .FPE_SIX_T_FOUR, storage: .persistent)],
                    caller: .trusted)
                guard case .success = made else { Issue.record("a token holder was refused: \(made)"); continue }
            }
            // The intents expire; the sweep (here run from outside, as its next turn would) frees the bucket.
            h.clock.advance(by: 601)
            let store = try h.inspector()
            try store.begin()
            #expect(try store.deleteExpired(now: h.clock.now, limit: 100_000) == 25_000)
            try store.commit()
            guard case .success = try Self.anonymousBatch(vault, 10) else {
                Issue.record("the bucket stayed full after its intents expired")
                return
            }
        }
    }
}

/// Card numbers of a given prefix completed with their Luhn check digit.
enum ViaLuhn {
    static func complete(_ fifteen: String) -> String {
        for d in 0...9 where passesLuhn(fifteen + String(d)) { return fifteen + String(d) }
        return fifteen + "0"
    }
}
