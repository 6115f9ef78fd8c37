import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        let rc = out.withUnsafeMutableBytes { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count)) }
        // Without randomness no alias or nonce is safe to issue; stopping is the only safe answer.
        precondition(rc == 1, "RAND_bytes failed")
        return out
    }

    /// A uniform integer in `0..<bound` (rejection sampling, no modulo bias).
    public static func uniform(_ bound: Int) -> Int {
        precondition(bound > 0)
        let limit = UInt64.max - UInt64.max % UInt64(bound)
        while true {
            let b = bytes(8)
            let v = b.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if v < limit { return Int(v % UInt64(bound)) }
        }
    }
}
