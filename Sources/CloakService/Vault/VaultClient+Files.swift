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

    /// Deletes an unfinished upload's chunks (a refused or broken submission's), in the
    /// background: a failure leaves them to the sweep.
    func dropUpload(uploadID: String) {
        vault.dropUpload(uploadID: uploadID) { _ in }
    }

    /// Charges one submission's files before any is finished, as values are charged: each file
    /// one request of the caller's rate (an address's without a token, the token's with one).
    func admitFiles(_ count: Int, caller: AliasCaller) -> VaultError? {
        guard count > 0 else { return nil }
        if caller.anonymous {
            guard let wait = chargeAnonymous?(count) else { return nil }
            return .refused(
                retryAfter: wait, reason: "too many files for this address's rate (each file counts as a request)")
        }
        // `chargeExtra` lets the first value go free (the request paid for it); files pay all.
        return admission?.chargeExtra(count + 1)
    }

    /// Finishes an upload into its record.
    func finishUpload(
        uploadID: String, chunkCount: Int, fingerprint: [UInt8], metadata: Vault.FileMetadata, ttlSeconds: Int?,
        caller: AliasCaller,
        completion: @escaping @Sendable (Result<RevealedRecord, VaultError>) -> Void
    ) {
        let (completion, call) = traced("create file", count: 1, completion)
        serving(call) {
            vault.finishUpload(
                uploadID: uploadID, last: nil, chunkCount: chunkCount, fingerprint: fingerprint, metadata: metadata,
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

    /// Gives a kept intent's file to its canonical record (``Vault/keepFile(intent:canonical:completion:)``).
    func keepFile(
        intent: String, canonical: String, uploadID: String,
        completion: @escaping @Sendable (Result<Void, VaultError>) -> Void
    ) {
        let (completion, call) = traced("keep file", count: 1, completion)
        serving(call) {
            vault.keepFile(intent: intent, canonical: canonical, uploadID: uploadID) { result in
                onLoop { completion(result) }
            }
        }
    }

    func fileChunks(
        _ file: StoredFile, from index: Int, limit: Int,
        completion: @escaping @Sendable (Result<[[UInt8]], VaultError>) -> Void
    ) {
        vault.fileChunks(file, from: index, limit: limit) { result in onLoop { completion(result) } }
    }
}
