import CloakCore
import CloakVault

/// Files (issue 47) through the vault, each completion on the request's loop. Chunks are written
/// as they are sealed; a file becomes a record only when its whole submission is valid.
extension VaultClient {
    func newUpload() throws(VaultError) -> FileUpload { try vault.newUpload() }

    func startUpload(
        _ started: StoredFile, chunks: [(index: Int, sealed: [UInt8])],
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        vault.startUpload(started, chunks: chunks) { result in onLoop { completion(result) } }
    }

    func storeChunks(
        uploadID: String, _ chunks: [(index: Int, sealed: [UInt8])],
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        vault.storeChunks(uploadID: uploadID, chunks) { result in onLoop { completion(result) } }
    }

    /// Finishes an upload into its record; an anonymous caller pays one request per file past
    /// the first, as for values.
    func finishUpload(
        uploadID: String, last: (index: Int, sealed: [UInt8]), chunkCount: Int, fingerprint: [UInt8],
        metadata: Vault.FileMetadata, ttlSeconds: Int?, caller: AliasCaller,
        completion: @escaping @Sendable (Result<RevealedRecord, VaultError>) -> Void
    ) {
        let (completion, call) = traced("create file", count: 1, completion)
        serving(call) {
            vault.finishUpload(
                uploadID: uploadID, last: last, chunkCount: chunkCount, fingerprint: fingerprint, metadata: metadata,
                ttlSeconds: ttlSeconds, caller: caller
            ) { result in onLoop { completion(result) } }
        }
    }

    /// The stored file an alias names (nil: none, or the alias is not a file's).
    func file(alias: String, completion: @escaping @Sendable (Result<StoredFile?, VaultError>) -> Void) {
        let (completion, call) = traced("reveal file", count: 1, completion)
        serving(call) {
            vault.file(alias: alias) { result in onLoop { completion(result) } }
        }
    }

    func fileChunks(
        _ file: StoredFile, from index: Int, limit: Int,
        completion: @escaping @Sendable (Result<[[UInt8]], VaultError>) -> Void
    ) {
        vault.fileChunks(file, from: index, limit: limit) { result in onLoop { completion(result) } }
    }
}
