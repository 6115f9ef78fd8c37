import Foundation

/// NIST SP 800-38G FF1 format-preserving encryption over numerals `0..<radix`.
///
/// Numeral strings are arrays of numeral values (0 to radix-1); ``FF1/Alphabet`` maps text to
/// numerals. Any radix 2…62 and AES-128/192/256 keys are supported. Arithmetic is done on byte
/// strings (no big-integer type): `NUM_radix` multiplies into `b` bytes, and `y mod radix^m` is
/// read off by repeated division of `S`, so every length works.
///
/// ```swift
/// let ff1 = try FF1(key: SymmetricKey(keyBytes), radix: 10)
/// let c = try ff1.encrypt([0,1,2,3,4,5,6,7,8,9], tweak: [])   // NIST sample 1: 2433477484
/// ```
public final class FF1: Sendable {
    public let radix: Int
    private let cipher: AESBlockCipher

    public struct InputError: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    public init(key: SymmetricKey, radix: Int) throws(CryptoError) {
        guard (2...62).contains(radix) else { throw CryptoError("FF1 radix must be 2…62, not \(radix)") }
        self.radix = radix
        self.cipher = try AESBlockCipher(key: key)
    }

    public func encrypt(_ numerals: [UInt8], tweak: [UInt8]) throws(InputError) -> [UInt8] {
        try run(numerals, tweak: tweak, decrypting: false)
    }

    public func decrypt(_ numerals: [UInt8], tweak: [UInt8]) throws(InputError) -> [UInt8] {
        try run(numerals, tweak: tweak, decrypting: true)
    }

    /// Bytes needed for `v` numerals: ⌈⌈v·log2(radix)⌉ / 8⌉.
    static func byteLength(numerals v: Int, radix: Int) -> Int {
        // ⌈v·log2(radix)⌉ as the bit length of radix^v − 1, computed exactly for powers of two.
        let bits: Int
        if radix & (radix - 1) == 0 {
            bits = v * radix.trailingZeroBitCount
        } else {
            bits = Int((Double(v) * log2(Double(radix))).rounded(.up))
        }
        return (bits + 7) / 8
    }

    private func run(_ x: [UInt8], tweak: [UInt8], decrypting: Bool) throws(InputError) -> [UInt8] {
        let n = x.count
        guard n >= 2 else { throw InputError(description: "FF1 needs at least 2 numerals") }
        guard n <= 1 << 20, tweak.count <= 1 << 20 else { throw InputError(description: "FF1 input too long") }
        guard x.allSatisfy({ Int($0) < radix }) else {
            throw InputError(description: "a numeral is not below the radix \(radix)")
        }
        let u = n / 2, v = n - u
        let b = Self.byteLength(numerals: v, radix: radix)
        let d = 4 * ((b + 3) / 4) + 4
        let t = tweak.count

        // P = [1]¹ [2]¹ [1]¹ [radix]³ [10]¹ [u mod 256]¹ [n]⁴ [t]⁴
        var p: [UInt8] = [1, 2, 1, UInt8(radix >> 16 & 0xFF), UInt8(radix >> 8 & 0xFF), UInt8(radix & 0xFF), 10,
                          UInt8(u % 256)]
        p += be32(n) + be32(t)
        // Q = T ‖ [0]^((−t−b−1) mod 16) ‖ [i]¹ ‖ [NUM_radix(B)]^b
        let padding = ((-(t + b + 1)) % 16 + 16) % 16
        let qLength = t + padding + 1 + b
        var q = [UInt8](repeating: 0, count: qLength)
        q.replaceSubrange(0..<t, with: tweak)

        var a = Array(x[0..<u])
        var bb = Array(x[u..<n])
        var s = [UInt8](repeating: 0, count: ((d + 15) / 16) * 16)

        return cipher.withEncryptor { encrypt in
            var pBlock = p
            var prefix = [UInt8](repeating: 0, count: 16)  // CIPH_K(P): the CBC-MAC state after P
            pBlock.withUnsafeMutableBufferPointer { encrypt($0.baseAddress!) }
            prefix = pBlock

            for step in 0..<10 {
                let i = decrypting ? 9 - step : step
                let m = i % 2 == 0 ? u : v
                // Q's last b bytes: NUM_radix of B (encrypting) or of A (decrypting).
                q[t + padding] = UInt8(i)
                Self.numRadix(decrypting ? a : bb, radix: radix, into: &q, at: t + padding + 1, length: b)
                // R = PRF(P ‖ Q): CBC-MAC continuing from CIPH(P).
                var r = prefix
                var offset = 0
                while offset < qLength {
                    for j in 0..<16 { r[j] ^= q[offset + j] }
                    r.withUnsafeMutableBufferPointer { encrypt($0.baseAddress!) }
                    offset += 16
                }
                // S = R ‖ CIPH(R ⊕ [1]¹⁶) ‖ CIPH(R ⊕ [2]¹⁶) ‖ …, first d bytes.
                s.replaceSubrange(0..<16, with: r)
                var block = 1
                while block * 16 < d {
                    var extra = r
                    var counter = block
                    var k = 15
                    while counter > 0 && k >= 0 {
                        extra[k] ^= UInt8(counter & 0xFF)
                        counter >>= 8
                        k -= 1
                    }
                    extra.withUnsafeMutableBufferPointer { encrypt($0.baseAddress!) }
                    s.replaceSubrange((block * 16)..<(block * 16 + 16), with: extra)
                    block += 1
                }
                // y mod radix^m as m numerals, least significant first.
                let yDigits = Self.residueDigits(s, length: d, radix: radix, count: m)
                if decrypting {
                    // c = (NUM_radix(B) − y) mod radix^m; B = A; A = C
                    let c = Self.combine(bb, yDigits, radix: radix, subtract: true)
                    bb = a
                    a = c
                } else {
                    // c = (NUM_radix(A) + y) mod radix^m; A = B; B = C
                    let c = Self.combine(a, yDigits, radix: radix, subtract: false)
                    a = bb
                    bb = c
                }
            }
            return a + bb
        }
    }

