import CloakCore
import CloakCrypto
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// Many writers at once: the executor serialises them, deduplication still holds.
@Suite struct VaultConcurrencyTests {
    static let threads = 8
    static let callsPerThread = 50

    /// Even calls alias a value every thread asks for (a card and a UUID value in turn); odd
    /// calls a value of this thread alone.
    static func request(thread: Int, call: Int) -> AliasRequest {
        if call % 2 == 0 {
            if call % 4 == 0 {
                let card = "4111 1111 \(String(format: "%04d", 1000 + call)) 1111"
                return AliasRequest(value: card, format: .FPE_SIX_T_FOUR, storage: .persistent)
            }
            return AliasRequest(value: "shared-\(call)", format: .UUID, storage: .persistent)
        }
        return AliasRequest(value: "thread-\(thread)-call-\(call)", format: .UUID, storage: .persistent)
    }

    @Test func concurrentWritersAllSucceedWithConsistentAliases() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let issued = Mutex<[String: Set<String>]>([:])  // value → aliases returned for it
            let failures = Mutex<[String]>([])
            let group = DispatchGroup()
            for t in 0..<Self.threads {
                group.enter()
                let thread = Thread {
                    defer { group.leave() }
                    for call in 0..<Self.callsPerThread {
                        let request = Self.request(thread: t, call: call)
                        do {
                            let records = try vault.createSync([request]).get()
                            let alias = records.first?.aliases.first { $0.format == request.format }?.alias ?? "<none>"
                            issued.withLock { _ = $0[request.value, default: []].insert(alias) }
                        } catch {
                            failures.withLock { $0.append("thread \(t) call \(call): \(error)") }
                        }
                    }
                }
                thread.start()
            }
            #expect(group.wait(timeout: .now() + 60) == .success, "writers did not finish")
            #expect(failures.withLock { $0 } == [])

            let byValue = issued.withLock { $0 }
            let sharedValues = Self.callsPerThread / 2
            let ownValues = Self.threads * (Self.callsPerThread / 2)
            #expect(byValue.count == sharedValues + ownValues)
            let inconsistent = byValue.filter { $0.value.count != 1 }.map(\.key)
            #expect(inconsistent.isEmpty, "identical values got different aliases: \(inconsistent.sorted())")
            let aliases = byValue.values.flatMap { $0 }
            #expect(Set(aliases).count == aliases.count, "distinct values share an alias")
            #expect(!aliases.contains("<none>"))

            // Every alias reveals its own value.
            let revealed = try vault.revealSync(Array(Set(aliases))).get()
            for (value, set) in byValue {
                for alias in set { #expect(revealed[alias]?.value == value) }
            }
            vault.close()
            #expect(try harness.rowCount("records") == sharedValues + ownValues)
        }
    }
}
