import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakVault

/// Permission bits of a file, or nil when it does not exist.
func permissions(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
}

@Suite struct SQLiteAliasStoreTests {
    @Test(arguments: AliasStoreCompatSuite.Case.allCases)
    func sqliteStoreMeetsTheContract(_ c: AliasStoreCompatSuite.Case) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/aliases.db"
        try AliasStoreCompatSuite(makeStore: { try SQLiteAliasStore(path: path) }).run(c)
    }

    @Test func theDatabaseAndItsJournalAreCreatedReadableByTheOwnerOnly() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let folder = directory.path + "/nested/data"
        let path = folder + "/aliases.db"
        let store = try SQLiteAliasStore(path: path)
        try store.begin()
        try store.insert(AliasStoreCompatSuite.record("rec_a", aliases: [AliasStoreCompatSuite.alias("tok_a")]))
        try store.commit()
        #expect(permissions(path) == 0o600)
        #expect(permissions(path + "-wal") == 0o600)
        #expect(permissions(path + "-shm") == 0o600)
        #expect(permissions(folder) == 0o700)
    }

    @Test func anExistingDatabaseReadableByOthersIsTightenedTo0600() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/aliases.db"
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
        #expect(permissions(path) == 0o644)
        _ = try SQLiteAliasStore(path: path)
        #expect(permissions(path) == 0o600)
    }

    @Test func aPathThatCannotBeADatabaseIsUnavailable() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // The path is a folder.
        let error = try #require(throws: StoreError.self) { _ = try SQLiteAliasStore(path: directory.path) }
        guard case .unavailable = error else {
            Issue.record("expected unavailable, got \(error)")
            return
        }
    }

    @Test func aFileThatIsNotADatabaseIsUnavailable() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/aliases.db"
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: StoreError.self) { _ = try SQLiteAliasStore(path: path) }
        #expect(error != .aliasTaken)
    }
}
