import Foundation

/// NIST SP 800-38G FF1 format-preserving encryption over numerals `0..<radix`.
///
/// Numeral strings are arrays of numeral values (0 to radix-1); ``FF1/Alphabet`` maps text to
/// numerals. Any radix 2…62 and AES-128/192/256 keys are supported. Arithmetic is done on byte
/// strings (no big-integer type): `NUM_radix` multiplies into `b` bytes, and `y mod radix^m` is
/// read off by repeated division of `S`, so every length works. Halves that fit in 32 bits take
/// the word path (`FF1+Words.swift`).
///
/// ```swift
/// let ff1 = try FF1(key: SymmetricKey(keyBytes), radix: 10)
/// let c = try ff1.encrypt([0,1,2,3,4,5,6,7,8,9], tweak: [])   // NIST sample 1: 2433477484
/// ```
package final class FF1: Sendable {
    package let radix: Int
    let cipher: AESBlockCipher

    package struct InputError: Error, Sendable, Equatable, CustomStringConvertible {
        package let description: String
    }

    package init(key: SymmetricKey, radix: Int) throws(CryptoError) {
        guard (2...62).contains(radix) else { throw CryptoError("FF1 radix must be 2…62, not \(radix)") }
        self.radix = radix
        self.cipher = try AESBlockCipher(key: key)
    }

    package func encrypt(_ numerals: [UInt8], tweak: [UInt8]) throws(InputError) -> [UInt8] {
        try run(numerals, tweak: tweak, decrypting: false)
    }

    package func decrypt(_ numerals: [UInt8], tweak: [UInt8]) throws(InputError) -> [UInt8] {
        try run(numerals, tweak: tweak, decrypting: true)
    }

    /// Bytes needed for `v` numerals: ⌈⌈v·log2(radix)⌉ / 8⌉.
    static func byteLength(numerals v: Int, radix: Int) -> Int {
        // ⌈v·log2(radix)⌉ as the bit length of radix^v − 1, computed exactly for powers of two.
        let bits: Int
        if radix & (radix - 1) == 0 {
            bits = v * radix.trailingZeroBitCount
        } else if radix == 10 && v < 4096 {
            bits = (v * 3_321_928_095 + 999_999_999) / 1_000_000_000  // ⌈v·log2(10)⌉, exact for v < 10^6
        } else {
            bits = Int((Double(v) * log2(Double(radix))).rounded(.up))
        }
        return (bits + 7) / 8
    }

    /// - Parameter words: take the word path when the halves fit (false only in the test that
    ///   checks both paths agree).
    func run(_ x: [UInt8], tweak: [UInt8], decrypting: Bool, words: Bool = true) throws(InputError) -> [UInt8] {
        let n = x.count
        guard n >= 2 else { throw InputError(description: "FF1 needs at least 2 numerals") }
        guard n <= 1 << 20, tweak.count <= 1 << 20 else { throw InputError(description: "FF1 input too long") }
        guard x.allSatisfy({ Int($0) < radix }) else {
            throw InputError(description: "a numeral is not below the radix \(radix)")
        }
        let u = n / 2, v = n - u
        let b = Self.byteLength(numerals: v, radix: radix)
        // When radix^v < 2^32 (up to 9 decimal digits a half: card numbers, SSNs) the halves fit
        // in machine words: ``runWords`` keeps them as numbers across the rounds.
        let r64 = UInt64(radix)
        var powerV: UInt64 = 1
        for _ in 0..<v where powerV < 1 << 32 { powerV *= r64 }
        if words && powerV < 1 << 32 {
            let powerU = (0..<u).reduce(UInt64(1)) { p, _ in p * r64 }
            return runWords(x, tweak: tweak, decrypting: decrypting, u: u, v: v, b: b, powerU: powerU, powerV: powerV)
        }
        let d = 4 * ((b + 3) / 4) + 4
        let t = tweak.count
        let padding = ((-(t + b + 1)) % 16 + 16) % 16
        let qLength = t + padding + 1 + b
        let sLength = ((d + 15) / 16) * 16

        // One scratch area for the whole call: P, Q, R, S, a copy of S for division, A, B, C.
        let total = 16 + qLength + 16 + sLength + d + 3 * n
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: total) { scratch -> [UInt8] in
            let base = scratch.baseAddress!
            base.initialize(repeating: 0, count: total)
            let p = base, q = p + 16, r = q + qLength, s = r + 16, work = s + sLength
            var a = work + d, bb = a + n, c = bb + n
            Self.writeP(p, radix: radix, u: u, n: n, t: t)
            // Q = T ‖ [0]^((−t−b−1) mod 16) ‖ [i]¹ ‖ [NUM_radix(B)]^b
            for i in 0..<t { q[i] = tweak[i] }
            for i in 0..<u { a[i] = x[i] }
            for i in 0..<v { bb[i] = x[u + i] }
            var aLength = u, bLength = v

            return cipher.withEncryptor { encrypt in
                encrypt(p)  // CIPH_K(P): the CBC-MAC state after P, the same every round
                let cbcState = Self.block(p)
                for step in 0..<10 {
                    let i = decrypting ? 9 - step : step
                    let m = i % 2 == 0 ? u : v
                    q[t + padding] = UInt8(i)
                    Self.numRadix(
                        decrypting ? a : bb, count: decrypting ? aLength : bLength, radix: radix,
                        into: q + t + padding + 1, length: b)
                    // R = PRF(P ‖ Q)
                    Self.prf(r, state: cbcState, q: q, length: qLength, encrypt: encrypt)
                    // S = R ‖ CIPH(R ⊕ [1]¹⁶) ‖ CIPH(R ⊕ [2]¹⁶) ‖ …, first d bytes
                    Self.setBlock(s, Self.block(r))
                    var block = 1
                    while block * 16 < d {
                        let e = s + block * 16
                        Self.setBlock(e, Self.block(r))
                        var counter = block, k = 15
                        while counter > 0 && k >= 0 {
                            e[k] ^= UInt8(counter & 0xFF)
                            counter >>= 8
                            k -= 1
                        }
                        encrypt(e)
                        block += 1
                    }
                    // c = (NUM_radix(A) ± y) mod radix^m, written to C as m numerals
                    for j in 0..<d { work[j] = s[j] }
                    Self.combine(
                        decrypting ? bb : a, m, yBytes: work, yLength: d, radix: radix, subtract: decrypting, into: c)
                    if decrypting {
                        // B = A; A = C
                        let oldB = bb
                        bb = a; bLength = aLength
                        a = c; aLength = m
                        c = oldB
                    } else {
                        // A = B; B = C
                        let oldA = a
                        a = bb; aLength = bLength
                        bb = c; bLength = m
                        c = oldA
                    }
                }
                let (resultA, lengthA, resultB, lengthB) = (a, aLength, bb, bLength)
                return [UInt8](unsafeUninitializedCapacity: n) { out, count in
                    for j in 0..<lengthA { out[j] = resultA[j] }
                    for j in 0..<lengthB { out[lengthA + j] = resultB[j] }
                    count = n
                }
            }
        }
    }

    /// P = [1]¹ [2]¹ [1]¹ [radix]³ [10]¹ [u mod 256]¹ [n]⁴ [t]⁴
    static func writeP(_ p: UnsafeMutablePointer<UInt8>, radix: Int, u: Int, n: Int, t: Int) {
        (p[0], p[1], p[2], p[3], p[4], p[5]) = (
            1, 2, 1, UInt8(radix >> 16 & 0xFF), UInt8(radix >> 8 & 0xFF), UInt8(radix & 0xFF)
        )
        (p[6], p[7], p[8], p[9], p[10], p[11]) = (
            10, UInt8(u % 256), UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF),
            UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)
        )
        (p[12], p[13], p[14], p[15]) = (
            UInt8(t >> 24 & 0xFF), UInt8(t >> 16 & 0xFF), UInt8(t >> 8 & 0xFF), UInt8(t & 0xFF)
        )
    }

    /// Writes NUM_radix of `count` numerals big-endian into `out[0..<length]`.
    static func numRadix(
        _ numerals: UnsafeMutablePointer<UInt8>, count: Int, radix: Int,
        into out: UnsafeMutablePointer<UInt8>, length: Int
    ) {
        for k in 0..<length { out[k] = 0 }
        let r = UInt32(radix)
        for index in 0..<count {
            var carry = UInt32(numerals[index])
            var k = length - 1
            while k >= 0 {
                let value = UInt32(out[k]) * r + carry
                out[k] = UInt8(truncatingIfNeeded: value)
                carry = value >> 8
                k -= 1
            }
        }
    }

    /// C = (X ± y) mod radix^m, where X is m numerals (most significant first) and y is the
    /// big-endian number in `yBytes` (`yLength` a multiple of 4, as FF1's d always is).
    ///
    /// y's base-radix digits come from dividing it by the radix m times, 32 bits at a time, and
    /// skipping the words that have become zero.
    static func combine(
        _ x: UnsafeMutablePointer<UInt8>, _ m: Int, yBytes: UnsafeMutablePointer<UInt8>, yLength: Int,
        radix: Int, subtract: Bool, into out: UnsafeMutablePointer<UInt8>
    ) {
        let wordCount = yLength / 4
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: wordCount) { words in
            for w in 0..<wordCount {
                let o = w * 4
                words[w] =
                    UInt32(yBytes[o]) << 24 | UInt32(yBytes[o + 1]) << 16 | UInt32(yBytes[o + 2]) << 8
                    | UInt32(yBytes[o + 3])
            }
            var first = 0  // words before this one are zero
            let r = UInt64(radix)
            var carry = 0
            for k in 0..<m {
                var remainder: UInt64 = 0
                while first < wordCount && words[first] == 0 { first += 1 }
                var w = first
                while w < wordCount {
                    let current = remainder << 32 | UInt64(words[w])
                    let quotient = current / r
                    words[w] = UInt32(truncatingIfNeeded: quotient)
                    remainder = current - quotient * r
                    w += 1
                }
                let position = m - 1 - k
                let xi = Int(x[position])
                var value = subtract ? xi - Int(remainder) + carry : xi + Int(remainder) + carry
                if subtract {
                    carry = 0
                    if value < 0 { value += radix; carry = -1 }
                } else {
                    carry = value >= radix ? 1 : 0
                    if carry == 1 { value -= radix }
                }
                out[position] = UInt8(value)
            }
        }
    }
}

extension FF1 {
    /// Numerals as text: `0-9`, then `a-z`, then `A-Z` (the NIST samples' alphabet up to radix 36).
    package enum Alphabet {
        static let symbols: [UInt8] = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

        package static func numerals(_ text: String, radix: Int) -> [UInt8]? {
            var out: [UInt8] = []
            for b in text.utf8 {
                guard let i = symbols.firstIndex(of: b), i < radix else { return nil }
                out.append(UInt8(i))
            }
            return out
        }

        package static func text(_ numerals: [UInt8]) -> String {
            String(decoding: numerals.map { symbols[Int($0)] }, as: UTF8.self)
        }
    }
}
