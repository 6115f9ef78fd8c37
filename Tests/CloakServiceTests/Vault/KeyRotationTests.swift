import CloakCore
import CloakCrypto
import CloakService
import CloakTesting
import CloakVault
import Foundation
import Synchronization
import Testing

/// Key custody without a token: the ring kept wrapped in the store, rotation picked up by a
/// running vault, online re-encryption, retirement, status; on SQLite and PostgreSQL.
@Suite struct KeyRotationTests {
    /// Vault settings on `store` with a key file in `directory`.
    static func settings(_ directory: TemporaryDirectory, store: String? = nil) -> ServiceConfiguration.VaultSettings {
        var settings = ServiceConfiguration.VaultSettings()
        settings.store = store ?? "sqlite:\(directory.path)/cloak.db"
        settings.keys = "file:\(directory.path)/keys.json"
        settings.keyRefreshSeconds = 1
        return settings
    }

    static func admin(_ settings: ServiceConfiguration.VaultSettings, environment: [String: String] = [:]) throws
        -> KeyAdministration
    {
        KeyAdministration(
            settings: settings, environment: environment, store: try VaultBootstrap.store(settings), user: "tester")
    }

    /// Stores `count` cards, returns their aliases.
    static func store(_ vault: Vault, count: Int, from first: Int = 0) throws -> [String] {
        let requests = (first..<first + count).map {
            AliasRequest(value: String(format: "4111%012d", $0), format: .UUID, storage: .persistent)
        }
        let result = Mutex<Result<[RevealedRecord], VaultError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        vault.createAliases(requests) { r in
            result.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0 }!.get().map { $0.aliases[0].alias }
    }

    static func reveal(_ vault: Vault, _ aliases: [String]) throws -> [String] {
        let result = Mutex<Result<[String: RevealedRecord], VaultError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        vault.reveal(aliases) { r in
            result.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        let found = try result.withLock { $0 }!.get()
        return aliases.map { found[$0]?.value ?? "missing" }
    }

    /// Retires `version` once two key_refresh_s (1 s here) have passed since the rotation that
    /// made it old: until then the refusal says nodes may still seal with it.
    static func retireWhenAllowed(_ version: String, _ settings: ServiceConfiguration.VaultSettings) throws {
        let deadline = Date().addingTimeInterval(20)
        while true {
            do {
                _ = try admin(settings).retire(version)
                return
            } catch let refusal as KeyAdministration.RetireRefusal {
                guard case .recent = refusal, Date() < deadline else { throw refusal }
                usleep(50_000)
            }
        }
    }

    @Test func aNewVaultKeepsOnlyTheWrappingKeyInItsFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let settings = Self.settings(directory)
        let lines = try Self.admin(settings).initialize()
        #expect(lines.count == 2, "\(lines)")
        let file = try String(contentsOfFile: "\(directory.path)/keys.json", encoding: .utf8)
        #expect(file.contains("\"wrapping_key\"") && !file.contains("fingerprint_key"))
        let status = try Self.admin(settings).status()
        #expect(status.json == #"{"current":"k1","wrapping":"file","versions":[{"id":"k1","records":0}]}"#)
        // The file holds no data key: the ring in the store does, wrapped.
        let stored = try #require(try VaultBootstrap.store(settings).metadata(Vault.keyRingName))
        #expect(try KeyRing.wrapping(of: stored).kind == "file")
        #expect(throws: (any Error).self) { try Self.admin(settings).initialize() }
    }

