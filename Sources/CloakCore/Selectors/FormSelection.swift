/// The values some keys select in an `application/x-www-form-urlencoded` body, and the body with
/// new values in their place. Keys match exactly after decoding, brackets included
/// (`card[number]`, as Stripe sends them); pairs that are not selected keep their bytes and order.
public struct FormSelection: Sendable {
    public struct Match: Sendable {
        /// The key that selected it.
        public let key: String
        /// Which pair of the body (by position).
        let pair: Int
        public let text: Sensitive<String>
    }

    /// The body's pairs, as raw bytes between `&`.
    let pairs: [[UInt8]]
    public let matches: [Match]

    /// Splits `body` and selects the pairs whose decoded key is in `keys`.
    /// - Throws: 1002 when a key or a selected value is not valid percent-encoding or UTF-8.
    public static func select(_ keys: Set<String>, in body: [UInt8]) throws(CloakError) -> FormSelection? {
        let pairs = body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false).map(Array.init)
        var matches: [Match] = []
        for (i, pair) in pairs.enumerated() {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            guard let key = decode(pair[..<equals]) else {
                throw .malformed("the form body does not parse (pair \(i))")
            }
            guard keys.contains(key) else { continue }
            let raw = equals < pair.endIndex ? pair[(equals + 1)...] : []
            guard let value = decode(raw) else { throw .malformed("the form value of \(key) does not parse") }
            matches.append(Match(key: key, pair: i, text: Sensitive(value)))
        }
        return matches.isEmpty ? nil : FormSelection(pairs: pairs, matches: matches)
    }

    /// The body with `replacements[i]` as the value of `matches[i]`; every other byte as it came.
    public func rewrite(_ replacements: [String]) -> [UInt8] {
        precondition(replacements.count == matches.count, "one replacement per match")
        var pairs = self.pairs
        for (match, text) in zip(matches, replacements) {
            let pair = pairs[match.pair]
            let key = pair[..<(pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex)]
            pairs[match.pair] = Array(key) + [UInt8(ascii: "=")] + Self.encode(text)
        }
        return Array(pairs.joined(separator: [UInt8(ascii: "&")]))
    }

    /// Form decoding: `+` is a space, `%XX` a byte; the result must be UTF-8.
    static func decode<Bytes: Collection<UInt8>>(_ raw: Bytes) -> String? {
        PercentDecoding.decode(raw, plusAsSpace: true)
    }

    /// Form encoding: unreserved bytes as they are, a space as `+`, everything else `%XX`.
    static func encode(_ text: String) -> [UInt8] {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            case 0x20:
                out.append(UInt8(ascii: "+"))
            default:
                out += [UInt8(ascii: "%"), digits[Int(b >> 4)], digits[Int(b & 0x0F)]]
            }
        }
        return out
    }
}

/// What kind of body a `Content-Type` announces, for selectors of that kind.
public enum SelectableBody: Sendable, Equatable {
    case json, form, other

    /// `application/json` and any `+json` type are JSON; `application/x-www-form-urlencoded` is a
    /// form; parameters (`; charset=utf-8`) and case are ignored. Runs on every proxied message:
    /// it compares bytes, without making strings.
    public init(contentType: String?) {
        guard var text = contentType else {
            self = .other
            return
        }
        self = text.withUTF8 { bytes in
            var start = 0, end = bytes.count
            if let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) { end = semicolon }
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            let type = UnsafeBufferPointer(rebasing: bytes[start..<end])
            if Self.equalsIgnoringCase(type, "application/json") { return .json }
            if Self.equalsIgnoringCase(type, "application/x-www-form-urlencoded") { return .form }
            let prefix = Array("application/".utf8), suffix = Array("+json".utf8)
            if type.count > prefix.count + suffix.count,
                Self.equalsIgnoringCase(UnsafeBufferPointer(rebasing: type[..<prefix.count]), "application/"),
                Self.equalsIgnoringCase(UnsafeBufferPointer(rebasing: type[(type.count - suffix.count)...]), "+json")
            {
                return .json
            }
            return .other
        }
    }

    private static func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        let expected = UnsafeBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount)
        for i in 0..<bytes.count {
            let c = bytes[i]
            if (c >= 65 && c <= 90 ? c | 0x20 : c) != expected[i] { return false }
        }
        return true
    }
}
