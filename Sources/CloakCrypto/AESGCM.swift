import COpenSSL

/// AES-256-GCM with a random 96-bit nonce and a 128-bit tag.
package enum AESGCM {
    package struct SealedBox: Sendable, Equatable {
        package var nonce: [UInt8]
        package var ciphertext: [UInt8]
        package var tag: [UInt8]

        package init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }
    }

    /// Encrypts `plaintext` under a 32-byte `key`, binding `associatedData` to it.
    package static func seal(_ plaintext: [UInt8], key: SymmetricKey, associatedData: [UInt8]) throws(CryptoError)
        -> SealedBox
    {
        do { return try sealUntyped(plaintext, key: key, associatedData: associatedData) } catch let e as CryptoError {
            throw e
        } catch { throw CryptoError("\(error)") }
    }

    private static func sealUntyped(_ plaintext: [UInt8], key: SymmetricKey, associatedData: [UInt8]) throws
        -> SealedBox
    {
        guard key.count == 32 else { throw CryptoError("AES-256-GCM needs a 32-byte key") }
        let nonce = SecureRandom.bytes(12)
        let context = try CipherContext()
        let ctx = context.pointer
        // GCM's default IV length is the 12 bytes used here; the cipher is fetched once (Algorithms).
        try key.withBytes { (k) throws in
            try nonce.withUnsafeBytes { n in
                try check(
                    EVP_EncryptInit_ex2(
                        ctx, Algorithms.aes256GCM, k, n.baseAddress?.assumingMemoryBound(to: UInt8.self), nil),
                    "EncryptInit")
            }
        }
        var outLength: Int32 = 0
        if !associatedData.isEmpty {
            try associatedData.withUnsafeBytes { a in
                try check(
                    EVP_EncryptUpdate(
                        ctx, nil, &outLength, a.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(a.count)), "AAD"
                )
            }
        }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var total: Int32 = 0
        try plaintext.withUnsafeBytes { p in
            try ciphertext.withUnsafeMutableBytes { c in
                let out = c.baseAddress!.assumingMemoryBound(to: UInt8.self)
                if !p.isEmpty {
                    try check(
                        EVP_EncryptUpdate(
                            ctx, out, &outLength, p.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(p.count)),
                        "EncryptUpdate")
                    total = outLength
                }
                try check(EVP_EncryptFinal_ex(ctx, out + Int(total), &outLength), "EncryptFinal")
                total += outLength
            }
        }
        ciphertext.removeLast(ciphertext.count - Int(total))
        var tag = [UInt8](repeating: 0, count: 16)
        try tag.withUnsafeMutableBytes { t in
            try check(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, t.baseAddress), "get tag")
        }
        return SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
    }

    /// Decrypts and authenticates.
    /// - Throws: ``CryptoError/authenticationFailed`` when anything was altered or the key is wrong.
    package static func open(_ box: SealedBox, key: SymmetricKey, associatedData: [UInt8]) throws(CryptoError)
        -> [UInt8]
    {
        do { return try openUntyped(box, key: key, associatedData: associatedData) } catch let e as CryptoError {
            throw e
        } catch { throw CryptoError("\(error)") }
    }

    private static func openUntyped(_ box: SealedBox, key: SymmetricKey, associatedData: [UInt8]) throws -> [UInt8] {
        guard key.count == 32, box.nonce.count == 12, box.tag.count == 16 else {
            throw CryptoError.authenticationFailed
        }
        let context = try CipherContext()
        let ctx = context.pointer
        try key.withBytes { (k) throws in
            try box.nonce.withUnsafeBytes { n in
                try check(
                    EVP_DecryptInit_ex2(
                        ctx, Algorithms.aes256GCM, k, n.baseAddress?.assumingMemoryBound(to: UInt8.self), nil),
                    "DecryptInit")
            }
        }
        var outLength: Int32 = 0
        if !associatedData.isEmpty {
            try associatedData.withUnsafeBytes { a in
                try check(
                    EVP_DecryptUpdate(
                        ctx, nil, &outLength, a.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(a.count)), "AAD"
                )
            }
        }
        var plaintext = [UInt8](repeating: 0, count: box.ciphertext.count + 16)
        var total: Int32 = 0
        var tag = box.tag
        try tag.withUnsafeMutableBytes { t in
            try check(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, t.baseAddress), "set tag")
        }
        let ok = box.ciphertext.withUnsafeBytes { c in
            plaintext.withUnsafeMutableBytes { p -> Bool in
                let out = p.baseAddress!.assumingMemoryBound(to: UInt8.self)
                if !c.isEmpty {
                    guard
                        EVP_DecryptUpdate(
                            ctx, out, &outLength, c.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(c.count))
                            == 1
                    else { return false }
                    total = outLength
                }
                return EVP_DecryptFinal_ex(ctx, out + Int(total), &outLength) == 1
            }
        }
        ERR_clear_error()
        guard ok else { throw CryptoError.authenticationFailed }
        total += outLength
        plaintext.removeLast(plaintext.count - Int(total))
        return plaintext
    }
}

/// Owns one `EVP_CIPHER_CTX`.
final class CipherContext {
    let pointer: OpaquePointer

    init() throws(CryptoError) {
        guard let p = EVP_CIPHER_CTX_new() else { throw CryptoError("EVP_CIPHER_CTX_new failed") }
        pointer = p
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }
}
