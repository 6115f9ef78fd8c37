/// Card numbers a message carries (issue 57): what an inbound route looks for in what it is about
/// to forward, so that a selector with a typo, or a field nobody named, never sends a raw card.
///
/// A card is a run of 13 to 19 digits, in groups that single spaces or dashes may separate, that
/// passes Luhn and starts like a known brand (``CardBrandTable/standard``). Every span of whole
/// groups is tried, so two cards written one after the other, or a card followed by its expiry
/// (`4111…1111-12/30`), are found; a plain run of more than 19 digits is an identifier, not a card.
/// The brand prefix keeps millisecond timestamps and most order numbers out.
public enum CardScan {
    public struct Finding: Sendable {
        /// Where the card is, never what it is: a JSON path (`$.payment.card_numbr`,
        /// `$.items[2]['pan']`; a key that holds a card is written `['<card>']`), `form:KEY`,
        /// `query:KEY`, `header:NAME` or `body` (a body that is neither JSON nor a form).
        public let place: String
        /// The card as written (with its separators).
        public let text: Sensitive<String>
        /// Whether the card is the whole value (not a part of a longer text).
        public let whole: Bool

        public init(place: String, text: String, whole: Bool) {
            self.place = place
            self.text = Sensitive(text)
            self.whole = whole
        }
    }

    /// The card numbers in `text`, each as written.
    public static func cards<S: StringProtocol>(in text: S) -> [Substring] {
        let s = Substring(text)
        var found: [Substring] = []
        var groups: [(start: String.Index, end: String.Index, digits: Int)] = []
        func flush() {
            var i = 0
            while i < groups.count {
                var digits = 0
                var hit: Int?
                var j = i
                while j < groups.count, digits + groups[j].digits <= 19 {
                    digits += groups[j].digits
                    if digits >= 13, isCard(s[groups[i].start..<groups[j].end]) { hit = j }
                    j += 1
                }
                if let hit {
                    found.append(s[groups[i].start..<groups[hit].end])
                    i = hit + 1
                } else {
                    i += 1
                }
            }
            groups.removeAll(keepingCapacity: true)
        }
        var index = s.startIndex
        while index < s.endIndex {
            guard s[index].isASCII, s[index].isNumber else {
                // One space or dash between two digits continues the run; anything else ends it.
                let next = s.index(after: index)
                let joins =
                    (s[index] == " " || s[index] == "-") && !groups.isEmpty && groups.last!.end == index
                    && next < s.endIndex && s[next].isASCII && s[next].isNumber
                if !joins { flush() }
                index = next
                continue
            }
            let start = index
            var digits = 0
            while index < s.endIndex, s[index].isASCII, s[index].isNumber {
                digits += 1
                index = s.index(after: index)
            }
            groups.append((start, index, digits))
        }
        flush()
        return found
    }

    /// Whether `text` (digits, spaces and dashes) is a card number.
    static func isCard(_ text: Substring) -> Bool {
        let digits = String(text.filter { $0 != " " && $0 != "-" })
        guard (13...19).contains(digits.utf8.count), Luhn.isValid(digits) else { return false }
        return CardBrandTable.standard.detect(digits).brand != .unknown
    }

    /// The cards in a JSON document's strings, numbers and keys, by path; nil when `body` is not JSON.
    public static func json(_ body: [UInt8]) -> [Finding]? {
        guard let value = try? JSONParser().parse(body) else { return nil }
        var out: [Finding] = []
        walk(value, path: "$", into: &out)
        return out
    }

    private static func walk(_ value: JSONValue, path: String, into out: inout [Finding]) {
        switch value {
        case let .string(text), let .number(text):
            for card in cards(in: text) {
                out.append(Finding(place: path, text: String(card), whole: card == text[...]))
            }
        case let .array(items):
            for (i, item) in items.enumerated() { walk(item, path: "\(path)[\(i)]", into: &out) }
        case let .object(members):
            for (key, item) in members {
                let keyCards = cards(in: key)
                let name = keyCards.isEmpty ? member(key) : "['<card>']"
                for card in keyCards { out.append(Finding(place: path + name, text: String(card), whole: false)) }
                walk(item, path: path + name, into: &out)
            }
        case .null, .bool: return
        }
    }

    /// `.key` for a plain key (ASCII letters, digits, `_`, not starting with a digit), `['key']`
    /// otherwise (quotes and backslashes escaped).
    private static func member(_ key: String) -> String {
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
    /// string has the same shape), each as `<prefix>:KEY`.
    public static func pairs(_ bytes: [UInt8], prefix: String) -> [Finding] {
        var out: [Finding] = []
        for pair in bytes.split(separator: UInt8(ascii: "&")) {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            let key =
                PercentDecoding.decode(pair[..<equals], plusAsSpace: true)
                ?? String(decoding: pair[..<equals], as: UTF8.self)
            let rawValue = equals < pair.endIndex ? pair[(equals + 1)...] : []
            let value = PercentDecoding.decode(rawValue, plusAsSpace: true) ?? String(decoding: rawValue, as: UTF8.self)
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

    /// The cards in header values, each as `header:NAME`.
    public static func headers(_ headers: [(name: String, value: String)]) -> [Finding] {
        headers.flatMap { header in
            cards(in: header.value).map {
                Finding(place: "header:\(header.name)", text: String($0), whole: $0 == header.value[...])
            }
        }
    }

    /// The cards in a body: by path in JSON, by key in a form, else anywhere in its text.
    public static func body(_ body: [UInt8], kind: SelectableBody) -> [Finding] {
        guard !body.isEmpty else { return [] }
        if kind == .json, let found = json(body) { return found }
        if kind == .form { return pairs(body, prefix: "form") }
        return cards(in: String(decoding: body, as: UTF8.self)).map {
            Finding(place: "body", text: String($0), whole: false)
        }
    }
}
