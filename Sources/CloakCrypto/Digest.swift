import COpenSSL

/// SHA-256 and HMAC-SHA-256.
public enum Digest {
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { sha256($0) }
    }

    public static func sha256(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var length: UInt32 = 0
        var rc: Int32 = 0
        let out = [UInt8](unsafeUninitializedCapacity: 32) { o, count in
            rc = EVP_Digest(data.baseAddress, data.count, o.baseAddress, &length, Algorithms.sha256, nil)
            count = 32
        }
        precondition(rc == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return out
    }

    /// HMAC-SHA-256 (RFC 2104): SHA-256((K ⊕ opad) ‖ SHA-256((K ⊕ ipad) ‖ data)), built on the
    /// fetched SHA-256 (``Algorithms``) instead of OpenSSL's one-shot `HMAC()`, which looks the
    /// algorithms up on every call. The padded keys are wiped before returning.
    public static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        let blockSize = 64
        var pads = [UInt8](repeating: 0, count: 2 * blockSize)
        defer { pads.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        func pad(_ k: UnsafeRawBufferPointer) {
            for i in 0..<blockSize {
                let b = i < k.count ? k[i] : 0
                pads[i] = b ^ 0x36
                pads[blockSize + i] = b ^ 0x5C
            }
        }
        if key.count > blockSize {
            // A key longer than a block is hashed first; that digest is ours to wipe (the caller's key is not).
            var hashed = sha256(key)
            hashed.withUnsafeBytes(pad)
            hashed.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
        } else {
            key.withUnsafeBytes(pad)
        }
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        var inner = [UInt8](repeating: 0, count: 32)
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        var ok = pads.withUnsafeBytes { p in
            data.withUnsafeBytes { d in
                inner.withUnsafeMutableBytes { i in
                    EVP_DigestInit_ex2(ctx, Algorithms.sha256, nil) == 1
                        && EVP_DigestUpdate(ctx, p.baseAddress, blockSize) == 1
                        && EVP_DigestUpdate(ctx, d.baseAddress, d.count) == 1
                        && EVP_DigestFinal_ex(ctx, i.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) == 1
                }
            }
        }
        ok = ok && length == 32 && pads.withUnsafeBytes { p in
            inner.withUnsafeBytes { i in
                out.withUnsafeMutableBytes { o in
                    EVP_DigestInit_ex2(ctx, Algorithms.sha256, nil) == 1
                        && EVP_DigestUpdate(ctx, p.baseAddress! + blockSize, blockSize) == 1
                        && EVP_DigestUpdate(ctx, i.baseAddress, 32) == 1
                        && EVP_DigestFinal_ex(ctx, o.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) == 1
                }
            }
        }
        precondition(ok && length == 32, "HMAC-SHA-256 failed")
        return out
    }
}
