import CloakCrypto
import CloakTesting
import Dispatch
import Testing

@testable import CloakService
@testable import CloakVault

/// Review V, item 4: where the node cannot see the store's disk (a PostgreSQL server on another
/// machine), the reserve is kept from the store's own errors: once a store connection says the
/// disk is full, the node is below the reserve for `DiskReserve.reportedFullSeconds`.
struct DiskReserveReportTests {
    @Test func aFullDiskTheStoreReportsCountsAsBelowTheReserve() throws {
        let vault = try Vault(store: SQLiteAliasStore(path: ":memory:"), keys: .generate(), settings: .init())
        defer { vault.close() }
        let reserve = DiskReserve(directory: nil)
        reserve.listen(to: vault)
        reserve.sample()
        #expect(!reserve.isBelow(256))
        #expect(reserve.current == DiskReserve.Reading(freeBytes: nil, storeSaidFull: false))
        // A write the store refuses for its disk (SQLite's SQLITE_FULL, PostgreSQL's 53100).
        let answered = DispatchSemaphore(value: 0)
        vault.withStore(reads: false, { (_: any AliasStore) throws -> Void in throw StoreError.full }) { _ in
            answered.signal()
        }
        #expect(answered.wait(timeout: .now() + 10) == .success)
        #expect(vault.storeReportedFullAt != 0)
        reserve.sample()
        #expect(reserve.isBelow(256))
        #expect(!reserve.isBelow(0), "0 turns the reserve off")
        // Another error is not a full disk.
        let quiet = try Vault(store: SQLiteAliasStore(path: ":memory:"), keys: .generate(), settings: .init())
        defer { quiet.close() }
        let other = DiskReserve(directory: nil)
        other.listen(to: quiet)
        let failed = DispatchSemaphore(value: 0)
        quiet.withStore(reads: false, { (_: any AliasStore) throws -> Void in throw StoreError.unavailable("x") }) {
            _ in failed.signal()
        }
        #expect(failed.wait(timeout: .now() + 10) == .success)
        other.sample()
        #expect(!other.isBelow(256))
    }
}
