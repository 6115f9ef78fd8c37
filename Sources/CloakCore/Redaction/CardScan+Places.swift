/// Where a forwarded request may carry a card: JSON strings, numbers and keys (with their
/// paths), form pairs, headers, and any other body as text.
extension CardScan {
    /// The cards in a JSON document's strings, numbers and keys, by path; nil when `body` is not
    /// JSON. Strings in `skipping` (what the route wrote itself) are not looked at.
    public static func json(_ body: [UInt8], skipping: Set<String> = []) -> [Finding]? {
        guard let value = try? JSONParser().parse(body) else { return nil }
        var out: [Finding] = []
        walk(value, path: "$", skipping: skipping, into: &out)
        return out
    }

    static func walk(_ value: JSONValue, path: String, skipping: Set<String>, into out: inout [Finding]) {
        switch value {
        case let .string(text) where skipping.contains(text): return
        case let .string(text):
            for card in cards(in: text) {
                out.append(Finding(place: path, text: String(card), whole: card == text[...]))
            }
        case let .number(text):
            // 4.111111111111111e15 is 4111111111111111.
            let digits = integerDigits(text) ?? text
            if !cards(in: digits).isEmpty { out.append(Finding(place: path, text: text, whole: true)) }
        case let .array(items):
            for (i, item) in items.enumerated() {
                walk(item, path: "\(path)[\(i)]", skipping: skipping, into: &out)
            }
        case let .object(members):
            for (key, item) in members {
                let keyCards = cards(in: key)
                let name = keyCards.isEmpty ? member(key) : "['<card>']"
                for card in keyCards { out.append(Finding(place: path + name, text: String(card), whole: false)) }
                walk(item, path: path + name, skipping: skipping, into: &out)
            }
        case .null, .bool: return
        }
    }

    /// The digits of a JSON number that is an integer written with a fraction or an exponent
    /// (`4.111111111111111e15`, `4111111111111111.0`); nil for one written plainly or too large.
    public static func integerDigits(_ number: String) -> String? {
        guard number.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) else { return nil }
        var text = Substring(number)
        if text.first == "-" { text = text.dropFirst() }
        let parts = text.split(maxSplits: 1, whereSeparator: { $0 == "e" || $0 == "E" })
        guard let mantissa = parts.first, let exponent = parts.count == 2 ? Int(parts[1]) : 0, abs(exponent) <= 40
        else { return nil }
        let halves = mantissa.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = halves[0]
        let fraction = halves.count == 2 ? halves[1] : ""
        var digits = Array(whole + fraction)
        var point = whole.count + exponent
        guard point >= 0 else { return nil }
        while digits.count < point { digits.append("0") }
        // What lies past the point must be zeros: an integer.
        guard digits[point...].allSatisfy({ $0 == "0" }) else { return nil }
        while point > 1, digits.first == "0" {
            digits.removeFirst()
            point -= 1
        }
        return String(digits[..<point])
    }

    /// `.key` for a plain key (ASCII letters, digits, `_`, not starting with a digit), `['key']`
    /// otherwise (quotes and backslashes escaped).
    static func member(_ key: String) -> String {
        let plain =
            !key.isEmpty && !(key.first!.isNumber)
            && key.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
            }
        if plain { return "." + key }
        var escaped = ""
        for c in key {
            if c == "\\" || c == "'" { escaped.append("\\") }
            escaped.append(c)
        }
        return "['" + escaped + "']"
    }

    /// The cards in the keys and values of `application/x-www-form-urlencoded` pairs (a query
    /// string has the same shape), each as `<prefix>:KEY`. Decoding is lenient: a `%` that does
    /// not start an escape stays as written, and bytes that are not UTF-8 become U+FFFD, so a
    /// card cannot hide behind one bad escape.
    public static func pairs(_ bytes: [UInt8], prefix: String) -> [Finding] {
        var out: [Finding] = []
        for pair in bytes.split(separator: UInt8(ascii: "&")) {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            let key = lenientDecode(pair[..<equals])
            let value = equals < pair.endIndex ? lenientDecode(pair[(equals + 1)...]) : ""
            let keyCards = cards(in: key)
            let name = keyCards.isEmpty ? key : "<card>"
            for card in keyCards {
                out.append(Finding(place: "\(prefix):\(name)", text: String(card), whole: false))
            }
            for card in cards(in: value) {
                out.append(Finding(place: "\(prefix):\(name)", text: String(card), whole: card == value[...]))
            }
        }
        return out
    }

    /// Percent-decoding that never fails (see ``pairs(_:prefix:)``).
    public static func lenientDecode(_ raw: ArraySlice<UInt8>) -> String {
        func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 0x30...0x39: return b - 0x30
            case 0x41...0x46: return b - 0x41 + 10
            case 0x61...0x66: return b - 0x61 + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = raw.startIndex
        while i < raw.endIndex {
            let b = raw[i]
            if b == UInt8(ascii: "%"), i + 2 < raw.endIndex, let h = hex(raw[i + 1]), let l = hex(raw[i + 2]) {
                out.append(h << 4 | l)
                i += 3
                continue
            }
            out.append(b == UInt8(ascii: "+") ? 0x20 : b)
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The cards in header names and values, each as `header:NAME` (`header:<card>` when the
    /// name holds one).
    public static func headers(_ headers: [(name: String, value: String)]) -> [Finding] {
        headers.flatMap { header in
            let nameCards = cards(in: header.name)
            let place = "header:" + (nameCards.isEmpty ? header.name : "<card>")
            return nameCards.map { Finding(place: place, text: String($0), whole: false) }
                + cards(in: header.value).map {
                    Finding(place: place, text: String($0), whole: $0 == header.value[...])
                }
        }
    }

    /// The cards in a body: by path in JSON, by key in a form, else anywhere in its text (with
    /// JSON's `\u` escapes read, for a JSON body that does not parse).
    public static func body(_ body: [UInt8], kind: SelectableBody, skipping: Set<String> = []) -> [Finding] {
        guard !body.isEmpty else { return [] }
        if kind == .json, let found = json(body, skipping: skipping) { return found }
        if kind == .form { return pairs(body, prefix: "form") }
        return cards(in: unescapingJSON(String(decoding: body, as: UTF8.self))).map {
            Finding(place: "body", text: String($0), whole: false)
        }
    }

    /// `text` with each `\uXXXX` escape replaced by its character (others left as written).
    static func unescapingJSON(_ text: String) -> String {
        guard text.contains("\\u") else { return text }
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            if scalars[i] == "\\", i + 5 < scalars.count, scalars[i + 1] == "u",
                let value = UInt32(String(String.UnicodeScalarView(scalars[(i + 2)...(i + 5)])), radix: 16),
                let scalar = Unicode.Scalar(value)
            {
                out.append(scalar)
                i += 6
                continue
            }
            out.append(scalars[i])
            i += 1
        }
        return String(out)
    }
}
