import COpenSSL

/// RSAES-OAEP's decoding (RFC 8017 7.1.2, SHA-256 and MGF1 SHA-256, no label) of a block a
/// PKCS#11 token decrypted raw, for tokens that do RSA on the token but not OAEP with SHA-256.
///
/// OpenSSL has no public call that only strips OAEP padding any more (the one it had is
/// deprecated), so the block goes through its EVP OAEP decryption under a key of the token's
/// modulus whose exponents are both 1: that RSA operation is the identity, and what is left is
/// OpenSSL's own constant-time OAEP check. Every failure is one answer.
enum RSAOAEP {
    static func unpadSHA256(_ encoded: [UInt8], modulus: [UInt8]) throws(CryptoError) -> [UInt8] {
        let modulus = Array(modulus.drop { $0 == 0 })
        let modulusBytes = modulus.count
        guard encoded.count <= modulusBytes, modulusBytes > 2 * 32 + 2 else {
            throw CryptoError("RSA-OAEP decoding failed")
        }
        // The block left-padded to the modulus' size (a token may drop leading zeros).
        var block = [UInt8](repeating: 0, count: modulusBytes - encoded.count) + encoded
        defer { wipe(&block) }
        guard let key = identityKey(modulus) else { throw CryptoError("RSA-OAEP decoding failed") }
        defer { EVP_PKEY_free(key) }
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { throw CryptoError("RSA-OAEP decoding failed") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: modulusBytes)
        var length = out.count
        let rc: Int32 =
            EVP_PKEY_decrypt_init(ctx) == 1 && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1
                && EVP_PKEY_CTX_set_rsa_oaep_md(ctx, Algorithms.sha256) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, Algorithms.sha256) == 1
            ? block.withUnsafeBufferPointer { from in
                out.withUnsafeMutableBufferPointer { to in
                    EVP_PKEY_decrypt(ctx, to.baseAddress, &length, from.baseAddress, from.count)
                }
            } : 0
        ERR_clear_error()
        guard rc == 1 else {
            wipe(&out)
            throw CryptoError("RSA-OAEP decoding failed")
        }
        out.removeLast(out.count - length)
        return out
    }

    /// An RSA key pair (n, e = 1, d = 1): public, since it holds nothing secret.
    private static func identityKey(_ modulus: [UInt8]) -> OpaquePointer? {
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard let n = BN_bin2bn(modulus, Int32(modulus.count), nil), let one = BN_new() else { return nil }
        defer {
            BN_free(n)
            BN_free(one)
        }
        // The builder keeps the names' pointers until `to_param`: static strings, never a
        // bridged String's temporary (OSSL_PKEY_PARAM_RSA_N, _E, _D).
        func name(_ text: StaticString) -> UnsafePointer<CChar> {
            UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        guard BN_set_word(one, 1) == 1,
            OSSL_PARAM_BLD_push_BN(builder, name("n"), n) == 1,
            OSSL_PARAM_BLD_push_BN(builder, name("e"), one) == 1,
            OSSL_PARAM_BLD_push_BN(builder, name("d"), one) == 1,
            let parameters = OSSL_PARAM_BLD_to_param(builder)
        else { return nil }
        defer { OSSL_PARAM_free(parameters) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { return nil }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1, EVP_PKEY_fromdata(ctx, &key, cloak_evp_pkey_keypair(), parameters) == 1
        else {
            ERR_clear_error()
            return nil
        }
        return key
    }
}
