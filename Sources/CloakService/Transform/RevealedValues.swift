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
