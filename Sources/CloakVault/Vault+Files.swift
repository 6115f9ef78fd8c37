import CloakCore
import CloakCrypto

/// Files (issue 47) through the vault's executor: an upload is started, its chunks written as
/// they are sealed (each write its own short job), and finished into a record holding the file's
/// metadata, with a `UUID` alias. Deduplicated by the content's keyed fingerprint: the same file
/// finished twice gets the alias it has, and the second upload's chunks are deleted.
extension Vault {
    /// What a finished file's record holds as its value (sealed like any value): never the content.
    ///
    /// It names the upload whose chunks are the content: the value is sealed with its record's
    /// id, so a database writer who points the record at another upload's chunks (a document of
    /// their own, padded to the same size) is found out when the file is read (``checkedFile``).
    package struct FileMetadata: Sendable, Equatable {
        package var fileName: String?
        package var mediaType: FileMediaType
        package var bytes: Int
        package var uploadID: String

        package init(fileName: String?, mediaType: FileMediaType, bytes: Int, uploadID: String) {
            self.fileName = fileName
            self.mediaType = mediaType
            self.bytes = bytes
            self.uploadID = uploadID
        }

        /// Read back from a record's value (nil: the record is not a file's).
        package init?(json: String) {
            guard case .object(let members)? = try? JSONParser().parse(Array(json.utf8)),
                members.count == 4,
                let type = members.first(where: { $0.key == "mediaType" })?.value.stringValue,
                let mediaType = FileMediaType(rawValue: type),
                case .number(let size)? = members.first(where: { $0.key == "bytes" })?.value, let bytes = Int(size),
                let upload = members.first(where: { $0.key == "upload" })?.value.stringValue
            else { return nil }
            self.mediaType = mediaType
            self.bytes = bytes
            self.uploadID = upload
            self.fileName = members.first(where: { $0.key == "fileName" })?.value.stringValue
        }

        /// `{"fileName":…,"mediaType":…,"bytes":…,"upload":…}`.
        var json: String {
            var writer = JSONWriter()
            writer.write(
                .object([
                    ("fileName", fileName.map { .string($0) } ?? .null), ("mediaType", .string(mediaType.rawValue)),
                    ("bytes", .int(bytes)), ("upload", .string(uploadID)),
                ]))
            return String(decoding: writer.bytes, as: UTF8.self)
        }
    }

    /// The classifier every file's record carries: a reveal of its alias shows the metadata.
    package static let fileClassifier = "file"

    /// A new upload under the current data key (sealing happens on the caller's thread).
    package func newUpload() throws(VaultError) -> FileUpload {
        do { return try FileUpload(ring: keys, now: clock()) } catch {
            throw VaultError.unavailable("the file could not be sealed or opened: \(error)")
        }
    }

    /// Writes the upload's row, then the chunks given (its first ones, possibly none).
    package func startUpload(
        _ started: StoredFile, chunks: [(index: Int, sealed: [UInt8])],
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        withStore(reads: false) { store in
            try store.startFile(started)
            for chunk in chunks {
                try store.appendFileChunk(uploadID: started.uploadID, index: chunk.index, sealed: chunk.sealed)
            }
        } completion: {
            completion(Self.map($0))
        }
    }

    /// Writes sealed chunks of a started upload.
    package func storeChunks(
        uploadID: String, _ chunks: [(index: Int, sealed: [UInt8])],
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        let now = clock()
        withStore(reads: false) { store in
            // An upload is aged by its last chunk; one swept meanwhile fails now, not at its end.
            guard try store.touchFile(uploadID: uploadID, at: now) else {
                throw VaultError.unavailable("the upload was idle too long and its chunks were deleted")
            }
            for chunk in chunks {
                try store.appendFileChunk(uploadID: uploadID, index: chunk.index, sealed: chunk.sealed)
            }
        } completion: {
            completion(Self.map($0))
        }
    }

    /// Deletes an unfinished upload and its chunks (refused, or broken off by its client) at
    /// once, rather than leaving them for the sweep.
    package func dropUpload(uploadID: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        withStore(reads: false) { store in
            _ = try store.deleteUnfinishedFile(uploadID: uploadID)
        } completion: {
            completion(Self.map($0))
        }
    }

