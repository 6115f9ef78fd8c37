import COpenSSL

/// An HMAC-SHA-256 key made ready once: the SHA-256 states after absorbing `K ⊕ ipad` and
/// `K ⊕ opad` are kept, and each MAC starts from copies of them, so a MAC costs the message's
/// hashing and no key padding (``Digest/hmacSHA256(key:_:)`` pads the key on every call:
/// callgrind counted about 16,000 instructions for a short message, two per alias the vault
/// issues).
///
/// The states are only read after `init`: one key serves every thread. They hold key material;
/// `EVP_MD_CTX_free` wipes them.
package final class HMACKey: @unchecked Sendable {
    private let inner: OpaquePointer
    private let outer: OpaquePointer
    /// For ``HMACStream``, which continues from them.
    var innerState: OpaquePointer { inner }
    var outerState: OpaquePointer { outer }

    package init(_ key: SymmetricKey) {
        let blockSize = 64
        var padded = [UInt8](repeating: 0, count: 2 * blockSize)
        defer { padded.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        var material = key.rawBytes.count > blockSize ? Digest.sha256(key.rawBytes) : key.rawBytes
        defer { material.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        padded.withUnsafeMutableBufferPointer { pads in
            for i in 0..<blockSize {
                let b = i < material.count ? material[i] : 0
                pads[i] = b ^ 0x36
                pads[blockSize + i] = b ^ 0x5C
            }
        }
        guard let inner = EVP_MD_CTX_new(), let outer = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        let ok = padded.withUnsafeBytes { p in
            EVP_DigestInit_ex2(inner, Algorithms.sha256, nil) == 1
                && EVP_DigestUpdate(inner, p.baseAddress, blockSize) == 1
                && EVP_DigestInit_ex2(outer, Algorithms.sha256, nil) == 1
                && EVP_DigestUpdate(outer, p.baseAddress! + blockSize, blockSize) == 1
        }
        precondition(ok, "HMAC-SHA-256 key setup failed")
        self.inner = inner
        self.outer = outer
    }

    deinit {
        EVP_MD_CTX_free(inner)
        EVP_MD_CTX_free(outer)
    }

    /// HMAC-SHA-256 of `data` under this key.
    package func authenticate(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        var length: UInt32 = 0
        var ok = false
        let out = [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { innerDigest in
                ok =
                    EVP_MD_CTX_copy_ex(ctx, inner) == 1 && EVP_DigestUpdate(ctx, data.baseAddress, data.count) == 1
                    && EVP_DigestFinal_ex(ctx, innerDigest.baseAddress, &length) == 1 && length == 32
                    && EVP_MD_CTX_copy_ex(ctx, outer) == 1 && EVP_DigestUpdate(ctx, innerDigest.baseAddress, 32) == 1
                    && EVP_DigestFinal_ex(ctx, out.baseAddress, &length) == 1 && length == 32
                OPENSSL_cleanse(innerDigest.baseAddress, 32)
            }
            count = 32
        }
        precondition(ok, "HMAC-SHA-256 failed")
        return out
    }

    package func authenticate(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { authenticate($0) }
    }
}
