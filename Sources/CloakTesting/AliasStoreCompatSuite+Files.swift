import CloakCore
import CloakCrypto
import CloakVault
import Testing

extension AliasStoreCompatSuite {
    // MARK: Files (issue 47)

    func filesAreStoredInChunksAndFinishedIntoARecord() throws {
        let store = try makeStore()
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let upload = StoredFile(
            uploadID: "up_\(tag)", keyID: "k1", wrappedKey: SecureRandom.bytes(60), createdAt: Self.now)
        let chunks = (0..<3).map { _ in SecureRandom.bytes(100) }
        try transaction(store) { try store.startFile(upload) }
        for (index, chunk) in chunks.enumerated() {
            try transaction(store) { try store.appendFileChunk(uploadID: upload.uploadID, index: index, sealed: chunk) }
        }
        let record = Self.record("rec_f\(tag)", aliases: [Self.alias("tok_f\(tag)")])
        // A count that does not match the chunks stored, or another upload: not finished.
        #expect(
            try transaction(store) {
                try store.finishFile(uploadID: upload.uploadID, chunkCount: 2, recordID: record.id)
            } == false)
        #expect(
            try transaction(store) { try store.finishFile(uploadID: "up_none", chunkCount: 3, recordID: record.id) }
                == false)
        #expect(try store.file(recordID: record.id) == nil)
        let finished = try transaction(store) {
            try store.insert(record)
            return try store.finishFile(uploadID: upload.uploadID, chunkCount: 3, recordID: record.id)
        }
        #expect(finished)
        var expected = upload
        expected.chunkCount = 3
        expected.recordID = record.id
        #expect(try store.file(recordID: record.id) == expected)
        #expect(try store.fileChunks(uploadID: upload.uploadID, from: 0, limit: 10) == chunks)
        #expect(try store.fileChunks(uploadID: upload.uploadID, from: 1, limit: 1) == [chunks[1]])
        #expect(try store.fileChunks(uploadID: upload.uploadID, from: 3, limit: 10) == [])
        // Finished once only, and no chunk joins a finished file.
        #expect(
            try transaction(store) {
                try store.finishFile(uploadID: upload.uploadID, chunkCount: 3, recordID: record.id)
            } == false)
        try transaction(store) { try store.appendFileChunk(uploadID: upload.uploadID, index: 3, sealed: [1, 2, 3]) }
        #expect(try store.fileChunks(uploadID: upload.uploadID, from: 0, limit: 10) == chunks)
        // The file goes with its record.
        #expect(try transaction(store) { try store.deleteAlias("tok_f\(tag)") })
        #expect(try store.file(recordID: record.id) == nil)
        #expect(try store.fileChunks(uploadID: upload.uploadID, from: 0, limit: 10) == [])
    }

    /// Issue 57: an intent kept under its canonical record gives it the file, which then goes
    /// with that record and not with the intent.
    func aKeptFileMovesToItsRecordAndOutlivesTheFirst() throws {
        let store = try makeStore()
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let upload = StoredFile(uploadID: "up_k\(tag)", keyID: "k1", wrappedKey: [7], createdAt: Self.now)
        let intent = Self.record("rec_ki\(tag)", aliases: [Self.alias("tok_ki\(tag)")])
        let kept = Self.record("rec_kc\(tag)", aliases: [Self.alias("tok_kc\(tag)")])
        try transaction(store) {
            try store.startFile(upload)
            try store.appendFileChunk(uploadID: upload.uploadID, index: 0, sealed: [1, 2, 3])
            try store.insert(intent)
            try store.insert(kept)
            #expect(try store.finishFile(uploadID: upload.uploadID, chunkCount: 1, recordID: intent.id))
        }
        // Only from the record that holds it.
        #expect(
            try transaction(store) { try store.moveFile(uploadID: upload.uploadID, from: kept.id, to: intent.id) }
                == false)
        #expect(try transaction(store) { try store.moveFile(uploadID: upload.uploadID, from: intent.id, to: kept.id) })
        #expect(try store.file(recordID: intent.id) == nil)
        #expect(try store.file(recordID: kept.id)?.uploadID == upload.uploadID)
        // From whichever record holds it (a migration following a keep), and back.
        #expect(try transaction(store) { try store.moveFile(uploadID: upload.uploadID, from: nil, to: intent.id) })
        #expect(try store.file(recordID: intent.id)?.uploadID == upload.uploadID)
        #expect(try transaction(store) { try store.moveFile(uploadID: upload.uploadID, from: nil, to: kept.id) })
        #expect(try transaction(store) { try store.moveFile(uploadID: "up_none", from: nil, to: kept.id) } == false)
        #expect(try transaction(store) { try store.deleteAlias("tok_ki\(tag)") })
        #expect(try store.fileChunks(uploadID: upload.uploadID, from: 0, limit: 10) == [[1, 2, 3]])
        #expect(try transaction(store) { try store.deleteAlias("tok_kc\(tag)") })
        #expect(try store.fileChunks(uploadID: upload.uploadID, from: 0, limit: 10) == [])
    }

    func unfinishedUploadsAreSweptAndUncommittedChunksLost() throws {
        let store = try makeStore()
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let old = StoredFile(uploadID: "up_old\(tag)", keyID: "k1", wrappedKey: [1], createdAt: Self.now - 7200)
        let recent = StoredFile(uploadID: "up_new\(tag)", keyID: "k1", wrappedKey: [2], createdAt: Self.now)
        try transaction(store) {
            try store.startFile(old)
            try store.startFile(recent)
            try store.appendFileChunk(uploadID: old.uploadID, index: 0, sealed: [9, 9])
            try store.appendFileChunk(uploadID: recent.uploadID, index: 0, sealed: [8, 8])
        }
        // A chunk written in a transaction that rolls back is not there.
        try store.begin()
        try store.appendFileChunk(uploadID: recent.uploadID, index: 1, sealed: [7])
        store.rollback()
        #expect(try store.fileChunks(uploadID: recent.uploadID, from: 0, limit: 10) == [[8, 8]])
        #expect(
            try transaction(store) { try store.deleteAbandonedFiles(idleBefore: Self.now - 3600, limit: 100) } >= 1)
        #expect(try store.fileChunks(uploadID: old.uploadID, from: 0, limit: 10) == [])
        #expect(try store.fileChunks(uploadID: recent.uploadID, from: 0, limit: 10) == [[8, 8]])
        // The swept upload cannot be finished into a record.
        let record = Self.record("rec_s\(tag)", aliases: [Self.alias("tok_s\(tag)")])
        let finished = try transaction(store) {
            try store.insert(record)
            return try store.finishFile(uploadID: old.uploadID, chunkCount: 1, recordID: record.id)
        }
        #expect(!finished)
    }

    /// Issue 55, items 2 and 8: an upload started two hours ago whose last chunk came a minute
    /// ago is not swept; a swept one cannot be touched; a refused one is dropped at once, and a
    /// finished one never is.
    func uploadsAgeByTheirLastChunkAndDropAtOnce() throws {
        let store = try makeStore()
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let slow = StoredFile(uploadID: "up_slow\(tag)", keyID: "k1", wrappedKey: [1], createdAt: Self.now - 7200)
        let idle = StoredFile(uploadID: "up_idle\(tag)", keyID: "k1", wrappedKey: [2], createdAt: Self.now - 7200)
        let refused = StoredFile(uploadID: "up_ref\(tag)", keyID: "k1", wrappedKey: [3], createdAt: Self.now)
        try transaction(store) {
            try store.startFile(slow)
            try store.startFile(idle)
            try store.startFile(refused)
            try store.appendFileChunk(uploadID: refused.uploadID, index: 0, sealed: [5])
        }
        #expect(try transaction(store) { try store.touchFile(uploadID: slow.uploadID, at: Self.now - 60) })
        // An older time never moves an upload's age back.
        #expect(try transaction(store) { try store.touchFile(uploadID: slow.uploadID, at: Self.now - 7000) })
        try transaction(store) { try store.appendFileChunk(uploadID: slow.uploadID, index: 0, sealed: [6]) }
        #expect(
            try transaction(store) { try store.deleteAbandonedFiles(idleBefore: Self.now - 3600, limit: 100) } >= 1)
        #expect(try store.fileChunks(uploadID: slow.uploadID, from: 0, limit: 10) == [[6]])
        #expect(try transaction(store) { try store.touchFile(uploadID: idle.uploadID, at: Self.now) } == false)
        // Dropped at once, with its chunks; a second drop finds nothing.
        #expect(try transaction(store) { try store.deleteUnfinishedFile(uploadID: refused.uploadID) })
        #expect(try store.fileChunks(uploadID: refused.uploadID, from: 0, limit: 10) == [])
        #expect(try transaction(store) { try store.deleteUnfinishedFile(uploadID: refused.uploadID) } == false)
        // A finished upload is neither dropped, touched nor swept.
        let record = Self.record("rec_a\(tag)", aliases: [Self.alias("tok_a\(tag)")])
        #expect(
            try transaction(store) {
                try store.insert(record)
                return try store.finishFile(uploadID: slow.uploadID, chunkCount: 1, recordID: record.id)
            })
        #expect(try transaction(store) { try store.deleteUnfinishedFile(uploadID: slow.uploadID) } == false)
        #expect(try transaction(store) { try store.touchFile(uploadID: slow.uploadID, at: Self.now) } == false)
        _ = try transaction(store) { try store.deleteAbandonedFiles(idleBefore: Self.now + 3600, limit: 100) }
        #expect(try store.file(recordID: record.id)?.uploadID == slow.uploadID)
    }
}
