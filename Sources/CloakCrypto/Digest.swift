import COpenSSL

/// SHA-256 and HMAC-SHA-256.
public enum Digest {
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let rc = data.withUnsafeBytes { d in
            out.withUnsafeMutableBytes { o in
                EVP_Digest(d.baseAddress, d.count, o.baseAddress!.assumingMemoryBound(to: UInt8.self), &length, EVP_sha256(), nil)
            }
        }
        precondition(rc == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return out
    }

    public static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { k in
            data.withUnsafeBytes { d in
                out.withUnsafeMutableBytes { o in
                    HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), d.baseAddress?.assumingMemoryBound(to: UInt8.self),
                         d.count, o.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
                }
            }
        }
        precondition(result != nil && length == 32, "HMAC-SHA-256 failed")
        return out
    }
}
