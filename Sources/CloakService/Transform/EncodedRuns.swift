import CloakCore
import CloakHTTP

/// The text forms of values a route's steps computed from revealed data (a digest, a
/// signature, a MAC), looked for in the upstream's answer by any run of ``minimumRun`` of their
/// characters (review V, item 9: an upstream echoing 16 base64 or 20 hex characters of a body's
/// SHA-256 still let a card be confirmed offline, 11,112 guesses in 1.56 s; the whole forms
/// were looked for, not their parts). The forms are base64, base64url, hex and base32, hex and
/// base32 in either case.
///
/// Every window of ``minimumRun`` characters of a form is a key of 60 bits, 6 a character,
/// `+` and `-`, `/` and `_` counting as one (base64 and base64url are then one text). The keys
/// go in an open-addressing table at most a quarter full (a SHA-256 and an HMAC make about 460),
/// and an answer is read once, byte by byte, a key rolling over each run of such characters and
/// looked up there (an empty slot ends nearly every lookup at once). A `Set` cost 35 µs a request
/// to fill (`cloak-micro "encoded runs"`). What is not found: a run of fewer characters, an
/// encoding of an encoding (the hex of a digest in base64), mixed case, a form broken by escapes
/// (`\/` in JSON): `docs/threat-model.md`.
package struct EncodedRuns: Sendable {
    /// Ten characters: 40 bits of a value in hex, 50 in base32, 60 in base64.
    static let minimumRun = 10

    /// Every window's key, as added.
    private var keys: [UInt64] = []
    /// The keys, each with ``present`` set, at the slot its hash names or the next free one
    /// after it; 0 is a free slot. Its size is a power of two, `1 << (64 - shift)`.
    private var table: [UInt64] = []
    private var shift: UInt64 = 64

    /// Marks a slot in use: keys have 60 bits, so none is 0 with it.
    private static let present: UInt64 = 1 << 63

    package var isEmpty: Bool { keys.isEmpty }

    package init() {}

    /// Looks for every run of `minimumRun` characters of `raw`'s text forms.
    package mutating func add(_ raw: [UInt8]) {
        for form in Self.forms(of: raw) where form.count >= Self.minimumRun {
            keys.reserveCapacity(keys.count + form.count - Self.minimumRun + 1)
            var key: UInt64 = 0
            for (i, byte) in form.enumerated() {
                key = Self.roll(key, Self.codes[Int(byte)])
                if i + 1 >= Self.minimumRun { keys.append(key) }
            }
        }
        rebuild()
    }

    /// The table for ``keys``: a power of two at least four times their number.
    private mutating func rebuild() {
        var bits: UInt64 = 6
        while 1 << bits < keys.count * 4 { bits += 1 }
        shift = 64 - bits
        table = Array(repeating: 0, count: 1 << bits)
        let mask = table.count - 1
        for key in keys {
            var slot = Self.slot(key, shift)
            while table[slot] != 0 && table[slot] != key | Self.present { slot = (slot + 1) & mask }
            table[slot] = key | Self.present
        }
    }

    private func contains(_ key: UInt64) -> Bool {
        let mask = table.count - 1
        var slot = Self.slot(key, shift)
        while table[slot] != 0 {
            if table[slot] == key | Self.present { return true }
            slot = (slot + 1) & mask
        }
        return false
    }

    /// Whether a run of any form is in `answer`'s body or one of its headers' names or values
    /// (a name may hold hex, base32 or base64url: `X-3f2a9c0b1d7e: 1`).
    package func appear(in answer: HTTPResponse) -> Bool {
        guard !keys.isEmpty else { return false }
        return answer.body.withUnsafeBufferPointer { found(in: $0) }
            || answer.headers.contains { header in
                var name = header.name
                var value = header.value
                return name.withUTF8 { found(in: $0) } || value.withUTF8 { found(in: $0) }
            }
    }

    func found(in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var key: UInt64 = 0
        var run = 0
        for byte in bytes {
            let code = Self.codes[Int(byte)]
            guard code != Self.none else {
                run = 0
                continue
            }
            key = Self.roll(key, code)
            run += 1
            if run >= Self.minimumRun, contains(key) { return true }
        }
        return false
    }

    /// The key of the last ten characters, given the key before and the next character's code.
    private static func roll(_ key: UInt64, _ code: UInt8) -> UInt64 {
        ((key << 6) | UInt64(code)) & (1 << 60 - 1)
    }

    /// A key's slot: the top bits of a multiplicative hash, as many as the table has.
    private static func slot(_ key: UInt64, _ shift: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    private static let none: UInt8 = 0xFF

    /// Each byte's 6-bit code: the base64 alphabet's place, base64url's `-` and `_` at `+` and
    /// `/`'s; `none` for every other byte (a run ends there).
    private static let codes: [UInt8] = {
        var codes = [UInt8](repeating: none, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            codes[Int(c)] = UInt8(i)
        }
        codes[Int(UInt8(ascii: "-"))] = 62
        codes[Int(UInt8(ascii: "_"))] = 63
        return codes
    }()

    /// `raw` as base64 (which stands for base64url too), hex and base32, each case.
    static func forms(of raw: [UInt8]) -> [[UInt8]] {
        let hex = Array(Hex.string(raw).utf8)
        let base32 = Self.base32(raw)
        return [Array(Base64.encode(raw).utf8), hex, hex.map(upper), base32, base32.map(lower)]
            .map { form in Array(form.prefix { $0 != UInt8(ascii: "=") }) }
    }

    private static func upper(_ c: UInt8) -> UInt8 { c >= 0x61 && c <= 0x7A ? c - 0x20 : c }
    private static func lower(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c + 0x20 : c }

    /// RFC 4648's base32, upper case, without padding.
    static func base32(_ raw: [UInt8]) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((raw.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in raw {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return out
    }
}
