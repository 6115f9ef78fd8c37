import CloakCore
import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakCrypto
@testable import CloakVault

/// A file through the vault (issue 47): started, chunks written as sealed, finished into a
/// record with a UUID alias, read back whole; the same content twice is one record; a file
/// whose chunks are not all stored, or an unfinished upload, never gets an alias.
@Suite(.serialized, .tags(.racy)) struct VaultFilesTests {
    static func await<T: Sendable>(_ body: (@escaping @Sendable (Result<T, VaultError>) -> Void) -> Void) throws -> T {
        let box = Mutex<Result<T, VaultError>?>(nil)
        body { result in box.withLock { $0 = result } }
        guard Poll.until(seconds: 30, { box.withLock { $0 != nil } }) else {
            throw VaultTimedOut(operation: "a file job")
        }
        return try box.withLock { $0! }.get()
    }

    static func upload(_ content: [UInt8], to vault: Vault, piece: Int = 10_000) throws -> (RevealedRecord, String) {
        let upload = try vault.newUpload()
        try Self.await { vault.startUpload(upload.started, chunks: [], completion: $0) }
        var offset = 0
        while offset < content.count {
            let chunks = try upload.feed(content[offset..<min(offset + piece, content.count)])
            if !chunks.isEmpty {
                try Self.await { vault.storeChunks(uploadID: upload.uploadID, chunks, completion: $0) }
            }
            offset += piece
        }
        let end = try upload.finish()
        let metadata = Vault.FileMetadata(
            fileName: "passport.jpg", mediaType: .jpeg, bytes: content.count, uploadID: upload.uploadID)
        let record = try Self.await {
            vault.finishUpload(
                uploadID: upload.uploadID, last: end.last, chunkCount: end.chunkCount, fingerprint: end.fingerprint,
                metadata: metadata, completion: $0)
        }
        return (record, upload.uploadID)
    }

    /// A stored file's content, read `page` chunks at a time and opened (its end checked).
    static func read(_ file: StoredFile, from vault: Vault, page: Int = 100) throws -> [UInt8] {
        var opener = try vault.opener(for: file)
        var read: [UInt8] = []
        var index = 0
        while index < file.chunkCount {
            let chunks = try Self.await { vault.fileChunks(file, from: index, limit: page, completion: $0) }
            guard !chunks.isEmpty else { break }
            for sealed in chunks { read += try opener.open(sealed).bytes }
            index += chunks.count
        }
        try opener.finish()
        return read
    }

    static func content(_ seed: UInt8, _ count: Int) -> [UInt8] {
        [0xFF, 0xD8, 0xFF, 0xE0] + (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed }
    }

    @Test func aFileIsAliasedAndReadBackWhole() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let content = Self.content(1, 200_000)
        let (record, _) = try Self.upload(content, to: vault)
        let alias = try #require(record.aliases.first)
        #expect(alias.format == .UUID)
        #expect(record.value.contains("\"mediaType\":\"image/jpeg\"") && record.value.contains("\"bytes\":200004"))
        let file = try #require(try Self.await { vault.file(alias: alias.alias, completion: $0) })
        #expect(try Self.read(file, from: vault, page: 2) == content)
    }

    @Test func theSameContentIsOneRecordAndAnotherIsAnother() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let (first, _) = try Self.upload(Self.content(2, 70_000), to: vault)
        let (again, secondUpload) = try Self.upload(Self.content(2, 70_000), to: vault, piece: 333)
        let (other, _) = try Self.upload(Self.content(3, 70_000), to: vault)
        #expect(first.aliases.first?.alias == again.aliases.first?.alias)
        #expect(first.aliases.first?.alias != other.aliases.first?.alias)
        // The second upload of the same content is not needed: its chunks went at once.
        let inspector = try harness.inspector()
        #expect(try inspector.fileChunks(uploadID: secondUpload, from: 0, limit: 10).isEmpty)
        #expect(try inspector.deleteAbandonedFiles(idleBefore: harness.clock.now + 1, limit: 10) == 0)
    }

    /// Issue 55, item 7: a file whose content was deleted under its record (the sweep's race)
    /// gave a re-upload of the same content the same unreadable alias. It is stored again.
    @Test func theSameContentAgainAfterItsChunksWentIsStoredAgain() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let content = Self.content(4, 70_000)
        let (first, firstUpload) = try Self.upload(content, to: vault)
        try harness.execute("DELETE FROM files WHERE upload_id = '\(firstUpload)'")
        let (again, _) = try Self.upload(content, to: vault)
        let alias = try #require(again.aliases.first?.alias)
        #expect(alias != first.aliases.first?.alias)
        let file = try #require(try Self.await { vault.file(alias: alias, completion: $0) })
        #expect(try Self.read(file, from: vault) == content)
        #expect(try Self.await { vault.file(alias: first.aliases.first!.alias, completion: $0) } == nil)
    }

    /// Issue 55, item 8: an upload is aged by its last chunk. A slow one that sent a chunk
    /// within the hour stays; a chunk to one the sweep took fails at once.
    @Test func aSlowUploadIsKeptAndAChunkToASweptOneFails() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let slow = try vault.newUpload()
        let stalled = try vault.newUpload()
        try Self.await { vault.startUpload(slow.started, chunks: [], completion: $0) }
        try Self.await { vault.startUpload(stalled.started, chunks: [], completion: $0) }
        let content = Self.content(6, 3 * FileSeal.chunkSize)
        let first = try slow.feed(content[..<(FileSeal.chunkSize + 1)])
        let stalledChunks = try stalled.feed(content[..<(FileSeal.chunkSize + 1)])
        harness.clock.advance(by: Vault.abandonedUploadSeconds - 60)
        try Self.await { vault.storeChunks(uploadID: slow.uploadID, first, completion: $0) }
        harness.clock.advance(by: 120)  // the start is an hour and a minute ago; the last chunk, two minutes
        let inspector = try harness.inspector()
        // The vault's own maintenance may sweep first; either way the stalled one goes.
        _ = try inspector.deleteAbandonedFiles(idleBefore: harness.clock.now - Vault.abandonedUploadSeconds, limit: 10)
        #expect(try inspector.fileChunks(uploadID: slow.uploadID, from: 0, limit: 10).count == 1)
        #expect(throws: VaultError.self) {
            try Self.await { vault.storeChunks(uploadID: stalled.uploadID, stalledChunks, completion: $0) }
        }
    }

    @Test func aFileWithAChunkMissingGetsNoAlias() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let upload = try vault.newUpload()
        try Self.await { vault.startUpload(upload.started, chunks: [], completion: $0) }
        let chunks = try upload.feed(Self.content(4, 3 * FileSeal.chunkSize))
        // Chunk 1 never written.
        try Self.await { vault.storeChunks(uploadID: upload.uploadID, chunks.filter { $0.index != 1 }, completion: $0) }
        let end = try upload.finish()
        #expect(throws: VaultError.self) {
            try Self.await {
                vault.finishUpload(
                    uploadID: upload.uploadID, last: end.last, chunkCount: end.chunkCount, fingerprint: end.fingerprint,
                    metadata: .init(
                        fileName: nil, mediaType: .jpeg, bytes: 3 * FileSeal.chunkSize + 4, uploadID: upload.uploadID),
                    completion: $0)
            }
        }
        // Nothing was kept: no record, and the upload is still unfinished (swept later).
        let inspector = try harness.inspector()
        #expect(try inspector.recordCount() == 0)
        #expect(try inspector.deleteAbandonedFiles(idleBefore: harness.clock.now + 1, limit: 10) == 1)
    }

    @Test func anAbandonedUploadIsSweptAnHourOn() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let upload = try vault.newUpload()
        let chunks = try upload.feed(Self.content(5, 2 * FileSeal.chunkSize))
        try Self.await { vault.startUpload(upload.started, chunks: chunks, completion: $0) }
        let inspector = try harness.inspector()
        #expect(try inspector.fileChunks(uploadID: upload.uploadID, from: 0, limit: 10).count == 2)
        // The client never finishes; an hour on, the vault's idle maintenance deletes it.
        harness.clock.advance(by: Vault.abandonedUploadSeconds + 1)
        #expect(
            Poll.until(seconds: 30) {
                (try? inspector.fileChunks(uploadID: upload.uploadID, from: 0, limit: 10).isEmpty) == true
            })
    }

    @Test func aRewrapSealsFileKeysAgainSoTheOldVersionCanRetire() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let content = Self.content(6, 100_000)
        let (record, _) = try Self.upload(content, to: vault)
        let alias = try #require(record.aliases.first?.alias)
        let old = harness.keys.currentID
        let rotated = harness.keys.rotated()
        let rewrap = KeyRewrap(store: try harness.inspector(), keys: rotated)
        // The record and the file's key both use the old version: retiring it must wait.
        #expect(try rewrap.pending().first { $0.version == old }?.records == 2)
        var cursor: String?
        repeat { cursor = try rewrap.batch(version: old, after: cursor, limit: 10).next } while cursor != nil
        repeat { cursor = try rewrap.fileBatch(version: old, after: cursor, limit: 10).next } while cursor != nil
        #expect(try rewrap.pending().isEmpty)
        // A vault without the old version reads the file whole.
        let retired = try rotated.retiring(old)
        let reader = try harness.openVault(keys: retired)
        let file = try #require(try Self.await { reader.file(alias: alias, completion: $0) })
        #expect(file.keyID == rotated.currentID)
        #expect(try Self.read(file, from: reader) == content)
    }

    @Test func aStoreMigrationCarriesFilesStillSealed() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let content = Self.content(7, 150_000)
        let (record, _) = try Self.upload(content, to: vault)
        let alias = try #require(record.aliases.first?.alias)
        let destinationPath = harness.directory.path + "/copy.db"
        let destination = try SQLiteAliasStore(path: destinationPath)
        let report = try StoreMigration(from: harness.inspector(), to: destination).run()
        #expect(report.files == 1 && report.copied == 1)
        // Again: nothing more is copied.
        #expect(try StoreMigration(from: harness.inspector(), to: destination).run().files == 0)
        let copy = try Vault(
            store: SQLiteAliasStore(path: destinationPath), keys: harness.keys,
            settings: Vault.Settings(volatileTTLSeconds: 60), clock: harness.clock.function)
        defer { copy.close() }
        let file = try #require(try Self.await { copy.file(alias: alias, completion: $0) })
        #expect(try Self.read(file, from: copy) == content)
    }
}
