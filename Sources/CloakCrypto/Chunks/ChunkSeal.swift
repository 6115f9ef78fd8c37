/// One stream of sealed chunks (issues 47, 60 and 76): a stored file's content, or one of a
/// job's streams (its input, mapping, advice, export, selection, approval). Each chunk is
/// AES-256-GCM under the key of the stream's owner, with associated data that binds the
/// owner's kind, its id, the stream, the chunk's place and whether it is the stream's last, so
/// a chunk moved to another place, stream, owner or kind, or a stream cut short, does not open
/// as whole. Files and jobs share this code and keep their own bytes:
///
/// | kind | associated data |
/// |---|---|
/// | file | `cloak/v1/file-chunk` ‖ file id ‖ place (4 bytes, big-endian) ‖ last (1 byte) |
/// | job | `cloak/v1/job-chunk` ‖ 0 ‖ job id ‖ 0 ‖ stream (1 byte) ‖ place (8 bytes, big-endian) ‖ last (1 byte) |
///
/// A sealed chunk is nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes) (``FileSeal/pack(_:)``).
/// The owner's key is sealed under the ring by its owner (``FileSealer``, ``JobSeal``), with a
/// key context of its kind's own.
package struct ChunkSeal: Sendable {
    package enum Binding: Sendable, Equatable {
        case file(id: [UInt8])
        case job(id: [UInt8], stream: Int)
    }

    private let key: SymmetricKey
    package let binding: Binding

    init(key: SymmetricKey, binding: Binding) {
        self.key = key
        self.binding = binding
    }

    /// Seals the chunk at `place`; `isLast` for the stream's last.
    package func seal(_ plain: [UInt8], place: Int, isLast: Bool) throws(CryptoError) -> [UInt8] {
        let box = try AESGCM.seal(plain, key: key, associatedData: try context(place: place, isLast: isLast))
        return FileSeal.pack(box)
    }

    /// Opens the chunk at `place`, and says whether it was sealed as the stream's last.
    /// - Throws: ``CryptoError/authenticationFailed`` for a chunk out of its place, of another
    ///   stream, owner or kind, or altered.
    package func open(_ sealed: [UInt8], place: Int) throws(CryptoError) -> (bytes: [UInt8], isLast: Bool) {
        guard let box = FileSeal.unpack(sealed) else { throw CryptoError.authenticationFailed }
        // The sealer said whether this chunk is the last: both readings are tried, and only the
        // one it was sealed with opens.
        for isLast in [false, true] {
            if let plain = try? AESGCM.open(box, key: key, associatedData: try context(place: place, isLast: isLast)) {
                return (plain, isLast)
            }
        }
        throw CryptoError.authenticationFailed
    }

    func context(place: Int, isLast: Bool) throws(CryptoError) -> [UInt8] {
        var out: [UInt8]
        switch binding {
        case let .file(id):
            guard let index = UInt32(exactly: place) else { throw CryptoError("a file chunk's place out of range") }
            out = Array("cloak/v1/file-chunk".utf8) + id
            withUnsafeBytes(of: index.bigEndian) { out.append(contentsOf: $0) }
        case let .job(id, stream):
            guard place >= 0 else { throw CryptoError("a job chunk's place out of range") }
            out = Array("cloak/v1/job-chunk\0".utf8) + id
            out.append(0)
            out.append(UInt8(truncatingIfNeeded: stream))
            withUnsafeBytes(of: UInt64(place).bigEndian) { out.append(contentsOf: $0) }
        }
        out.append(isLast ? 1 : 0)
        return out
    }
}
