import CloakCore
import CloakCrypto
import CloakTesting
import CloakVault
import Foundation
import Testing

/// Defect 7: `serve` never makes a new key ring for a store that holds records, and refuses a
/// ring that does not match the store (exit 2, a clear message), instead of sealing new records
/// that would be lost when the right key file returns.
@Suite struct KeyCustodyTests {
    /// A store with one record sealed by a ring written to `keys.json`, and a config naming both.
    static func seededStore(in directory: TemporaryDirectory) throws -> String {
        let ring = KeyRing.generate()
        try ring.write(path: "\(directory.path)/keys.json", replace: false)
        let vault = try Vault(
            store: try SQLiteAliasStore(path: "\(directory.path)/cloak.db"), keys: ring, settings: .init())
        let done = DispatchSemaphore(value: 0)
        vault.createAliases([AliasRequest(value: "4111111111111111", format: .UUID, storage: .persistent)]) { _ in
            done.signal()
        }
        done.wait()
        vault.close()
        let config = "\(directory.path)/cloak.yaml"
        try """
        server: {listen: "127.0.0.1:\(freeLoopbackPort())"}
        vault: {store: "sqlite:\(directory.path)/cloak.db", keys: "file:\(directory.path)/keys.json"}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        return config
    }

    @Test func aMissingKeyFileIsNotReplacedWhenTheStoreHoldsRecords() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let config = try Self.seededStore(in: directory)
        try FileManager.default.removeItem(atPath: "\(directory.path)/keys.json")
        let (status, output) = try ProcessTests.run(["serve", "--config", config])
        #expect(status == 2, "\(output)")
        #expect(output.contains("missing"))
        #expect(!FileManager.default.fileExists(atPath: "\(directory.path)/keys.json"), "no new ring may be written")
    }

    @Test func anotherKeyFileIsRefused() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let config = try Self.seededStore(in: directory)
        try FileManager.default.removeItem(atPath: "\(directory.path)/keys.json")
        try KeyRing.generate().write(path: "\(directory.path)/keys.json", replace: false)
        let (status, output) = try ProcessTests.run(["serve", "--config", config])
        #expect(status == 2, "\(output)")
        #expect(output.contains("does not match"))
    }
}
