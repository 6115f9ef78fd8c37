import CloakCore

/// One field's editing engine, as a value: the text a view shows, the caret, and how one edit
/// (a range of the shown text, in UTF-16 offsets, and what replaces it) changes them. Pure: no
/// view, no clock, no network; ``CloakField`` holds one behind its lock.
///
/// Card numbers, expiry dates, SSNs and CVCs without a mask or transform are *formatted*: the
/// editor keeps their raw characters (what the server's ``FormatPattern`` reads back) and lays
/// them out in the field's pattern with the pattern's own literals, as Cloak Elements' frames
/// do. An edit anywhere keeps the caret right after what it inserted; characters the field
/// cannot hold, and input past its longest length, are dropped; a backspace over a divider
/// deletes the character before it; no divider trails the last character. A field with a Basis
/// Theory mask is laid out in its mask as the user types
/// (``InputMask/edit(text:selection:replacement:)``, the steps the frames run); the server masks
/// and validates that text as it is. Other fields keep the text as typed, as the frames do (the
/// server applies transforms when they are sent).
struct FieldEditor: Sendable {
    let schema: FieldSchema
    let brands: CardBrandTable
    let isFormatted: Bool
    /// For a CVC linked to a card field: that card's brand (its CVC lengths decide the pattern).
    private(set) var linkedCard: PaymentCardModel = .unknown
    /// Formatted fields: the raw characters the text lays out.
    private(set) var raw: [Character] = []
    private(set) var text = ""
    private(set) var caret = 0
    /// An edit reached the field since it was made or cleared (the state's `isDirty`).
    private(set) var isDirty = false

    /// The types the frames lay out while typing.
    static let formattedTypes: Set<FieldType> = [.cardNumber, .expDate, .ssn, .cvc]

    init(schema: FieldSchema, brands: CardBrandTable) {
        self.schema = schema
        self.brands = brands
        let pattern =
            schema.type == .cardNumber ? "#" : (schema.formatPattern?.pattern ?? schema.type.defaultFormatPattern)
        isFormatted =
            Self.formattedTypes.contains(schema.type) && schema.mask == nil && schema.transform == nil
            && !(schema.type != .cvc && pattern.isEmpty)
    }

    // MARK: Editing

    /// Applies one edit: `range` of ``text`` in UTF-16 offsets (clamped to it) replaced by `inserted`.
    mutating func replace(_ range: Range<Int>, with inserted: String) {
        isDirty = true
        let length = text.utf16.count
        let lower = min(max(range.lowerBound, 0), length)
        let upper = min(max(range.upperBound, lower), length)
        if let mask = schema.mask {
            let edited = mask.edit(text: text, selection: lower..<upper, replacement: inserted)
            text = edited.text
            caret = edited.caret
            return
        }
        guard isFormatted else {
            var units = Array(text.utf16)
            units.replaceSubrange(lower..<upper, with: inserted.utf16)
            text = String(decoding: units, as: UTF16.self)
            caret = min(lower + inserted.utf16.count, text.utf16.count)
            return
        }
        let starts = layout(raw).starts
        var a = starts.filter { $0 < lower }.count
        let b = starts.filter { $0 < upper }.count
        // A backspace whose range holds only a divider meant the character before it.
        if inserted.isEmpty, lower < upper, a == b, a > 0 { a -= 1 }
        let before = Array(raw[..<a]), after = Array(raw[b...])
        var kept = Array(inserted.filter(canHold))
        if schema.type == .cardNumber {
            let longest = Self.longest(brands.detect(String(before + kept + after)))
            kept = Array(kept.prefix(max(0, longest - before.count - after.count)))
            var next = before + kept + after
            let model = brands.detect(String(next))
            if next.count > Self.longest(model) { next = Array(next.prefix(Self.longest(model))) }
            raw = next
            caret = min(before.count + kept.count, raw.count)
        } else {
            let pattern = currentPattern
            kept = Array(kept.prefix(max(0, pattern.placeholderCount - before.count - after.count)))
            raw = Array(pattern.rawText(String(before + kept + after)))
            caret = min(pattern.rawText(String(before + kept)).count, raw.count)
        }
        let shown = layout(raw)
        text = shown.text
        caret = caret == 0 ? 0 : shown.ends[caret - 1]
    }

    mutating func clear() {
        raw = []
        text = ""
        caret = 0
        isDirty = false
    }

    /// The linked card's brand changed: the CVC is laid out (and capped) for the new one.
    mutating func link(to card: PaymentCardModel) {
        guard linkedCard !== card else { return }
        linkedCard = card
        guard isFormatted, schema.type == .cvc else { return }
        raw = Array(currentPattern.rawText(String(raw)))
        let shown = layout(raw)
        text = shown.text
        caret = min(caret, text.utf16.count)
    }

    // MARK: Layout

    /// The pattern the raw characters are laid out in now.
    var currentPattern: FormatPattern {
        switch schema.type {
        case .cardNumber: return brands.detect(String(raw)).formatPattern
        case .cvc where schema.cardField != nil: return linkedCard.cvcFormatPattern
        case .cvc: return schema.formatPattern ?? PaymentCardModel.unknown.cvcFormatPattern
        default: return schema.formatPattern ?? FormatPattern(schema.type.defaultFormatPattern)
        }
    }

    /// The brand's longest number: what a card field holds at most.
    static func longest(_ model: PaymentCardModel) -> Int { model.cardNumberLengths.max() ?? 19 }

    /// Whether the field keeps `c` at all: a digit in a card number; for other formatted fields,
    /// a character one of the pattern's placeholders accepts.
    private func canHold(_ c: Character) -> Bool {
        if schema.type == .cardNumber { return c.isASCII && c.isNumber }
        let pattern = currentPattern.pattern
        return FormatPattern.placeholderCharacters.contains { placeholder in
            pattern.contains(placeholder) && FormatPattern(String(placeholder)).rawText(String(c)) == String(c)
        }
    }

    /// `raw` laid over the pattern with its own literals, stopping after the last character, and
    /// where each raw character starts and ends in the text (UTF-16). When the layout would not
    /// read back as the same raw text (a literal the pattern would take for input), the raw text
    /// is shown as it is, as the frames do.
    func layout(_ raw: [Character]) -> (text: String, starts: [Int], ends: [Int]) {
        let pattern = currentPattern
        var text = ""
        var starts: [Int] = [], ends: [Int] = []
        var pending = ""
        var taken = 0
        if !pattern.isEmpty && !raw.isEmpty {
            for p in pattern.pattern {
                guard taken < raw.count else { break }
                guard FormatPattern.placeholderCharacters.contains(p) else {
                    pending.append(p)
                    continue
                }
                text += pending
                pending = ""
                starts.append(text.utf16.count)
                text.append(raw[taken])
                ends.append(text.utf16.count)
                taken += 1
            }
        }
        if taken == raw.count, schema.type == .cardNumber || pattern.rawText(text) == String(raw) {
            return (text, starts, ends)
        }
        text = ""
        starts = []
        ends = []
        for c in raw {
            starts.append(text.utf16.count)
            text.append(c)
            ends.append(text.utf16.count)
        }
        return (text, starts, ends)
    }
}