    @Test func aRunningVaultPicksUpARotationAndOldRecordsStillOpen() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let settings = Self.settings(directory)
        let (vault, refresh) = try VaultBootstrap.openWithKeys(settings, environment: [:], logger: nil)
        defer { vault.close() }
        refresh.start()
        defer { refresh.stop() }
        let old = try Self.store(vault, count: 3)
        let rotation = try Self.admin(settings).rotate()
        #expect(rotation.from == "k1" && rotation.to == "k2")
        #expect(rotation.audit.contains(#""action":"keys.rotate""#) && rotation.audit.contains(#""user":"tester""#))
        // Within key_refresh_s (1 s here), without a restart.
        let deadline = Date().addingTimeInterval(20)
        while vault.keyVersions.current != "k2" && Date() < deadline { usleep(20_000) }
        #expect(vault.keyVersions.current == "k2")
        let new = try Self.store(vault, count: 2, from: 100)
        #expect(try VaultBootstrap.store(settings).recordCounts() == ["k1": 3, "k2": 2])
        #expect(
            try Self.reveal(vault, old + new) == (0..<3).map { String(format: "4111%012d", $0) }
                + (100..<102).map { String(format: "4111%012d", $0) })
    }

    /// Issue 34, defect 1: a node that has not picked up a rotation yet (its refresh never ran)
    /// reads the store's ring the first time a record names the new version, once.
    @Test func aRecordUnderAVersionNotYetPickedUpOpensAtOnce() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = Self.settings(directory)
        settings.keyRefreshSeconds = 3600
        let (vault, refresh) = try VaultBootstrap.openWithKeys(settings, environment: [:], logger: nil)
        defer { vault.close() }
        _ = refresh  // never started: only a missing version makes the vault read the ring
        let aliases = try Self.store(vault, count: 5)
        _ = try Self.admin(settings).rotate()
        _ = try Self.admin(settings).rewrap(batch: 10) { _, _, _ in }
        #expect(vault.keyVersions.current == "k1")
        #expect(try Self.reveal(vault, aliases) == (0..<5).map { String(format: "4111%012d", $0) })
        #expect(vault.keyVersions.current == "k2")
        #expect(vault.missingKeyReads == 1)
        #expect(try Self.reveal(vault, aliases).count == 5 && vault.missingKeyReads == 1)
    }

    @Test(arguments: [false, true])
    func rewrapMovesEveryRecordThenTheOldVersionRetires(postgres: Bool) throws {
        if postgres && !PostgresTestCluster.isAvailable { return }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let settings = Self.settings(directory, store: postgres ? try PostgresTestCluster.freshDatabase() : nil)
        var vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        let aliases = try Self.store(vault, count: 7)
        vault.close()
        _ = try Self.admin(settings).rotate()
        let refusal = #expect(throws: KeyAdministration.RetireRefusal.self) { try Self.admin(settings).retire("k1") }
        #expect(refusal?.description.hasPrefix("7 records, files' keys or jobs' keys are still sealed with k1") == true)
        var batches: [(String, Int, Int)] = []
        let report = try Self.admin(settings).rewrap(batch: 3) { batches.append(($0, $1, $2)) }
        #expect(batches.map(\.1) == [3, 6, 7] && batches.allSatisfy { $0.0 == "k1" && $0.2 == 7 })
        #expect(report.resealed == ["k1": 7] && report.skipped == 0)
        #expect(report.audit.contains(#""resealed":{"k1":7}"#))
        // A second run finds nothing to do.
        #expect(try Self.admin(settings).rewrap(batch: 3) { _, _, _ in }.resealed.isEmpty)
        #expect(throws: KeyAdministration.RetireRefusal.self) { try Self.admin(settings).retire("k2") }
        // Right after the rotation a node may not have picked it up yet: not yet.
        let early = #expect(throws: KeyAdministration.RetireRefusal.self) { try Self.admin(settings).retire("k1") }
        #expect(early?.description.contains("was current until") == true, "\(String(describing: early))")
        try Self.retireWhenAllowed("k1", settings)
        let status = try Self.admin(settings).status()
        #expect(status.json == #"{"current":"k2","wrapping":"file","versions":[{"id":"k2","records":7}]}"#)
        vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        defer { vault.close() }
        #expect(try Self.reveal(vault, aliases) == (0..<7).map { String(format: "4111%012d", $0) })
        let audit = try VaultBootstrap.store(settings).keyAudit(limit: 10)
        #expect(
            audit.map { $0.contains("keys.rotate") || $0.contains("keys.rewrap") || $0.contains("keys.retire") }
                == [true, true, true, true])
    }

    /// Review V, item 10: a finished job's key sealed with an old version kept `retire` from
    /// retiring it, and `rewrap` did not reseal it. Now rewrap reseals jobs' keys too (the job
    /// still opens under the new version), `status` names jobs as jobs, and retire goes through.
    @Test(arguments: [false, true])
    func rewrapResealsJobsKeysAndStatusNamesThem(postgres: Bool) throws {
        if postgres && !PostgresTestCluster.isAvailable { return }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let settings = Self.settings(directory, store: postgres ? try PostgresTestCluster.freshDatabase() : nil)
        let vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        _ = try Self.store(vault, count: 2)
        // A done job, its key sealed with k1 (as the runner leaves one until it expires).
        let spec = Array(#"{"format":"UUID","layout":"csv"}"#.utf8)
        let id = JobID.make(now: 1_800_000_000)
        let binding = StoredJob.sealBinding(kind: .import, owner: "nodes", spec: spec)
        let seal = try vault.newJobSeal(id, binding: binding)
        let store = try VaultBootstrap.store(settings)
        try store.begin()
        try store.createJob(
            StoredJob(
                id: id, kind: .import, state: .done, spec: spec, owner: "nodes", keyID: seal.wrappedKey.keyID,
                wrappedKey: seal.wrappedKey.sealed, createdAt: 1_800_000_000))
        try store.commit()
        vault.close()
        _ = try Self.admin(settings).rotate()
        let before = try Self.admin(settings).status()
        #expect(before.described("k1") == "2 records, 1 job", "\(before.described("k1"))")
        #expect(before.json.contains(#"{"id":"k1","records":3,"jobs":1}"#), "\(before.json)")
        let report = try Self.admin(settings).rewrap(batch: 10) { _, _, _ in }
        #expect(report.resealed == ["k1": 3] && report.skipped == 0)
        try Self.retireWhenAllowed("k1", settings)
        let after = try Self.admin(settings).status()
        #expect(after.described("k2") == "2 records, 1 job", "\(after.described("k2"))")
        // The job's key opens under k2 with the ring that holds k2 only.
        let job = try #require(try VaultBootstrap.store(settings).job(id))
        #expect(job.keyID == "k2")
        let reopened = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        defer { reopened.close() }
        _ = try reopened.jobSeal(job)
    }

    @Test func aRecordUnderARetiredVersionIsUnavailableNotGarbage() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let settings = Self.settings(directory)
        var vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        let aliases = try Self.store(vault, count: 1)
        vault.close()
        // A backup of the database from before the rewrap comes back after k1 was retired.
        for suffix in ["", "-wal", "-shm"]
        where FileManager.default.fileExists(atPath: "\(directory.path)/cloak.db\(suffix)") {
            try FileManager.default.copyItem(
                atPath: "\(directory.path)/cloak.db\(suffix)", toPath: "\(directory.path)/backup.db\(suffix)")
        }
        _ = try Self.admin(settings).rotate()
        _ = try Self.admin(settings).rewrap(batch: 10) { _, _, _ in }
        try Self.retireWhenAllowed("k1", settings)
        let ring = try #require(try VaultBootstrap.store(settings).metadata(Vault.keyRingName))
        var restored = settings
        restored.store = "sqlite:\(directory.path)/backup.db"
        #expect(
            try VaultBootstrap.store(restored).replaceMetadata(Vault.keyRingName, expected: nil, with: ring) == false)
        try VaultBootstrap.store(restored).setMetadata(Vault.keyRingName, ring)
        vault = try VaultBootstrap.open(restored, environment: [:], logger: nil)
        defer { vault.close() }
        #expect(throws: VaultError.self) { _ = try Self.reveal(vault, aliases) }
        let status = try Self.admin(restored).status()
        #expect(status.orphans.map(\.id) == ["k1"])
    }

    /// A database writer putting an older ring back (to bring a retired, perhaps leaked, version
    /// back into use) is refused by running nodes.
    @Test func aRunningVaultRefusesARingRolledBack() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let settings = Self.settings(directory)
        let (vault, _) = try VaultBootstrap.openWithKeys(settings, environment: [:], logger: nil)
        defer { vault.close() }
        let store = try VaultBootstrap.store(settings)
        let old = try #require(try store.metadata(Vault.keyRingName))
        _ = try Self.admin(settings).rotate()
        let opened = try KeyCustody.open(
            try KeySource(settings.keys), environment: [:], store: store, firstRun: false, logger: nil)
        #expect(try vault.adoptKeys(opened.ring))
        #expect(vault.keyVersions.current == "k2")
        let rolledBack = try KeyCustody.unwrap(old, opened.wrapping)
        let error = #expect(throws: VaultError.self) { try vault.adoptKeys(rolledBack) }
        #expect("\(error!)".contains("older than k2"))
        #expect(vault.keyVersions.current == "k2")
    }

    @Test func aVersion1KeyFileKeepsOpeningAndMovesItsRingIntoTheStoreOnRotate() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let settings = Self.settings(directory)
        let legacy = KeyRing.generate()
        try legacy.write(path: "\(directory.path)/keys.json", replace: false)
        var vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        let aliases = try Self.store(vault, count: 2)
        vault.close()
        #expect(try VaultBootstrap.store(settings).metadata(Vault.keyRingName) == nil)
        #expect(try Self.admin(settings).rotate().to == "k2")
        vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        defer { vault.close() }
        #expect(vault.keyVersions.ids == ["k1", "k2"])
        #expect(try Self.reveal(vault, aliases).allSatisfy { $0.hasPrefix("4111") })
    }

    @Test func aMasterKeyVaultRotatesAndAnotherMasterKeyIsRefused() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = Self.settings(directory)
        settings.keys = "env:TEST_MASTER"
        let master = ["TEST_MASTER": String(repeating: "ab", count: 32)]
        var vault = try VaultBootstrap.open(settings, environment: master, logger: nil)
        let aliases = try Self.store(vault, count: 1)
        vault.close()
        _ = try Self.admin(settings, environment: master).rotate()
        vault = try VaultBootstrap.open(settings, environment: master, logger: nil)
        #expect(try Self.reveal(vault, aliases) == ["4111000000000000"])
        vault.close()
        let other = ["TEST_MASTER": String(repeating: "cd", count: 32)]
        let error = #expect(throws: (any Error).self) {
            _ = try VaultBootstrap.open(settings, environment: other, logger: nil)
        }
        #expect("\(error!)".contains("wrapped by another key"))
        #expect(!"\(error!)".contains("cdcd"))
    }
}
