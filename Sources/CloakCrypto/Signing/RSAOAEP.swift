import COpenSSL

/// RSAES-OAEP's decoding (RFC 8017 7.1.2, SHA-256 and MGF1 SHA-256, no label) of a block a
/// PKCS#11 token decrypted raw, for tokens that do RSA on the token but not OAEP with SHA-256.
/// OpenSSL's check runs in constant time, and every failure is one answer.
enum RSAOAEP {
    static func unpadSHA256(_ encoded: [UInt8], modulusBytes: Int) throws(CryptoError) -> [UInt8] {
        guard encoded.count <= modulusBytes, modulusBytes > 2 * 32 + 2 else {
            throw CryptoError("RSA-OAEP decoding failed")
        }
        // The block left-padded to the modulus' size (a token may drop leading zeros).
        var block = [UInt8](repeating: 0, count: modulusBytes - encoded.count) + encoded
        defer { wipe(&block) }
        var out = [UInt8](repeating: 0, count: modulusBytes)
        let length = block.withUnsafeBufferPointer { from in
            out.withUnsafeMutableBufferPointer { to in
                RSA_padding_check_PKCS1_OAEP_mgf1(
                    to.baseAddress, Int32(modulusBytes), from.baseAddress, Int32(modulusBytes), Int32(modulusBytes),
                    nil, 0, Algorithms.sha256, Algorithms.sha256)
            }
        }
        ERR_clear_error()
        guard length >= 0 else {
            wipe(&out)
            throw CryptoError("RSA-OAEP decoding failed")
        }
        out.removeLast(out.count - Int(length))
        return out
    }
}
