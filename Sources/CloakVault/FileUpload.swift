import CloakCore
import CloakCrypto

/// One file being uploaded (issue 47), worked on the request's loop as its bytes arrive: they are
/// inspected (size, media type from the content, polyglots: ``FileInspection``), fingerprinted
/// (HMAC under the ring's fingerprint key, for deduplication: never a plain hash, which would
/// confirm a guessed document), and sealed into chunks (``FileSealer``). Whole chunks come back
/// to be written by the vault's executor (``FileStore/appendFileChunk(uploadID:index:sealed:)``);
/// at most one chunk of plaintext is held here.
package final class FileUpload {
    /// The store's row for the upload, to start it with (``FileStore/startFile(_:)``).
    package let started: StoredFile
    private var sealer: FileSealer
    /// What the bytes given so far show (size, type, executables past the start).
    package private(set) var inspection = FileInspection()
    private let fingerprint: HMACStream
    private var pending: [UInt8] = []
    private var finished = false

    /// A new upload, under the ring's current data key, started at `now` (seconds).
    package init(ring: KeyRing, now: Int64) throws(CryptoError) {
        let uploadID = RecordID.make(now: now)
        sealer = try FileSealer(fileID: Array(uploadID.utf8), ring: ring)
        started = StoredFile(
            uploadID: uploadID, keyID: sealer.wrappedKey.keyID, wrappedKey: sealer.wrappedKey.sealed, createdAt: now)
        fingerprint = HMACStream(ring.fingerprintMAC)
        fingerprint.update(Array("cloak/v1/file\0".utf8))
        pending.reserveCapacity(FileSeal.chunkSize)
    }

    package var uploadID: String { started.uploadID }
    /// Bytes given so far.
    package var bytes: Int { inspection.bytes }

    /// Takes the next bytes of the file; the chunks they completed, sealed, with their indexes.
    package func feed(_ bytes: some Collection<UInt8>) throws(CryptoError) -> [(index: Int, sealed: [UInt8])] {
        precondition(!finished, "bytes after a file's end")
        inspection.feed(bytes)
        fingerprint.update(bytes)
        var out: [(index: Int, sealed: [UInt8])] = []
        var rest = bytes[...]
        while !rest.isEmpty {
            let take = min(FileSeal.chunkSize - pending.count, rest.count)
            pending.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            // A full chunk is sealed once more bytes show it is not the last.
            if pending.count == FileSeal.chunkSize && !rest.isEmpty {
                out.append(try sealPending(isLast: false))
            }
        }
        return out
    }

    /// The file ended: its last chunk (the only one of an empty file), what the content is, its
    /// fingerprint, and how many chunks it has.
    package func finish() throws(CryptoError) -> (
        last: (index: Int, sealed: [UInt8]), inspection: FileInspection, fingerprint: [UInt8], chunkCount: Int
    ) {
        precondition(!finished, "a file finished twice")
        let last = try sealPending(isLast: true)
        finished = true
        return (last, inspection, fingerprint.finalize(), Int(sealer.count))
    }

    private func sealPending(isLast: Bool) throws(CryptoError) -> (index: Int, sealed: [UInt8]) {
        let index = Int(sealer.count)
        let sealed = try sealer.seal(pending, isLast: isLast)
        pending.removeAll(keepingCapacity: true)
        return (index, sealed)
    }
}
