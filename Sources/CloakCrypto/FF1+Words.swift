/// FF1 on machine words: the path every card number, SSN and short code takes.
///
/// When radix^v < 2^32, b is at most 4 bytes and d is 8, so NUM_radix of a half is a `UInt64`,
/// y is one 64-bit number and c = (NUM(A) ± y) mod radix^m is word arithmetic. The halves stay
/// numbers across the ten rounds (C of one round is B of the next): numerals are read once and
/// written once, and a round is one PRF call, a Barrett reduction and an addition. The general
/// path computes the same values (the NIST vectors and a cross-check test run both).
extension FF1 {
    func runWords(
        _ x: [UInt8], tweak: [UInt8], decrypting: Bool, u: Int, v: Int, b: Int,
        powerU: UInt64, powerV: UInt64
    ) -> [UInt8] {
        let n = u + v, t = tweak.count
        let padding = ((-(t + b + 1)) % 16 + 16) % 16
        let qLength = t + padding + 1 + b
        let r64 = UInt64(radix)
        // Barrett reciprocals: y mod radix^m by a multiplication instead of a 64-bit division
        // (the divisions were most of an encryption's time).
        let reciprocalU = UInt64.max / powerU, reciprocalV = UInt64.max / powerV
        var a: UInt64 = 0, bValue: UInt64 = 0
        for k in 0..<u { a = a &* r64 &+ UInt64(x[k]) }
        for k in u..<n { bValue = bValue &* r64 &+ UInt64(x[k]) }

        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32 + qLength) { scratch in
            let base = scratch.baseAddress!
            base.initialize(repeating: 0, count: 32 + qLength)
            let p = base, r = base + 16, q = base + 32
            Self.writeP(p, radix: radix, u: u, n: n, t: t)
            // Q = T ‖ [0]^((−t−b−1) mod 16) ‖ [i]¹ ‖ [NUM_radix(B)]^b
            for i in 0..<t { q[i] = tweak[i] }
            cipher.withEncryptor { encrypt in
                encrypt(p)  // CIPH_K(P): the CBC-MAC state after P, the same every round
                let cbcState = Self.block(p)
                for step in 0..<10 {
                    let i = decrypting ? 9 - step : step
                    let (modulus, reciprocal) = i % 2 == 0 ? (powerU, reciprocalU) : (powerV, reciprocalV)
                    q[t + padding] = UInt8(i)
                    let number = decrypting ? a : bValue
                    for k in 0..<b { q[qLength - 1 - k] = UInt8(truncatingIfNeeded: number >> (8 * UInt64(k))) }
                    // R = PRF(P ‖ Q); S = R (d = 8 ≤ 16)
                    Self.prf(r, state: cbcState, q: q, length: qLength, encrypt: encrypt)
                    // y = NUM(S[0..<8]) mod radix^m: the estimate falls short by at most 2.
                    let whole = UInt64(bigEndian: UnsafeRawPointer(r).loadUnaligned(as: UInt64.self))
                    var y = whole &- whole.multipliedFullWidth(by: reciprocal).high &* modulus
                    while y >= modulus { y &-= modulus }
                    // Both operands are below the modulus.
                    if decrypting {
                        var c = bValue &+ modulus &- y
                        if c >= modulus { c &-= modulus }
                        (bValue, a) = (a, c)  // B = A; A = C
                    } else {
                        var c = a &+ y
                        if c >= modulus { c &-= modulus }
                        (a, bValue) = (bValue, c)  // A = B; B = C
                    }
                }
            }
        }
        return [UInt8](unsafeUninitializedCapacity: n) { out, count in
            Self.writeDigits(a, count: u, radix: radix, into: out.baseAddress!)
            Self.writeDigits(bValue, count: v, radix: radix, into: out.baseAddress! + u)
            count = n
        }
    }

    /// R = PRF(P ‖ Q): CBC-MAC over Q's blocks from `state`, the MAC state after P; into `r`.
    @inline(__always)
    static func prf(
        _ r: UnsafeMutablePointer<UInt8>, state: SIMD16<UInt8>, q: UnsafeMutablePointer<UInt8>, length: Int,
        encrypt: (UnsafeMutablePointer<UInt8>) -> Void
    ) {
        setBlock(r, state)
        var offset = 0
        while offset < length {
            setBlock(r, block(r) ^ block(q + offset))
            encrypt(r)
            offset += 16
        }
    }

    @inline(__always)
    static func block(_ p: UnsafeMutablePointer<UInt8>) -> SIMD16<UInt8> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD16<UInt8>.self)
    }

    @inline(__always)
    static func setBlock(_ p: UnsafeMutablePointer<UInt8>, _ value: SIMD16<UInt8>) {
        UnsafeMutableRawPointer(p).storeBytes(of: value, as: SIMD16<UInt8>.self)
    }

    /// Writes `value` as `count` numerals, most significant first.
    static func writeDigits(_ value: UInt64, count: Int, radix: Int, into out: UnsafeMutablePointer<UInt8>) {
        var value = value
        var k = count - 1
        let r = UInt64(radix)
        while k >= 0 {
            let q = value / r
            out[k] = UInt8(truncatingIfNeeded: value - q * r)
            value = q
            k -= 1
        }
    }
}
