/// A file's place in the store (issue 47): its chunks, sealed by `FileSealer` under a key of its
/// own (``wrappedKey``, sealed under data key ``keyID``), kept apart from the record that aliases
/// it. An upload is started, its chunks appended as they arrive (each write its own short
/// transaction: no transaction stays open over a slow client), and finished into a record in the
/// record's own transaction. Until then the file belongs to no record and nothing reveals it; an
/// upload never finished (the client left, the process was killed) is swept after a while. A
/// finished file goes with its record.
package struct StoredFile: Sendable, Equatable {
    /// The upload's id: also the file's id in its chunks' associated data.
    package var uploadID: String
    package var keyID: String
    package var wrappedKey: [UInt8]
    /// Chunks of a finished file (0 while the upload runs).
    package var chunkCount: Int
    package var createdAt: Int64
    /// The record a finished file belongs to.
    package var recordID: String?

    package init(
        uploadID: String, keyID: String, wrappedKey: [UInt8], chunkCount: Int = 0, createdAt: Int64,
        recordID: String? = nil
    ) {
        self.uploadID = uploadID
        self.keyID = keyID
        self.wrappedKey = wrappedKey
        self.chunkCount = chunkCount
        self.createdAt = createdAt
        self.recordID = recordID
    }
}

/// What a store does with files (every ``AliasStore`` does it, and the compatibility suite holds
/// each to it).
package protocol FileStore: ChunkStore {
    /// Starts an upload (no record, no chunk yet).
    func startFile(_ file: StoredFile) throws(StoreError)
    /// Stores chunk `index` of an upload (chunks arrive in order, from 0).
    func appendFileChunk(uploadID: String, index: Int, sealed: [UInt8]) throws(StoreError)
    /// Gives a started upload whose `chunkCount` chunks are all stored to `recordID`; false when
    /// there is no such upload, it was finished already, or a chunk is missing.
    func finishFile(uploadID: String, chunkCount: Int, recordID: String) throws(StoreError) -> Bool
    /// Gives upload `uploadID`'s finished file from record `from` (nil: whichever record holds
    /// it) to record `to` (an intent kept under its canonical alias: the content goes with the
    /// record that lasts); false when the upload is not `from`'s, or not finished.
    func moveFile(uploadID: String, from: String?, to: String) throws(StoreError) -> Bool
    /// The finished file of a record.
    func file(recordID: String) throws(StoreError) -> StoredFile?
    /// Marks an unfinished upload as alive at `at` (a chunk was just stored): false when there
    /// is no such upload any more (swept, dropped) or it was finished.
    func touchFile(uploadID: String, at: Int64) throws(StoreError) -> Bool
    /// Deletes an unfinished upload with its chunks (a refused or broken upload's, at once);
    /// false when there is none (finished meanwhile, or gone).
    func deleteUnfinishedFile(uploadID: String) throws(StoreError) -> Bool
    /// Deletes up to `limit` uploads never finished whose last chunk (or start) was before
    /// `idleBefore`, with their chunks; how many. The condition holds on each row as it is
    /// deleted: an upload finished or touched while the delete waited on it stays.
    func deleteAbandonedFiles(idleBefore: Int64, limit: Int) throws(StoreError) -> Int
    /// Up to `limit` finished files after upload `after`, in upload id order (store migration).
    func finishedFiles(after: String?, limit: Int) throws(StoreError) -> [StoredFile]
    /// Up to `limit` files (finished or not) whose key is sealed with data key `keyID`, after
    /// upload `after`, in upload id order (key rewrap).
    func wrappedFileKeys(keyID: String, after: String?, limit: Int) throws(StoreError) -> [StoredFile]
    /// Replaces each file's wrapped key, only where the row still holds the one read; the upload
    /// ids replaced.
    func rewrapFileKeys(_ changes: [(old: StoredFile, new: StoredFile)]) throws(StoreError) -> Set<String>
}
