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

    var isEmpty: Bool { values.isEmpty }

    mutating func add(_ value: String) { add(bytes: Array(value.utf8)) }

    /// Bytes that stand for revealed values as surely as the values do: what a route step wrote
    /// over them (a JWS payload is the body in base64url; a digest, a signature or a MAC lets a
    /// card be tested offline against guesses).
    mutating func add(bytes: [UInt8]) {
        guard bytes.count >= Self.minimumLength else { return }
        values.append(Sensitive(bytes))
    }

    /// The forms in which an answer can carry `raw`, a value a step derived from revealed data
    /// (a digest, a signature, a MAC): itself, base64 (with and without padding), base64url, hex
    /// in either case, base64 percent-encoded in either case, and each run of base64 between the
    /// characters an encoding may escape (`+`, `/`, `-`, `_`), so an echo with a label
    /// (`sha-256=:…:`), quotes, JSON's `\/` or partial escaping is still found (issue 55, item
    /// 3: an upstream echoing the bare SHA-256 of a body let a card be recovered in 0.35 s from
    /// guesses over its BIN and last four). A run shorter than ``minimumLength`` is not looked
    /// for; eight base64 characters stand for 48 bits, too many to turn up by chance.
    static func encodings(of raw: [UInt8]) -> [[UInt8]] {
        let padded = Base64.encode(raw)
        let base64 = String(padded.reversed().drop { $0 == "=" }.reversed())
        let url = Base64.encodeURL(raw)
        let hex = APICredentials.hex(raw)
        var forms: [String] = [base64, url, hex, hex.uppercased()]
        for upper in [true, false] {
            forms.append(
                base64.map { c in
                    switch c {
                    case "+": upper ? "%2B" : "%2b"
                    case "/": upper ? "%2F" : "%2f"
                    default: String(c)
                    }
                }.joined())
        }
        for encoded in [base64, url] {
            forms += encoded.split { "+/-_".contains($0) }.map(String.init)
        }
        var seen = Set<String>()
        return [raw]
            + forms.filter { $0.utf8.count >= minimumLength && seen.insert($0).inserted }.map { Array($0.utf8) }
    }

    /// Whether any of the values is in `answer`'s body or header values (read in place).
    func appear(in answer: HTTPResponse) -> Bool {
        values.contains { value in
            answer.body.withUnsafeBufferPointer { Self.contains($0, value.value) }
                || answer.headers.contains { header in
                    var text = header.value
                    return text.withUTF8 { Self.contains($0, value.value) }
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
