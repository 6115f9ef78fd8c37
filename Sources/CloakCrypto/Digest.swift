import COpenSSL

/// SHA-256, SHA-384 and HMAC-SHA-256.
package enum Digest {
    /// SHA-384: what Subresource Integrity values (`sha384-…`) are made of.
    package static func sha384(_ data: [UInt8]) -> [UInt8] {
        var length: UInt32 = 0
        var rc: Int32 = 0
        let out = data.withUnsafeBytes { d in
            [UInt8](unsafeUninitializedCapacity: 48) { o, count in
                rc = EVP_Digest(d.baseAddress, d.count, o.baseAddress, &length, Algorithms.sha384, nil)
                count = 48
            }
        }
        precondition(rc == 1 && length == 48, "EVP_Digest(SHA-384) failed")
        return out
    }

    package static func sha256(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { sha256($0) }
    }

    package static func sha256(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var length: UInt32 = 0
        var rc: Int32 = 0
        let out = [UInt8](unsafeUninitializedCapacity: 32) { o, count in
            rc = EVP_Digest(data.baseAddress, data.count, o.baseAddress, &length, Algorithms.sha256, nil)
            count = 32
        }
        precondition(rc == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return out
    }

    /// HMAC-SHA-256 (RFC 2104) under a key used once (derivations). A key used for many
    /// messages is made ready once as an ``HMACKey``.
    package static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        HMACKey(SymmetricKey(key)).authenticate(data)
    }
}
