import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// A subject that audits every operation, and hears what was kept.
private final class Reader: VaultAuditSubject {
    let kept = Mutex<Int>(0)

    func draft(aliasReference: String?, result: AuditResult, at: Int64, operation: VaultOperation) -> AuditEvent.Draft?
    {
        AuditEvent.Draft(
            at: at, action: .reveal, tokenID: "tok-1", client: "198.51.100.7", aliasReference: aliasReference,
            result: result)
    }

    func noted(_ drafts: [AuditEvent.Draft], stored: Bool) { kept.withLock { $0 += stored ? drafts.count : 0 } }
}

/// What the segment's system calls did, in order, and which to fail.
private final class CallLog: Sendable {
    let entries = Mutex<[String]>([])
    /// Flushes after this many succeed fail (nil: none fails).
    let failFlushAfter: Int?
    private let flushes = Mutex(0)

    init(failFlushAfter: Int? = nil) { self.failFlushAfter = failFlushAfter }

    func add(_ entry: String) { entries.withLock { $0.append(entry) } }

    var calls: AuditSegment.FileCalls {
        var calls = AuditSegment.FileCalls()
        let plain = calls
        calls.write = { [self] fd, bytes, offset in
            add("write")
            return plain.write(fd, bytes, offset)
        }
        calls.flush = { [self] fd in
            let count = flushes.withLock { n -> Int in
                n += 1
                return n
            }
            if let failFlushAfter, count > failFlushAfter {
                add("flush failed")
                errno = EIO
                return -1
            }
            add("flush")
            return plain.flush(fd)
        }
        return calls
    }
}

/// Reads' audit events in a segment beside an embedded store (issue 74): appended and flushed
/// before the answer, copied into the store within a second, before a search and at start;
/// a torn tail cut, a damaged file kept aside, a failed flush stopping audited answers.
@Suite struct AuditSegmentTests {
    private static func settings(_ calls: AuditSegment.FileCalls = .init(), log: (@Sendable (String) -> Void)? = nil)
        -> Vault.Settings
    {
        var settings = Vault.Settings(volatileTTLSeconds: 60)
        var audit = AuditSettings(node: "node-1:8080", retentionDays: 400) { _ in }
        audit.segmentCalls = calls
        if let log { audit.log = log }
        settings.audit = audit
        return settings
    }

    private static func blocks(_ keys: KeyRing, chain: String = "old-node:1/boot/0", count: Int) -> [AuditBlock] {
        var chain = AuditChain(id: chain, key: keys.derivedMAC(purpose: AuditChain.keyPurpose))
        return (0..<count).flatMap { index in
            chain.seal([
                AuditEvent.Draft(
                    at: 1_800_000_000_000 + Int64(index), action: .reveal, tokenID: "tok", client: "-",
                    aliasReference: "ar_\(index)", result: .ok)
            ])
        }
    }

    private static func record(_ blocks: [AuditBlock]) -> [UInt8] {
        var bytes: [UInt8] = []
        for block in blocks { AuditSegment.encode(block, into: &bytes) }
        return bytes
    }

    // MARK: Records

    @Test func recordsReadBackAsTheyWereWritten() {
        let blocks = Self.blocks(KeyRing.generate(), count: 3)
        let contents = AuditSegment.decode(Self.record(blocks))
        #expect(contents.blocks == blocks)
        #expect(contents.validLength == Self.record(blocks).count)
        #expect(!contents.damaged)
    }

    /// A crash mid-write leaves any prefix of the last record: every cut keeps the whole
    /// records before it and calls the rest torn, never damage.
    @Test func aTornLastRecordIsCutAtEveryLength() {
        let blocks = Self.blocks(KeyRing.generate(), count: 2)
        let whole = Self.record(Array(blocks.prefix(1)))
        let all = Self.record(blocks)
        for cut in whole.count..<all.count {
            let contents = AuditSegment.decode(Array(all[0..<cut]))
            #expect(contents.blocks == Array(blocks.prefix(1)), "cut at \(cut)")
            #expect(contents.validLength == whole.count)
            #expect(!contents.damaged)
        }
    }

    @Test func aDamagedRecordWithRecordsAfterItIsDamageNotATear() {
        let blocks = Self.blocks(KeyRing.generate(), count: 3)
        var bytes = Self.record(blocks)
        bytes[12] ^= 0x01
        let contents = AuditSegment.decode(bytes)
        #expect(contents.blocks.isEmpty)
        #expect(contents.validLength == 0)
        #expect(contents.damaged)
    }

    @Test(arguments: [[UInt8](), [0, 0, 0], [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0], [0, 0, 0, 4, 0, 0, 0, 0, 1, 2]])
    func hostileBytesReadAsNothing(bytes: [UInt8]) {
        let contents = AuditSegment.decode(bytes)
        #expect(contents.blocks.isEmpty)
        #expect(contents.validLength == 0)
    }

