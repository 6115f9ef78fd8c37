import CloakCore
import CloakHTTP
import Glibc

/// The values a route revealed on the way to its upstream, looked for in the upstream's answer
/// before the client sees it: an upstream that echoes its request (a debugging endpoint, an
/// error page quoting the body, a type Cloak cannot read) must not hand a card number back to
/// a caller who may only pay with it. Looked for as sent, in the body and in every header value,
/// after the answer's own operations (a field they redact is no echo).
///
/// Values shorter than ``minimumLength`` are not looked for: a CVC or an expiry date is also
/// any other number in an answer, and a route whose upstream echoes them redacts them by its
/// response operations.
struct RevealedValues: Sendable {
    static let minimumLength = 8

    private var values: [Sensitive<[UInt8]>] = []
    /// What steps computed from the values, looked for by its runs.
    private var runs = EncodedRuns()

    var isEmpty: Bool { values.isEmpty && runs.isEmpty }

    mutating func add(_ value: String) { add(bytes: Array(value.utf8)) }

    /// Bytes that stand for revealed values as surely as the values do: what a route step wrote
    /// over them (a JWS payload is the body in base64url; a digest, a signature or a MAC lets a
    /// card be tested offline against guesses).
    mutating func add(bytes: [UInt8]) {
        guard bytes.count >= Self.minimumLength else { return }
        values.append(Sensitive(bytes))
    }

    /// What a route's steps wrote over the request: each exact form, and the runs of what
    /// they computed (``EncodedRuns``).
    mutating func add(_ writes: StepWrites) {
        for bytes in writes.exact { add(bytes: bytes) }
        for raw in writes.computed { runs.add(raw) }
    }

    /// The forms in which an answer can carry `raw`, a value a step derived from revealed data
    /// (a digest, a signature, a MAC), as needles for ``appear(in:)`` (issue 55, item 3: an
    /// upstream echoing the bare SHA-256 of a body let a card be recovered in 0.35 s from
    /// guesses over its BIN and last four): `raw` itself, hex in either case, and base64.
    ///
    /// Base64 is looked for as its runs between the characters an encoding may escape (`+`,
    /// `/`; base64url's `-`, `_` stand at the same places): every form of it holds them, so the
    /// runs find base64 with or without padding, base64url, percent-encoding, JSON's `\/` and a
    /// label or quotes around it alike, with few needles (each costs a search of every answer).
    /// A run shorter than ``minimumLength`` is not looked for (eight base64 characters stand for
    /// 48 bits, too many to turn up by chance); when no run is that long, the whole forms are.
    static func encodings(of raw: [UInt8]) -> [[UInt8]] {
        var base64 = Array(Base64.encode(raw).utf8)
        while base64.last == UInt8(ascii: "=") { base64.removeLast() }
        var forms: [[UInt8]] = []
        forms.reserveCapacity(8)
        if raw.count >= minimumLength { forms.append(raw) }
        forms.append(hex(raw, upper: false))
        forms.append(hex(raw, upper: true))
        var runs: [ArraySlice<UInt8>] = []
        var escapes = false
        var start = 0
        for index in 0...base64.count where index == base64.count || Self.isEscapable(base64[index]) {
            if index < base64.count { escapes = true }
            if index - start >= minimumLength { runs.append(base64[start..<index]) }
            start = index + 1
        }
        if !escapes {
            forms.append(base64)  // one run, the whole: base64 and base64url are the same text
        } else if !runs.isEmpty {
            forms += runs.map { Array($0) }
        } else {
            forms.append(base64)
            forms.append(Array(Base64.encodeURL(raw).utf8))
            forms.append(percentEncoded(base64, upper: true))
            forms.append(percentEncoded(base64, upper: false))
        }
        return forms.filter { $0.count >= minimumLength }
    }

    private static func isEscapable(_ c: UInt8) -> Bool {
        c == UInt8(ascii: "+") || c == UInt8(ascii: "/") || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
    }

    private static func hex(_ bytes: [UInt8], upper: Bool) -> [UInt8] {
        let letters = upper ? UInt8(ascii: "A") - 10 : UInt8(ascii: "a") - 10
        return [UInt8](unsafeUninitializedCapacity: bytes.count * 2) { out, count in
            for (i, b) in bytes.enumerated() {
                let high = b >> 4, low = b & 15
                out[2 * i] = high < 10 ? UInt8(ascii: "0") + high : letters + high
                out[2 * i + 1] = low < 10 ? UInt8(ascii: "0") + low : letters + low
            }
            count = bytes.count * 2
        }
    }

    /// `+` and `/` as `%2B` and `%2F` (or `%2b`, `%2f`); every other base64 byte as it is.
    private static func percentEncoded(_ base64: [UInt8], upper: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(base64.count * 3)
        for c in base64 {
            if c == UInt8(ascii: "+") || c == UInt8(ascii: "/") {
                let low: Unicode.Scalar = c == UInt8(ascii: "+") ? (upper ? "B" : "b") : (upper ? "F" : "f")
                out += [UInt8(ascii: "%"), UInt8(ascii: "2"), UInt8(ascii: low)]
            } else {
                out.append(c)
            }
        }
        return out
    }

    /// Whether any of the values is in `answer`'s body or its headers' names or values (read
    /// in place: a header name may be digits, `X-4111111111111111: 1`).
    func appear(in answer: HTTPResponse) -> Bool {
        runs.appear(in: answer)
            || values.contains { value in
                answer.body.withUnsafeBufferPointer { Self.contains($0, value.value) }
                    || answer.headers.contains { header in
                        var name = header.name
                        var text = header.value
                        return name.withUTF8 { Self.contains($0, value.value) }
                            || text.withUTF8 { Self.contains($0, value.value) }
                    }
            }
    }

    /// Whether `needle` (not empty) is in `haystack`: its first byte, then the rest compared.
    static func contains(_ h: UnsafeBufferPointer<UInt8>, _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, h.count >= needle.count else { return false }
        return needle.withUnsafeBufferPointer { n in
            var i = 0
            while i <= h.count - n.count {
                if h[i] == first, memcmp(h.baseAddress! + i, n.baseAddress!, n.count) == 0 { return true }
                i += 1
            }
            return false
        }
    }
}