    /// Writes the last chunk and finishes the upload into a record with `metadata` as its value,
    /// in one transaction (`ttlSeconds`: the record, content included, expires then): the answer is the record (its `UUID` alias), the one a file with the
    /// same content already has if any. Nothing is kept when a chunk is missing.
    package func finishUpload(
        uploadID: String, last: (index: Int, sealed: [UInt8])?, chunkCount: Int, fingerprint: [UInt8],
        metadata: FileMetadata, ttlSeconds: Int? = nil, caller: AliasCaller = .trusted,
        completion: @escaping @Sendable (Result<RevealedRecord, VaultError>) -> Void
    ) {
        var request = AliasRequest(
            value: metadata.json, format: .UUID, storage: .persistent, classifiers: [Self.fileClassifier])
        request.ttlSeconds = ttlSeconds
        let prepared: [PreparedAlias]
        do {
            // As for values: a caller without a token never shares a record, so an upload cannot
            // confirm a guessed document by the alias it gets back. Nor does a file with a ttl:
            // it would take the other record's expiry (or give it its own).
            let shared = caller.deterministic && ttlSeconds == nil
            prepared = try prepare([request], fingerprints: [shared ? fingerprint : nil], caller: caller)
        } catch {
            return completion(.failure(error))
        }
        withStore(reads: false) { [self] store in
            if let last { try store.appendFileChunk(uploadID: uploadID, index: last.index, sealed: last.sealed) }
            // The record (new, or the one the same content has) is found by the alias it gave.
            func created() throws -> (RevealedRecord, StoredRecord) {
                guard let answer = try create(prepared, caller: caller, in: store).answers.first,
                    let alias = answer.aliases.first, let record = try store.record(alias: alias.alias)
                else { throw VaultError.unavailable("no record was made for the file") }
                return (answer, record)
            }
            var (answer, record) = try created()
            if record.id != prepared[0].newRecord.id {
                if try store.file(recordID: record.id) != nil {
                    // The same content is stored: this upload's chunks are not needed.
                    _ = try store.deleteUnfinishedFile(uploadID: uploadID)
                    return answer
                }
                // A record whose content is gone (deleted under it, issue 55, item 7) is never
                // handed out: it goes, and this upload is stored as a new record.
                for issued in record.aliases { _ = try store.deleteAlias(issued.alias) }
                (answer, record) = try created()
                guard record.id == prepared[0].newRecord.id else {
                    throw VaultError.unavailable("a file's record without content could not be replaced")
                }
            }
            guard try store.finishFile(uploadID: uploadID, chunkCount: chunkCount, recordID: record.id) else {
                throw VaultError.unavailable("the file's chunks are not all stored")
            }
            return answer
        } completion: {
            completion(Self.map($0))
        }
    }

    /// The stored file of `metadata`'s record, only when it is the upload the metadata names
    /// (else a database writer moved the record onto other chunks: unavailable, never served).
    package static func checkedFile(_ file: StoredFile?, _ metadata: FileMetadata) -> Result<StoredFile, VaultError> {
        guard let file else { return .failure(.notFound) }
        guard file.uploadID == metadata.uploadID else {
            return .failure(.unavailable("a file's record names another upload than the store's (tampering)"))
        }
        return .success(file)
    }

    /// Gives a kept intent's file (upload `uploadID`, as its metadata names it) to the record it
    /// was kept as (`POST /aliases/keep`): the content then lasts with the canonical alias, and
    /// goes neither with the intent when it expires nor when it is deleted. Keeping again (here or
    /// on another node at the same moment) finds it moved and succeeds; the intent's own alias no
    /// longer reads the content. `.notFound` when neither record holds it (the intent expired);
    /// `.unavailable` when the canonical record holds another upload (a database writer's doing).
    package func keepFile(
        intent: String, canonical: String, uploadID: String,
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        withStore(reads: false) { store -> Void in
            guard let kept = try store.record(alias: canonical) else { throw VaultError.notFound }
            func keptAlready() throws -> Bool {
                guard let held = try store.file(recordID: kept.id) else { return false }
                guard held.uploadID == uploadID else {
                    throw VaultError.unavailable("a kept file's record holds another upload")
                }
                return true
            }
            if try keptAlready() { return }
            guard let source = try store.record(alias: intent), let file = try store.file(recordID: source.id),
                file.uploadID == uploadID
            else { throw VaultError.notFound }
            if try store.moveFile(uploadID: uploadID, from: source.id, to: kept.id) { return }
            // Another keep moved it first.
            guard try keptAlready() else {
                throw VaultError.unavailable("a kept file could not be given to its record")
            }
        } completion: {
            completion(Self.map($0))
        }
    }

    /// The stored file of an alias's record (its chunks are read with ``fileChunks(_:from:limit:completion:)``).
    package func file(
        alias: String, completion: @escaping @Sendable (Result<StoredFile?, VaultError>) -> Void
    ) {
        withStore(reads: true) { store -> StoredFile? in
            guard let record = try store.record(alias: alias) else { return nil }
            return try store.file(recordID: record.id)
        } completion: {
            completion(Self.map($0))
        }
    }

    /// Up to `limit` sealed chunks of a stored file, from chunk `index`.
    package func fileChunks(
        _ file: StoredFile, from index: Int, limit: Int,
        completion: @escaping @Sendable (Result<[[UInt8]], VaultError>) -> Void
    ) {
        withStore(reads: true) { store in
            try store.fileChunks(uploadID: file.uploadID, from: index, limit: limit)
        } completion: {
            completion(Self.map($0))
        }
    }

    /// An opener for a stored file's chunks, under the vault's ring.
    package func opener(for file: StoredFile) throws(VaultError) -> FileOpener {
        do {
            return try FileOpener(
                fileID: Array(file.uploadID.utf8),
                wrappedKey: FileSeal.WrappedKey(keyID: file.keyID, sealed: file.wrappedKey), ring: keys)
        } catch {
            throw VaultError.unavailable("the file could not be sealed or opened: \(error)")
        }
    }
}
