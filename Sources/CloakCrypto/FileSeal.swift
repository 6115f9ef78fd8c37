/// A file sealed in chunks (issue 47): each chunk AES-256-GCM under a key of the file's own,
/// that key sealed under the ring's current data key. The chunks' order and count are
/// authenticated: chunk `k` is sealed with the file's id, `k` and whether it is the last in its
/// associated data, so a chunk moved, repeated, dropped, or cut off after it fails to open, and a
/// file whose last chunk is missing never reads as whole (``FileOpener/finish()``).
///
/// Streaming on both sides: a sealer takes chunks as they arrive (at most ``chunkSize`` bytes
/// of plaintext each) and an opener hands back each chunk's plaintext as it is read, so no
/// whole file is held in memory.
package enum FileSeal {
    /// Plaintext bytes of every chunk but the last (which may be shorter, or empty for an empty
    /// file: refused before sealing by the file rules, but sealed correctly all the same).
    package static let chunkSize = 64 << 10
    /// Bytes a sealed chunk adds: the nonce and the tag.
    package static let overhead = 12 + 16

    /// The file's own key, sealed: the data key's id and the box (nonce, ciphertext, tag).
    package struct WrappedKey: Sendable, Equatable {
        package var keyID: String
        package var sealed: [UInt8]

        package init(keyID: String, sealed: [UInt8]) {
            self.keyID = keyID
            self.sealed = sealed
        }
    }

    static func keyContext(_ fileID: [UInt8]) -> [UInt8] { Array("cloak/v1/file-key".utf8) + fileID }

    package static func pack(_ box: AESGCM.SealedBox) -> [UInt8] { box.nonce + box.ciphertext + box.tag }

    package static func unpack(_ bytes: [UInt8]) -> AESGCM.SealedBox? {
        guard bytes.count >= overhead else { return nil }
        return AESGCM.SealedBox(
            nonce: Array(bytes[0..<12]), ciphertext: Array(bytes[12..<(bytes.count - 16)]),
            tag: Array(bytes[(bytes.count - 16)...]))
    }
}

/// Seals one file's chunks in order.
package struct FileSealer: Sendable {
    let fileID: [UInt8]
    private let chunks: ChunkSeal
    package let wrappedKey: FileSeal.WrappedKey
    private var next: UInt32 = 0
    private var finished = false

    /// A new file key for `fileID` (the file's stored id: a chunk of one file cannot be passed off
    /// as another's), sealed under the ring's current data key.
    package init(fileID: [UInt8], ring: KeyRing) throws(CryptoError) {
        self.fileID = fileID
        let key = SymmetricKey(SecureRandom.bytes(32))
        chunks = ChunkSeal(key: key, binding: .file(id: fileID))
        let current = ring.current
        let box = try AESGCM.seal(key.rawBytes, key: current.encryptionKey, associatedData: FileSeal.keyContext(fileID))
        wrappedKey = FileSeal.WrappedKey(keyID: current.id, sealed: FileSeal.pack(box))
    }

    /// Chunks sealed so far.
    package var count: UInt32 { next }

    /// Seals the next chunk (at most ``FileSeal/chunkSize`` bytes); `isLast` for the file's last.
    package mutating func seal(_ chunk: [UInt8], isLast: Bool) throws(CryptoError) -> [UInt8] {
        guard !finished else { throw CryptoError("the file's last chunk was sealed already") }
        guard chunk.count <= FileSeal.chunkSize else { throw CryptoError("a file chunk over the chunk size") }
        guard next < UInt32.max else { throw CryptoError("too many chunks in one file") }
        let sealed = try chunks.seal(chunk, place: Int(next), isLast: isLast)
        next += 1
        finished = isLast
        return sealed
    }
}

/// Opens one file's chunks in the order they were sealed.
package struct FileOpener: Sendable {
    let fileID: [UInt8]
    /// The file's chunks, each opened in its place (a reader that keeps its own place).
    package let chunks: ChunkSeal
    private var next: UInt32 = 0
    private var sawLast = false

    /// - Throws: ``CryptoError/authenticationFailed`` when the wrapped key does not open (another
    ///   file's, altered), or a ``CryptoError`` when its data key is not in the ring.
    package init(fileID: [UInt8], wrappedKey: FileSeal.WrappedKey, ring: KeyRing) throws(CryptoError) {
        guard let dataKey = ring.key(id: wrappedKey.keyID) else {
            throw CryptoError("the file's data key is not in the key ring")
        }
        guard let box = FileSeal.unpack(wrappedKey.sealed) else { throw CryptoError.authenticationFailed }
        let raw = try AESGCM.open(box, key: dataKey.encryptionKey, associatedData: FileSeal.keyContext(fileID))
        guard raw.count == 32 else { throw CryptoError.authenticationFailed }
        self.fileID = fileID
        chunks = ChunkSeal(key: SymmetricKey(raw), binding: .file(id: fileID))
    }

    /// The plaintext of the next chunk, and whether it was sealed as the last.
    /// - Throws: ``CryptoError/authenticationFailed`` for a chunk out of its place, altered, cut,
    ///   or any chunk after the last.
    package mutating func open(_ sealed: [UInt8]) throws(CryptoError) -> (bytes: [UInt8], isLast: Bool) {
        guard !sawLast else { throw CryptoError.authenticationFailed }
        let opened = try chunks.open(sealed, place: Int(next))
        next += 1
        sawLast = opened.isLast
        return opened
    }

    /// Checks that the file's last chunk was read: a file cut after any chunk is refused here.
    package func finish() throws(CryptoError) {
        guard sawLast else { throw CryptoError.authenticationFailed }
    }
}

extension FileSeal {
    /// A file's key sealed again under the ring's current data key (key rewrap): opened with the
    /// data key it names, which the ring must still hold.
    /// - Throws: ``CryptoError/authenticationFailed`` when it does not open for this file.
    package static func rewrapped(_ wrapped: WrappedKey, fileID: [UInt8], ring: KeyRing) throws(CryptoError)
        -> WrappedKey
    {
        guard let old = ring.key(id: wrapped.keyID) else {
            throw CryptoError("the file's data key is not in the key ring")
        }
        guard let box = unpack(wrapped.sealed) else { throw CryptoError.authenticationFailed }
        var raw = try AESGCM.open(box, key: old.encryptionKey, associatedData: keyContext(fileID))
        defer { for i in raw.indices { raw[i] = 0 } }
        let current = ring.current
        let sealed = try AESGCM.seal(raw, key: current.encryptionKey, associatedData: keyContext(fileID))
        return WrappedKey(keyID: current.id, sealed: pack(sealed))
    }
}
