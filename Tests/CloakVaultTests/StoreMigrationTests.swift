import CloakCore
import CloakCrypto
import CloakTesting
import CloakVault
import Foundation
import Testing

/// Issue 57 item 4: `cloak store migrate` carries everything a store holds, says what by kind,
/// resumes after an interruption without a record that lacks its content, and verifies.
@Suite(.tags(.racy)) struct StoreMigrationTests {
    /// The service's names, as `cloak store migrate` classifies them.
    static let kinds = [
        StoreMigration.MetadataKind(prefix: "api_credentials", kind: .credentials),
        StoreMigration.MetadataKind(prefix: "api_credentials_used", kind: .credentials, difference: .keepDestination),
        StoreMigration.MetadataKind(prefix: "bins.table.", kind: .bins),
        StoreMigration.MetadataKind(prefix: "bins.current", kind: .bins, last: true),
        StoreMigration.MetadataKind(prefix: "nodes.", kind: .other, difference: .skip),
    ]

    @Test func everythingIsCopiedAnInterruptedRunResumesAndVerifyCompares() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        var aliases: [String] = []
        for i in 0..<6 { aliases.append(try vault.alias("value \(i)", .UUID)) }
        let files = try (1...3).map { seed in
            try VaultFilesTests.upload(VaultFilesTests.content(UInt8(seed), 40_000), to: vault)
        }
        vault.close()
        let source = try harness.inspector()
        try source.begin()
        try source.setMetadata("api_credentials", Array("signed credentials".utf8))
        try source.setMetadata("api_credentials_used", [1])
        try source.setMetadata("bins.table.1.abcd", Array(repeating: 7, count: 100_000))
        try source.setMetadata("bins.current", Array("header".utf8))
        try source.setMetadata("durable_commit", [9, 9, 9])
        try source.appendKeyAudit(#"{"msg":"audit","n":1}"#, at: 100)
        try source.appendKeyAudit(#"{"msg":"audit","n":2}"#, at: 101)
        var chain = AuditChain(id: "node/1/0", key: harness.keys.derivedMAC(purpose: AuditChain.keyPurpose))
        // Two commits: a block of two events, then one of one.
        try source.appendAuditBlocks(
            chain.seal(
                (1...2).map {
                    AuditEvent.Draft(at: Int64($0), action: .create, tokenID: "t", client: "-", result: .ok)
                }))
        try source.appendAuditBlocks(
            chain.seal([AuditEvent.Draft(at: 3, action: .create, tokenID: "t", client: "-", result: .ok)]))
        try source.commit()

        let destinationPath = harness.directory.path + "/copy.db"
        let destination = try SQLiteAliasStore(path: destinationPath)
        var migration = StoreMigration(from: source, to: destination)
        migration.metadataKinds = Self.kinds
        migration.batch = 2
        migration.interruptAfterTransactions = 2
        #expect(throws: StoreMigration.Error.self) { try migration.run() }
        // Interrupted: whatever record arrived has its file.
        var copiedFiles = 0
        for (record, _) in files {
            guard let alias = record.aliases.first?.alias, let copy = try destination.record(alias: alias) else {
                continue
            }
            #expect(try destination.file(recordID: copy.id) != nil, "a record arrived without its content")
            copiedFiles += 1
        }
        #expect(try destination.recordCount() == 4)

        migration.interruptAfterTransactions = nil
        let report = try migration.run()
        #expect(report.tallies[.records] == StoreMigration.Tally(copied: 5, already: 4), "\(report.lines)")
        #expect(report.files + (report.tallies[.files]?.already ?? 0) == 3 && report.files == 3 - copiedFiles)
        #expect(report.tallies[.credentials]?.already == 2 && report.tallies[.bins]?.already == 2, "\(report.lines)")
        #expect(report.tallies[.audit] == StoreMigration.Tally(copied: 2, already: 0))
        #expect(
            report.lines.contains { $0.hasPrefix("records: ") }
                && report.lines.contains { $0.hasPrefix("BIN tables: ") })
        #expect(try destination.metadata("durable_commit") != [9, 9, 9], "a store's own counter stays its own")
        #expect(try destination.metadata("api_credentials") == Array("signed credentials".utf8))
        #expect(try destination.keyAuditEntries(offset: 0, limit: 10).map(\.at) == [100, 101])
        // The audit events as they were: they verify on the new store with the same ring.
        #expect(report.tallies[.auditEvents]?.copied == 3)
        #expect(try Vault.verifyAudit(destination, keys: harness.keys).events == 3)
        #expect(try migration.verify() == [])
        // A node's heartbeat is its own store's: never copied, never a difference.
        try source.begin()
        try source.setMetadata("nodes.a:8080", Array("source".utf8))
        try source.commit()
        try destination.begin()
        try destination.setMetadata("nodes.b:8080", Array("destination".utf8))
        try destination.commit()
        #expect(try migration.verify() == [])
        #expect(try migration.run().tallies[.records] == StoreMigration.Tally(copied: 0, already: 9))
        #expect(try destination.metadata("nodes.a:8080") == nil)
        // A record deleted from the source since the copy is a difference: it must not live on.
        try source.begin()
        #expect(try source.deleteAlias(aliases[0]))
        try source.commit()
        #expect(try migration.verify().first?.hasPrefix("records: 1 missing or different") == true)
        try source.begin()
        try source.insert(try #require(try destination.record(alias: aliases[0])))
        try source.commit()

        // A copy that differs is named by kind and name, never by value; a migration into a
        // store whose credentials are its own is refused before anything is copied.
        try destination.begin()
        try destination.setMetadata("api_credentials", Array("other".utf8))
        try destination.commit()
        let differences = try migration.verify()
        #expect(
            differences.count == 1 && differences[0].contains("credentials")
                && differences[0].contains("api_credentials"))
        #expect(!differences[0].contains("other"))
        #expect(throws: StoreMigration.Error.self) { try migration.run() }

        // The copy opens with the same keys: every alias and file reads back.
        let copy = try Vault(
            store: SQLiteAliasStore(path: destinationPath), keys: harness.keys,
            settings: Vault.Settings(volatileTTLSeconds: 60), clock: harness.clock.function)
        defer { copy.close() }
        #expect(try copy.revealSync(aliases).get().count == aliases.count)
        for (seed, (record, _)) in files.enumerated() {
            let alias = try #require(record.aliases.first?.alias)
            let file = try #require(try VaultFilesTests.await { copy.file(alias: alias, completion: $0) })
            #expect(try VaultFilesTests.read(file, from: copy) == VaultFilesTests.content(UInt8(seed + 1), 40_000))
        }
    }

    /// A job that has not ended would be lost with its cursor: the migration is refused before
    /// anything is copied, naming it, wherever it is in the source's list; `--verify` names it
    /// too. Ended jobs are counted, cancelled ones by id (they cannot resume on the destination).
    @Test func aJobNotEndedRefusesTheMigrationBeforeAnythingIsCopied() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        _ = try vault.alias("value", .UUID)
        vault.close()
        let source = try harness.inspector()
        func job(_ tag: String, _ state: JobState = .queued) -> StoredJob {
            StoredJob(
                id: JobID("job_\(tag)")!, kind: .export, state: state, spec: Array(#"{"form":"card"}"#.utf8),
                owner: "exporter", keyID: "k1", wrappedKey: SecureRandom.bytes(60), createdAt: 1_000)
        }
        /// Creates a queued job, has a node take it, and moves it to `state`.
        func run(_ tag: String, to state: JobState) throws {
            try source.begin()
            try source.createJob(job(tag))
            let taken = try #require(try source.claimJob(holder: "node-a", now: 1_000, until: 2_000))
            #expect(taken.id.text == "job_\(tag)")
            #expect(
                try source.setJobState(
                    taken.id, from: [.running], to: state, holder: "node-a", now: 1_000, expiresAt: 9_000,
                    failure: nil))
            try source.commit()
        }
        // Newest first, a page a job: open, ended, then open again on the last page.
        try run("a1", to: .awaitingApproval)
        try run("b2", to: .done)
        try source.begin()
        try source.createJob(job("c3", .receiving))
        try source.commit()

        let destination = try SQLiteAliasStore(path: harness.directory.path + "/copy.db")
        var migration = StoreMigration(from: source, to: destination)
        migration.jobPage = 1
        do {
            _ = try migration.run()
            Issue.record("a migration with jobs under way ran")
        } catch let error {
            guard case let .unfinishedJobs(count, first, copied) = error else { throw error }
            #expect(count == 2)
            #expect(Set(first.map(\.text)) == ["job_a1", "job_c3"])
            #expect(!copied)
            #expect(error.description.contains("cloak jobs cancel"))
            #expect(error.description.contains("nothing was copied"))
        }
        #expect(try destination.recordCount() == 0)
        let names = Set(try source.metadataNames(prefix: "")).subtracting(["durable_commit"])
        #expect(names.intersection(try destination.metadataNames(prefix: "")).isEmpty, "a named value was copied")
        #expect(try migration.verify().contains { $0.hasPrefix("jobs not ended: 2 ") })

        // Once both have ended (one cancelled, one failed), the records move and the jobs are counted.
        try source.begin()
        #expect(try source.cancelJob(JobID("job_a1")!, now: 1_500, expiresAt: 9_000) == .cancelled)
        #expect(try source.cancelJob(JobID("job_c3")!, now: 1_500, expiresAt: 9_000) == .failed)
        try source.commit()
        let report = try migration.run()
        #expect(report.copied == 1)
        #expect(report.jobsEnded == 2)
        #expect(report.jobsCancelled.map(\.text) == ["job_a1"])
        #expect(!(try migration.verify().contains { $0.hasPrefix("jobs") }))
    }

    /// A node that takes a job on the source while it is copied fails the run, after the copy:
    /// the job is named, and a later run resumes.
    @Test func aJobTakenDuringTheCopyFailsTheRunAfterIt() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        for i in 0..<3 { _ = try vault.alias("value \(i)", .UUID) }
        vault.close()
        let source = try harness.inspector()
        let destination = try SQLiteAliasStore(path: harness.directory.path + "/copy.db")
        var migration = StoreMigration(from: source, to: destination)
        migration.batch = 1
        var created = false
        do {
            _ = try migration.run { _ in
                guard !created else { return }
                created = true
                try? source.createJob(
                    StoredJob(
                        id: JobID("job_late")!, kind: .import, state: .queued, spec: Array("{}".utf8),
                        owner: "importer", keyID: "k1", wrappedKey: SecureRandom.bytes(60), createdAt: 1_000))
            }
            Issue.record("a migration the source took a job during ran to its end")
        } catch let error {
            guard case let .unfinishedJobs(count, first, copied) = error else { throw error }
            #expect(count == 1 && first.map(\.text) == ["job_late"] && copied)
            #expect(error.description.contains("run the migration again"))
        }
        #expect(try destination.recordCount() == 3, "what was copied stays")
    }
}
