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
            try transaction(store) { try store.deleteAbandonedFiles(startedBefore: Self.now - 3600, limit: 100) } >= 1)
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
}
