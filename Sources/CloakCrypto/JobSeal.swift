/// A bulk job's chunks (issue 60): its input as stored and its outputs as written, each chunk
/// AES-256-GCM under a key of the job's own, that key sealed under the ring's current data key
/// (as a file's: ``FileSeal``). Its streams are ``ChunkSeal``s: a chunk's associated data names
/// the job, the stream, its place and whether it is the stream's last, so a chunk moved to
/// another job, stream or place, or a stream cut short, does not open as whole.
///
/// Unlike a file's sealer, which seals in one pass, a job's streams are written by whichever
/// node holds the job, batch by batch: a chunk is sealed at the place the store says is next.
package struct JobSeal: Sendable {
    private let jobID: [UInt8]
    private let key: SymmetricKey
    package let wrappedKey: FileSeal.WrappedKey

    /// A new key for job `jobID`, under the ring's current data key, bound to `binding` (what
    /// the job is and whose: a database writer who changes either finds the key no longer opens).
    package init(newJob jobID: String, binding: [UInt8], ring: KeyRing) throws(CryptoError) {
        self.jobID = Array(jobID.utf8)
        key = SymmetricKey(SecureRandom.bytes(32))
        let current = ring.current
        let box = try AESGCM.seal(
            key.rawBytes, key: current.encryptionKey, associatedData: Self.keyContext(self.jobID, binding: binding))
        wrappedKey = FileSeal.WrappedKey(keyID: current.id, sealed: FileSeal.pack(box))
    }

    /// The key of job `jobID` as stored.
    /// - Throws: ``CryptoError/authenticationFailed`` when it does not open for this job and
    ///   `binding`, or a ``CryptoError`` when its data key is not in the ring.
    package init(job jobID: String, binding: [UInt8], wrappedKey: FileSeal.WrappedKey, ring: KeyRing)
        throws(CryptoError)
    {
        guard let dataKey = ring.key(id: wrappedKey.keyID) else {
            throw CryptoError("the job's data key is not in the key ring")
        }
        guard let box = FileSeal.unpack(wrappedKey.sealed) else { throw CryptoError.authenticationFailed }
        let id = Array(jobID.utf8)
        let raw = try AESGCM.open(
            box, key: dataKey.encryptionKey, associatedData: Self.keyContext(id, binding: binding))
        guard raw.count == 32 else { throw CryptoError.authenticationFailed }
        self.jobID = id
        key = SymmetricKey(raw)
        self.wrappedKey = wrappedKey
    }

    /// The most plaintext one chunk holds: an input chunk is ``FileSeal/chunkSize``, an output
    /// chunk one batch's lines (bounded by the batch's rows and each line's limits).
    package static let chunkLimit = 1 << 20

    /// The job's stream `part` (``ChunkSeal``: each chunk bound to this job, the stream, its
    /// place and whether it is the last).
    package func chunks(_ part: Int) -> ChunkSeal { ChunkSeal(key: key, binding: .job(id: jobID, stream: part)) }

    /// Seals chunk `index` of stream `part` (at most ``chunkLimit`` bytes).
    package func seal(_ plain: [UInt8], part: Int, index: Int, isLast: Bool) throws(CryptoError) -> [UInt8] {
        guard plain.count <= Self.chunkLimit else { throw CryptoError("a job chunk over the chunk limit") }
        return try chunks(part).seal(plain, place: index, isLast: isLast)
    }

    /// Opens chunk `index` of stream `part`, and says whether it was sealed as the last.
    /// - Throws: ``CryptoError/authenticationFailed`` for a chunk out of its place or altered.
    package func open(_ sealed: [UInt8], part: Int, index: Int) throws(CryptoError) -> (bytes: [UInt8], isLast: Bool) {
        try chunks(part).open(sealed, place: index)
    }

    static func keyContext(_ jobID: [UInt8], binding: [UInt8]) -> [UInt8] {
        Array("cloak/v1/job-key\0".utf8) + jobID + [0] + Digest.sha256(binding)
    }
}

extension JobSeal {
    /// A job's key sealed again under the ring's current data key (`cloak keys rewrap`): opened
    /// with the data key it names, which the ring must still hold. The job's chunks stay as they
    /// are: only its own key is sealed by the ring (review V, item 10: finished jobs' keys kept
    /// `cloak keys retire` from retiring a version rewrap had otherwise emptied).
    /// - Throws: ``CryptoError/authenticationFailed`` when it does not open for this job.
    package static func rewrapped(
        _ wrapped: FileSeal.WrappedKey, job jobID: String, binding: [UInt8], ring: KeyRing
    ) throws(CryptoError) -> FileSeal.WrappedKey {
        guard let old = ring.key(id: wrapped.keyID) else {
            throw CryptoError("the job's data key is not in the key ring")
        }
        guard let box = FileSeal.unpack(wrapped.sealed) else { throw CryptoError.authenticationFailed }
        let context = keyContext(Array(jobID.utf8), binding: binding)
        var raw = try AESGCM.open(box, key: old.encryptionKey, associatedData: context)
        defer { for i in raw.indices { raw[i] = 0 } }
        let current = ring.current
        let sealed = try AESGCM.seal(raw, key: current.encryptionKey, associatedData: context)
        return FileSeal.WrappedKey(keyID: current.id, sealed: FileSeal.pack(sealed))
    }
}