    @Test func crcIsCastagnolis() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
    }

    // MARK: A serving vault

    /// The answer leaves after the flush that made its event durable, the event is in the
    /// segment when it does, and a search finds it at once (copied into the store first).
    @Test func aReadsEventIsFlushedBeforeItsAnswerAndSearchedAtOnce() throws {
        try withVaultHarness { h in
            let log = CallLog()
            let vault = try h.openVault(settings: Self.settings(log.calls))
            let alias = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            let segment = AuditSegment.path(beside: h.storePath, chain: Self.settings().audit!.chainID(0))
            let reader = Reader()
            let inSegment = Mutex(0)
            let revealed: Result<[String: RevealedRecord], VaultError> = try waitForCompletion("reveal") { done in
                VaultAuditing.current.withValue(reader) {
                    vault.reveal([alias]) { result in
                        log.add("answer")
                        inSegment.withLock { $0 = (try? AuditSegment.read(path: segment).blocks.count) ?? -1 }
                        done(result)
                    }
                }
            }
            #expect(try revealed.get()[alias]?.value == "4111111111111111")
            let order = log.entries.withLock { $0 }
            let answer = try #require(order.firstIndex(of: "answer"))
            #expect(order[..<answer].suffix(2) == ["write", "flush"], "\(order)")
            #expect(inSegment.withLock { $0 } == 1)
            #expect(reader.kept.withLock { $0 } == 1)
            // The search copies it into the store first.
            let page: Result<AuditPage, VaultError> = try waitForCompletion("search") { done in
                vault.auditEvents(AuditQuery(), completion: done)
            }
            let events = try page.get().events
            #expect(events.map(\.draft.aliasReference) == [vault.auditReference(alias)])
            #expect(try AuditSegment.read(path: segment).blocks.isEmpty)
            #expect(try Vault.verifyAudit(h.inspector(), keys: h.keys).events == 1)
        }
    }

    /// A failed flush fails the answers waiting on it, and every audited answer after it; an
    /// unaudited read still answers; the vault says it is not ready. No flush is tried again.
    @Test func aFailedFlushStopsAuditedAnswers() throws {
        try withVaultHarness { h in
            let log = CallLog(failFlushAfter: 0)
            let vault = try h.openVault(settings: Self.settings(log.calls))
            let alias = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            let reader = Reader()
            for _ in 0..<2 {
                let revealed = try VaultAuditing.current.withValue(reader) { try vault.revealSync([alias]) }
                #expect(revealed.isUnavailable)
            }
            // One flush was tried: after it failed, none is tried again.
            #expect(log.entries.withLock { $0.filter { $0.hasPrefix("flush") } } == ["flush failed"])
            #expect(reader.kept.withLock { $0 } == 0)
            #expect(try vault.revealOne(alias)?.value == "4111111111111111")
            // The flag is set as the vault thread finishes the batch: polled, not waited for.
            var ready = true
            for _ in 0..<2_000 where ready {
                let pinged: Result<Void, VaultError> = try waitForCompletion("ping") { vault.ping(completion: $0) }
                ready = !pinged.isUnavailable
                if ready { usleep(5_000) }
            }
            #expect(!ready)
        }
    }

    /// After a failed flush the file is left as it is (the next start copies it), and blocks
    /// already copied into the store are no longer pending: the drain does not copy them twice.
    @Test func aFailedSegmentIsLeftAsItIsOnceDrained() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/segment"
        let segment = try AuditSegment(path: path, calls: CallLog(failFlushAfter: 1).calls)
        let blocks = Self.blocks(KeyRing.generate(), count: 2)
        try segment.append([blocks[0]], now: 1)
        #expect(throws: AuditSegment.Failure.self) { try segment.append([blocks[1]], now: 2) }
        #expect(segment.failed && segment.pending == [blocks[0]])
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        segment.drained()
        #expect(segment.pending.isEmpty)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == size)
        #expect(try AuditSegment.read(path: path).blocks.first == blocks[0])
        segment.release()
        #expect(FileManager.default.fileExists(atPath: path))
    }

    /// What a crash left in the segment goes into the store before the vault serves: whole
    /// records copied, a torn tail cut and logged; copied twice, stored once.
    @Test func aStartCopiesWhatACrashLeftAndCutsATornTail() throws {
        try withVaultHarness { h in
            let blocks = Self.blocks(h.keys, count: 3)
            let whole = Self.record(blocks)
            let torn = Self.record(Self.blocks(h.keys, chain: "other:1/boot/0", count: 1)).prefix(20)
            let path = AuditSegment.path(beside: h.storePath, chain: "old-node:1/boot/0")
            // Written by a node that stopped after copying the first block into the store.
            _ = try h.openVault(settings: Vault.Settings(volatileTTLSeconds: 60))
            let store = try h.inspector()
            try store.begin()
            try store.appendAuditBlocks([blocks[0]])
            try store.commit()
            try Data(whole + torn).write(to: URL(fileURLWithPath: path))
            let messages = Mutex<[String]>([])
            let vault = try h.openVault(settings: Self.settings(log: { m in messages.withLock { $0.append(m) } }))
            let told = messages.withLock { $0 }
            #expect(told.contains { $0.contains("copied 3 block(s)") }, "\(told)")
            #expect(told.contains { $0.contains("cut 20 byte(s)") }, "\(told)")
            #expect(try h.rowCount("audit_blocks") == 3)
            #expect(try Vault.verifyAudit(h.inspector(), keys: h.keys).events == 3)
            #expect(!FileManager.default.fileExists(atPath: path))
            // Nothing in the log names a value, an alias or a key: counts and places only.
            #expect(!told.joined().contains("ar_"))
            vault.close()
        }
    }

    /// A record damaged in the middle is no crash: the file is kept aside whole, what came
    /// before it is copied, and verify names the first event missing (the chain went on in the
    /// store: a change's block after the reads').
    @Test func aDamagedSegmentIsKeptAsideAndVerifyNamesTheGap() throws {
        try withVaultHarness { h in
            let blocks = Self.blocks(h.keys, count: 4)
            var bytes = Self.record(Array(blocks.prefix(3)))
            let second = Self.record(Array(blocks.prefix(1))).count
            bytes[second + 12] ^= 0x01
            let path = AuditSegment.path(beside: h.storePath, chain: "old-node:1/boot/0")
            _ = try h.openVault(settings: Vault.Settings(volatileTTLSeconds: 60))
            let store = try h.inspector()
            try store.begin()
            try store.appendAuditBlocks([blocks[3]])
            try store.commit()
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let messages = Mutex<[String]>([])
            let vault = try h.openVault(settings: Self.settings(log: { m in messages.withLock { $0.append(m) } }))
            #expect(messages.withLock { $0 }.contains { $0.contains("damaged") })
            let aside = try FileManager.default.contentsOfDirectory(atPath: h.directory.path)
                .filter { $0.contains("-audit.") && $0.contains(".damaged-") }
            #expect(aside.count == 1)
            #expect(try h.rowCount("audit_blocks") == 2)
            vault.close()
            let broken = #expect(throws: AuditVerifier.Break.self) {
                try Vault.verifyAudit(h.inspector(), keys: h.keys)
            }
            #expect(broken?.seq == 2, "\(String(describing: broken))")
        }
    }

    /// `cloak audit verify` reads the segment beside the store: blocks not copied yet verify in
    /// their places, and one altered there (its checksum made right) is named.
    @Test func verifyCoversBlocksStillInTheSegment() throws {
        try withVaultHarness { h in
            let blocks = Self.blocks(h.keys, count: 3)
            _ = try h.openVault(settings: Vault.Settings(volatileTTLSeconds: 60))
            let store = try h.inspector()
            try store.begin()
            try store.appendAuditBlocks([blocks[1]])
            try store.commit()
            let path = AuditSegment.path(beside: h.storePath, chain: "old-node:1/boot/0")
            try Data(Self.record([blocks[0], blocks[2]])).write(to: URL(fileURLWithPath: path))
            #expect(try Vault.verifyAudit(h.inspector(), keys: h.keys).events == 3)
            var altered = blocks[2]
            altered.body[altered.body.count - 1] ^= 0x01
            try Data(Self.record([blocks[0], altered])).write(to: URL(fileURLWithPath: path))
            let broken = #expect(throws: AuditVerifier.Break.self) {
                try Vault.verifyAudit(h.inspector(), keys: h.keys)
            }
            #expect(broken?.seq == 3)
        }
    }

    /// Several processes may serve one SQLite file: each node's vault has a segment of its own,
    /// locked while it lives. A starting node copies and removes only the segments no live
    /// node holds; a second vault of the same chain is refused; a stopped node removes its own.
    @Test func eachNodeHasItsSegmentAndAStartLeavesLiveOnesAlone() throws {
        try withVaultHarness { h in
            func settings(_ node: String) -> Vault.Settings {
                var settings = Vault.Settings(volatileTTLSeconds: 60)
                settings.audit = AuditSettings(node: node, retentionDays: 400) { _ in }
                return settings
            }
            let a = try h.openVault(settings: settings("a-node:1"))
            let aPath = AuditSegment.path(beside: h.storePath, chain: settings("a-node:1").audit!.chainID(0))
            #expect(FileManager.default.fileExists(atPath: aPath))
            let b = try h.openVault(settings: settings("b-node:1"))
            #expect(FileManager.default.fileExists(atPath: aPath))
            #expect(AuditSegment.paths(beside: h.storePath).count == 2)
            #expect(throws: VaultOpenError.self) { try h.openVault(settings: settings("a-node:1")) }
            a.close()
            #expect(!FileManager.default.fileExists(atPath: aPath))
            b.close()
            #expect(AuditSegment.paths(beside: h.storePath).isEmpty)
        }
    }
}

extension Result where Failure == VaultError {
    fileprivate var isUnavailable: Bool {
        if case let .failure(error) = self { return error.isUnavailable }
        return false
    }
}