    private func be32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// Writes NUM_radix(numerals) big-endian into `out[at..<at+length]`.
    static func numRadix(_ numerals: [UInt8], radix: Int, into out: inout [UInt8], at: Int, length: Int) {
        for k in at..<(at + length) { out[k] = 0 }
        for numeral in numerals {
            var carry = UInt32(numeral)
            var k = at + length - 1
            while k >= at {
                let value = UInt32(out[k]) * UInt32(radix) + carry
                out[k] = UInt8(value & 0xFF)
                carry = value >> 8
                k -= 1
            }
        }
    }

    /// The lowest `count` base-`radix` digits of the big-endian number `bytes[0..<length]`.
    static func residueDigits(_ bytes: [UInt8], length: Int, radix: Int, count: Int) -> [UInt8] {
        var number = Array(bytes[0..<length])
        var digits = [UInt8](repeating: 0, count: count)
        let r = UInt32(radix)
        for k in 0..<count {
            var remainder: UInt32 = 0
            for j in 0..<number.count {
                let current = remainder << 8 | UInt32(number[j])
                number[j] = UInt8(current / r)
                remainder = current % r
            }
            digits[k] = UInt8(remainder)
        }
        return digits
    }

    /// (x ± y) mod radix^m, with x most significant first and y least significant first.
    static func combine(_ x: [UInt8], _ y: [UInt8], radix: Int, subtract: Bool) -> [UInt8] {
        let m = x.count
        var out = [UInt8](repeating: 0, count: m)
        var carry = 0
        for k in 0..<m {
            let xi = Int(x[m - 1 - k])
            var value = subtract ? xi - Int(y[k]) + carry : xi + Int(y[k]) + carry
            if subtract {
                carry = 0
                if value < 0 { value += radix; carry = -1 }
            } else {
                carry = value / radix
                value %= radix
            }
            out[m - 1 - k] = UInt8(value)
        }
        return out
    }
}

extension FF1 {
    /// Numerals as text: `0-9`, then `a-z`, then `A-Z` (the NIST samples' alphabet up to radix 36).
    public enum Alphabet {
        static let symbols: [UInt8] = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

        public static func numerals(_ text: String, radix: Int) -> [UInt8]? {
            var out: [UInt8] = []
            for b in text.utf8 {
                guard let i = symbols.firstIndex(of: b), i < radix else { return nil }
                out.append(UInt8(i))
            }
            return out
        }

        public static func text(_ numerals: [UInt8]) -> String {
            String(decoding: numerals.map { symbols[Int($0)] }, as: UTF8.self)
        }
    }
}
